package sqlite

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/fulldisk"
)

// api.IsDiskFull recognises what SQLite really returns on a full disk: a
// write that finds no space (SQLITE_FULL) and a database opened on a full
// disk (SQLITE_IOERR_SHMSIZE, "disk I/O error (4874)"). On a real tmpfs when
// the test runs as root, else with max_page_count (SQLITE_FULL only).
func TestDiskFullErrorsAreRecognised(t *testing.T) {
	ctx := context.Background()
	big := strings.Repeat("x", 8000)
	dir, err := fulldisk.Mount(t, 1<<20)
	if err != nil {
		t.Logf("no tmpfs (%v): simulating a full database with max_page_count", err)
		db, err := Open(ctx, filepath.Join(t.TempDir(), "full.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`CREATE TABLE t(x TEXT)`); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(`PRAGMA max_page_count = 20`); err != nil {
			t.Fatal(err)
		}
		var werr error
		for range 100 {
			if _, werr = db.Exec(`INSERT INTO t VALUES (?)`, big); werr != nil {
				break
			}
		}
		if werr == nil || !api.IsDiskFull(werr) {
			t.Fatalf("insert into a full database: %v; IsDiskFull = false", werr)
		}
		return
	}

	path := filepath.Join(dir, "full.db")
	db, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`CREATE TABLE t(x TEXT)`); err != nil {
		t.Fatal(err)
	}
	var werr error
	for range 1000 {
		if _, werr = db.Exec(`INSERT INTO t VALUES (?)`, big); werr != nil {
			break
		}
	}
	if werr == nil || !api.IsDiskFull(werr) {
		t.Fatalf("insert on a full disk: %v; IsDiskFull = false", werr)
	}
	// What was written before is intact.
	var n int
	if err := db.QueryRow(`SELECT COUNT(*) FROM t`).Scan(&n); err != nil || n == 0 {
		t.Fatalf("rows after the disk filled: %d, %v", n, err)
	}
	if err := db.Close(); err != nil {
		t.Logf("close on a full disk: %v", err)
	}

	// Reopened on a completely full disk without its -shm file: the start
	// of an agent on a full disk.
	for _, suffix := range []string{"-shm", "-wal"} {
		if err := os.Remove(path + suffix); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	fulldisk.Fill(t, dir)
	db, err = Open(ctx, path)
	if err == nil {
		_, err = db.Exec(`INSERT INTO t VALUES ('one more')`)
		db.Close()
	}
	if err == nil || !api.IsDiskFull(err) {
		t.Fatalf("open on a full disk: %v; IsDiskFull = false", err)
	}
	t.Logf("open on a full disk: %v", err)
}
