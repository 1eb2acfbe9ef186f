package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	vec "github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// compactBatch is the number of vectors one transaction of the conversion
// rewrites: a few hundred kilobytes of the write-ahead log, so that the
// agent's own writes, which wait for it, wait milliseconds.
const compactBatch = 256

// convertVectors rewrites the vectors that stores wrote in the float32
// format before migration 010 in the compact one (encodeVector), in
// transactions of batch vectors: first the pending vectors of a
// re-embedding, then the memories' in id order, recording after each batch
// the largest memory id done (memory_vectors_float32), so that a
// conversion stopped midway (ctx, a crash) resumes where it stopped. A
// vector is replaced only if it is still the one read (a writer may have
// replaced it meanwhile), so no write is lost, and the index needs no
// change: a compact vector loads into the very entry its float32 form
// made. progress, when set, is called after each batch with the number
// converted so far. Nothing is read beyond one row when the conversion is
// done, or was never needed.
func convertVectors(ctx context.Context, db *sql.DB, batch int, progress func(done int)) (int, error) {
	var after int64
	err := db.QueryRowContext(ctx, `SELECT after_id FROM memory_vectors_float32`).Scan(&after)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("convert stored vectors: %w", err)
	}
	done := 0
	// The pending vectors first (few, and not marked: read again after a
	// stop), then the memories from the mark on.
	for _, part := range []struct {
		table string
		from  int64
		mark  bool
	}{{"memory_pending_embeddings", 0, false}, {"memories", after, true}} {
		for last := part.from; ; {
			n, next, err := convertBatch(ctx, db, part.table, last, batch, part.mark)
			done += n
			if err != nil {
				return done, err
			}
			if next == last {
				break
			}
			last = next
			if progress != nil {
				progress(done)
			}
		}
	}
	if _, err := db.ExecContext(ctx, `DELETE FROM memory_vectors_float32`); err != nil {
		return done, fmt.Errorf("convert stored vectors: record the end: %w", err)
	}
	return done, nil
}

// convertBatch converts, in one transaction, the float32 vectors of table
// (memories or memory_pending_embeddings) among the next batch of rows
// with an id above after, and returns how many it converted and the
// largest id it read (after when there was none left), which it records
// as memory_vectors_float32's mark when mark is set.
func convertBatch(ctx context.Context, db *sql.DB, table string, after int64, batch int, mark bool) (int, int64, error) {
	type row struct {
		id   int64
		blob []byte
	}
	converted, last := 0, after
	err := sqlite.Tx(ctx, db, func(tx *sql.Tx) error {
		converted, last = 0, after
		var rows []row
		err := sqlite.Each(ctx, tx, func(r *sql.Rows) error {
			var x row
			if err := r.Scan(&x.id, &x.blob); err != nil {
				return err
			}
			rows = append(rows, x)
			return nil
		}, `SELECT id, embedding FROM `+table+` WHERE id > ? AND embedding IS NOT NULL AND length(embedding) % 4 = 0 ORDER BY id LIMIT ?`, after, batch)
		if err != nil {
			return fmt.Errorf("read: %w", err)
		}
		if len(rows) == 0 {
			return nil
		}
		upd, err := tx.PrepareContext(ctx, `UPDATE `+table+` SET embedding = ? WHERE id = ? AND embedding = ?`)
		if err != nil {
			return err
		}
		defer upd.Close()
		for _, x := range rows {
			v, err := vec.Decode(x.blob)
			if err != nil {
				return fmt.Errorf("%s %d: %w", table, x.id, err)
			}
			res, err := upd.ExecContext(ctx, encodeVector(v), x.id, x.blob)
			if err != nil {
				return fmt.Errorf("%s %d: %w", table, x.id, err)
			}
			if n, _ := res.RowsAffected(); n > 0 {
				converted++
			}
		}
		last = rows[len(rows)-1].id
		if mark {
			if _, err := tx.ExecContext(ctx, `UPDATE memory_vectors_float32 SET after_id = max(after_id, ?)`, last); err != nil {
				return fmt.Errorf("record progress: %w", err)
			}
		}
		return nil
	})
	if err != nil {
		return 0, after, fmt.Errorf("convert stored vectors (%s after id %d): %w", table, after, err)
	}
	return converted, last, nil
}

// convertStored runs convertVectors for the store once its index has
// loaded (LoadIndex's goroutine), until done or Shutdown, logging what it
// did. A failure is logged and leaves the rest for the next start: the
// store reads both formats.
func (s *VectorStore) convertStored() {
	ctx := s.stopCtx
	start := time.Now()
	told := false
	n, err := convertVectors(ctx, s.db, compactBatch, func(int) {
		if !told {
			told = true
			s.log.Info("memory vectors: converting the stored float32 vectors to the compact format")
		}
	})
	switch {
	case err != nil && ctx.Err() != nil:
		s.log.Info("memory vectors: conversion to the compact format stopped; it resumes at the next start", "converted", n)
	case err != nil:
		s.log.Warn("memory vectors: conversion to the compact format failed; it resumes at the next start", "converted", n, "err", err)
	case n > 0:
		s.log.Info("memory vectors: stored in the compact format", "converted", n, "took", time.Since(start).Round(time.Millisecond),
			"note", "the rows shrank in place: the database file keeps its size until a VACUUM (sqlite3 reverie.db VACUUM with the agent stopped)")
	}
}
