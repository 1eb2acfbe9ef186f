package memory

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
)

// vecSpace holds an index's int8 vectors, one dims-long row per slot (and,
// each in a vecSpace of its own, their sign sketches and the memories'
// metadata, viewed as bytes).
//
// On a Unix system with a database on disk the rows live in a memory
// mapping of an unlinked temporary file next to the database (fileSpace):
// the pages are the kernel's file cache, not the process's private
// (anonymous) memory, so the index's bulk (384 bytes per memory with the
// offline embedder, 38 MB at 100k memories) is memory the kernel can drop
// under pressure and read back, and only the rows a recall touches are
// resident. The file is a cache rebuilt from the database at every load
// (the vectors' source of truth stays the database's BLOBs, which hold the
// same int8 codes: vecblob.go); it has no name, so nothing is left behind. Elsewhere, or when the file cannot be
// made, the rows are an ordinary Go slice (heapSpace).
type vecSpace interface {
	// grow returns an array of at least n bytes whose first len(old) hold
	// old's contents; old must not be used afterwards.
	grow(old []int8, n int) []int8
	// trim drops the rows' pages from the process's resident memory
	// (they stay in the file and are read back on use); a no-op on the
	// heap.
	trim()
	// kind names the storage, for logs and tests: "file" or "heap".
	kind() string
}

// heapSpace keeps the rows in the Go heap.
type heapSpace struct{}

func (heapSpace) grow(old []int8, n int) []int8 {
	if n <= cap(old) {
		return old[:len(old):cap(old)]
	}
	out := make([]int8, len(old), n)
	copy(out, old)
	return out
}

func (heapSpace) trim() {}

func (heapSpace) kind() string { return "heap" }

// newVecSpace returns the rows' storage for an index of a database whose
// file is in dir ("" for an in-memory database: the heap). An error making
// the file falls back to the heap, with the reason.
func newVecSpace(dir string) (vecSpace, error) {
	if dir == "" {
		return heapSpace{}, nil
	}
	f, err := os.CreateTemp(dir, ".memory-vectors-*")
	if err != nil {
		return heapSpace{}, fmt.Errorf("vector file: %w", err)
	}
	// unlinked at once: the open file and its mapping keep it, and it
	// goes when the process does, however it ends
	rmErr := os.Remove(f.Name())
	if rmErr != nil {
		f.Close()
		return heapSpace{}, fmt.Errorf("vector file: %w", rmErr)
	}
	fs, err := mapFile(f)
	if err != nil {
		f.Close()
		return heapSpace{}, fmt.Errorf("vector file: %w", err)
	}
	return fs, nil
}

// newIndex returns an empty index whose vectors, their sign sketches and
// the memories' metadata are in files next to the database when they can
// be made (see vecSpace), else in the heap (logged).
func (s *VectorStore) newIndex(dims int) *index {
	return newIndexIn(dims, s.space("memory vectors"), s.space("memory vectors' sketches"), s.space("memory metadata"))
}

// databaseDir returns the directory of db's main database file, "" when it
// is in memory.
func databaseDir(ctx context.Context, db *sql.DB) (string, error) {
	rows, err := db.QueryContext(ctx, `PRAGMA database_list`)
	if err != nil {
		return "", fmt.Errorf("list databases: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			seq        int
			name, file string
		)
		if err := rows.Scan(&seq, &name, &file); err != nil {
			return "", fmt.Errorf("list databases: %w", err)
		}
		if name == "main" && file != "" {
			return filepath.Dir(file), rows.Err()
		}
	}
	return "", rows.Err()
}

// newTextIndex returns an empty text index whose documents' term ids and
// sentences are in files next to the database when they can be made (see
// vecSpace), else in the heap (logged).
func (s *VectorStore) newTextIndex() *textIndex {
	return newTextIndexIn(s.space("full-text index"), s.space("full-text index's sentences"),
		s.space("full-text index's sentence offsets"))
}

// space returns a new vecSpace in a file next to the database when it can
// be made, else in the heap, logging which of the store's parts (what)
// stays in private memory.
func (s *VectorStore) space(what string) vecSpace {
	sp, err := newVecSpace(s.vecDir)
	if err != nil {
		s.log.Warn("memory store part kept in private memory", "part", what, "err", err)
	}
	return sp
}
