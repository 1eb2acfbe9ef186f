package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
)

// A memory's escape sequences and newlines are shown escaped by memory
// list and forget, never sent raw to the terminal.
func TestMemoryCLIEscapesControlCharacters(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HOME=" + t.TempDir()}
	for _, args := range [][]string{
		{"memory", "add", "Likes tea\x1b]0;pwned\x07\x1b[1A\nfake row"},
		{"memory", "list"},
		{"memory", "forget", "1"},
	} {
		code, out, errs := runCLI(t, env, append(args, "--data", dir)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		if args[1] == "add" {
			continue
		}
		if strings.ContainsAny(out, "\x1b\x07") || !strings.Contains(out, `Likes tea\x1b]0;pwned\a\x1b[1A\nfake row`) {
			t.Fatalf("%v with escapes: %q", args, out)
		}
	}
}

func TestMemoryCLI(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HOME=" + t.TempDir()}
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, errs := runCLI(t, env, append(args, "--data", dir)...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	out := mustRun("memory", "add", "My sister Ana lives in Porto.")
	if !strings.Contains(out, "remembered as #") {
		t.Fatalf("add: %q", out)
	}
	if out := mustRun("memory", "add", "my sister ana lives in porto"); !strings.Contains(out, "already remembered") {
		t.Fatalf("duplicate add: %q", out)
	}
	mustRun("memory", "add", "--kind", "episode", "--when", "2026-06-01", "--keep=false", "Visited Ana in Porto for her birthday.")
	mustRun("memory", "add", "--kind", "preference", "Prefers trains to planes.")

	out = mustRun("memory", "search", "--json", "where does my sister live")
	var hits []memoryJSON
	if err := json.Unmarshal([]byte(out), &hits); err != nil || len(hits) == 0 {
		t.Fatalf("search json: %v\n%s", err, out)
	}
	if !strings.Contains(hits[0].Text, "Porto") {
		t.Fatalf("best hit %+v", hits[0])
	}
	out = mustRun("memory", "list", "--kind", "episode")
	if !strings.Contains(out, "2026-06-01") || strings.Contains(out, "trains") {
		t.Fatalf("list --kind episode:\n%s", out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "MEMORIES.txt"))
	if err != nil || string(b) != "My sister Ana lives in Porto.\nPrefers trains to planes.\n" {
		t.Fatalf("MEMORIES.txt = %q, %v", b, err)
	}

	var id string
	for _, h := range hits {
		if strings.Contains(h.Text, "sister") {
			id = strconv.FormatInt(h.ID, 10)
		}
	}
	if out := mustRun("memory", "forget", id); !strings.Contains(out, "forgot #"+id) {
		t.Fatalf("forget: %q", out)
	}
	b, _ = os.ReadFile(filepath.Join(dir, "MEMORIES.txt"))
	if string(b) != "Prefers trains to planes.\n" {
		t.Fatalf("MEMORIES.txt after forget = %q", b)
	}
	// An id an edit replaced is refused by edit and forget alike, which
	// name the current version (as through a running agent).
	trains := strings.Fields(strings.Split(mustRun("memory", "search", "trains"), "\n")[1])[0]
	out = mustRun("memory", "edit", trains, "Prefers night trains to planes.")
	cur, ok := strings.CutPrefix(strings.TrimSpace(out), "#"+trains+" is now #")
	if !ok {
		t.Fatalf("edit: %q", out)
	}
	cur, _, _ = strings.Cut(cur, " ")
	wantFailure(t, env, dir, []string{"memory", "edit", trains, "Prefers buses."},
		"reverie: memory "+trains+" was replaced by memory "+cur+", its current version: edit "+cur+" to change it (nothing was changed)\n")
	wantFailure(t, env, dir, []string{"memory", "forget", trains},
		"reverie: memory "+trains+" was replaced by memory "+cur+", its current version: forget "+cur+" to forget it (nothing was forgotten)\n")
	// Emptying a memory is refused as adding an empty one is, with its
	// number in front, and nothing else ("update memory N: " was).
	wantFailure(t, env, dir, []string{"memory", "edit", cur, " "}, "reverie: #"+cur+": memory text is empty\n")

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"secret", []string{"memory", "add", "aws key AKIAABCDEFGHIJKLMNOP"}, "secret"},
		{"bad kind", []string{"memory", "add", "--kind", "gossip", "x"}, "unknown kind"},
		{"bad id", []string{"memory", "forget", "abc"}, "not a memory id"},
		{"unknown id", []string{"memory", "forget", "424242"}, "memory 424242 not found"},
		{"empty query", []string{"memory", "search", " "}, "give words to search for"},
		{"bad date", []string{"memory", "add", "--when", "yesterday", "x"}, "YYYY-MM-DD"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := runCLI(t, env, append(c.args, "--data", dir)...)
			if code == ExitOK || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, stderr %q; want failure mentioning %q", code, errs, c.want)
			}
		})
	}
}

func TestEvalLoCoMoCLI(t *testing.T) {
	env := []string{"HOME=" + t.TempDir()}
	code, out, errs := runCLI(t, env, "eval", "locomo", "--data", filepath.Join("..", "..", "internal", "eval", "testdata", "synthetic.json"), "--json", "--k", "1,10")
	if code != ExitOK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	var rep struct {
		Overall    map[string]float64            `json:"overall"`
		ByCategory map[string]map[string]float64 `json:"by_category"`
		Questions  int                           `json:"questions"`
	}
	if err := json.Unmarshal([]byte(out), &rep); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if rep.Questions == 0 || rep.Overall["recall@10"] <= 0 || rep.ByCategory["single-hop"] == nil {
		t.Fatalf("report %+v", rep)
	}
	if code, _, errs := runCLI(t, env, "eval", "locomo"); code != ExitConfig || !strings.Contains(errs, "--data") {
		t.Fatalf("missing --data: %d %q", code, errs)
	}
	if code, _, _ := runCLI(t, env, "eval", "locomo", "--data", "/nonexistent.json"); code == ExitOK {
		t.Fatal("missing file succeeded")
	}
}

// pagedMemories is an api.Memories whose List answers as the API does: at
// most listPage memories a request, from Offset.
type pagedMemories struct {
	api.Memories
	n       int
	filters []api.MemoryFilter
}

func (p *pagedMemories) List(_ context.Context, f api.MemoryFilter) ([]api.Memory, error) {
	p.filters = append(p.filters, f)
	var out []api.Memory
	for i := f.Offset; i < p.n && len(out) < min(f.Limit, listPage); i++ {
		out = append(out, api.Memory{ID: int64(i + 1)})
	}
	return out, nil
}

// memory list --limit 0 lists all memories through the control socket too,
// page after page; a limit asks once.
func TestListMemoriesPages(t *testing.T) {
	tests := []struct {
		name           string
		stored         int
		limit          int
		want, requests int
	}{
		{"none", 0, 0, 0, 1},
		{"less than a page", 10, 0, 10, 1},
		{"exactly a page", listPage, 0, listPage, 2},
		{"several pages", 2*listPage + 5, 0, 2*listPage + 5, 3},
		{"a limit", 2*listPage + 5, 20, 20, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			svc := &pagedMemories{n: tc.stored}
			ms, err := listMemories(t.Context(), svc, api.MemoryFilter{Limit: tc.limit, OrderByAccess: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != tc.want || len(svc.filters) != tc.requests {
				t.Fatalf("%d memories in %d requests, want %d in %d", len(ms), len(svc.filters), tc.want, tc.requests)
			}
			for i, m := range ms {
				if m.ID != int64(i+1) {
					t.Fatalf("memory %d is #%d: a page was skipped or repeated", i, m.ID)
				}
			}
			for _, f := range svc.filters {
				if !f.OrderByAccess {
					t.Fatalf("a page lost the order: %+v", f)
				}
			}
		})
	}
}
