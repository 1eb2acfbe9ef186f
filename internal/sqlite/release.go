package sqlite

import (
	"database/sql"
	"math"

	"modernc.org/libc"
	"modernc.org/memory"
	sqlite3 "modernc.org/sqlite/lib"
)

// ReleaseMemory frees the pages SQLite caches for this process's open
// databases that no statement is using (sqlite3_release_memory), and
// returns how many bytes it freed. The next query that needs one of them
// reads it again, from the operating system's file cache.
//
// A connection keeps every page it has read or written, up to its cache
// size (2,000 pages), for as long as it stays open: a fresh data dir's
// migrations leave ~1 MiB cached in the connection that ran them, and an
// agent keeps its connections open. The C heap these pages come from (the
// vendored modernc.org/memory, see third_party/memory/REVERIE.md) gives
// freed slabs back to the operating system beyond a small reserve, so
// what this frees leaves the process's private memory. It is safe to call
// at any time, from any goroutine, while connections are in use.
//
// Then the C heap trims itself (memory.RequestTrim, taken by the free of
// a block allocated here for it, under the C library's lock): the empty
// slabs it keeps for reuse, one per size class it has used plus the
// newest of each size of large block, leave the process's private memory
// too (~0.5 MiB after a few hundred turns); the next allocation maps a
// slab again.
func ReleaseMemory() int {
	tls := libc.NewTLS()
	defer tls.Close()
	n := int(sqlite3.Xsqlite3_release_memory(tls, math.MaxInt32))
	memory.RequestTrim()
	libc.Xfree(tls, libc.Xmalloc(tls, 1))
	return n
}

// TrimIdle closes db's idle connections. Each open connection keeps its
// own parse of the schema (~70 KB for Reverie's) and the lookaside memory
// it has touched, for as long as it stays in the pool; a burst of
// concurrent queries (a fresh data dir's start, twenty clients) leaves
// several, and the connection that ran a fresh data dir's migrations
// holds a schema built piece by piece across the C heap's slabs. The next
// query opens a connection again (~1.5 ms: it parses the schema, compactly);
// connections in use are not affected.
func TrimIdle(db *sql.DB) {
	db.SetMaxIdleConns(0)
	db.SetMaxIdleConns(maxConns)
}
