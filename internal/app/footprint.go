package app

import (
	"context"

	"github.com/reverie-ai/reverie/internal/footprint"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// keepFootprint returns freed heap to the OS once start-up has settled and
// again whenever use has grown the private memory (see package footprint).
// Each time, SQLite first frees the pages its connections cache but no
// statement uses (a fresh data dir's migrations leave ~1 MiB of them).
func (a *App) keepFootprint(ctx context.Context) error {
	k := &footprint.Keeper{Logger: a.Logger, Release: releaseMemory}
	return k.Run(ctx)
}

// releaseMemory hands back what SQLite caches unused, then the freed Go
// heap.
func releaseMemory() {
	sqlite.ReleaseMemory()
	footprint.Release()
}
