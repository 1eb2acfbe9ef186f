package sqlite

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	msqlite "modernc.org/sqlite"
)

// ReleaseMemory frees the pages a connection keeps cached once its
// statements are done, and the connection reads them again when asked.
func TestReleaseMemory(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (x BLOB)`); err != nil {
		t.Fatal(err)
	}
	for range 300 {
		if _, err := db.ExecContext(ctx, `INSERT INTO t VALUES (randomblob(2000))`); err != nil {
			t.Fatal(err)
		}
	}
	sum := func() int64 {
		var n int64
		if err := db.QueryRowContext(ctx, `SELECT sum(length(x)) FROM t`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	cacheUsed := func() int {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		var used int
		if err := c.Raw(func(dc any) error {
			var err error
			used, _, err = dc.(msqlite.DBStatus).Status(msqlite.DBStatusCacheUsed, false)
			return err
		}); err != nil {
			t.Fatal(err)
		}
		return used
	}
	want := sum()
	before := cacheUsed()
	if before < 300*2000 {
		t.Fatalf("the connection caches %d bytes after reading 600 KB; the test needs them cached", before)
	}
	freed := ReleaseMemory()
	after := cacheUsed()
	if freed < before/2 || after > before/2 {
		t.Errorf("freed %d bytes: cache %d -> %d", freed, before, after)
	}
	if got := sum(); got != want {
		t.Errorf("after the release the table sums to %d; want %d", got, want)
	}
}

// TrimIdle closes the idle connections, and the pool grows again.
func TestTrimIdle(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "t.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	take := func(n int) {
		t.Helper()
		var conns []*sql.Conn
		for range n {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			conns = append(conns, c)
		}
		for _, c := range conns {
			c.Close()
		}
	}
	take(3)
	if st := db.Stats(); st.Idle != 3 {
		t.Fatalf("after a burst of 3: %d idle, want 3", st.Idle)
	}
	TrimIdle(db)
	if st := db.Stats(); st.Idle != 0 || st.OpenConnections != 0 {
		t.Fatalf("after TrimIdle: %d idle, %d open; want none", st.Idle, st.OpenConnections)
	}
	take(4)
	if st := db.Stats(); st.Idle != 4 {
		t.Fatalf("after a burst of 4 following TrimIdle: %d idle, want 4 (the pool grows again)", st.Idle)
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT 1`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("query after TrimIdle: %d, %v", n, err)
	}
}
