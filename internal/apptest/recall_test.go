package apptest

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// recallNotes are 20 short notes on unrelated topics, one of them about
// tea.
var recallNotes = []string{
	"The user drinks oolong tea, brewed for three minutes, no sugar.",
	"The user's sister lives in Lisbon.",
	"The car is due for its inspection in March.",
	"The user is learning to play the cello.",
	"The wifi router is in the hallway cupboard.",
	"The user runs 5 km on Saturday mornings.",
	"The user's dentist is Dr. Okafor.",
	"The user prefers aisle seats on flights.",
	"The user's cat is called Pixel.",
	"The user is allergic to penicillin.",
	"The book club meets on the first Thursday of the month.",
	"The user's favourite film is Spirited Away.",
	"The user grows basil and mint on the balcony.",
	"The user's bike has a flat rear tyre.",
	"The user works as a structural engineer.",
	"The user wants to visit Kyoto in autumn.",
	"The user's passport expires in 2027.",
	"The user takes the 7:40 train to work.",
	"The user is saving for a new laptop.",
	"The user's son plays football on Wednesdays.",
}

// memoryLines returns the recalled memories in the prompt of a chat
// request (the items of its recall packet), one line each.
func memoryLines(t *testing.T, req llmtest.ChatRequest) []string {
	t.Helper()
	p, ok := recallPacket(t, req)
	if !ok {
		return nil
	}
	out := []string{}
	for _, it := range p.Items {
		out = append(out, it.Text)
	}
	return out
}

// recallPacket returns the recall packet in the prompt of a chat request
// (its title RecallTitle, followed by RecallExcerptNote when some line is
// an excerpt); ok is false when the prompt has none.
func recallPacket(t *testing.T, req llmtest.ChatRequest) (evidence.Packet, bool) {
	t.Helper()
	start := `{"kind":"memory","title":` + strings.TrimSuffix(strconv.Quote(memory.RecallTitle), `"`)
	for _, m := range req.Messages {
		var text string
		if json.Unmarshal(m.Content, &text) != nil {
			continue
		}
		i := strings.Index(text, start)
		if i < 0 {
			continue
		}
		var p evidence.Packet
		if err := json.NewDecoder(strings.NewReader(text[i:])).Decode(&p); err != nil {
			t.Fatalf("the prompt's recall packet does not decode: %v\n%s", err, text[i:])
		}
		return p, true
	}
	return evidence.Packet{}, false
}

// Recall earns its place in the prompt: with 20 unrelated notes in memory,
// a question none of them answers brings at most two of them into the
// prompt the model receives, and a question about tea brings the tea note
// and few others.
func TestRecallGateEndToEnd(t *testing.T) {
	h := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, n := range recallNotes {
		if _, err := h.App.Memory.Remember(ctx, memory.Memory{Text: n, Kind: memory.KindFact, Source: memory.SourceUserExplicit}, false); err != nil {
			t.Fatal(err)
		}
	}
	recalled := h.App.Bus.Watch(ctx, "memory.recalled", 4)
	var mu sync.Mutex
	var reqs []llmtest.ChatRequest
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		mu.Lock()
		reqs = append(reqs, req)
		mu.Unlock()
		return llmtest.ServerReply{Text: "Noted."}
	})
	ask := func(thread, q string) []string {
		mu.Lock()
		n := len(reqs)
		mu.Unlock()
		h.Send(t, thread, q)
		h.Channel.WaitFor(t, thread, 1)
		mu.Lock()
		defer mu.Unlock()
		for _, r := range reqs[n:] {
			if lines := memoryLines(t, r); lines != nil {
				return lines
			}
		}
		return nil
	}
	lines := ask("tungsten", "What is the melting point of tungsten in kelvin?")
	t.Logf("tungsten: %q", lines)
	if len(lines) > 2 {
		t.Errorf("an unrelated question brought %d remembered lines into the prompt:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	lines = ask("tea", "How do I like my tea?")
	t.Logf("tea: %q", lines)
	if len(lines) == 0 || !strings.Contains(lines[0], "oolong") {
		t.Errorf("the tea question's prompt lacks the tea note first:\n%s", strings.Join(lines, "\n"))
	}
	if len(lines) > 3 {
		t.Errorf("the tea question brought %d lines:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	// Each turn's recall is an event the page's event list shows.
	var got []memory.RecallStats
	for len(got) < 2 {
		select {
		case ev := <-recalled:
			var st memory.RecallStats
			if err := json.Unmarshal(ev.Payload, &st); err != nil {
				t.Fatal(err)
			}
			got = append(got, st)
		case <-ctx.Done():
			t.Fatalf("memory.recalled events: %+v", got)
		}
	}
	if got[0].Lines != 0 || got[1].Lines != len(lines) || got[1].Tokens <= 0 {
		t.Errorf("memory.recalled events %+v, want 0 lines then %d", got, len(lines))
	}
	h.Send(t, "status", "/status")
	if st := h.Channel.WaitFor(t, "status", 1)[0].Text; !strings.Contains(st, "last turn's recall: ") {
		t.Errorf("/status lacks the last turn's recall:\n%s", st)
	}
}
