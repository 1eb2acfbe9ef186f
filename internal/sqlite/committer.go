package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"
)

// Committer is group commit across the stores of one database: the small
// writes of concurrent callers, whatever store each belongs to (an event,
// an interaction log entry, a model call's accounting), run in one
// transaction, each in a savepoint of its own (one's failure is its own),
// and each caller returns only once the transaction holding its write is
// committed, so what it wrote is as durable as if it had committed alone.
// Under SQLite's WAL every commit writes the pages it changed to the log:
// with a store's own GroupCommit only that store's concurrent writes shared
// a commit, and a turn made a dozen commits of one row each.
//
// A write function runs on whichever caller's goroutine writes the batch:
// it must use only the transaction it is given (never the database, nor
// another write through the Committer, which would wait for itself) and
// must not block on anything else.
type Committer struct {
	db *sql.DB
	gc GroupCommit[*committing]
	// batches counts the transactions committed; every checkpointEvery of
	// them signals due, for Run.
	batches atomic.Int64
	due     chan struct{}
	log     *slog.Logger // Run's checkpoint failures, failed deferred writes

	// dmu guards running: whether Run takes care of deferred writes
	// (Defer); deferred signals Run that one was queued.
	dmu      sync.Mutex
	running  bool
	deferred chan struct{}
}

// NewCommitter returns the Committer of db. Run logs a failing checkpoint
// to log (once until one succeeds again); a nil log discards it.
func NewCommitter(db *sql.DB, log *slog.Logger) *Committer {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Committer{db: db, due: make(chan struct{}, 1), log: log, deferred: make(chan struct{}, 1)}
}

// DeferWithin is how soon Run writes a deferred write (Defer) that no
// caller's write has carried.
const DeferWithin = 50 * time.Millisecond

// checkpointEvery is how many shared transactions Run lets commit between
// two checkpoints: a turn's writes dirty a few pages each, so about the
// 1,000 pages after which SQLite's automatic checkpoint would run.
const checkpointEvery = 256

// checkpointIdle is how soon after the last shared transaction Run
// checkpoints what fewer than checkpointEvery of them wrote (and what
// other writers of the database wrote beside them).
const checkpointIdle = 10 * time.Second

// Run checkpoints the WAL of a database opened with
// Options.ManualCheckpoint until ctx ends, then once more: every
// checkpointEvery shared transactions, and within checkpointIdle of the
// last, a passive checkpoint on a connection of its own, which the writes
// go on beside (it takes no write lock) instead of waiting for it as they
// do for the automatic one. What a commit makes durable is unchanged: the
// WAL is synced when it is checkpointed, as before after about as many
// pages, and now also once writing pauses. An idle database is not
// touched.
//
// Run also writes what Defer queued and no caller's write carried, within
// DeferWithin, and at its end; Defer is Write while Run is not running.
func (c *Committer) Run(ctx context.Context) error {
	c.dmu.Lock()
	c.running = true
	c.dmu.Unlock()
	t := time.NewTicker(checkpointIdle)
	defer t.Stop()
	var flush <-chan time.Time // armed while a deferred write waits
	var last int64             // c.batches at the last checkpoint
	failing := false
	checkpoint := func(ctx context.Context) {
		err := c.checkpoint(ctx)
		switch {
		case err != nil && !failing:
			// The WAL keeps the frames (nothing is lost) and grows until a
			// checkpoint succeeds: a full disk or a stuck reader shows here.
			c.log.Warn("database checkpoint failed; the write-ahead log grows until one succeeds", "err", err)
		case err == nil && failing:
			c.log.Info("database checkpoint succeeded again")
		}
		failing = err != nil
	}
	for {
		select {
		case <-ctx.Done():
			c.dmu.Lock()
			c.running = false // Defer writes at once from now on
			c.dmu.Unlock()
			c.flushDeferred(context.WithoutCancel(ctx))
			checkpoint(context.WithoutCancel(ctx))
			return nil
		case <-c.deferred:
			if flush == nil {
				flush = time.After(DeferWithin)
			}
			continue
		case <-flush:
			flush = nil
			c.flushDeferred(ctx)
			continue
		case <-c.due:
		case <-t.C:
			if c.batches.Load() == last {
				continue
			}
		}
		last = c.batches.Load()
		checkpoint(ctx)
	}
}

// checkpoint runs a passive checkpoint; a failure (a full disk, a closed
// database) leaves the frames for the next one. Frames a reader still
// needs are left for the next one too, and are not a failure.
func (c *Committer) checkpoint(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, BusyTimeout)
	defer cancel()
	var busy, log, done int
	if err := c.db.QueryRowContext(ctx, `PRAGMA wal_checkpoint(PASSIVE)`).Scan(&busy, &log, &done); err != nil {
		return fmt.Errorf("checkpoint the write-ahead log: %w", err)
	}
	return nil
}

// Committed is how many shared transactions the Committer has committed.
func (c *Committer) Committed() int64 { return c.batches.Load() }

type committing struct {
	ctx       context.Context
	fn        func(ctx context.Context, tx *sql.Tx) error
	committed func()
	err       error
	// deferred names a write nobody waits for (Defer): its failure is
	// logged.
	deferred string
}

// Defer queues fn like Write but returns at once, without its outcome, for
// a write its caller need not wait for (a model call's accounting, an
// informational event): fn runs in the next shared transaction any
// caller's Write commits — the writes deferred before a Write are
// committed no later than it, in the order queued, so that a turn's next
// write carries those of its own — or, when none comes, in one Run
// commits within DeferWithin, or at Run's end. committed is called as
// with Write. A failure is logged with what. Durability: a crash loses a
// deferred write not yet committed (one queued since the last commit, at
// most DeferWithin before it); Write's callers lose nothing. While Run is
// not running (before it, after it, or without one), Defer is Write.
func (c *Committer) Defer(ctx context.Context, what string, fn func(ctx context.Context, tx *sql.Tx) error, committed func()) {
	c.dmu.Lock()
	if !c.running {
		c.dmu.Unlock()
		if err := c.Write(ctx, fn, committed); err != nil {
			c.log.Warn("a write failed", "what", what, "err", err)
		}
		return
	}
	c.gc.Add(&committing{ctx: context.WithoutCancel(ctx), fn: fn, committed: committed, deferred: what})
	c.dmu.Unlock()
	select {
	case c.deferred <- struct{}{}:
	default: // Run knows already
	}
}

// flushDeferred commits the deferred writes no caller's write carried.
func (c *Committer) flushDeferred(ctx context.Context) {
	if c.gc.Queued() == 0 {
		return
	}
	c.Write(ctx, func(context.Context, *sql.Tx) error { return nil }, nil)
}

// Write runs fn in a transaction shared with the writes of concurrent
// callers and returns once that transaction is committed: fn's error, or
// the commit's. fn is given ctx without its cancellation (a cancelled
// statement would interrupt the whole shared transaction). committed, when set, is called once the write is
// committed, before Write returns, and in the order the writes were
// queued (an event bus tells its watchers in the order of the ids); like
// fn it runs on the batch's writer and must not block. The shared
// transaction is not bound to ctx (the batch holds other callers' writes);
// only ctx's values are kept.
func (c *Committer) Write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error, committed func()) error {
	wctx := context.WithoutCancel(ctx)
	it := &committing{ctx: wctx, fn: fn, committed: committed}
	c.gc.Write(it, func(batch []*committing) { c.write(wctx, batch) })
	return it.err
}

// write runs a batch in one transaction.
func (c *Committer) write(ctx context.Context, batch []*committing) {
	err := Tx(ctx, c.db, func(tx *sql.Tx) error {
		if len(batch) == 1 {
			batch[0].err = batch[0].fn(batch[0].ctx, tx)
			return batch[0].err
		}
		for _, it := range batch {
			it.err = Savepoint(ctx, tx, func() error { return it.fn(it.ctx, tx) })
		}
		return nil
	})
	if err != nil {
		for _, it := range batch {
			it.err = cmp.Or(it.err, err)
			if it.deferred != "" {
				c.log.Warn("a deferred write failed", "what", it.deferred, "err", it.err)
			}
		}
		return
	}
	for _, it := range batch {
		if it.deferred != "" && it.err != nil {
			c.log.Warn("a deferred write failed", "what", it.deferred, "err", it.err)
		}
	}
	if c.batches.Add(1)%checkpointEvery == 0 {
		select {
		case c.due <- struct{}{}:
		default: // one is due already
		}
	}
	for _, it := range batch {
		if it.err == nil && it.committed != nil {
			it.committed()
		}
	}
}
