package sqlite

import (
	"context"
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
