package skills

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// LoadMode says how a skill was in a session's context.
type LoadMode string

// Load modes.
const (
	// LoadFull: the skill's whole text was in the system prompt.
	LoadFull LoadMode = "full"
	// LoadTOC: only its summary line was, in the table of contents.
	LoadTOC LoadMode = "toc"
	// LoadRead: the model opened it with read_skill.
	LoadRead LoadMode = "read"
)

// Valid reports whether m is a known mode.
func (m LoadMode) Valid() bool { return m == LoadFull || m == LoadTOC || m == LoadRead }

// ErrLoadMode is returned by RecordLoads for an unknown mode.
var ErrLoadMode = errors.New("unknown skill load mode (want full, toc or read)")

// maxLoadedKeys bounds the in-memory set of today's records.
const maxLoadedKeys = 100_000

type loadKey struct {
	thread chat.ThreadID
	skill  string
	mode   LoadMode
}

// Load is one record: thread had skill in its context (mode) on the day of
// At; At is the first such load that day.
type Load struct {
	Thread chat.ThreadID `json:"thread"`
	Skill  string        `json:"skill"`
	Mode   LoadMode      `json:"mode"`
	At     time.Time     `json:"at"`
}

// LoadFilter selects records for Loads. Zero fields do not filter.
type LoadFilter struct {
	Thread chat.ThreadID
	Skill  string
	Mode   LoadMode
	// Since keeps records at or after this time.
	Since time.Time
	// Limit caps the result (0: no limit).
	Limit int
}

// RecordLoads records that thread's context carried skills (names) in mode,
// at most once per (thread, skill, mode, UTC day). Without a database it does
// nothing. Names already recorded today for the thread cost no write.
func (s *Store) RecordLoads(ctx context.Context, thread chat.ThreadID, names []string, mode LoadMode) error {
	if s.db == nil || len(names) == 0 {
		return nil
	}
	if !mode.Valid() {
		return fmt.Errorf("record skill loads: %w: %q", ErrLoadMode, mode)
	}
	now := s.now().UTC()
	day := now.Format(time.DateOnly)

	s.loadsMu.Lock()
	if day != s.loadsDay || len(s.loaded) > maxLoadedKeys {
		clear(s.loaded)
		s.loadsDay = day
	}
	var todo []string
	for _, n := range names {
		if n != "" && !s.loaded[loadKey{thread, n, mode}] && !contains(todo, n) {
			todo = append(todo, n)
		}
	}
	s.loadsMu.Unlock()
	if len(todo) == 0 {
		return nil
	}

	var b strings.Builder
	b.WriteString(`INSERT OR IGNORE INTO skill_loads (thread, skill, mode, day, loaded_at) VALUES `)
	args := make([]any, 0, 5*len(todo))
	for i, n := range todo {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString("(?, ?, ?, ?, ?)")
		args = append(args, string(thread), n, string(mode), day, now.UnixNano())
	}
	if _, err := s.db.ExecContext(ctx, b.String(), args...); err != nil {
		return fmt.Errorf("record skill loads: %w", err)
	}
	s.loadsMu.Lock()
	if s.loadsDay == day {
		for _, n := range todo {
			s.loaded[loadKey{thread, n, mode}] = true
		}
	}
	s.loadsMu.Unlock()
	return nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// Loads returns the records f selects, oldest first. Without a database it
// returns none.
func (s *Store) Loads(ctx context.Context, f LoadFilter) ([]Load, error) {
	if s.db == nil {
		return nil, nil
	}
	var (
		where []string
		args  []any
	)
	if f.Thread != "" {
		where = append(where, "thread = ?")
		args = append(args, string(f.Thread))
	}
	if f.Skill != "" {
		where = append(where, "skill = ?")
		args = append(args, f.Skill)
	}
	if f.Mode != "" {
		where = append(where, "mode = ?")
		args = append(args, string(f.Mode))
	}
	if !f.Since.IsZero() {
		where = append(where, "loaded_at >= ?")
		args = append(args, f.Since.UnixNano())
	}
	q := `SELECT thread, skill, mode, loaded_at FROM skill_loads`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY loaded_at, thread, skill, mode"
	if f.Limit > 0 {
		q += " LIMIT ?"
		args = append(args, f.Limit)
	}
	out, err := sqlite.Rows(ctx, s.db, scanLoad, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list skill loads: %w", err)
	}
	return out, nil
}

func scanLoad(rows sqlite.Scanner) (Load, error) {
	var (
		l            Load
		thread, mode string
		at           int64
	)
	if err := rows.Scan(&thread, &l.Skill, &mode, &at); err != nil {
		return Load{}, err
	}
	l.Thread, l.Mode, l.At = chat.ThreadID(thread), LoadMode(mode), time.Unix(0, at).UTC()
	return l, nil
}

// LoadsSince returns every record at or after since, oldest first.
func (s *Store) LoadsSince(ctx context.Context, since time.Time) ([]Load, error) {
	return s.Loads(ctx, LoadFilter{Since: since})
}

// PurgeLoads deletes records older than before and returns how many went.
func (s *Store) PurgeLoads(ctx context.Context, before time.Time) (int, error) {
	if s.db == nil {
		return 0, nil
	}
	res, err := s.db.ExecContext(ctx, `DELETE FROM skill_loads WHERE loaded_at < ?`, before.UnixNano())
	if err != nil {
		return 0, fmt.Errorf("purge skill loads: %w", err)
	}
	n, err := res.RowsAffected()
	return int(n), err
}
