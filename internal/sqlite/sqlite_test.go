package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	msqlite "modernc.org/sqlite"
)

func openTemp(t *testing.T) *sql.DB {
	t.Helper()
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "test.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenPragmas(t *testing.T) {
	db := openTemp(t)
	ctx := context.Background()
	for _, tc := range []struct{ pragma, want string }{
		{"journal_mode", "wal"},
		{"foreign_keys", "1"},
		{"busy_timeout", "5000"},
	} {
		t.Run(tc.pragma, func(t *testing.T) {
			var got string
			if err := db.QueryRowContext(ctx, "PRAGMA "+tc.pragma).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Fatalf("PRAGMA %s = %q, want %q", tc.pragma, got, tc.want)
			}
		})
	}
	if err := IntegrityCheck(ctx, db); err != nil {
		t.Fatal(err)
	}
}

func TestMigrate(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	v1 := fstest.MapFS{
		"001_create.sql": {Data: []byte(`CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);`)},
		"README.md":      {Data: []byte("ignored")},
	}
	if err := Migrate(ctx, db, "comp", v1); err != nil {
		t.Fatal(err)
	}
	// Re-running is a no-op, and a later file is applied on top.
	v2 := fstest.MapFS{
		"001_create.sql": v1["001_create.sql"],
		"002_add.sql":    {Data: []byte(`ALTER TABLE a ADD COLUMN w TEXT; INSERT INTO a (v, w) VALUES ('x','y');`)},
	}
	for range 2 {
		if err := Migrate(ctx, db, "comp", v2); err != nil {
			t.Fatal(err)
		}
	}
	var n int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM a`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows = %d, %v; want 1 (migration applied once)", n, err)
	}
	if v, err := Version(ctx, db, "comp"); err != nil || v != 2 {
		t.Fatalf("Version = %d, %v; want 2", v, err)
	}
	if v, err := Version(ctx, db, "other"); err != nil || v != 0 {
		t.Fatalf("Version(other) = %d, %v; want 0", v, err)
	}
}

func TestMigrateErrors(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name string
		fs   fstest.MapFS
		want error
	}{
		{"no version", fstest.MapFS{"create.sql": {Data: []byte("SELECT 1")}}, ErrBadMigration},
		{"duplicate version", fstest.MapFS{
			"001_a.sql": {Data: []byte("SELECT 1")},
			"1_b.sql":   {Data: []byte("SELECT 1")},
		}, ErrBadMigration},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Migrate(ctx, openTemp(t), "comp", tc.fs)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("bad sql rolls back", func(t *testing.T) {
		db := openTemp(t)
		err := Migrate(ctx, db, "comp", fstest.MapFS{
			"001_a.sql": {Data: []byte("CREATE TABLE t (x); THIS IS NOT SQL;")},
		})
		if err == nil {
			t.Fatal("want error")
		}
		var n int
		db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = 't'`).Scan(&n)
		if n != 0 {
			t.Fatal("failed migration left table behind")
		}
		if v, _ := Version(ctx, db, "comp"); v != 0 {
			t.Fatalf("version = %d after failed migration", v)
		}
	})
}

func TestTx(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	boom := errors.New("boom")
	err := Tx(ctx, db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (1)`); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("err = %v", err)
	}
	if err := Tx(ctx, db, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO t VALUES (2)`)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	var sum int
	db.QueryRowContext(ctx, `SELECT COALESCE(SUM(x),0) FROM t`).Scan(&sum)
	if sum != 2 {
		t.Fatalf("sum = %d, want 2 (rolled-back insert must not persist)", sum)
	}
}

// The database and its -wal and -shm files are 0600 whatever the umask,
// also when an older version left them broader.
func TestDatabaseFilesArePrivate(t *testing.T) {
	old := syscall.Umask(0) // the most permissive: SQLite alone would make 0644
	defer syscall.Umask(old)
	ctx := context.Background()
	check := func(t *testing.T, file string) {
		t.Helper()
		for _, p := range []string{file, file + "-wal", file + "-shm"} {
			fi, err := os.Stat(p)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 {
				t.Errorf("%s: mode %v, want 0600", filepath.Base(p), fi.Mode().Perm())
			}
		}
	}
	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, file string)
	}{
		{"new", func(*testing.T, string) {}},
		{"left 0644 by an older version", func(t *testing.T, file string) {
			db, err := sql.Open("sqlite", "file:"+file+"?_pragma=journal_mode(WAL)")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(ctx) // held open: -wal and -shm stay
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "CREATE TABLE t (x)"); err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{file, file + "-wal", file + "-shm"} {
				if err := os.Chmod(p, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			db2, err := Open(ctx, file)
			if err != nil {
				t.Fatal(err)
			}
			db2.Close()
			check(t, file)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "reverie.db")
			tc.prepare(t, file)
			db, err := Open(ctx, file)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS u (x); INSERT INTO u VALUES (1)"); err != nil {
				t.Fatal(err)
			}
			check(t, file)
		})
	}
}

// Ready leaves n idle connections, each with the schema already read.
func TestReady(t *testing.T) {
	ctx := context.Background()
	db, err := Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)`); err != nil {
		t.Fatal(err)
	}
	db.SetMaxIdleConns(0) // forget the connection used so far
	db.SetMaxIdleConns(8)
	Ready(ctx, db, 2)
	if st := db.Stats(); st.OpenConnections != 2 || st.Idle != 2 {
		t.Fatalf("after Ready: %d open, %d idle; want 2 and 2", st.OpenConnections, st.Idle)
	}
	// Both, taken at once, are the ones Ready opened and know the schema.
	var conns []*sql.Conn
	for range 2 {
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		conns = append(conns, c)
	}
	for i, c := range conns {
		err := c.Raw(func(dc any) error {
			used, _, err := dc.(msqlite.DBStatus).Status(msqlite.DBStatusSchemaUsed, false)
			if err == nil && used == 0 {
				err = errors.New("schema not read")
			}
			return err
		})
		if err != nil {
			t.Errorf("connection %d: %v", i, err)
		}
	}
	if st := db.Stats(); st.OpenConnections != 2 {
		t.Errorf("taking two connections opened more: %d open", st.OpenConnections)
	}
}
