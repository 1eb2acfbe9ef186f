package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"testing"
)

// TestStatementCache checks what the connections' statement cache must
// not change: nested use of one statement, scripts, failures, schema
// changes, and that it stays within stmtCacheSize statements.
func TestStatementCache(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // every statement on the one connection
	// a script of several statements runs whole
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT UNIQUE); INSERT INTO t (v) VALUES ('a'); INSERT INTO t (v) VALUES ('b');`); err != nil {
		t.Fatal(err)
	}
	count := func() int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := count(); n != 2 {
		t.Fatalf("the script inserted %d rows, want 2", n)
	}

	t.Run("nested use of one statement", func(t *testing.T) {
		const q = `SELECT v FROM t WHERE id >= ? ORDER BY id`
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		outer, err := tx.QueryContext(ctx, q, 1)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for outer.Next() {
			var v string
			if err := outer.Scan(&v); err != nil {
				t.Fatal(err)
			}
			// the same text while the outer rows are open
			var first string
			if err := tx.QueryRowContext(ctx, q, 2).Scan(&first); err != nil {
				t.Fatal(err)
			}
			got = append(got, v+first)
		}
		if err := outer.Close(); err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(got) != "[ab bb]" {
			t.Errorf("nested queries read %v, want [ab bb]", got)
		}
	})

	t.Run("prepared statements", func(t *testing.T) {
		const ins = `INSERT INTO t (v) VALUES (?)`
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		// the second is prepared while the first holds the cached one
		first, err := tx.PrepareContext(ctx, ins)
		if err != nil {
			t.Fatal(err)
		}
		second, err := tx.PrepareContext(ctx, ins)
		if err != nil {
			t.Fatal(err)
		}
		for i, st := range []*sql.Stmt{first, second, first} {
			if _, err := st.ExecContext(ctx, fmt.Sprintf("p%d", i)); err != nil {
				t.Fatalf("insert %d: %v", i, err)
			}
		}
		first.Close()
		second.Close()
		if _, err := tx.ExecContext(ctx, ins, "p3"); err != nil {
			t.Fatalf("the statement given back: %v", err)
		}
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM t WHERE v LIKE 'p%'`).Scan(&n); err != nil || n != 4 {
			t.Fatalf("%d rows inserted through prepared statements (%v), want 4", n, err)
		}
	})

	t.Run("a failure and the next use", func(t *testing.T) {
		const ins = `INSERT INTO t (v) VALUES (?)`
		if _, err := db.ExecContext(ctx, ins, "a"); err == nil {
			t.Fatal("a duplicate was inserted")
		}
		if _, err := db.ExecContext(ctx, ins, "c"); err != nil {
			t.Fatalf("the statement after a failure: %v", err)
		}
		if n := count(); n != 3 {
			t.Errorf("%d rows, want 3", n)
		}
	})

	t.Run("a schema change", func(t *testing.T) {
		if _, err := db.ExecContext(ctx, `ALTER TABLE t ADD COLUMN w TEXT DEFAULT 'x'`); err != nil {
			t.Fatal(err)
		}
		if n := count(); n != 3 {
			t.Errorf("%d rows after the change, want 3", n)
		}
		var w string
		if err := db.QueryRowContext(ctx, `SELECT w FROM t WHERE id = ?`, 1).Scan(&w); err != nil || w != "x" {
			t.Errorf("new column read %q, %v", w, err)
		}
	})

	t.Run("bounded", func(t *testing.T) {
		for i := range 3 * stmtCacheSize {
			var n int
			if err := db.QueryRowContext(ctx, fmt.Sprintf(`SELECT %d + count(*) FROM t`, i)).Scan(&n); err != nil || n != i+3 {
				t.Fatalf("statement %d read %d, %v", i, n, err)
			}
		}
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		err = c.Raw(func(dc any) error {
			sc, ok := dc.(*stmtConn)
			if !ok {
				t.Fatalf("connection is a %T, not cached", dc)
			}
			if len(sc.cache) > stmtCacheSize || len(sc.cache) == 0 {
				t.Errorf("%d statements cached, want 1..%d", len(sc.cache), stmtCacheSize)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	})
}
