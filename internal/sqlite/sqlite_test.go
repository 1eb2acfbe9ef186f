package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	msqlite "modernc.org/sqlite"

	"github.com/reverie-ai/reverie/extension"
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
	if err := extension.Migrate(ctx, db, "comp", v1, "."); err != nil {
		t.Fatal(err)
	}
	// Re-running is a no-op, and a later file is applied on top.
	v2 := fstest.MapFS{
		"001_create.sql": v1["001_create.sql"],
		"002_add.sql":    {Data: []byte(`ALTER TABLE a ADD COLUMN w TEXT; INSERT INTO a (v, w) VALUES ('x','y');`)},
	}
	for range 2 {
		if err := extension.Migrate(ctx, db, "comp", v2, "."); err != nil {
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

// tableExists reports whether db has a table named name.
func tableExists(t *testing.T, db *sql.DB, name string) bool {
	t.Helper()
	var n int
	if err := db.QueryRowContext(context.Background(),
		`SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n > 0
}

// Components migrating through one Migrations share its one read of what
// is applied; a migration recorded since that read (by another process)
// is checked again inside the write transaction and not run twice.
func TestMigrationsShareOneRead(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	m := NewMigrations(db)
	if err := m.Migrate(ctx, db, "a", fstest.MapFS{"001_a.sql": {Data: []byte("CREATE TABLE a1 (x)")}}, "."); err != nil {
		t.Fatal(err)
	}
	// Recorded behind m's back, without its table: were m to read the
	// record again, or to apply without checking, the outcome would differ.
	if _, err := db.ExecContext(ctx, `INSERT INTO schema_migrations (component, version, name) VALUES ('b', 1, '001_b.sql')`); err != nil {
		t.Fatal(err)
	}
	bFiles := fstest.MapFS{
		"001_b.sql": {Data: []byte("CREATE TABLE b1 (x)")},
		"002_b.sql": {Data: []byte("CREATE TABLE b2 (x)")},
	}
	if err := m.Migrate(ctx, db, "b", bFiles, "."); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]bool{"a1": true, "b1": false, "b2": true} {
		if got := tableExists(t, db, name); got != want {
			t.Errorf("table %s exists: %v, want %v", name, got, want)
		}
	}
	if v, _ := Version(ctx, db, "b"); v != 2 {
		t.Errorf("b at version %d, want 2", v)
	}
	// Up to date through m, through a new Migrations and on its own.
	for _, mig := range []*Migrations{m, NewMigrations(db), nil} {
		if err := mig.Migrate(ctx, db, "b", bFiles, "."); err != nil {
			t.Fatal(err)
		}
	}
	// A Migrations of another database migrates on its own.
	other := openTemp(t)
	if err := m.Migrate(ctx, other, "a", fstest.MapFS{"001_a.sql": {Data: []byte("CREATE TABLE a1 (x)")}}, "."); err != nil {
		t.Fatal(err)
	}
	if !tableExists(t, other, "a1") {
		t.Error("migrating another database through m did not apply its migration")
	}
}

// unreadable is an fs.FS whose named files cannot be read.
type unreadable struct {
	fstest.MapFS
	names map[string]bool
}

func (u unreadable) Open(name string) (fs.File, error) {
	if u.names[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return u.MapFS.Open(name)
}

func (u unreadable) ReadFile(name string) ([]byte, error) {
	if u.names[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrPermission}
	}
	return u.MapFS.ReadFile(name)
}

// An up-to-date component lists its migrations but reads none of them.
func TestMigrateReadsOnlyWhatItApplies(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	files := fstest.MapFS{
		"001_a.sql": {Data: []byte("CREATE TABLE a1 (x)")},
		"002_a.sql": {Data: []byte("CREATE TABLE a2 (x)")},
	}
	if err := extension.Migrate(ctx, db, "a", files, "."); err != nil {
		t.Fatal(err)
	}
	both := unreadable{files, map[string]bool{"001_a.sql": true, "002_a.sql": true}}
	if err := extension.Migrate(ctx, db, "a", both, "."); err != nil {
		t.Fatalf("up-to-date component read its applied migrations: %v", err)
	}
	files["003_a.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE a3 (x)")}
	if err := extension.Migrate(ctx, db, "a", both, "."); err != nil {
		t.Fatal(err)
	}
	if !tableExists(t, db, "a3") {
		t.Error("the new migration was not applied")
	}
	bad := unreadable{files, map[string]bool{"004_a.sql": true}}
	files["004_a.sql"] = &fstest.MapFile{Data: []byte("CREATE TABLE a4 (x)")}
	if err := extension.Migrate(ctx, db, "a", bad, "."); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("unreadable new migration: err = %v, want one wrapping fs.ErrPermission", err)
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
			err := extension.Migrate(ctx, openTemp(t), "comp", tc.fs, ".")
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
		})
	}
	t.Run("bad sql rolls back", func(t *testing.T) {
		db := openTemp(t)
		err := extension.Migrate(ctx, db, "comp", fstest.MapFS{
			"001_a.sql": {Data: []byte("CREATE TABLE t (x); THIS IS NOT SQL;")},
		}, ".")
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

// TestCloseIdleAfter: a connection left unused for Options.CloseIdleAfter
// is closed (its memory handed back), one in use or recently used is not,
// and the next query opens one again; without the option idle connections
// stay open.
func TestCloseIdleAfter(t *testing.T) {
	cases := []struct {
		name      string
		after     time.Duration
		wantAfter int // open connections once the idle time has passed
	}{
		{"closed once idle that long", time.Minute, 0},
		{"kept without the option", 0, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			synctest.Test(t, func(t *testing.T) {
				ctx := t.Context()
				db, err := OpenWith(ctx, filepath.Join(dir, "idle.db"), Options{CloseIdleAfter: tc.after})
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				query := func() {
					t.Helper()
					var one int
					if err := db.QueryRowContext(ctx, `SELECT 1`).Scan(&one); err != nil || one != 1 {
						t.Fatalf("SELECT 1: %d, %v", one, err)
					}
				}
				query()
				if st := db.Stats(); st.OpenConnections != 1 || st.Idle != 1 {
					t.Fatalf("after a query: %d open, %d idle; want 1 and 1", st.OpenConnections, st.Idle)
				}
				// Used again before the idle time is up: still open.
				time.Sleep(tc.after / 2)
				query()
				time.Sleep(tc.after / 2)
				synctest.Wait()
				if st := db.Stats(); st.OpenConnections != 1 {
					t.Fatalf("%v after its last use: %d open; want 1", tc.after/2, st.OpenConnections)
				}
				time.Sleep(3 * time.Minute)
				synctest.Wait()
				if st := db.Stats(); st.OpenConnections != tc.wantAfter {
					t.Fatalf("3 minutes idle: %d open; want %d", st.OpenConnections, tc.wantAfter)
				}
				query()
			})
		})
	}
}

// TestCloseIdleAfterKeepsMemoryDatabase: ":memory:" ignores the option,
// since closing its only connection would drop the database.
func TestCloseIdleAfterKeepsMemoryDatabase(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		db, err := OpenWith(ctx, ":memory:", Options{CloseIdleAfter: time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.ExecContext(ctx, `CREATE TABLE notes (body TEXT)`); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, err := db.ExecContext(ctx, `INSERT INTO notes VALUES ('kept')`); err != nil {
			t.Fatalf("the table is gone after a minute idle: %v", err)
		}
	})
}
