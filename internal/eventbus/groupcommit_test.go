package eventbus

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// TestPublishGroupCommit: Publish calls that wait for one another are
// written together (one transaction, one insert): each caller
// gets its own event's id once it is committed, the ids are distinct and
// consecutive, the stored events are the callers', and a watcher sees every
// one.
func TestPublishGroupCommit(t *testing.T) {
	ctx := context.Background()
	db, _ := tempDB(t)
	b := openBus(t, db, Options{})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := b.Watch(wctx, "gc.", 64)

	const callers = 10
	ids := make([]int64, callers)
	errs := make([]error, callers)
	// One call takes the writer and, once its event is committed, waits to
	// hand it to the watchers; the others queue up behind it and are
	// written together, after it.
	b.wmu.Lock()
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			ids[c], errs[c] = b.PublishID(ctx, "gc.test", map[string]int{"caller": c})
		})
	}
	// Every caller is inside Write: the first writer's batch may hold
	// more than its own item (those queued before it took the batch).
	for b.pubs.Pending() < callers {
		runtime.Gosched()
	}
	b.wmu.Unlock()
	wg.Wait()

	for c, err := range errs {
		if err != nil || ids[c] == 0 {
			t.Fatalf("caller %d: id %d, %v", c, ids[c], err)
		}
	}
	sorted := slices.Sorted(slices.Values(ids))
	for i := 1; i < len(sorted); i++ {
		if sorted[i] != sorted[i-1]+1 {
			t.Fatalf("ids %v are not distinct and consecutive", sorted)
		}
	}
	evs, err := b.Recent(ctx, "gc.", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != callers {
		t.Fatalf("%d events stored, want %d", len(evs), callers)
	}
	for _, ev := range evs {
		var p struct{ Caller int }
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if ids[p.Caller] != ev.ID {
			t.Errorf("event %d holds caller %d's payload, whose id is %d", ev.ID, p.Caller, ids[p.Caller])
		}
	}
	got := map[int64]bool{}
	for range callers {
		ev := <-watch
		got[ev.ID] = true
	}
	for c, id := range ids {
		if !got[id] {
			t.Errorf("the watcher missed caller %d's event %d", c, id)
		}
	}
}

// TestPublishSharedCommits: Publish through the database's shared group
// commit (Options.Commits) stores each event once, with the id it returns,
// and a watcher is told of the events in the order of their ids, each once
// it is committed.
func TestPublishSharedCommits(t *testing.T) {
	ctx := context.Background()
	db, _ := tempDB(t)
	b := openBus(t, db, Options{Commits: sqlite.NewCommitter(db, nil)})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := b.Watch(wctx, "gc.", 64)

	const callers = 10
	ids := make([]int64, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			var err error
			if ids[c], err = b.PublishID(ctx, "gc.test", map[string]int{"caller": c}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	evs, err := b.Recent(ctx, "gc.", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != callers {
		t.Fatalf("%d events stored, want %d", len(evs), callers)
	}
	for _, ev := range evs {
		var p struct{ Caller int }
		if err := json.Unmarshal(ev.Payload, &p); err != nil {
			t.Fatal(err)
		}
		if ids[p.Caller] != ev.ID {
			t.Errorf("event %d holds caller %d's payload, whose id is %d", ev.ID, p.Caller, ids[p.Caller])
		}
	}
	var seen []int64
	for range callers {
		seen = append(seen, (<-watch).ID)
	}
	if !slices.IsSorted(seen) || !slices.Equal(slices.Sorted(slices.Values(ids)), seen) {
		t.Errorf("the watcher saw %v, want every id %v in order", seen, ids)
	}
}

// TestPublishTx: an event written within a write of the shared group
// commit is stored with that write's other rows, or not at all when the
// write fails; a watcher is told of it only once it is committed, through
// the function PublishTx returns; a bus without Options.Commits refuses.
func TestPublishTx(t *testing.T) {
	ctx := context.Background()
	db, _ := tempDB(t)
	commits := sqlite.NewCommitter(db, nil)
	b := openBus(t, db, Options{Commits: commits})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := b.Watch(wctx, "tx.", 64)
	if _, err := db.ExecContext(ctx, `CREATE TABLE beside (v TEXT)`); err != nil {
		t.Fatal(err)
	}

	var told []func()
	err := commits.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO beside (v) VALUES ('kept')`); err != nil {
			return err
		}
		for _, n := range []int{1, 2} {
			published, err := b.PublishTx(ctx, tx, "tx.kept", map[string]int{"n": n})
			if err != nil {
				return err
			}
			told = append(told, published)
		}
		select {
		case ev := <-watch:
			t.Errorf("the watcher was told of event %d before its transaction was committed", ev.ID)
		default:
		}
		return nil
	}, func() {
		for _, f := range told {
			f()
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	failed := errors.New("the write fails after its event")
	err = commits.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO beside (v) VALUES ('undone')`); err != nil {
			return err
		}
		if _, err := b.PublishTx(ctx, tx, "tx.undone", nil); err != nil {
			return err
		}
		return failed
	}, func() { t.Error("committed called for a failed write") })
	if !errors.Is(err, failed) {
		t.Fatalf("the failing write returned %v, want %v", err, failed)
	}

	evs, err := b.Recent(ctx, "tx.", 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	var topics []string
	for _, ev := range evs {
		topics = append(topics, ev.Topic)
	}
	if !slices.Equal(topics, []string{"tx.kept", "tx.kept"}) {
		t.Errorf("stored events %q, want the two of the committed write", topics)
	}
	var rows []string
	if rows, err = sqlite.Rows(ctx, db, sqlite.Scan1[string], `SELECT v FROM beside`); err != nil || !slices.Equal(rows, []string{"kept"}) {
		t.Errorf("rows beside the events: %q, %v; want only the committed write's", rows, err)
	}
	for i := range 2 {
		if ev := <-watch; ev.ID != evs[i].ID {
			t.Errorf("the watcher was told of event %d, want %d", ev.ID, evs[i].ID)
		}
	}
	select {
	case ev := <-watch:
		t.Errorf("the watcher was told of event %d (%s) too", ev.ID, ev.Topic)
	default:
	}

	alone := openBus(t, db, Options{})
	err = sqlite.Tx(ctx, db, func(tx *sql.Tx) error {
		_, err := alone.PublishTx(ctx, tx, "tx.alone", nil)
		return err
	})
	if !errors.Is(err, ErrNoSharedCommits) {
		t.Errorf("PublishTx on a bus without Options.Commits: %v, want ErrNoSharedCommits", err)
	}
}

// TestPublishDeferred: a deferred event is stored with the next event
// published after it, before it (a lower id), and its watchers learn of it
// first; with the shared group commit's Run not running it is stored at
// once.
func TestPublishDeferred(t *testing.T) {
	ctx := context.Background()
	db, _ := tempDB(t)
	commits := sqlite.NewCommitter(db, nil)
	b := openBus(t, db, Options{Commits: commits})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watch := b.Watch(wctx, "d.", 8)

	if err := b.PublishDeferred(ctx, "d.at-once", nil); err != nil {
		t.Fatal(err)
	}
	if evs, err := b.Recent(ctx, "d.", 0, 10); err != nil || len(evs) != 1 {
		t.Fatalf("without Run: %d events stored (%v), want the deferred one at once", len(evs), err)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- commits.Run(rctx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	// Run's wait for deferred writes may or may not have begun: either
	// way the deferred event comes before the one published after it.
	if err := b.PublishDeferred(ctx, "d.deferred", nil); err != nil {
		t.Fatal(err)
	}
	if err := b.Publish(ctx, "d.after", nil); err != nil {
		t.Fatal(err)
	}
	evs, err := b.Recent(ctx, "d.", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := topicsOf(evs); !slices.Equal(got, []string{"d.at-once", "d.deferred", "d.after"}) {
		t.Errorf("stored %q", got)
	}
	var seen []string
	for range 3 {
		seen = append(seen, (<-watch).Topic)
	}
	if !slices.Equal(seen, []string{"d.at-once", "d.deferred", "d.after"}) {
		t.Errorf("the watcher saw %q", seen)
	}
	if err := b.PublishDeferred(ctx, "Bad Topic", nil); err == nil {
		t.Error("PublishDeferred took an invalid topic")
	}
}

func topicsOf(evs []extension.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Topic)
	}
	return out
}
