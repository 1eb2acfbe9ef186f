package extension

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// ErrBadMigration is returned by Migrate for a migration file whose name
// does not start with a positive version number, for two files with the
// same version, or for an empty component name.
var ErrBadMigration = errors.New("bad migration")

// Migrate applies an extension's SQL migrations to the shared database:
// the files NNN_name.sql in dir of files (an embed.FS; "." for its root), in
// version order, each in its own transaction, skipping those already
// recorded for component. Reverie's own migrations go through it too
// (internal/sqlite), so extensions and the core share one record of the
// schema: the schema_migrations table, one row per applied file and
// component. Applied migrations are never re-run; editing one after release
// has no effect, so add a new file instead.
//
// An up-to-date component costs one read of the recorded versions (no
// write transaction), so that every start does not pay for its history;
// components migrated through one Migrations share that read.
func Migrate(ctx context.Context, db *sql.DB, component string, files fs.FS, dir string) error {
	return NewMigrations(db).Migrate(ctx, db, component, files, dir)
}

// Migrations applies the migrations of the components that share one
// database, reading the record of what is applied (schema_migrations)
// once for all of them: a start whose twenty components are up to date
// costs one read instead of twenty. A nil *Migrations, or one made for
// another database, migrates as the package's Migrate does. Safe for
// concurrent use: migrations through one Migrations run one at a time.
type Migrations struct {
	db      *sql.DB
	mu      sync.Mutex
	applied map[string]map[int]bool // component → applied versions; nil until read
}

// NewMigrations returns the Migrations of db. It reads nothing until its
// first Migrate.
func NewMigrations(db *sql.DB) *Migrations { return &Migrations{db: db} }

// Migrate is the package's Migrate (see there) for db, which should be the
// database m was made for.
func (m *Migrations) Migrate(ctx context.Context, db *sql.DB, component string, files fs.FS, dir string) error {
	if m == nil || m.db != db {
		m = NewMigrations(db)
	}
	if component == "" {
		return fmt.Errorf("%w: empty component name", ErrBadMigration)
	}
	migs, err := readMigrations(files, dir)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", component, err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.applied == nil {
		if m.applied, err = appliedVersions(ctx, db); err != nil {
			return fmt.Errorf("migrate %s: %w", component, err)
		}
	}
	for _, mig := range migs {
		if m.applied[component][mig.version] {
			continue
		}
		body, err := fs.ReadFile(files, path.Join(dir, mig.name))
		if err == nil {
			err = applyMigration(ctx, db, component, mig.version, mig.name, string(body))
		}
		if err != nil {
			return fmt.Errorf("migrate %s: apply %s: %w", component, mig.name, err)
		}
		if m.applied[component] == nil {
			m.applied[component] = map[int]bool{}
		}
		m.applied[component][mig.version] = true
	}
	return nil
}

// appliedVersions reads the versions recorded for every component,
// creating the schema_migrations table on a new database.
func appliedVersions(ctx context.Context, db *sql.DB) (map[string]map[int]bool, error) {
	read := func() (map[string]map[int]bool, error) {
		rows, err := db.QueryContext(ctx, `SELECT component, version FROM schema_migrations`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[string]map[int]bool{}
		for rows.Next() {
			var c string
			var v int
			if err := rows.Scan(&c, &v); err != nil {
				return nil, err
			}
			if out[c] == nil {
				out[c] = map[int]bool{}
			}
			out[c][v] = true
		}
		return out, rows.Err()
	}
	if out, err := read(); err == nil {
		return out, nil
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (
		component  TEXT    NOT NULL,
		version    INTEGER NOT NULL,
		name       TEXT    NOT NULL,
		applied_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ','now')),
		PRIMARY KEY (component, version)
	)`); err != nil {
		return nil, fmt.Errorf("create schema_migrations: %w", err)
	}
	out, err := read()
	if err != nil {
		return nil, fmt.Errorf("read schema_migrations: %w", err)
	}
	return out, nil
}

type migration struct {
	version int
	name    string
}

// readMigrations returns the *.sql files of dir in version order (their
// names: Migrate reads only the bodies it applies).
func readMigrations(files fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(files, dir)
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
		out = append(out, migration{version: v, name: e.Name()})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].version < out[j].version })
	return out, nil
}

func applyMigration(ctx context.Context, db *sql.DB, component string, version int, name, body string) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// Checked again inside the write transaction: another process (or
	// connection) may have applied it since appliedVersions read.
	var n int
	if err = tx.QueryRowContext(ctx,
		`SELECT COUNT(*) FROM schema_migrations WHERE component = ? AND version = ?`, component, version).Scan(&n); err != nil {
		return err
	}
	if n > 0 {
		return tx.Commit()
	}
	if _, err = tx.ExecContext(ctx, body); err != nil {
		return err
	}
	if _, err = tx.ExecContext(ctx,
		`INSERT INTO schema_migrations (component, version, name) VALUES (?, ?, ?)`, component, version, name); err != nil {
		return err
	}
	return tx.Commit()
}
