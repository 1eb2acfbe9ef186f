package skills

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
)

func TestRecordLoads(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	day1 := e.clock.Now()
	rows := func() int {
		t.Helper()
		var n int
		if err := e.db.QueryRow(`SELECT COUNT(*) FROM skill_loads`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := e.store.RecordLoads(ctx, "web:a", []string{"alpha", "beta", "alpha"}, LoadFull); err != nil {
		t.Fatal(err)
	}
	if rows() != 2 {
		t.Fatalf("rows = %d, want 2 (duplicates in one call collapse)", rows())
	}
	// Already recorded today: no write at all (a deleted row is not re-created).
	if _, err := e.db.Exec(`DELETE FROM skill_loads`); err != nil {
		t.Fatal(err)
	}
	e.clock.Advance(time.Hour)
	if err := e.store.RecordLoads(ctx, "web:a", []string{"alpha", "beta"}, LoadFull); err != nil {
		t.Fatal(err)
	}
	if rows() != 0 {
		t.Fatalf("a repeat on the same day wrote %d rows", rows())
	}
	// Another mode, another thread, a new skill: recorded.
	e.store.RecordLoads(ctx, "web:a", []string{"alpha"}, LoadTOC)
	e.store.RecordLoads(ctx, "sub_1", []string{"alpha"}, LoadFull)
	e.store.RecordLoads(ctx, "web:a", []string{"alpha", "gamma"}, LoadFull)
	if rows() != 3 {
		t.Fatalf("rows = %d, want 3", rows())
	}
	// The next UTC day records again.
	e.clock.Advance(24 * time.Hour)
	day2 := e.clock.Now()
	e.store.RecordLoads(ctx, "web:a", []string{"alpha", "beta"}, LoadFull)
	if rows() != 5 {
		t.Fatalf("rows = %d, want 5", rows())
	}

	all, err := e.store.LoadsSince(ctx, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range all {
		got = append(got, fmt.Sprintf("%s/%s/%s@%s", l.Thread, l.Skill, l.Mode, l.At.Format("01-02T15")))
	}
	want := "[sub_1/alpha/full@01-06T10 web:a/alpha/toc@01-06T10 web:a/gamma/full@01-06T10 web:a/alpha/full@01-07T10 web:a/beta/full@01-07T10]"
	if fmt.Sprint(got) != want {
		t.Errorf("loads:\n got %v\nwant %s", got, want)
	}
	cases := []struct {
		name string
		f    LoadFilter
		want int
	}{
		{"since day 2", LoadFilter{Since: day2}, 2},
		{"since day 1", LoadFilter{Since: day1}, 5},
		{"thread", LoadFilter{Thread: "sub_1"}, 1},
		{"skill", LoadFilter{Skill: "alpha"}, 3},
		{"mode", LoadFilter{Mode: LoadTOC}, 1},
		{"limit", LoadFilter{Limit: 2}, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ls, err := e.store.Loads(ctx, c.f)
			if err != nil || len(ls) != c.want {
				t.Fatalf("%d loads, %v; want %d", len(ls), err, c.want)
			}
		})
	}
	if n, err := e.store.PurgeLoads(ctx, day2); err != nil || n != 3 {
		t.Errorf("purge = %d, %v", n, err)
	}
}

func TestRecordLoadsBadInputAndNoDB(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if err := e.store.RecordLoads(ctx, "web:a", []string{"x"}, "partial"); !errors.Is(err, ErrLoadMode) {
		t.Errorf("bad mode: %v", err)
	}
	if err := e.store.RecordLoads(ctx, "web:a", nil, LoadFull); err != nil {
		t.Errorf("no names: %v", err)
	}
	s, err := Open(ctx, Options{DataDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.RecordLoads(ctx, chat.ThreadID("web:a"), []string{"x"}, LoadFull); err != nil {
		t.Errorf("without a database: %v", err)
	}
	if ls, err := s.LoadsSince(ctx, time.Time{}); err != nil || ls != nil {
		t.Errorf("loads without a database: %v, %v", ls, err)
	}
}

func BenchmarkRecordLoadsRepeat(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	names := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	if err := e.store.RecordLoads(ctx, "web:a", names, LoadFull); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if err := e.store.RecordLoads(ctx, "web:a", names, LoadFull); err != nil {
			b.Fatal(err)
		}
	}
}
