package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
)

// A LaggingIndex takes in new rows only once a write brings them to a
// batch, or when a reader catches up; the rows it skips (here the ones
// without text) move the mark all the same.
func TestLaggingIndex(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	for _, q := range []string{
		`CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT NOT NULL)`,
		`CREATE VIRTUAL TABLE notes_fts USING fts5(text, content='notes', content_rowid='id')`,
		`CREATE TABLE notes_fts_done (id INTEGER NOT NULL)`,
		`INSERT INTO notes_fts_done (id) VALUES (0)`,
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	x := LaggingIndex{Table: "notes", Mark: "notes_fts_done", Batch: 4, What: "index notes",
		Insert: `INSERT INTO notes_fts (rowid, text) SELECT id, text FROM notes WHERE id > (SELECT id FROM notes_fts_done) AND text != ''`}
	add := func(text string) {
		t.Helper()
		var mark int64
		err := Tx(ctx, db, func(tx *sql.Tx) error {
			res, err := tx.ExecContext(ctx, `INSERT INTO notes (text) VALUES (?)`, text)
			if err != nil {
				return err
			}
			last, err := res.LastInsertId()
			if err != nil {
				return err
			}
			mark, err = x.IndexIfDue(ctx, tx, last)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		x.Committed(mark)
	}
	state := func() string {
		t.Helper()
		var mark, found int
		if err := db.QueryRow(`SELECT id FROM notes_fts_done`).Scan(&mark); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow(`SELECT count(*) FROM notes_fts WHERE notes_fts MATCH 'canoe'`).Scan(&found); err != nil {
			t.Fatal(err)
		}
		pending, err := x.Pending(ctx, db)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("mark %d, %d found, pending %v", mark, found, pending)
	}
	for _, step := range []struct {
		name string
		do   func()
		want string
	}{
		{"three rows: below the batch", func() { add("a canoe"); add(""); add("a red canoe") }, "mark 0, 0 found, pending true"},
		{"the fourth completes the batch", func() { add("a canoe trip") }, "mark 4, 3 found, pending false"},
		{"one more waits", func() { add("canoe club") }, "mark 4, 3 found, pending true"},
		{"a reader catches up", func() {
			if err := x.CatchUp(ctx, db); err != nil {
				t.Fatal(err)
			}
		}, "mark 5, 4 found, pending false"},
		{"catching up again changes nothing", func() {
			if err := x.CatchUp(ctx, db); err != nil {
				t.Fatal(err)
			}
		}, "mark 5, 4 found, pending false"},
		// The writer kept the mark it moved (4), not the reader's (5): it
		// indexes a batch early, never late.
		{"the writer's mark lags the reader's", func() { add("canoe"); add("kayak"); add("canoe race") }, "mark 8, 6 found, pending false"},
	} {
		step.do()
		if got := state(); got != step.want {
			t.Errorf("%s: %s, want %s", step.name, got, step.want)
		}
	}
}
