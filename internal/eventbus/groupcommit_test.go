package eventbus

import (
	"context"
	"encoding/json"
	"runtime"
	"slices"
	"sync"
	"testing"

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
