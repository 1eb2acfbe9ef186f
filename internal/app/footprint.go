package app

import (
	"context"

	"github.com/reverie-ai/reverie/internal/footprint"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// keepFootprint returns freed heap to the OS once start-up has settled and
// again whenever use has grown the private memory (see package footprint).
// Each time, the conversations' cached histories are dropped (the next
// turn on a thread reads its history whole again), the database pool
// closes its idle connections (the next query opens one again, parsing the
// schema compactly), SQLite frees the pages its connections cache but no
// statement uses (a fresh data dir's migrations leave ~1 MiB of them) and
// its C heap the slabs it keeps empty, and the memory index drops the file
// pages recalls have read (file cache, not private memory, but the
// process's Pss).
func (a *App) keepFootprint(ctx context.Context) error {
	// The first release waits for the memory index's load (at 100k
	// memories, seconds of reading rows that become garbage).
	k := &footprint.Keeper{Logger: a.Logger, Release: a.releaseMemory, After: a.memoryIndexLoaded}
	return k.Run(ctx)
}

// releaseMemory drops the conversations' cached histories, closes the
// idle database connections, hands back what SQLite caches unused and the
// memory index's file pages, then the freed Go heap.
//
// Under sustained use the keeper releases too (at most once a minute, while
// use grows the private memory), so each active thread then reads its
// history whole again: one read a minute at most, 0.2–4 ms for 40–400
// messages. Keeping the histories used in the last minute was measured
// (with the keeper's one-minute checks of before Quiet) against dropping
// none at all, its upper bound: 20×20 turnload throughput the same (ratio
// 1.00, CPU per turn 0.98, noise), RssAnon 60 s after 200 and 500 turns
// 0.1–0.4 MiB higher. The keeper releases again only when the memory
// grows, so what a release keeps stays once use stops.
func (a *App) releaseMemory() {
	if a.Conversations != nil {
		a.Conversations.DropCachedHistories()
	}
	sqlite.TrimIdle(a.DB)
	sqlite.ReleaseMemory()
	if a.trimMemoryIndex != nil {
		a.trimMemoryIndex()
	}
	footprint.Release()
}
