package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// missQuestion is a question whose evidence round shares no word with it
// and sits in a session of eleven rounds that match it, so it cannot be in
// the top ten.
func missQuestion() LMEQuestion {
	var s1, s2 []LMETurn
	for i := range 11 {
		s1 = append(s1, LMETurn{Role: "user", Content: fmt.Sprintf("Bird count at the lake, walk %d: %d ducks and a bird I could not name.", i+1, i+3)},
			LMETurn{Role: "assistant", Content: fmt.Sprintf("Lake birds in autumn, note %d: ducks gather where the water stays open.", i+1)})
	}
	s1 = append(s1, LMETurn{Role: "user", Content: "My heron photograph came out sharp.", HasAnswer: true},
		LMETurn{Role: "assistant", Content: "Herons stand still long enough for a slow shutter."})
	s2 = append(s2, LMETurn{Role: "user", Content: "Which shoes suit a muddy lake path for bird watching?"},
		LMETurn{Role: "assistant", Content: "Waterproof boots with a deep tread."})
	return LMEQuestion{ID: "miss", Type: "single-session-user", Question: "What did I capture on my lake walk?",
		Date: "2023/04/02 (Sun) 10:00", Dates: []string{"2023/04/01 (Sat) 09:00", "2023/04/01 (Sat) 18:00"},
		SessionIDs: []string{"walks", "shoes"}, Sessions: [][]LMETurn{s1, s2}, AnswerSessionIDs: []string{"walks"}}
}

// TestLongMemEvalMisses checks the miss table: a question whose evidence is
// in the top ten is not listed; one whose evidence round is out-ranked by
// its own session's other rounds is, with its session, rank, the ranks of
// its message and reply and how many of its session's rounds rank above
// it, in the text table and in the JSON.
func TestLongMemEvalMisses(t *testing.T) {
	qs := append(readLMESynthetic(t), missQuestion())
	rep, err := RunLongMemEval(context.Background(), qs, LMEOptions{K: []int{10}, Workers: 2, Misses: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Misses) != 1 || rep.Misses[0].ID != "miss" || len(rep.Misses[0].Evidence) != 1 {
		t.Fatalf("misses %+v, want only the question \"miss\" with one evidence round", rep.Misses)
	}
	ev := rep.Misses[0].Evidence[0]
	if ev.Session != 1 || ev.Above != 11 || ev.Text != "My heron photograph came out sharp." {
		t.Errorf("evidence %+v, want session 1, 11 of its rounds above, the message's text", ev)
	}
	switch {
	case ev.Rank == 0 && (ev.Message != 0 || ev.Reply != 0):
		t.Errorf("evidence %+v: unranked round with ranked episodes", ev)
	case ev.Rank != 0 && (ev.Rank <= ev.Above || ev.Message == 0 && ev.Reply == 0):
		t.Errorf("evidence %+v: ranked round should come after the rounds above it and have a ranked episode", ev)
	}
	var table bytes.Buffer
	if err := rep.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(table.String(), "miss single-session-user: What did I capture on my lake walk?\n  ! session 1: round ") ||
		!strings.Contains(table.String(), "11 of its session above: My heron photograph came out sharp.\n") {
		t.Errorf("table lacks the miss:\n%s", table.String())
	}
	js, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Misses []LMEMiss `json:"misses"`
	}
	if err := json.Unmarshal(js, &shape); err != nil || len(shape.Misses) != 1 || shape.Misses[0].Evidence[0] != ev {
		t.Errorf("json misses %+v (%v) from %s", shape.Misses, err, js)
	}

	plain, err := RunLongMemEval(context.Background(), qs, LMEOptions{K: []int{10}, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if plain.Misses != nil || bytes.Contains(must(json.Marshal(plain)), []byte(`"misses"`)) {
		t.Errorf("misses reported without being asked for: %+v", plain.Misses)
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}
