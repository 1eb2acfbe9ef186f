// Package interactions is the interaction log: every inference, tool call,
// system event, conversation seed, compaction and supervisor check (and,
// from later features, memory harvests and reflection findings) is one row
// in SQLite, listed by the debug panel and filterable by action and thread.
//
// Logging is cheap (one multi-row insert per call) and advisory: callers log
// a failure to write and carry on, so the log never fails a turn.
//
// Concurrency: a *Store is safe for concurrent use.
package interactions

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// Component is the name under which the schema is versioned.
const Component = "interactions"

// Limits on what one row stores.
const (
	// MaxSummaryChars caps Entry.Summary (runes); longer summaries are cut.
	MaxSummaryChars = 500
	// MaxDetailBytes caps Entry.Detail; a larger detail is replaced by a
	// note saying how large it was.
	MaxDetailBytes = 64 * 1024
	// MaxErrorChars caps Entry.Error (runes).
	MaxErrorChars = 2000
	// DefaultListLimit applies when Filter.Limit is 0; MaxListLimit caps it.
	DefaultListLimit = 100
	MaxListLimit     = 1000
)

// Action names what an interaction was. Later features add their own
// values; the type is open.
type Action string

// Actions the agent runtime and the built-in features log.
const (
	ActionInference          Action = "inference"
	ActionToolCall           Action = "tool_call"
	ActionSystemEvent        Action = "system_event"
	ActionSeed               Action = "seed"
	ActionCompaction         Action = "compaction"
	ActionSupervisorCheck    Action = "supervisor_check"
	ActionCondenseRequest    Action = "condense_request"
	ActionMemoryHarvest      Action = "memory_harvest"
	ActionReflectionRule     Action = "reflection_rule"
	ActionReflectionAnalysis Action = "reflection_analysis"
)

// Entry is one interaction.
type Entry struct {
	// ID is assigned by the store; ignored by Log.
	ID int64 `json:"id"`
	// At is when it happened; zero means the store's clock at Log.
	At     time.Time     `json:"at"`
	Thread chat.ThreadID `json:"thread,omitempty"`
	Action Action        `json:"action"`
	// Summary is a short human-readable line.
	Summary string `json:"summary,omitempty"`
	// Detail is JSON (an object, usually); empty for none.
	Detail       json.RawMessage `json:"detail,omitempty"`
	InputTokens  int             `json:"input_tokens,omitempty"`
	OutputTokens int             `json:"output_tokens,omitempty"`
	Duration     time.Duration   `json:"duration_ms,omitempty"`
	// Error is the failure, empty on success.
	Error string `json:"error,omitempty"`
}

// MarshalJSON writes Duration in milliseconds, as the column stores it.
func (e Entry) MarshalJSON() ([]byte, error) {
	type plain Entry
	return json.Marshal(struct {
		plain
		Duration int64 `json:"duration_ms,omitempty"`
	}{plain(e), e.Duration.Milliseconds()})
}

// Filter selects entries for List. Zero fields do not filter.
type Filter struct {
	Action Action
	Thread chat.ThreadID
	// Since keeps entries at or after this time.
	Since time.Time
	// BeforeID keeps entries with a smaller id (paging backwards).
	BeforeID int64
	// Limit caps the result (DefaultListLimit when 0, at most MaxListLimit).
	Limit int
}

// Options configure a Store.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Secrets are replaced by [REDACTED] in every summary, detail and
	// error before they are stored. nil replaces nothing.
	Secrets *redact.Secrets
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
	// Commits, when set, is the database's shared group commit: each Log
	// is written in a transaction shared with the other stores'
	// concurrent writes. nil: Log calls share inserts only with one
	// another.
	Commits *sqlite.Committer
}

// Store is the interaction log.
type Store struct {
	db      *sql.DB
	now     func() time.Time
	secrets *redact.Secrets
	logs    sqlite.GroupCommit[*logging]
	commits *sqlite.Committer
}

//go:embed migrations/*.sql
var migrations embed.FS

// Open migrates the interaction log's schema on db and returns the store.
func Open(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	if err := opts.Migrations.Migrate(ctx, db, Component, migrations, "migrations"); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Store{db: db, now: opts.Now, secrets: opts.Secrets, commits: opts.Commits}, nil
}

// ErrNoAction is returned by Log for an entry without an action.
var ErrNoAction = errors.New("interaction has no action")

// Log stores entries in one statement, with those of concurrent calls
// (group commit). Entries are cleaned first (secrets redacted; summary,
// detail and error capped; invalid detail JSON kept as a JSON string).
func (s *Store) Log(ctx context.Context, entries ...Entry) error {
	if len(entries) == 0 {
		return nil
	}
	lg := &logging{rows: len(entries), args: make([]any, 0, logColumns*len(entries))}
	now := s.now()
	for i, e := range entries {
		if e.Action == "" {
			return fmt.Errorf("log interaction %d: %w", i, ErrNoAction)
		}
		at := e.At
		if at.IsZero() {
			at = now
		}
		lg.args = append(lg.args, at.UnixNano(), string(e.Thread), string(e.Action),
			capRunes(s.secrets.Redact(e.Summary), MaxSummaryChars), cleanDetail(s.secrets.RedactJSON(e.Detail)),
			e.InputTokens, e.OutputTokens, e.Duration.Milliseconds(), capRunes(s.secrets.Redact(e.Error), MaxErrorChars))
	}
	if s.commits != nil {
		lg.err = s.commits.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			return insertLogs(ctx, tx, []*logging{lg})
		}, nil)
	} else {
		// The batch holds other callers' entries: one caller's end must
		// not cut theirs short.
		wctx := context.WithoutCancel(ctx)
		s.logs.Write(lg, func(batch []*logging) { s.writeLogs(wctx, batch) })
	}
	if lg.err != nil {
		return fmt.Errorf("log %d interaction(s): %w", len(entries), lg.err)
	}
	return nil
}

// logColumns is how many values an entry's row holds.
const logColumns = 9

// maxLogRows bounds the rows of one INSERT (SQLite's limit on a
// statement's variables is 32,766).
const maxLogRows = 1000

// logging is one Log call's rows waiting to be written, then its outcome.
type logging struct {
	rows int
	args []any
	err  error
}

// writeLogs writes the entries of concurrent Log calls (s.logs) in one
// INSERT of all their rows: every turn logs, and each log was an
// autocommit of its own, a WAL commit each; concurrent turns' entries now
// share one. Each caller returns only once its rows are committed. A batch
// too large for one statement is written in one transaction of several.
func (s *Store) writeLogs(ctx context.Context, batch []*logging) {
	rows := 0
	for _, lg := range batch {
		rows += lg.rows
	}
	var err error
	if rows <= maxLogRows || len(batch) == 1 {
		err = insertLogs(ctx, s.db, batch)
	} else {
		err = sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
			for _, lg := range batch {
				if err := insertLogs(ctx, tx, []*logging{lg}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	for _, lg := range batch {
		lg.err = err
	}
}

// execer is a database or a transaction.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// insertLogs inserts the rows of batch in one statement.
func insertLogs(ctx context.Context, db execer, batch []*logging) error {
	var b strings.Builder
	b.WriteString(`INSERT INTO interactions (at, thread, action, summary, detail, input_tokens, output_tokens, duration_ms, error) VALUES `)
	args := batch[0].args
	if len(batch) > 1 {
		args = nil
		for _, lg := range batch {
			args = append(args, lg.args...)
		}
	}
	for i := range len(args) / logColumns {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString("(?,?,?,?,?,?,?,?,?)")
	}
	_, err := db.ExecContext(ctx, b.String(), args...)
	return err
}

// List returns entries matching f, newest first.
func (s *Store) List(ctx context.Context, f Filter) ([]Entry, error) {
	var where []string
	var args []any
	if f.Action != "" {
		where = append(where, "action = ?")
		args = append(args, string(f.Action))
	}
	if f.Thread != "" {
		where = append(where, "thread = ?")
		args = append(args, string(f.Thread))
	}
	if !f.Since.IsZero() {
		where = append(where, "at >= ?")
		args = append(args, f.Since.UnixNano())
	}
	if f.BeforeID > 0 {
		where = append(where, "id < ?")
		args = append(args, f.BeforeID)
	}
	limit := f.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	q := `SELECT id, at, thread, action, summary, detail, input_tokens, output_tokens, duration_ms, error FROM interactions`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, limit)
	out, err := sqlite.Rows(ctx, s.db, scanEntry, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list interactions: %w", err)
	}
	return out, nil
}

func scanEntry(rows sqlite.Scanner) (Entry, error) {
	var (
		e              Entry
		at, durationMS int64
		thread, action string
		detail         string
	)
	if err := rows.Scan(&e.ID, &at, &thread, &action, &e.Summary, &detail,
		&e.InputTokens, &e.OutputTokens, &durationMS, &e.Error); err != nil {
		return Entry{}, err
	}
	e.At = time.Unix(0, at)
	e.Thread, e.Action = chat.ThreadID(thread), Action(action)
	e.Duration = time.Duration(durationMS) * time.Millisecond
	if detail != "" {
		e.Detail = json.RawMessage(detail)
	}
	return e, nil
}

// Purge deletes entries older than now−olderThan and returns how many.
func (s *Store) Purge(ctx context.Context, olderThan time.Duration) (int, error) {
	res, err := s.db.ExecContext(ctx, `DELETE FROM interactions WHERE at < ?`, s.now().Add(-olderThan).UnixNano())
	if err != nil {
		return 0, fmt.Errorf("purge interactions: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge interactions: %w", err)
	}
	return int(n), nil
}

func capRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}

func cleanDetail(d json.RawMessage) string {
	if len(d) == 0 {
		return ""
	}
	if len(d) > MaxDetailBytes {
		return fmt.Sprintf(`{"truncated":true,"bytes":%d}`, len(d))
	}
	if !json.Valid(d) {
		b, _ := json.Marshal(string(d))
		return string(b)
	}
	return string(d)
}
