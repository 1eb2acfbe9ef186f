package kv

import (
	"context"
	"database/sql"
	"embed"

	"github.com/reverie-ai/reverie/extension"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// component names this extension's migrations in schema_migrations.
const component = "kv"

// migrate applies the embedded migrations (extension.Migrate).
func migrate(ctx context.Context, db *sql.DB) error {
	return extension.Migrate(ctx, db, component, migrationFiles, "migrations")
}
