package app

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/versioning"
	"github.com/reverie-ai/reverie/internal/world"
)

// TestRestoreWhileRunning restores an earlier state of the data dir through
// the API service while the agent runs, and checks that the running
// components see it at once: the world state, the MEMORIES.txt working set
// and the memory store, and the skills.
func TestRestoreWhileRunning(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	a, base, stop := startApp(t, dir)
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	waitHealthy(t, a, base)
	ctx := t.Context()
	hist := a.API.History
	if hist == nil {
		t.Fatal("no history service")
	}
	setName := func(name string) {
		t.Helper()
		if _, err := findTool(t, a, world.ToolName).Call(ctx, json.RawMessage(`{"ops":[{"op":"set_user_name","value":"`+name+`"}]}`)); err != nil {
			t.Fatal(err)
		}
	}
	const line = "Ada plays the cello on Sundays."

	// The state to come back to: user Ada, a memory line, a skill.
	setName("Ada")
	rem, err := a.Memory.Remember(ctx, memory.Memory{Text: line, Kind: memory.KindFact, Source: memory.SourceUserExplicit}, true)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Skills.Save(ctx, "tea", "How to make tea\n1. Boil water"); err != nil {
		t.Fatal(err)
	}
	target := head(t, a.Versions)

	// Then it changes: another name, the memory forgotten, the skill gone.
	setName("Bob")
	if _, err := a.Memory.Forget(ctx, rem.ID); err != nil {
		t.Fatal(err)
	}
	if err := a.Skills.Delete(ctx, "tea"); err != nil {
		t.Fatal(err)
	}
	if ws, _ := a.Memory.WorkingSet(ctx); strings.Contains(ws, line) {
		t.Fatal("the forgotten line is still in MEMORIES.txt")
	}
	if got, _ := a.Memory.FindExact(ctx, line); len(got) != 0 {
		t.Fatalf("the forgotten memory is still stored: %+v", got)
	}

	// The list shows the changes, newest first; one opens with its diff.
	revs, err := hist.List(ctx, api.HistoryQuery{Limit: 10})
	if err != nil || len(revs) < 4 {
		t.Fatalf("list: %v %+v", err, revs)
	}
	// Three changes since the target: the name, the memory, the skill.
	if idx := slices.IndexFunc(revs, func(r api.Revision) bool { return r.Hash == target.Hash }); idx != 3 {
		t.Fatalf("target %s at %d in %+v", target.Short, idx, revs)
	}
	mem, err := hist.List(ctx, api.HistoryQuery{Path: "MEMORIES.txt"})
	if err != nil || len(mem) == 0 || !slices.Contains(mem[0].Files, "MEMORIES.txt") {
		t.Fatalf("list of MEMORIES.txt: %v %+v", err, mem)
	}
	d, err := hist.Get(ctx, mem[0].Short)
	if err != nil || !strings.Contains(d.Patch, "-"+line) || d.Truncated {
		t.Fatalf("diff of %s: %v %+v", mem[0].Short, err, d)
	}

	// Restore through the service.
	res, err := hist.Restore(ctx, target.Short)
	if err != nil {
		t.Fatal(err)
	}
	if res.Target.Hash != target.Hash || res.Revision == nil || res.Revision.Message == "" ||
		!strings.HasPrefix(res.Revision.Message, "restore "+target.Short) {
		t.Fatalf("restore result %+v", res)
	}
	for _, f := range []string{"MEMORIES.txt", world.FileName, "skills/tea.md"} {
		if !slices.Contains(res.Revision.Files, f) {
			t.Errorf("restore commit files %v lack %s", res.Revision.Files, f)
		}
	}

	// The world state is back, in the store and in the prompt.
	if name := a.World.Get().Identity.UserName; name != "Ada" {
		t.Errorf("user name after restore = %q", name)
	}
	if block, _ := (worldContext{a.World}).PromptContext(ctx, extension.ContextRequest{}); !strings.Contains(block, "User: Ada") {
		t.Errorf("world context after restore = %q", block)
	}
	// The memory line is back in the working set (the prompt's memories)
	// and a current memory of the store again.
	if ws, err := a.Sources.Memories(ctx); err != nil || !strings.Contains(ws, line) {
		t.Errorf("memories section after restore = %q, %v", ws, err)
	}
	if got, err := a.Memory.FindExact(ctx, line); err != nil || len(got) != 1 || got[0].ValidTo != nil {
		t.Errorf("stored memory after restore = %+v, %v", got, err)
	}
	// The skill is back.
	if sk, err := a.Sources.Skills(ctx); err != nil || !slices.ContainsFunc(sk, func(s prompt.Skill) bool { return s.Name == "tea" }) {
		t.Errorf("skills after restore = %+v, %v", sk, err)
	}

	// The page is told.
	evs, err := a.Bus.Recent(ctx, api.TopicHistoryRestored, 0, 10)
	if err != nil || len(evs) != 1 {
		t.Fatalf("restore events %+v, %v", evs, err)
	}
	var payload api.RestoreResult
	if err := json.Unmarshal(evs[0].Payload, &payload); err != nil || payload.Revision == nil || payload.Revision.Hash != res.Revision.Hash {
		t.Errorf("event payload %s: %v", evs[0].Payload, err)
	}
	// The restore is the newest change.
	if revs, _ := hist.List(ctx, api.HistoryQuery{Limit: 1}); len(revs) != 1 || revs[0].Hash != res.Revision.Hash {
		t.Errorf("newest change %+v", revs)
	}
	// Restoring the state again changes nothing and records nothing.
	again, err := hist.Restore(ctx, res.Revision.Hash)
	if err != nil || again.Revision != nil {
		t.Errorf("second restore %+v, %v", again, err)
	}
	// A turn after the restore writes on top of the restored state.
	setName("Cleo")
	if w := a.World.Get(); w.Identity.UserName != "Cleo" {
		t.Errorf("user name after a later change = %q", w.Identity.UserName)
	}
}

func TestHistoryErrors(t *testing.T) {
	a := newBareApp(t, filepath.Join(t.TempDir(), "data"))
	defer a.Close()
	ctx := t.Context()
	hist := a.API.History
	if hist == nil {
		t.Fatal("no history service")
	}
	tests := []struct {
		name string
		call func() error
		want error
	}{
		{"unknown revision", func() error { _, err := hist.Get(ctx, "nope"); return err }, api.ErrNotFound},
		{"unknown hash", func() error { _, err := hist.Get(ctx, "0000000"); return err }, api.ErrNotFound},
		{"restore of an unknown revision", func() error { _, err := hist.Restore(ctx, "ffff"); return err }, api.ErrNotFound},
		{"past the first change", func() error { _, err := hist.Get(ctx, "HEAD~5"); return err }, api.ErrNotFound},
		{"path outside the versioned files", func() error { _, err := hist.List(ctx, api.HistoryQuery{Path: "config.yaml"}); return err }, api.ErrInvalid},
		{"path leaving the data dir", func() error { _, err := hist.List(ctx, api.HistoryQuery{Path: "../x"}); return err }, api.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.call(); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestHistoryErrorMapping(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want error
	}{
		{"unknown", fmt.Errorf("show: %w: %q", versioning.ErrUnknownRevision, "x"), api.ErrNotFound},
		{"ambiguous", fmt.Errorf("show: %w", versioning.ErrAmbiguousRevision), api.ErrInvalid},
		{"not versioned", fmt.Errorf("history: %w", versioning.ErrNotTracked), api.ErrInvalid},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := historyError(tc.err); !errors.Is(got, tc.want) || !strings.Contains(got.Error(), tc.err.Error()) {
				t.Errorf("historyError = %v, want %v with the message", got, tc.want)
			}
		})
	}
	if historyError(nil) != nil {
		t.Error("historyError(nil) != nil")
	}
	other := errors.New("disk on fire")
	if got := historyError(other); got != other {
		t.Errorf("other error mapped to %v", got)
	}
	// Without a history the feature is off (501 on the API).
	svc := &api.Services{}
	(&App{}).fillFeatureServices(svc)
	if svc.History != nil {
		t.Error("history offered without App.Versions")
	}
}

func TestTruncatePatch(t *testing.T) {
	tests := []struct {
		name, in string
		n        int
		want     string
		cut      bool
	}{
		{"short", "a\nb\n", 10, "a\nb\n", false},
		{"exact", "a\nb\n", 4, "a\nb\n", false},
		{"cut at a line end", "aa\nbb\ncc\n", 7, "aa\nbb\n", true},
		{"one long line", "abcdef", 3, "abc", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := truncatePatch(tc.in, tc.n)
			if got != tc.want || cut != tc.cut {
				t.Errorf("truncatePatch(%q, %d) = %q, %v", tc.in, tc.n, got, cut)
			}
		})
	}
}

// BenchmarkHistoryRestore measures one restore through the API service on
// a fresh data dir (the default files): the restore and its commit, the
// reloads (world state, skills, memory reconcile) and the event, alternating
// between two states that differ in MEMORIES.txt and world_state.json.
func BenchmarkHistoryRestore(b *testing.B) {
	a, err := New(b.Context(), Options{DataDir: filepath.Join(b.TempDir(), "data"), Env: []string{"REVERIE_LOG__FILE=false"},
		Console: io.Discard, Registry: []extension.Info{}})
	if err != nil {
		b.Fatal(err)
	}
	defer a.Close()
	ctx := b.Context()
	first, _ := a.Versions.Head(ctx)
	if _, err := a.Memory.Remember(ctx, memory.Memory{Text: "Ada plays the cello.", Kind: memory.KindFact, Source: memory.SourceUserExplicit}, true); err != nil {
		b.Fatal(err)
	}
	if _, err := a.World.Apply(ctx, []world.Op{world.SetUserName{UserName: "Ada"}}); err != nil {
		b.Fatal(err)
	}
	second, _ := a.Versions.Head(ctx)
	revs := []string{first.Hash, second.Hash}
	b.ResetTimer()
	for i := range b.N {
		res, err := a.API.History.Restore(ctx, revs[i%2])
		if err != nil || res.Revision == nil {
			b.Fatalf("restore %d: %+v %v", i, res, err)
		}
	}
}
