package sqlite

import (
	"cmp"
	"context"
	"database/sql"
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
}

// NewCommitter returns the Committer of db.
func NewCommitter(db *sql.DB) *Committer { return &Committer{db: db} }

type committing struct {
	ctx       context.Context
	fn        func(ctx context.Context, tx *sql.Tx) error
	committed func()
	err       error
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
		}
		return
	}
	for _, it := range batch {
		if it.err == nil && it.committed != nil {
			it.committed()
		}
	}
}
