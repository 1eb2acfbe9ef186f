package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"sync"
)

// GroupCommit lets concurrent writers share one transaction (group
// commit). Under SQLite's WAL every commit writes each page it changed to
// the log, so small transactions from concurrent callers (a turn's
// episodes, its events, its log entries) cost a commit each; here the
// first caller to find no write in progress writes every item queued by
// then, its own and those of the callers waiting behind it, and each
// caller returns only once the write that held its item has returned, so
// what it wrote is as durable as if it had committed alone. The zero value
// is ready to use.
type GroupCommit[T any] struct {
	// writer is held (a token in it) by the caller writing a batch. It is
	// a channel, not a mutex, so that a caller waits for either its item's
	// write or the writer's place, whichever comes first: waiting for a
	// mutex, a caller whose item was already written waited for the next
	// batch's write too whenever another caller took the mutex first.
	writer  chan struct{}
	once    sync.Once
	qmu     sync.Mutex // guards queued and writing
	queued  []*groupItem[T]
	writing int // items in the batch being written
}

type groupItem[T any] struct {
	v    T
	done chan struct{}
}

// Write queues v and returns once write has been called with a batch
// holding it. Batches are written one at a time, in the order their items
// were queued, each by one of its callers' write: every caller must pass
// the same function. write reports each item's outcome through the item
// itself (T is usually a pointer to the item and its result); it must not
// panic.
func (g *GroupCommit[T]) Write(v T, write func(batch []T)) {
	g.once.Do(func() { g.writer = make(chan struct{}, 1) })
	it := &groupItem[T]{v: v, done: make(chan struct{})}
	g.qmu.Lock()
	g.queued = append(g.queued, it)
	g.qmu.Unlock()
	select {
	case <-it.done: // written with an earlier caller's batch
		return
	case g.writer <- struct{}{}:
	}
	defer func() { <-g.writer }()
	select {
	case <-it.done: // written just before this caller took the writer's place
		return
	default:
	}
	g.qmu.Lock()
	batch := g.queued
	g.queued = nil
	g.writing = len(batch)
	g.qmu.Unlock()
	vs := make([]T, len(batch))
	for i, b := range batch {
		vs[i] = b.v
	}
	write(vs)
	g.qmu.Lock()
	g.writing = 0
	g.qmu.Unlock()
	for _, b := range batch {
		close(b.done)
	}
}

// Hold runs fn while no batch is being written: it takes the writer's
// place as a caller of Write does (waiting for the batch being written,
// or until ctx ends: then fn does not run and Hold returns ctx's error),
// and the items queued meanwhile wait for it to return, then go in one
// batch.
func (g *GroupCommit[T]) Hold(ctx context.Context, fn func()) error {
	g.once.Do(func() { g.writer = make(chan struct{}, 1) })
	select {
	case <-ctx.Done():
		return ctx.Err()
	case g.writer <- struct{}{}:
	}
	defer func() { <-g.writer }()
	fn()
	return nil
}

// Add queues v without waiting: it is written with the next batch a
// Write call writes (in the order queued, before the items queued after
// it). Someone must call Write later, or it stays queued.
func (g *GroupCommit[T]) Add(v T) {
	g.qmu.Lock()
	g.queued = append(g.queued, &groupItem[T]{v: v, done: make(chan struct{})})
	g.qmu.Unlock()
}

// Queued is how many items wait for a write.
func (g *GroupCommit[T]) Queued() int {
	g.qmu.Lock()
	defer g.qmu.Unlock()
	return len(g.queued)
}

// Pending is how many items wait for a write or are in the batch being
// written: the callers inside Write that have not yet been released. (A
// batch may hold several items: every caller that queued before its writer
// took the batch.)
func (g *GroupCommit[T]) Pending() int {
	g.qmu.Lock()
	defer g.qmu.Unlock()
	return len(g.queued) + g.writing
}

// Savepoint runs fn within a savepoint of tx: what fn wrote is undone when
// it fails, and the rest of the transaction stays (the items of a
// GroupCommit batch each write in one, so that one's failure is its own).
func Savepoint(ctx context.Context, tx *sql.Tx, fn func() error) error {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT item`); err != nil {
		return err
	}
	if err := fn(); err != nil {
		if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO item`); rerr != nil {
			return errors.Join(err, rerr)
		}
		_, rerr := tx.ExecContext(ctx, `RELEASE item`)
		return errors.Join(err, rerr)
	}
	_, err := tx.ExecContext(ctx, `RELEASE item`)
	return err
}
