package pulse

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension/extensiontest"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite golden files")

var t0 = time.Date(2025, time.January, 6, 9, 0, 0, 0, time.UTC)

type env struct {
	db      *sql.DB
	store   *Store
	clock   *extensiontest.Clock
	mu      sync.Mutex
	changes []Change
}

func (e *env) recorded() []Change {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]Change(nil), e.changes...)
}

func newEnv(t testing.TB) *env {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &env{db: db, clock: extensiontest.NewClock(t0)}
	e.store, err = Open(ctx, db, Options{Now: e.clock.Now, Changed: func(_ context.Context, c Change) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.changes = append(e.changes, c)
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.store.Close() })
	return e
}

func (e *env) add(t testing.TB, text string, prio int) Item {
	t.Helper()
	it, err := e.store.Add(context.Background(), NewItem{Text: text, Priority: prio})
	if err != nil {
		t.Fatalf("add %q: %v", text, err)
	}
	return it
}

func ptr[T any](v T) *T { return &v }

func TestAddGetAndDefaults(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	it, err := e.store.Add(ctx, NewItem{Text: "  Fix   the\nauth bug  ", Thread: "web:a", Source: SourceUser})
	if err != nil {
		t.Fatal(err)
	}
	want := Item{ID: 1, Text: "Fix the auth bug", Priority: DefaultPriority, Status: StatusActive, Thread: "web:a",
		Source: SourceUser, CreatedAt: t0, UpdatedAt: t0}
	if it != want {
		t.Fatalf("added %+v\nwant  %+v", it, want)
	}
	got, err := e.store.Get(ctx, 1)
	if err != nil || got != want {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if it.Line() != "[P5] #1: Fix the auth bug" {
		t.Errorf("line = %q", it.Line())
	}
	// Reopening the store on the same database keeps items (migrations run once).
	s2, err := Open(ctx, e.db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := s2.Get(ctx, 1); err != nil || got.Text != want.Text {
		t.Fatalf("after reopen: %+v, %v", got, err)
	}
}

func TestBadInput(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.add(t, "existing", 3)
	long := strings.Repeat("x", MaxTextChars+1)
	cases := []struct {
		name string
		run  func() error
		want error
		says string // the whole error text, when set
	}{
		{"empty text", func() error { _, err := e.store.Add(ctx, NewItem{Text: " \n\t"}); return err }, ErrEmpty, "pulse item text is empty"},
		{"huge text", func() error { _, err := e.store.Add(ctx, NewItem{Text: long}); return err }, ErrTooLong, ""},
		{"secret", func() error {
			_, err := e.store.Add(ctx, NewItem{Text: "rotate sk-proj-abcdefghijklmnopqrstuvwx1234"})
			return err
		}, ErrSecret, ""},
		{"priority 11", func() error { _, err := e.store.Add(ctx, NewItem{Text: "x", Priority: 11}); return err }, ErrPriority,
			"priority must be between 1 (urgent) and 10 (low) (got 11)"},
		{"negative priority", func() error { _, err := e.store.Add(ctx, NewItem{Text: "x", Priority: -1}); return err }, ErrPriority, ""},
		{"get unknown", func() error { _, err := e.store.Get(ctx, 99); return err }, ErrNotFound, "pulse item 99 not found"},
		{"update unknown", func() error { _, err := e.store.Update(ctx, 99, Patch{Text: ptr("y")}); return err }, ErrNotFound, "pulse item 99 not found"},
		{"complete unknown", func() error { _, err := e.store.Complete(ctx, 99); return err }, ErrNotFound, ""},
		{"empty patch", func() error { _, err := e.store.Update(ctx, 1, Patch{}); return err }, ErrNoChange, ""},
		{"update empty text", func() error { _, err := e.store.Update(ctx, 1, Patch{Text: ptr("  ")}); return err }, ErrEmpty, ""},
		{"update priority", func() error { _, err := e.store.Update(ctx, 1, Patch{Priority: ptr(0)}); return err }, ErrPriority, ""},
		{"update status", func() error { _, err := e.store.Update(ctx, 1, Patch{Status: ptr(Status("done!"))}); return err }, ErrStatus, ""},
		{"list status", func() error { _, err := e.store.List(ctx, Filter{Status: "open"}); return err }, ErrStatus, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := c.run()
			if !errors.Is(err, c.want) || c.says != "" && err.Error() != c.says {
				t.Fatalf("err = %v, want %v (%q)", err, c.want, c.says)
			}
		})
	}
	// Nothing was lost or changed by the rejected calls.
	items, err := e.store.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 1 || items[0].Text != "existing" || items[0].Priority != 3 || items[0].Status != StatusActive {
		t.Fatalf("items after bad input: %+v", items)
	}
	if rev, _, _ := e.store.Revision(ctx); rev != 1 {
		t.Errorf("revision = %d, want 1 (only the one add)", rev)
	}
}

func TestUpdateTransitions(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.add(t, "draft report", 4)
	steps := []struct {
		name          string
		patch         Patch
		want          Item // ID, Text, Priority, Status checked
		completed     bool
		revisionAfter int64
	}{
		{"reword", Patch{Text: ptr("draft the Q1 report")}, Item{Text: "draft the Q1 report", Priority: 4, Status: StatusActive}, false, 2},
		{"reprioritise", Patch{Priority: ptr(1)}, Item{Text: "draft the Q1 report", Priority: 1, Status: StatusActive}, false, 3},
		{"same values change nothing", Patch{Priority: ptr(1), Text: ptr("draft  the Q1 report")}, Item{Text: "draft the Q1 report", Priority: 1, Status: StatusActive}, false, 3},
		{"complete", Patch{Status: ptr(StatusCompleted)}, Item{Text: "draft the Q1 report", Priority: 1, Status: StatusCompleted}, true, 4},
		{"complete again", Patch{Status: ptr(StatusCompleted)}, Item{Text: "draft the Q1 report", Priority: 1, Status: StatusCompleted}, true, 4},
		{"reopen", Patch{Status: ptr(StatusActive)}, Item{Text: "draft the Q1 report", Priority: 1, Status: StatusActive}, false, 5},
		{"cancel", Patch{Status: ptr(StatusCancelled)}, Item{Text: "draft the Q1 report", Priority: 1, Status: StatusCancelled}, true, 6},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			e.clock.Advance(time.Minute)
			it, err := e.store.Update(ctx, 1, s.patch)
			if err != nil {
				t.Fatal(err)
			}
			if it.Text != s.want.Text || it.Priority != s.want.Priority || it.Status != s.want.Status {
				t.Errorf("item = %+v, want %+v", it, s.want)
			}
			if got := !it.CompletedAt.IsZero(); got != s.completed {
				t.Errorf("completed_at set = %v, want %v", got, s.completed)
			}
			if rev, _, _ := e.store.Revision(ctx); rev != s.revisionAfter {
				t.Errorf("revision = %d, want %d", rev, s.revisionAfter)
			}
		})
	}
	if n := len(e.recorded()); n != 6 {
		t.Errorf("hook called %d times, want 6 (1 add + 5 real changes)", n)
	}
}

func TestFormatGolden(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.add(t, "Water the plants", 7)
	e.add(t, "Fix auth bug", 2)
	e.add(t, "Book flights to Lisbon before prices rise", 3)
	e.add(t, "Reply to Ana about the weekend", 2)
	done := e.add(t, "Renew passport", 1)
	cancelled := e.add(t, "Old idea", 9)
	if _, err := e.store.Complete(ctx, done.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Update(ctx, cancelled.ID, Patch{Status: ptr(StatusCancelled)}); err != nil {
		t.Fatal(err)
	}
	got, err := e.store.Format(ctx)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "format.golden", got)
	if empty, _ := newEnv(t).store.Format(ctx); empty != "" {
		t.Errorf("empty pulse formats as %q", empty)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch:\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestListOrderAndFilter(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.add(t, "a", 5)
	e.add(t, "b", 1)
	c := e.add(t, "c", 3)
	d := e.add(t, "d", 3)
	e.clock.Advance(time.Hour)
	e.store.Complete(ctx, c.ID)
	e.clock.Advance(time.Hour)
	e.store.Complete(ctx, d.ID)
	if _, err := e.store.Add(ctx, NewItem{Text: "e", Priority: 2, Thread: "cli:x"}); err != nil {
		t.Fatal(err)
	}
	texts := func(items []Item) string {
		var s []string
		for _, it := range items {
			s = append(s, it.Text)
		}
		return strings.Join(s, ",")
	}
	cases := []struct {
		name string
		f    Filter
		want string
	}{
		{"all: active by priority, then closed newest first", Filter{}, "b,e,a,d,c"},
		{"active", Filter{Status: StatusActive}, "b,e,a"},
		{"completed", Filter{Status: StatusCompleted}, "d,c"},
		{"thread", Filter{Thread: "cli:x"}, "e"},
		{"limit", Filter{Limit: 2}, "b,e"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			items, err := e.store.List(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			if got := texts(items); got != tc.want {
				t.Errorf("got %s, want %s", got, tc.want)
			}
		})
	}
	if n, err := e.store.CountActive(ctx); err != nil || n != 3 {
		t.Errorf("CountActive = %d, %v", n, err)
	}
}

func TestPurgeCompleted(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	old := e.add(t, "old done", 5)
	oldCancelled := e.add(t, "old cancelled", 5)
	active := e.add(t, "still active", 5)
	e.store.Complete(ctx, old.ID)
	e.store.Update(ctx, oldCancelled.ID, Patch{Status: ptr(StatusCancelled)})
	e.clock.Advance(20 * 24 * time.Hour)
	recent := e.add(t, "recent done", 5)
	e.store.Complete(ctx, recent.ID)
	e.clock.Advance(11 * 24 * time.Hour) // old ones closed 31 days ago, recent 11

	rev0, _, _ := e.store.Revision(ctx)
	n, err := e.store.PurgeCompleted(ctx, 0)
	if err != nil || n != 2 {
		t.Fatalf("purged %d, %v; want 2", n, err)
	}
	items, _ := e.store.List(ctx, Filter{})
	if len(items) != 2 || items[0].ID != active.ID || items[1].ID != recent.ID {
		t.Fatalf("left: %+v", items)
	}
	rev1, at, _ := e.store.Revision(ctx)
	if rev1 != rev0+1 || !at.Equal(e.clock.Now()) {
		t.Errorf("revision %d → %d at %v", rev0, rev1, at)
	}
	if n, _ := e.store.PurgeCompleted(ctx, 0); n != 0 {
		t.Errorf("second purge removed %d", n)
	}
	if rev2, _, _ := e.store.Revision(ctx); rev2 != rev1 {
		t.Errorf("an empty purge bumped the revision")
	}
	ch := e.recorded()
	if last := ch[len(ch)-1]; last.Action != ChangePurged || last.Count != 2 {
		t.Errorf("last change = %+v", last)
	}
	// Ids are never reused after a purge.
	if it := e.add(t, "new", 5); it.ID != 5 {
		t.Errorf("new id = %d, want 5", it.ID)
	}
}

func TestDeleteAndThreadPatch(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	a := e.add(t, "a", 1)
	b := e.add(t, "b", 2)
	if err := e.store.Delete(ctx, a.ID); err != nil {
		t.Fatal(err)
	}
	if err := e.store.Delete(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := e.store.Get(ctx, a.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get deleted: %v", err)
	}
	it, err := e.store.Update(ctx, b.ID, Patch{Thread: ptr(chat.ThreadID("telegram:42"))})
	if err != nil || it.Thread != "telegram:42" {
		t.Fatalf("thread patch = %+v, %v", it, err)
	}
	ch := e.recorded()
	if got := ch[2]; got.Action != ChangeDeleted || got.ID != a.ID || got.Revision != 3 {
		t.Errorf("delete change = %+v", got)
	}
	if got := FormatItems([]Item{it}); got != "[P2] #2: b" {
		t.Errorf("format = %q", got)
	}
}

func TestRevisionStartsAtZero(t *testing.T) {
	e := newEnv(t)
	rev, at, err := e.store.Revision(context.Background())
	if err != nil || rev != 0 || !at.IsZero() {
		t.Fatalf("revision = %d %v %v", rev, at, err)
	}
}

func TestConcurrentWriters(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const writers, each = 8, 20
	var wg sync.WaitGroup
	errs := make(chan error, writers*each)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				it, err := e.store.Add(ctx, NewItem{Text: fmt.Sprintf("w%d item %d", w, i), Priority: 1 + i%10})
				if err != nil {
					errs <- err
					continue
				}
				if i%2 == 0 {
					if _, err := e.store.Complete(ctx, it.ID); err != nil {
						errs <- err
					}
				}
				if _, err := e.store.Format(ctx); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	all, err := e.store.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != writers*each {
		t.Fatalf("%d items, want %d", len(all), writers*each)
	}
	ids := map[int64]bool{}
	for _, it := range all {
		if ids[it.ID] {
			t.Fatalf("duplicate id %d", it.ID)
		}
		ids[it.ID] = true
	}
	if n, _ := e.store.CountActive(ctx); n != writers*each/2 {
		t.Errorf("active = %d", n)
	}
	if rev, _, _ := e.store.Revision(ctx); rev != writers*each*3/2 {
		t.Errorf("revision = %d, want %d", rev, writers*each*3/2)
	}
}

func TestParseStatus(t *testing.T) {
	cases := map[string]Status{"active": StatusActive, " Done ": StatusCompleted, "complete": StatusCompleted,
		"completed": StatusCompleted, "canceled": StatusCancelled, "dropped": StatusCancelled, "CANCELLED": StatusCancelled}
	for in, want := range cases {
		if got, err := ParseStatus(in); err != nil || got != want {
			t.Errorf("ParseStatus(%q) = %q, %v", in, got, err)
		}
	}
	if _, err := ParseStatus("paused"); !errors.Is(err, ErrStatus) {
		t.Errorf("paused: %v", err)
	}
}

func BenchmarkFormat(b *testing.B) {
	e := newEnv(b)
	for i := range 30 {
		e.add(b, fmt.Sprintf("pulse item number %d with a typical length of text", i), 1+i%10)
	}
	ctx := context.Background()
	b.ResetTimer()
	for b.Loop() {
		if _, err := e.store.Format(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRevision(b *testing.B) {
	e := newEnv(b)
	e.add(b, "x", 1)
	ctx := context.Background()
	for b.Loop() {
		if _, _, err := e.store.Revision(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFormatCacheFollowsChanges(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	format := func() string {
		t.Helper()
		s, err := e.store.Format(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if got := format(); got != "" {
		t.Fatalf("empty = %q", got)
	}
	e.add(t, "one", 3)
	if got := format(); got != "[P3] #1: one" {
		t.Fatalf("after add = %q", got)
	}
	if got := format(); got != "[P3] #1: one" {
		t.Fatalf("cached = %q", got)
	}
	e.store.Update(ctx, 1, Patch{Priority: ptr(1)})
	if got := format(); got != "[P1] #1: one" {
		t.Fatalf("after update = %q", got)
	}
	// A second store on the same database (another writer) is seen too.
	other, err := Open(ctx, e.db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	other.Complete(ctx, 1)
	if got := format(); got != "" {
		t.Fatalf("after another store's complete = %q", got)
	}
}
