package memory

import (
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"path/filepath"
	"time"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// Backend names a Store implementation (config key memory.backend).
type Backend string

// The backends.
const (
	BackendLocalVector Backend = "local_vector" // SQLite + FTS5 + vector index (default)
	BackendFlat        Backend = "flat"         // MEMORIES.txt only
)

// MemoriesFile is the working-set file name in the data dir.
const MemoriesFile = "MEMORIES.txt"

// Options configure Open.
type Options struct {
	Backend  Backend // BackendLocalVector when empty
	DB       *sql.DB // required for local_vector; owned by the caller
	DataDir  string  // holds MEMORIES.txt; required for flat
	Embedder embed.Embedder
	// Previous builds the embedder of the model the stored vectors were
	// made with, when it differs from Embedder (see OpenVectorMigrating);
	// nil: memories of another model are found by their words until
	// re-embedded.
	Previous Previous
	Now      func() time.Time // time.Now when nil
	Logger   *slog.Logger
	Tuning   *Tuning // DefaultTuning when nil
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: the store reads
	// its own.
	Migrations *sqlite.Migrations
	// Commits, when set, is the database's group commit shared with the
	// other stores (sqlite.Committer): the memories AddBatch writes
	// commit in the same transaction as the concurrent writes of every
	// store using it, and the access statistics recall records go out
	// with its next one (sqlite.Committer.Defer); nil: they commit on
	// their own.
	Commits *sqlite.Committer
}

// Open returns the configured backend. For local_vector a nil Embedder
// means the offline hashing embedder with embed.DefaultDimensions: it is
// for stores opened without a model (tests, tools); the product's default
// model, the built-in sentence encoder, is chosen by the app, which always
// passes one (internal/app/embedding.go).
func Open(ctx context.Context, o Options) (Store, error) {
	tune := DefaultTuning
	if o.Tuning != nil {
		tune = *o.Tuning
	}
	switch o.Backend {
	case BackendLocalVector, "":
		e := o.Embedder
		if e == nil {
			e = embed.NewOffline(embed.DefaultDimensions)
		}
		s, err := openVector(ctx, o.Migrations, o.Commits, o.DB, e, o.Previous, o.Now, o.Logger, tune)
		if err != nil {
			return nil, err
		}
		return s, nil
	case BackendFlat:
		if o.DataDir == "" {
			return nil, fmt.Errorf("open flat memory store: %w: data dir is required", ErrInvalid)
		}
		return NewFlat(filepath.Join(o.DataDir, MemoriesFile), o.Now, o.Logger), nil
	}
	return nil, fmt.Errorf("open memory store: %w: unknown backend %q (want %q or %q)", ErrInvalid, o.Backend, BackendLocalVector, BackendFlat)
}
