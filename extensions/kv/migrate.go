package kv

import (
	"embed"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// component names this extension's migrations in schema_migrations.
const component = "kv"
