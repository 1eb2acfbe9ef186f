package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/eval"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// `reverie eval longmemeval` prints one JSON line with --json, a table
// otherwise, embeds with --embedding's model, and refuses bad arguments
// with a clear error.
func TestEvalLongMemEvalCLI(t *testing.T) {
	data := filepath.Join("..", "..", "internal", "eval", "testdata", "longmemeval-synthetic.json")
	env := []string{"HOME=" + t.TempDir()}
	code, out, errs := runCLI(t, env, "eval", "longmemeval", "--data", data, "--json", "--k", "1,5,10")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var rep struct {
		Round      map[string]float64         `json:"round"`
		Session    map[string]float64         `json:"session"`
		ByType     map[string]json.RawMessage `json:"by_type"`
		Questions  int                        `json:"questions"`
		Abstention map[string]float64         `json:"abstention"`
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Questions != 2 || rep.Round["recall_all@10"] != 100 || rep.Session["recall_any@5"] != 100 || rep.ByType["multi-session"] == nil || rep.Abstention["questions"] != 1 {
		t.Fatalf("report %s", out)
	}
	if code, out, errs := runCLI(t, env, "eval", "longmemeval", "--data", data); code != ExitOK || !strings.Contains(out, "session") || !strings.Contains(errs, "questions 3/3") {
		t.Fatalf("table: exit %d\n%s\n%s", code, out, errs)
	}
	code, out, errs = runCLI(t, env, "eval", "longmemeval", "--data", data, "--json", "--cv", "--cv-repeats", "2")
	if err := json.Unmarshal([]byte(strings.TrimSpace(out)), &rep); code != ExitOK || err != nil || rep.Questions != 2 ||
		!strings.Contains(out, `"repeats":[{"repeat":0,`) || !strings.Contains(out, `"spread":{"round":{"recall_all@10":{"mean":`) {
		t.Fatalf("--cv-repeats 2: exit %d (%v)\n%s\n%s", code, err, out, errs)
	}
	ol := llmtest.NewOllamaServer(t)
	ol.AddModel("nomic-embed-text", 24)
	code, out, errs = runCLI(t, append(env, "OLLAMA_HOST="+ol.URL()), "eval", "longmemeval", "--data", data, "--json", "--embedding", "ollama/nomic-embed-text")
	if code != ExitOK || !strings.Contains(errs, "(24 dimensions)") || len(ol.Requests()) == 0 {
		t.Fatalf("--embedding: exit %d, %d requests\n%s\n%s", code, len(ol.Requests()), out, errs)
	}
	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"no data", nil, "--data"},
		{"bad k", []string{"--data", data, "--k", "0"}, "--k"},
		{"missing file", []string{"--data", "/nonexistent.json"}, "open LongMemEval data"},
		{"repeats without cv", []string{"--data", data, "--cv-repeats", "3"}, "--cv-repeats needs --cv"},
		{"no repeats", []string{"--data", data, "--cv", "--cv-repeats", "0"}, "--cv-repeats: 0 is not a positive number"},
		{"negative repeats", []string{"--data", data, "--cv", "--cv-repeats", "-2"}, "--cv-repeats: -2"},
		{"repeats not a number", []string{"--data", data, "--cv", "--cv-repeats", "many"}, "cv-repeats"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runCLI(t, env, append([]string{"eval", "longmemeval"}, c.args...)...)
			if code == ExitOK || !strings.Contains(errs, c.want) {
				t.Errorf("exit %d, stderr %q; want failure mentioning %q", code, errs, c.want)
			}
		})
	}
}

// --misses ends the report with the questions whose evidence is not all in
// the top ten (here one: its evidence shares no word with it and twelve
// rounds of its session match it).
func TestEvalLongMemEvalMisses(t *testing.T) {
	var turns []eval.LMETurn
	for i := range 12 {
		turns = append(turns, eval.LMETurn{Role: "user", Content: fmt.Sprintf("Lake walk %d: counted %d ducks on the lake path.", i+1, i+2)},
			eval.LMETurn{Role: "assistant", Content: fmt.Sprintf("Ducks on a lake walk, note %d.", i+1)})
	}
	turns = append(turns, eval.LMETurn{Role: "user", Content: "My heron photograph came out sharp.", HasAnswer: true})
	q := eval.LMEQuestion{ID: "q-miss", Type: "single-session-user", Question: "What did I capture on my lake walk?",
		Date: "2023/04/02 (Sun) 10:00", Dates: []string{"2023/04/01 (Sat) 09:00"}, SessionIDs: []string{"s"},
		Sessions: [][]eval.LMETurn{turns}, AnswerSessionIDs: []string{"s"}}
	b, err := json.Marshal([]eval.LMEQuestion{q})
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "miss.json")
	if err := os.WriteFile(data, b, 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"HOME=" + t.TempDir()}
	code, out, errs := runCLI(t, env, "eval", "longmemeval", "--data", data, "--misses")
	if code != ExitOK || !strings.Contains(out, "q-miss single-session-user: What did I capture on my lake walk?\n  ! session 1: round ") ||
		!strings.Contains(out, "12 of its session above: My heron photograph came out sharp.") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errs)
	}
	if code, out, errs := runCLI(t, env, "eval", "longmemeval", "--data", data); code != ExitOK || strings.Contains(out, "q-miss") {
		t.Fatalf("without --misses: exit %d\n%s\n%s", code, out, errs)
	}
}
