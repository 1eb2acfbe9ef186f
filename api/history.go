package api

import (
	"context"
	"time"
)

// History reads the history of the data dir's versioned files
// (MEMORIES.txt, BASE_PROMPT.txt, world_state.json, skills/, prompts/) and
// puts an earlier state back while the agent runs.
//
// Revisions are full hashes, unique prefixes of at least four hex digits,
// HEAD, and those with git's ~N and ^N suffixes (HEAD~2).
type History interface {
	// List returns the recorded changes, newest first: all of them, or
	// only those touching q.Path (a versioned file or directory: ErrInvalid
	// otherwise). q.Limit above zero keeps that many.
	List(ctx context.Context, q HistoryQuery) ([]Revision, error)
	// Get returns one change with its patch against the change before it.
	// ErrNotFound for a revision that names no change, ErrInvalid for a
	// short hash matching several.
	Get(ctx context.Context, rev string) (RevisionDiff, error)
	// Restore puts every versioned file back to its content at rev and
	// records that as a new change ("restore <short>"); the running agent
	// then rereads what it keeps in memory (world state, MEMORIES.txt,
	// skills) and TopicHistoryRestored is published. Errors as Get.
	Restore(ctx context.Context, rev string) (RestoreResult, error)
}

// TopicHistoryRestored is the event published after a restore; its payload
// is the RestoreResult.
const TopicHistoryRestored = "history.restored"

// HistoryQuery selects changes (GET /api/v1/history?path=&limit=).
type HistoryQuery struct {
	// Path limits the list to changes of this file or directory,
	// relative to the data dir ("MEMORIES.txt", "skills"); "" lists all.
	Path  string
	Limit int
}

// Revision is one recorded change of the versioned files.
type Revision struct {
	Hash  string    `json:"hash"`
	Short string    `json:"short"`
	Time  time.Time `json:"time"`
	// Message is the whole commit message; its first line says what
	// changed ("world: set_user_name", "memory: remember …", "restore
	// 3f2a9c1").
	Message string `json:"message"`
	// Files are the data-dir paths the change added, changed or removed,
	// sorted.
	Files []string `json:"files"`
}

// RevisionList is GET /api/v1/history.
type RevisionList struct {
	Revisions []Revision `json:"revisions"`
}

// RevisionDiff is GET /api/v1/history/{rev}: the change and its unified
// diff (git's format, three lines of context; binary files are named, not
// shown).
type RevisionDiff struct {
	Revision
	Patch string `json:"patch"`
	// Truncated is true when the patch was cut at MaxPatchBytes (at a line
	// end).
	Truncated bool `json:"truncated,omitempty"`
}

// MaxPatchBytes bounds RevisionDiff.Patch.
const MaxPatchBytes = 1 << 20

// RestoreResult is the answer to POST /api/v1/history/{rev}/restore and the
// payload of TopicHistoryRestored.
type RestoreResult struct {
	// Target is the change whose state was put back.
	Target Revision `json:"target"`
	// Revision is the new change recording the restore; null when the
	// files already matched Target (nothing changed, nothing recorded).
	Revision *Revision `json:"revision"`
}
