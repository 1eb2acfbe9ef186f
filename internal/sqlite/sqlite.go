// Package sqlite opens Reverie's SQLite database (pure Go, modernc.org/sqlite)
// with the settings every component relies on — WAL journal, a busy timeout,
// foreign keys — and runs each component's embedded, versioned migrations.
//
// Components own their schema: each embeds its migration files
// ("001_create_events.sql", "002_…") and calls Migrate with its own name.
// Versions are tracked per component in the schema_migrations table, so
// packages never have to agree on a global numbering.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" driver
)

// BusyTimeout is how long a connection waits for a lock held by another
// connection before failing with SQLITE_BUSY.
const BusyTimeout = 5 * time.Second

// Open opens (creating if needed) the database file at path with WAL,
// busy_timeout, foreign_keys and synchronous=NORMAL, and checks that it
// answers. Write transactions begun through Tx take the write lock
// immediately (BEGIN IMMEDIATE), which avoids lock-upgrade deadlocks.
// Use ":memory:" only in tests that need a throwaway database.
//
// The database holds conversations and memories: the file and its -wal
// and -shm companions are made mode 0600 whatever the umask (SQLite gives
// the companions the database file's mode; files left broader by an older
// version are narrowed).
func Open(ctx context.Context, file string) (*sql.DB, error) {
	if file != ":memory:" {
		if err := private(file); err != nil {
			return nil, fmt.Errorf("open database %s: %w", file, err)
		}
	}
	q := url.Values{}
	q.Add("_pragma", fmt.Sprintf("busy_timeout(%d)", BusyTimeout.Milliseconds()))
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	if file != ":memory:" {
		q.Add("_pragma", "journal_mode(WAL)")
	}
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	dsn := "file:" + file + "?" + q.Encode()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", file, err)
	}
	if file == ":memory:" {
		// Every connection to :memory: is a separate database.
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(8)
		db.SetMaxIdleConns(8)
	}
	db.SetConnMaxIdleTime(0)
	pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := db.PingContext(pctx); err != nil {
		db.Close()
		return nil, fmt.Errorf("open database %s: %w", file, err)
	}
	if file != ":memory:" {
		for _, companion := range []string{file + "-wal", file + "-shm"} {
			if err := narrow(companion); err != nil && !errors.Is(err, fs.ErrNotExist) {
				db.Close()
				return nil, fmt.Errorf("open database %s: %w", file, err)
			}
		}
	}
	return db, nil
}

// FileMode is the mode of the database file and its -wal and -shm files.
const FileMode fs.FileMode = 0o600

// private creates file with FileMode when it does not exist (so SQLite
// never creates it under the umask), else narrows its mode.
func private(file string) error {
	f, err := os.OpenFile(file, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	switch {
	case err == nil:
		return f.Close()
	case errors.Is(err, fs.ErrExist):
		return narrow(file)
	}
	return err
}

// narrow takes group and other permissions away from path.
func narrow(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm()&^FileMode == 0 {
		return nil
	}
	if err := os.Chmod(path, fi.Mode().Perm()&FileMode); err != nil {
		return fmt.Errorf("make %s private: %w", path, err)
	}
	return nil
}

// Tx runs fn inside a transaction, committing when fn returns nil and rolling
// back otherwise (also when fn panics, after which the panic continues).
func Tx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx) error) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin transaction: %w", err)
	}
	defer func() {
		if p := recover(); p != nil {
			_ = tx.Rollback()
			panic(p)
		}
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("commit transaction: %w", err)
	}
	return nil
}

// ErrBadMigration is returned by Migrate for a migration file whose name does
// not start with a positive version number, or for two files with the same
// version.
var ErrBadMigration = errors.New("bad migration")

type migration struct {
	version int
	name    string
	sql     string
}

// MigrateDir is Migrate over the directory dir of fsys (usually an embedded
// "migrations" folder), with errors naming the component.
func MigrateDir(ctx context.Context, db *sql.DB, component string, fsys fs.FS, dir string) error {
	sub, err := fs.Sub(fsys, dir)
	if err != nil {
		return fmt.Errorf("migrations of %s: %w", component, err)
	}
	if err := Migrate(ctx, db, component, sub); err != nil {
		return fmt.Errorf("migrate %s: %w", component, err)
	}
	return nil
}

// Migrate applies, in version order and each in its own transaction, the
// migrations of component found as "*.sql" files at the root of fsys whose
// version is above the one recorded. File names start with the version
// number: "001_init.sql". Applied migrations are never re-run; editing one
// after release has no effect, so add a new file instead.
func Migrate(ctx context.Context, db *sql.DB, component string, fsys fs.FS) error {
	if component == "" {
		return fmt.Errorf("%w: empty component name", ErrBadMigration)
	}
	migs, err := readMigrations(fsys)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", component, err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		component  TEXT    NOT NULL,
		version    INTEGER NOT NULL,
		name       TEXT    NOT NULL,
		applied_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
		PRIMARY KEY (component, version)
	)`); err != nil {
		return fmt.Errorf("migrate %s: create schema_migrations: %w", component, err)
	}
	for _, m := range migs {
		err := Tx(ctx, db, func(tx *sql.Tx) error {
			var n int
			if err := tx.QueryRowContext(ctx,
				`SELECT COUNT(*) FROM schema_migrations WHERE component = ? AND version = ?`,
				component, m.version).Scan(&n); err != nil {
				return err
			}
			if n > 0 {
				return nil
			}
			if _, err := tx.ExecContext(ctx, m.sql); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx,
				`INSERT INTO schema_migrations (component, version, name) VALUES (?, ?, ?)`,
				component, m.version, m.name)
			return err
		})
		if err != nil {
			return fmt.Errorf("migrate %s: apply %s: %w", component, m.name, err)
		}
	}
	return nil
}

// Version returns the highest applied migration version of component, 0 when
// none has been applied.
func Version(ctx context.Context, db *sql.DB, component string) (int, error) {
	var v sql.NullInt64
	err := db.QueryRowContext(ctx,
		`SELECT MAX(version) FROM schema_migrations WHERE component = ?`, component).Scan(&v)
	if err != nil {
		if strings.Contains(err.Error(), "no such table") {
			return 0, nil
		}
		return 0, fmt.Errorf("read %s schema version: %w", component, err)
	}
	return int(v.Int64), nil
}

func readMigrations(fsys fs.FS) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		return nil, err
	}
	var out []migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return nil, fmt.Errorf("%w: %s does not start with a version number", ErrBadMigration, e.Name())
		}
		if prev, dup := seen[v]; dup {
			return nil, fmt.Errorf("%w: %s and %s share version %d", ErrBadMigration, prev, e.Name(), v)
		}
		seen[v] = e.Name()
		body, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			return nil, err
		}
		out = append(out, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

// IntegrityCheck runs PRAGMA integrity_check and returns nil when SQLite
// answers "ok", otherwise an error listing the problems it reported.
func IntegrityCheck(ctx context.Context, db *sql.DB) error {
	rows, err := db.QueryContext(ctx, `PRAGMA integrity_check`)
	if err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	defer rows.Close()
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return fmt.Errorf("integrity check: %w", err)
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("integrity check: %w", err)
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity check: %s", strings.Join(problems, "; "))
	}
	return nil
}
