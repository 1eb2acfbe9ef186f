package memory

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"time"
)

// Remote is an external memory store reached through two operations, such
// as an MCP memory server's search and store tools (memory.backend: mcp).
type Remote interface {
	// Search returns the stored memories most relevant to query, best
	// first.
	Search(ctx context.Context, query string, limit int) ([]string, error)
	// Store saves text as a memory.
	Store(ctx context.Context, text string) error
}

// RemoteStore is the mcp backend: memories live in an external store that
// only searches and stores (OpenMemory, @modelcontextprotocol/server-memory
// over MCP). Add stores through the remote; Recall searches it, a memory's
// id being a hash of its text as with the flat backend. Everything else
// the external store does not offer returns ErrUnsupported (Get, Update,
// Close, Delete, List, Count), RecordAccess does nothing, it keeps no vectors (no Vectors), and
// MEMORIES.txt is not pushed into the remote: Reconcile leaves it alone.
type RemoteStore struct {
	remote Remote
	now    func() time.Time
	log    *slog.Logger
}

var _ Store = (*RemoteStore)(nil)

// NewRemote returns the store over remote.
func NewRemote(remote Remote, now func() time.Time, log *slog.Logger) *RemoteStore {
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &RemoteStore{remote: remote, now: now, log: log}
}

// Add validates m's text and stores it remotely.
func (r *RemoteStore) Add(ctx context.Context, m Memory) (int64, error) {
	t, err := clean(m.Text)
	if err != nil {
		return 0, err
	}
	if err := r.remote.Store(ctx, t); err != nil {
		return 0, fmt.Errorf("store memory remotely: %w", err)
	}
	return flatID(t), nil
}

// AddBatch validates every text first, then stores them one by one.
func (r *RemoteStore) AddBatch(ctx context.Context, ms []Memory) ([]int64, error) {
	texts := make([]string, len(ms))
	for i, m := range ms {
		t, err := clean(m.Text)
		if err != nil {
			return nil, err
		}
		texts[i] = t
	}
	ids := make([]int64, len(ms))
	for i, t := range texts {
		if err := r.remote.Store(ctx, t); err != nil {
			return nil, fmt.Errorf("store memory remotely: %w", err)
		}
		ids[i] = flatID(t)
	}
	return ids, nil
}

// Recall searches the remote store; the rank gives the score.
func (r *RemoteStore) Recall(ctx context.Context, q Query) ([]Scored, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(q.Kinds) > 0 && !slices.Contains(q.Kinds, KindFact) {
		return nil, nil
	}
	texts, err := r.remote.Search(ctx, q.Text, limit)
	if err != nil {
		return nil, fmt.Errorf("search the remote memory store: %w", err)
	}
	now := r.now()
	var out []Scored
	for i, t := range texts {
		if len(out) == limit {
			break
		}
		m := Memory{ID: flatID(t), Text: t, Kind: KindFact, Source: SourceImport, CreatedAt: now, UpdatedAt: now, ValidFrom: now}
		out = append(out, Scored{Memory: m, Score: 1 / float64(i+1), TextRank: i + 1})
	}
	return out, nil
}

// EnsureCurrent reports every memory as present: MEMORIES.txt is not
// copied into an external store.
func (r *RemoteStore) EnsureCurrent(ctx context.Context, ms []Memory) ([]Ensured, error) {
	out := make([]Ensured, len(ms))
	for i, m := range ms {
		out[i] = Ensured{ID: flatID(m.Text), Outcome: EnsurePresent}
	}
	return out, nil
}

func unsupported(what string) error {
	return fmt.Errorf("%s: %w (memory.backend: mcp)", what, ErrUnsupported)
}

// Get is not offered by a search-and-store remote.
func (r *RemoteStore) Get(ctx context.Context, id int64) (Memory, error) {
	return Memory{}, unsupported("get memory")
}

// Update is not offered by a search-and-store remote.
func (r *RemoteStore) Update(ctx context.Context, m Memory) (int64, error) {
	return 0, unsupported("update memory")
}

// Close is not offered by a search-and-store remote.
func (r *RemoteStore) Close(ctx context.Context, id int64, at time.Time) error {
	return unsupported("close memory")
}

// Delete is not offered by a search-and-store remote.
func (r *RemoteStore) Delete(ctx context.Context, id int64) error {
	return unsupported("delete memory")
}

// List is not offered by a search-and-store remote.
func (r *RemoteStore) List(ctx context.Context, f Filter) ([]Memory, error) {
	return nil, unsupported("list memories")
}

// RecordAccess does nothing: the remote keeps its own statistics.
func (r *RemoteStore) RecordAccess(ctx context.Context, ids []int64, at time.Time) error { return nil }

// Count returns ErrUnsupported.
func (r *RemoteStore) Count(ctx context.Context, includeClosed bool) (int, error) {
	return 0, unsupported("count memories")
}

// Shutdown has nothing to flush.
func (r *RemoteStore) Shutdown(ctx context.Context) error { return nil }
