package sqlite

import (
	"cmp"
	"context"
	"database/sql"
	"database/sql/driver"
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
	// every is how many shared transactions make a checkpoint due
	// (checkpointEvery; tests set less).
	every int64
	// Run's: the database's page size and journal_size_limit, read at its
	// first checkpoint (see checkpoint); checkpoints counts the
	// checkpoints it began, restarts the RESTART ones among them.
	pageSize, walLimit    int64
	checkpoints, restarts atomic.Int64

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
	return &Committer{db: db, every: checkpointEvery, due: make(chan struct{}, 1), log: log, deferred: make(chan struct{}, 1)}
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
//
// The log restarts from its start only when a write begins after a
// checkpoint that copied every frame, which writes that never pause rarely
// leave room for: each passive checkpoint takes milliseconds (it syncs
// both files), and the writes committed meanwhile are not copied, so the
// log grew by what they wrote (97 MB in 600 back-to-back turns). Once the
// log holds more than restartFactor times the database's
// journal_size_limit (Options.WALLimit), the checkpoint catches up
// instead: a second passive one copies most of what the first left, then,
// holding back the Committer's writes (they queue and go in one batch
// after it), a RESTART checkpoint copies the rest and waits, at most
// restartWait, for readers still reading older frames. The next write
// restarts the log, and its commit cuts the file back to the limit. What
// the writes wait for is the last frames' copy and the two files' sync
// (3–20 ms on a loaded machine), once every few checkpoints of writes that
// never pause; a checkpoint that cannot finish (a reader longer than
// restartWait, another writer) leaves it for the next.
func (c *Committer) checkpoint(ctx context.Context) error {
	c.checkpoints.Add(1)
	ctx, cancel := context.WithTimeout(ctx, BusyTimeout)
	defer cancel()
	busy, log, done, err := c.walCheckpoint(ctx, c.db, "PASSIVE")
	if err != nil {
		return err
	}
	if busy != 0 || log < 0 {
		return nil
	}
	if err := c.readLimit(ctx); err != nil {
		return err
	}
	if c.walLimit < 0 || int64(log)*c.pageSize <= restartFactor*c.walLimit {
		return nil
	}
	if log-done > restartResidual {
		if _, _, _, err := c.walCheckpoint(ctx, c.db, "PASSIVE"); err != nil {
			return err
		}
	}
	conn, err := c.db.Conn(ctx)
	if err != nil {
		return fmt.Errorf("checkpoint the write-ahead log: %w", err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, restartWait.Milliseconds())); err != nil {
		return fmt.Errorf("checkpoint the write-ahead log: %w", err)
	}
	defer func() {
		// Even when ctx is done (the restart took its time, or Run ends),
		// within resetWait of its own.
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resetWait)
		defer cancel()
		if _, err := conn.ExecContext(rctx, fmt.Sprintf(`PRAGMA busy_timeout = %d`, BusyTimeout.Milliseconds())); err != nil {
			// Not back in the pool with a short busy timeout.
			conn.Raw(func(any) error { return driver.ErrBadConn })
		}
	}()
	var (
		rerr  error
		held  time.Duration
		rbusy int
	)
	if err := c.gc.Hold(ctx, func() {
		start := time.Now()
		rbusy, _, _, rerr = c.walCheckpoint(ctx, conn, "RESTART")
		held = time.Since(start)
	}); err != nil {
		return fmt.Errorf("checkpoint the write-ahead log: %w", err)
	}
	c.restarts.Add(1)
	c.log.Debug("restarted the write-ahead log", "frames", log, "held_writes_ms", float64(held.Microseconds())/1000, "busy", rbusy)
	return rerr
}

// restartFactor times the journal_size_limit is how large the log may
// grow before Committer.checkpoint makes it restart, holding the writes
// back for the last frames: at 4 MiB, every fourth checkpoint or so of
// back-to-back turns (~1,300 frames each).
const restartFactor = 4

// restartResidual is how many frames a passive checkpoint may leave
// uncopied before Committer.checkpoint runs a second one ahead of the
// RESTART, which copies what is left while the writes wait.
const restartResidual = 64

// restartWait is the longest a RESTART checkpoint waits for the write
// lock and for readers of older frames, while the Committer's writes wait
// for it. A turn's reads take well under a millisecond each.
const restartWait = 50 * time.Millisecond

// resetWait is the longest Committer.checkpoint waits for the RESTART's
// connection to take its busy timeout back (a PRAGMA that takes no lock
// and returns in microseconds); past it the connection is discarded.
const resetWait = time.Second

// querier is what a checkpoint runs on: the database or a connection.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// walCheckpoint runs PRAGMA wal_checkpoint(mode) on q: busy is 1 when it
// could not finish, log the frames in the log and done those copied (-1
// for a database not in WAL mode).
func (c *Committer) walCheckpoint(ctx context.Context, q querier, mode string) (busy, log, done int, err error) {
	if err := q.QueryRowContext(ctx, `PRAGMA wal_checkpoint(`+mode+`)`).Scan(&busy, &log, &done); err != nil {
		return 0, 0, 0, fmt.Errorf("checkpoint the write-ahead log: %w", err)
	}
	return busy, log, done, nil
}

// readLimit reads, once, the database's page size and journal_size_limit
// (-1: none).
func (c *Committer) readLimit(ctx context.Context) error {
	if c.pageSize > 0 {
		return nil
	}
	var page, limit int64
	if err := c.db.QueryRowContext(ctx, `SELECT page_size, journal_size_limit FROM pragma_page_size, pragma_journal_size_limit`).Scan(&page, &limit); err != nil {
		return fmt.Errorf("read the write-ahead log's limit: %w", err)
	}
	c.pageSize, c.walLimit = page, limit
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
	if c.batches.Add(1)%c.every == 0 {
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
