package extension

import (
	"context"
	"database/sql"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migrate applies an extension's SQL migrations to the shared database:
// the files NNN_name.sql in dir of files (an embed.FS), in version order,
// each in its own transaction, skipping those already recorded for
// component. It follows the protocol of Reverie's own migrations (the same
// schema_migrations table, one row per applied file and component), so
// extensions and the core share one record of the schema.
func Migrate(ctx context.Context, db *sql.DB, component string, files fs.FS, dir string) error {
	type migration struct {
		version int
		name    string
		sql     string
	}
	entries, err := fs.ReadDir(files, dir)
	if err != nil {
		return fmt.Errorf("migrate %s: %w", component, err)
	}
	var migs []migration
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return fmt.Errorf("migrate %s: %s does not start with a version number", component, e.Name())
		}
		body, err := fs.ReadFile(files, path.Join(dir, e.Name()))
		if err != nil {
			return fmt.Errorf("migrate %s: %w", component, err)
		}
		migs = append(migs, migration{version: v, name: e.Name(), sql: string(body)})
	}
	sort.Slice(migs, func(i, j int) bool { return migs[i].version < migs[j].version })
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
		if err := applyMigration(ctx, db, component, m.version, m.name, m.sql); err != nil {
			return fmt.Errorf("migrate %s: apply %s: %w", component, m.name, err)
		}
	}
	return nil
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
