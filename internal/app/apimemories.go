package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/memory"
)

type apiMemories struct{ s *memory.Service }

func memoryError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, memory.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, memory.ErrDuplicate), errors.Is(err, memory.ErrClosed):
		return fmt.Errorf("%w: %w", api.ErrConflict, err)
	case errors.Is(err, memory.ErrEmpty), errors.Is(err, memory.ErrTooLong), errors.Is(err, memory.ErrSecret),
		errors.Is(err, memory.ErrInvalid), errors.Is(err, memory.ErrUnsupported):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func memoryOf(m memory.Memory) api.Memory {
	return api.Memory{ID: m.ID, Text: m.Text, Kind: string(m.Kind), Source: string(m.Source), CreatedAt: m.CreatedAt,
		UpdatedAt: m.UpdatedAt, ValidFrom: m.ValidFrom, ValidTo: m.ValidTo, AccessCount: m.AccessCount,
		LastAccess: m.LastAccess, EventTime: m.EventTime, Thread: m.Thread, SupersededBy: m.SupersededBy,
		Session: m.Session, Speaker: m.Speaker, Role: string(m.Role)}
}

func kindsOf(ks []string) []memory.Kind {
	out := make([]memory.Kind, len(ks))
	for i, k := range ks {
		out[i] = memory.Kind(k)
	}
	return out
}

func (m apiMemories) Search(ctx context.Context, q api.MemorySearch) ([]api.Memory, error) {
	res, err := m.s.Search(ctx, memory.Query{Text: q.Text, Limit: q.Limit, Kinds: kindsOf(q.Kinds), IncludeClosed: q.IncludeClosed,
		Peek: true})
	if err != nil {
		return nil, memoryError(err)
	}
	out := make([]api.Memory, len(res))
	for i, r := range res {
		out[i] = memoryOf(r.Memory)
		score := r.Score
		out[i].Score = &score
	}
	return out, nil
}

func (m apiMemories) List(ctx context.Context, f api.MemoryFilter) ([]api.Memory, error) {
	srcs := make([]memory.Source, len(f.Sources))
	for i, s := range f.Sources {
		srcs[i] = memory.Source(s)
	}
	ms, err := m.s.List(ctx, memory.Filter{Kinds: kindsOf(f.Kinds), Sources: srcs, IncludeClosed: f.IncludeClosed,
		Limit: f.Limit, Offset: f.Offset, OrderByAccess: f.OrderByAccess})
	if err != nil {
		return nil, memoryError(err)
	}
	out := make([]api.Memory, len(ms))
	for i, x := range ms {
		out[i] = memoryOf(x)
	}
	return out, nil
}

func (m apiMemories) Get(ctx context.Context, id int64) (api.Memory, error) {
	x, err := m.s.Get(ctx, id)
	if err != nil {
		return api.Memory{}, memoryError(err)
	}
	return memoryOf(x), nil
}

// Add remembers a memory the user wrote: it is also kept in MEMORIES.txt
// unless in.Keep is false.
func (m apiMemories) Add(ctx context.Context, in api.MemoryInput) (api.Memory, error) {
	r, err := m.s.Remember(ctx, memory.Memory{Text: in.Text, Kind: memory.Kind(in.Kind), Source: memory.Source(in.Source),
		EventTime: in.EventTime, Thread: in.Thread}, in.Keep == nil || *in.Keep)
	if err != nil {
		return api.Memory{}, memoryError(err)
	}
	out, err := m.Get(ctx, r.ID)
	out.Existing = r.Existing
	return out, err
}

func (m apiMemories) Update(ctx context.Context, id int64, in api.MemoryInput) (api.Memory, error) {
	x, err := m.s.Get(ctx, id)
	if err != nil {
		return api.Memory{}, memoryError(err)
	}
	// An empty source lets the service decide: a new text is the person's
	// (user_explicit), a metadata-only change keeps the source.
	x.Text, x.Kind, x.EventTime, x.Source = in.Text, memory.Kind(in.Kind), in.EventTime, memory.Source(in.Source)
	if in.Thread != "" {
		x.Thread = in.Thread
	}
	cur, err := m.s.Update(ctx, x)
	if err != nil {
		return api.Memory{}, memoryError(err)
	}
	return m.Get(ctx, cur) // a new text is a new memory (the old one is closed)
}

func (m apiMemories) Forget(ctx context.Context, id int64) error {
	_, err := m.s.Forget(ctx, id)
	return memoryError(err)
}

func (m apiMemories) History(ctx context.Context, id int64) ([]api.Memory, error) {
	ms, err := m.s.History(ctx, id)
	if err != nil {
		return nil, memoryError(err)
	}
	out := make([]api.Memory, len(ms))
	for i, x := range ms {
		out[i] = memoryOf(x)
	}
	return out, nil
}
