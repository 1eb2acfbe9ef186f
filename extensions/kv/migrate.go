package kv

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// component names this extension's migrations in schema_migrations.
const component = "kv"

// migrate applies the embedded migrations above the recorded version, each
// in its own transaction. It follows internal/sqlite.Migrate's protocol (the
// same schema_migrations table, one row per applied file, per component),
// which an extension may not import: only public packages are allowed.
func migrate(ctx context.Context, db *sql.DB) error {
	type migration struct {
		version int
		name    string
		sql     string
	}
	entries, err := fs.ReadDir(migrationFiles, "migrations")
	if err != nil {
		return fmt.Errorf("migrate kv: %w", err)
	}
	var migs []migration
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		num, _, _ := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(num)
		if err != nil || v <= 0 {
			return fmt.Errorf("migrate kv: %s does not start with a version number", e.Name())
		}
		body, err := fs.ReadFile(migrationFiles, "migrations/"+e.Name())
		if err != nil {
			return fmt.Errorf("migrate kv: %w", err)
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
		return fmt.Errorf("migrate kv: create schema_migrations: %w", err)
	}
	for _, m := range migs {
		if err := applyMigration(ctx, db, m.version, m.name, m.sql); err != nil {
			return fmt.Errorf("migrate kv: apply %s: %w", m.name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, db *sql.DB, version int, name, body string) (err error) {
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
