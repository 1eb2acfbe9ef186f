package memory

import (
	"context"
	"fmt"
	"strings"
)

// MaxHistory bounds the versions History returns.
const MaxHistory = 200

// historian is the optional interface of a Store that finds a memory's
// earlier versions itself (VectorStore, with one recursive query).
type historian interface {
	Predecessors(ctx context.Context, id int64, limit int) ([]Memory, error)
}

// History returns memory id's earlier versions: the closed memories whose
// text edits led to it (each SupersededBy the next), newest first, at most
// MaxHistory. ErrNotFound for an unknown id. A store without its own query
// is walked through List (closed memories included).
func (s *Service) History(ctx context.Context, id int64) ([]Memory, error) {
	if _, err := s.store.Get(ctx, id); err != nil {
		return nil, err
	}
	if h, ok := s.store.(historian); ok {
		return h.Predecessors(ctx, id, MaxHistory)
	}
	all, err := s.store.List(ctx, Filter{IncludeClosed: true, Limit: 100000})
	if err != nil {
		return nil, fmt.Errorf("history of memory %d: %w", id, err)
	}
	bySucc := map[int64]Memory{}
	for _, m := range all {
		if m.SupersededBy != 0 {
			bySucc[m.SupersededBy] = m
		}
	}
	var out []Memory
	for cur := id; len(out) < MaxHistory; {
		m, ok := bySucc[cur]
		if !ok {
			break
		}
		out = append(out, m)
		cur = m.ID
	}
	return out, nil
}

// Predecessors returns the closed memories whose edits led to id, newest
// first (one recursive query over superseded_by).
func (s *VectorStore) Predecessors(ctx context.Context, id int64, limit int) ([]Memory, error) {
	rows, err := s.db.QueryContext(ctx, `
		WITH RECURSIVE chain(id, depth) AS (
			SELECT id, 1 FROM memories WHERE superseded_by = ?
			UNION ALL
			SELECT m.id, c.depth + 1 FROM memories m JOIN chain c ON m.superseded_by = c.id WHERE c.depth < ?
		)
		SELECT `+prefixed("m.", selectCols)+` FROM chain c JOIN memories_read m ON m.id = c.id ORDER BY c.depth LIMIT ?`, id, limit, limit)
	if err != nil {
		return nil, fmt.Errorf("history of memory %d: %w", id, err)
	}
	defer rows.Close()
	var out []Memory
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("history of memory %d: %w", id, err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("history of memory %d: %w", id, err)
	}
	return out, nil
}

var _ historian = (*VectorStore)(nil)

// prefixed qualifies each column of a comma-separated list with p.
func prefixed(p, cols string) string {
	parts := strings.Split(cols, ",")
	for i, c := range parts {
		parts[i] = p + strings.TrimSpace(c)
	}
	return strings.Join(parts, ", ")
}
