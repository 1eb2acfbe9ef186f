package app

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/skills"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

func newSources(t *testing.T, now func() time.Time) *Sources {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ps, err := pulse.Open(ctx, db, pulse.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ss, err := skills.Open(ctx, skills.Options{DataDir: dir, DB: db, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return &Sources{
		MemoriesText: func(context.Context) (string, error) { return "- likes tea\n- lives in Lyon", nil },
		PulseStore:   ps, SkillStore: ss,
	}
}

func TestSources(t *testing.T) {
	ctx := context.Background()
	s := newSources(t, time.Now)
	s.PulseStore.Add(ctx, pulse.NewItem{Text: "Water plants", Priority: 7})
	s.PulseStore.Add(ctx, pulse.NewItem{Text: "Fix auth bug", Priority: 2})
	if _, err := s.SkillStore.Save(ctx, "tea", "Make tea\n1. boil water"); err != nil {
		t.Fatal(err)
	}
	p, err := s.Pulse(ctx)
	if err != nil || p != "[P2] #2: Fix auth bug\n[P7] #1: Water plants" {
		t.Fatalf("pulse = %q, %v", p, err)
	}
	sk, err := s.Skills(ctx)
	if err != nil || len(sk) != 1 || sk[0].Name != "tea" || sk[0].Summary != "Make tea" {
		t.Fatalf("skills = %+v, %v", sk, err)
	}
	sizes, err := s.ComponentSizes(ctx)
	want := agent.ComponentSizes{MemoriesChars: len("- likes tea\n- lives in Lyon"), PulseChars: len(p), SkillsChars: len("Make tea\n1. boil water")}
	if err != nil || sizes != want {
		t.Fatalf("sizes = %+v, %v; want %+v", sizes, err, want)
	}
	if err := s.RecordSkillLoads(ctx, "web:a", []string{"tea"}, agent.SkillLoadTOC); err != nil {
		t.Fatal(err)
	}
	if loads, _ := s.SkillStore.Loads(ctx, skills.LoadFilter{}); len(loads) != 1 || loads[0].Mode != skills.LoadTOC {
		t.Errorf("loads = %+v", loads)
	}
	// Without stores every section is empty, not an error.
	var empty Sources
	if m, _ := empty.Memories(ctx); m != "" {
		t.Error("memories")
	}
	if sz, err := empty.ComponentSizes(ctx); err != nil || sz != (agent.ComponentSizes{}) {
		t.Errorf("empty sizes = %+v, %v", sz, err)
	}
	if err := empty.RecordSkillLoads(ctx, "web:a", []string{"x"}, "full"); err != nil {
		t.Error(err)
	}
}

func TestPulseCommand(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2025, 3, 1, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time { return now }
	s := newSources(t, clock)
	ps := s.PulseStore
	out, err := pulseCommand(ctx, ps, "")
	if err != nil || out != "The pulse is empty: nothing is in progress." {
		t.Fatalf("empty = %q, %v", out, err)
	}
	ps.Add(ctx, pulse.NewItem{Text: "Fix auth bug", Priority: 2})
	done, _ := ps.Add(ctx, pulse.NewItem{Text: "Book flights", Priority: 3})
	dropped, _ := ps.Add(ctx, pulse.NewItem{Text: "Old idea", Priority: 9})
	ps.Complete(ctx, done.ID)
	now = now.Add(24 * time.Hour)
	st := pulse.StatusCancelled
	ps.Update(ctx, dropped.ID, pulse.Patch{Status: &st})

	cases := []struct {
		name, args, want, err string
	}{
		{"active", "", "Active pulse (1):\n[P2] #1: Fix auth bug", ""},
		{"all", " ALL ", "Active pulse (1):\n[P2] #1: Fix auth bug\n\nRecently closed:\n[P9] #3: Old idea (cancelled 2025-03-02)\n[P3] #2: Book flights (completed 2025-03-01)", ""},
		{"bad args", "everything", pulseUsage, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			out, err := pulseCommand(ctx, ps, c.args)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v", err)
				}
				return
			}
			if err != nil || out != c.want {
				t.Fatalf("got %q, %v\nwant %q", out, err, c.want)
			}
		})
	}
}

// BenchmarkSourcesPerTurn is what one turn costs the prompt sources when
// nothing changed: memories, pulse (30 items), skills (50 files), the
// skill-load record and the size check after the reply.
func BenchmarkSourcesPerTurn(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "reverie.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	ps, _ := pulse.Open(ctx, db, pulse.Options{})
	ss, _ := skills.Open(ctx, skills.Options{DataDir: dir, DB: db})
	for i := range 30 {
		ps.Add(ctx, pulse.NewItem{Text: fmt.Sprintf("pulse item %d of typical length for a working memory line", i), Priority: 1 + i%10})
	}
	for i := range 50 {
		if _, err := ss.Save(ctx, fmt.Sprintf("skill-%02d", i), fmt.Sprintf("Skill %d summary\n%s", i, strings.Repeat("A step.\n", 40))); err != nil {
			b.Fatal(err)
		}
	}
	s := &Sources{MemoriesText: func(context.Context) (string, error) { return "- likes tea", nil }, PulseStore: ps, SkillStore: ss}
	for b.Loop() {
		s.Memories(ctx)
		s.Pulse(ctx)
		sk, _ := s.Skills(ctx)
		names := make([]string, len(sk))
		for i, x := range sk {
			names[i] = x.Name
		}
		if err := s.RecordSkillLoads(ctx, "web:a", names, agent.SkillLoadFull); err != nil {
			b.Fatal(err)
		}
		if _, err := s.ComponentSizes(ctx); err != nil {
			b.Fatal(err)
		}
	}
}
