package memory

import (
	"context"
	"errors"
	"slices"
	"time"
)

// SplitStore keeps a conversation's episodes in Reverie's own store and
// everything else in another (memory.backend: mcp: facts go to the external
// MCP memory server, the transcript never leaves the machine). Writes go by
// kind; reads of one memory (Get, Update, Close, Delete) and List are the
// local store's (the external one cannot do them, and its errors say so
// when a memory is not local); Recall asks both and interleaves their
// rankings, external first; Count is the external store's, so that
// Service.Remember detects duplicates the way the external store allows.
type SplitStore struct {
	facts    FactStore // the external store
	episodes Store     // Reverie's own
}

var _ Store = (*SplitStore)(nil)

// FactStore is the store of SplitStore's facts: one that says, for
// Service.Reconcile, which lines of MEMORIES.txt it holds (RemoteStore).
type FactStore interface {
	Store
	EnsureCurrent(ctx context.Context, ms []Memory) ([]Ensured, error)
}

var _ FactStore = (*RemoteStore)(nil)

// NewSplit returns the store that keeps episodes in episodes and every
// other memory in facts.
func NewSplit(facts FactStore, episodes Store) *SplitStore {
	return &SplitStore{facts: facts, episodes: episodes}
}

func (s *SplitStore) of(m Memory) Store {
	if m.Kind == KindEpisode {
		return s.episodes
	}
	return s.facts
}

// Add stores m in the store of its kind.
func (s *SplitStore) Add(ctx context.Context, m Memory) (int64, error) {
	return s.of(m).Add(ctx, m)
}

// AddBatch stores the episodes of ms locally and the rest externally,
// returning the ids in ms's order. The two parts are separate batches: an
// external failure leaves the episodes stored.
func (s *SplitStore) AddBatch(ctx context.Context, ms []Memory) ([]int64, error) {
	var eps, rest []Memory
	for _, m := range ms {
		if m.Kind == KindEpisode {
			eps = append(eps, m)
		} else {
			rest = append(rest, m)
		}
	}
	var epIDs, restIDs []int64
	var err error
	if len(eps) > 0 {
		if epIDs, err = s.episodes.AddBatch(ctx, eps); err != nil {
			return nil, err
		}
	}
	if len(rest) > 0 {
		if restIDs, err = s.facts.AddBatch(ctx, rest); err != nil {
			return nil, err
		}
	}
	ids := make([]int64, 0, len(ms))
	for _, m := range ms {
		if m.Kind == KindEpisode {
			ids, epIDs = append(ids, epIDs[0]), epIDs[1:]
		} else {
			ids, restIDs = append(ids, restIDs[0]), restIDs[1:]
		}
	}
	return ids, nil
}

// Get returns a local memory, else asks the external store.
func (s *SplitStore) Get(ctx context.Context, id int64) (Memory, error) {
	m, err := s.episodes.Get(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return s.facts.Get(ctx, id)
	}
	return m, err
}

// Update edits a local memory, else asks the external store.
func (s *SplitStore) Update(ctx context.Context, m Memory) (int64, error) {
	id, err := s.episodes.Update(ctx, m)
	if errors.Is(err, ErrNotFound) {
		return s.facts.Update(ctx, m)
	}
	return id, err
}

// Close closes a local memory, else asks the external store.
func (s *SplitStore) Close(ctx context.Context, id int64, at time.Time) error {
	if _, err := s.episodes.Get(ctx, id); errors.Is(err, ErrNotFound) {
		return s.facts.Close(ctx, id, at)
	}
	return s.episodes.Close(ctx, id, at)
}

// Delete removes a local memory, else asks the external store.
func (s *SplitStore) Delete(ctx context.Context, id int64) error {
	err := s.episodes.Delete(ctx, id)
	if errors.Is(err, ErrNotFound) {
		return s.facts.Delete(ctx, id)
	}
	return err
}

// List lists the local memories (the external store cannot list).
func (s *SplitStore) List(ctx context.Context, f Filter) ([]Memory, error) {
	return s.episodes.List(ctx, f)
}

// Recall asks both stores for q and interleaves their rankings, the
// external store's first, without repeating a text, up to q's limit.
func (s *SplitStore) Recall(ctx context.Context, q Query) ([]Scored, error) {
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	var facts, eps []Scored
	var err error
	if len(q.Kinds) == 0 || slices.ContainsFunc(q.Kinds, func(k Kind) bool { return k != KindEpisode }) {
		if facts, err = s.facts.Recall(ctx, q); err != nil {
			return nil, err
		}
	}
	if len(q.Kinds) == 0 || slices.Contains(q.Kinds, KindEpisode) {
		if eps, err = s.episodes.Recall(ctx, q); err != nil {
			return nil, err
		}
	}
	out := make([]Scored, 0, min(limit, len(facts)+len(eps)))
	seen := map[string]bool{}
	for i := 0; len(out) < limit && (i < len(facts) || i < len(eps)); i++ {
		for _, list := range [][]Scored{facts, eps} {
			if i < len(list) && len(out) < limit && !seen[list[i].Text] {
				seen[list[i].Text] = true
				out = append(out, list[i])
			}
		}
	}
	return out, nil
}

// RecordAccess counts accesses in both stores (each ignores ids it does
// not hold).
func (s *SplitStore) RecordAccess(ctx context.Context, ids []int64, at time.Time) error {
	return errors.Join(s.episodes.RecordAccess(ctx, ids, at), s.facts.RecordAccess(ctx, ids, at))
}

// Count is the external store's count.
func (s *SplitStore) Count(ctx context.Context, includeClosed bool) (int, error) {
	return s.facts.Count(ctx, includeClosed)
}

// Shutdown shuts both stores down.
func (s *SplitStore) Shutdown(ctx context.Context) error {
	return errors.Join(s.episodes.Shutdown(ctx), s.facts.Shutdown(ctx))
}

// EnsureCurrent is the external store's (Service.Reconcile re-applies
// MEMORIES.txt, which holds facts).
func (s *SplitStore) EnsureCurrent(ctx context.Context, ms []Memory) ([]Ensured, error) {
	return s.facts.EnsureCurrent(ctx, ms)
}
