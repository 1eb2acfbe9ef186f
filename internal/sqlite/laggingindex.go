package sqlite

import (
	"context"
	"database/sql"
	"fmt"
)

// LaggingIndex is a full-text index (FTS5) that takes in a table's new
// rows in batches instead of row by row: every transaction that adds to an
// FTS5 index writes a new segment at commit and merges segments now and
// then, which cost small transactions (a turn's messages, its episodes) a
// good part of their time. A one-row mark table holds the largest id
// considered for the index (indexed, or not indexable); the write that
// brings the rows above it to Batch indexes them in its own transaction
// (IndexIfDue), and a reader of the index first indexes whatever is left
// (CatchUp). The memories' and the messages' search indexes are both one.
//
// The writer keeps the mark as it last saw or moved it, so that a write
// does not read it again: a reader's CatchUp only moves it on, which at
// worst indexes a batch early. One writer at a time calls IndexIfDue and
// Committed (a store's write lock, its group commit).
type LaggingIndex struct {
	// Table is the indexed table (its INTEGER PRIMARY KEY is id) and Mark
	// the mark table (one row, column id).
	Table, Mark string
	// Insert adds the rows of Table above the mark to the index.
	Insert string
	// Batch is how many rows the index may lag behind the table.
	Batch int64
	// What says what indexing does, for errors ("index messages for
	// search").
	What string

	mark int64 // as the writer last saw or moved it; 0: not read yet
}

// IndexIfDue indexes the rows above the mark, within tx, when the largest
// id tx wrote (last) is Batch or more above it. It returns the mark after
// tx, for Committed once tx has committed.
func (x *LaggingIndex) IndexIfDue(ctx context.Context, tx *sql.Tx, last int64) (int64, error) {
	done := x.mark
	if done == 0 {
		if err := tx.QueryRowContext(ctx, `SELECT id FROM `+x.Mark).Scan(&done); err != nil {
			return 0, fmt.Errorf("read the search index's mark: %w", err)
		}
	}
	if last-done < x.Batch {
		return done, nil
	}
	if err := x.Index(ctx, tx); err != nil {
		return 0, err
	}
	return last, nil
}

// Committed keeps the mark IndexIfDue returned, once its transaction has
// committed (0: nothing to keep).
func (x *LaggingIndex) Committed(mark int64) {
	if mark > 0 {
		x.mark = mark
	}
}

// Index adds the rows above the mark to the index, within tx, and moves
// the mark to the largest id stored.
func (x *LaggingIndex) Index(ctx context.Context, tx *sql.Tx) error {
	if _, err := tx.ExecContext(ctx, x.Insert); err != nil {
		return fmt.Errorf("%s: %w", x.What, err)
	}
	if _, err := tx.ExecContext(ctx,
		`UPDATE `+x.Mark+` SET id = max(id, (SELECT coalesce(max(id), 0) FROM `+x.Table+`))`); err != nil {
		return fmt.Errorf("%s: %w", x.What, err)
	}
	return nil
}

// Pending reports whether rows above the mark wait for the index.
func (x *LaggingIndex) Pending(ctx context.Context, db *sql.DB) (bool, error) {
	var pending bool
	if err := db.QueryRowContext(ctx,
		`SELECT (SELECT id FROM `+x.Mark+`) < (SELECT coalesce(max(id), 0) FROM `+x.Table+`)`).Scan(&pending); err != nil {
		return false, fmt.Errorf("%s: %w", x.What, err)
	}
	return pending, nil
}

// CatchUp indexes the rows the index lags behind by, in a transaction of
// its own; nothing is written when there are none.
func (x *LaggingIndex) CatchUp(ctx context.Context, db *sql.DB) error {
	if pending, err := x.Pending(ctx, db); err != nil || !pending {
		return err
	}
	return Tx(ctx, db, func(tx *sql.Tx) error { return x.Index(ctx, tx) })
}
