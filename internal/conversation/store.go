// Package conversation stores Reverie's conversations in SQLite: threads
// (one per chat.ThreadID), their messages as typed parts, and at most one
// compaction summary per thread. Compaction and /new archive messages
// instead of deleting them; Purge removes archived messages after a retention
// period (30 days by default policy, chosen by the caller).
//
// Concurrency: a *Store is safe for concurrent use. Every write is a single
// transaction (BEGIN IMMEDIATE through internal/sqlite), so Append of several
// messages, Compact and Reset are atomic. Callers that must keep one writer
// per thread (the router's per-thread serialisation) get message order equal
// to Append order; ids are strictly increasing across the whole table.
package conversation

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Component is the name under which the schema is versioned.
const Component = "conversation"

// DefaultPurgeAge is the retention of archived messages the seeds prescribe.
const DefaultPurgeAge = 30 * 24 * time.Hour

// MaxTitleLen bounds a thread title in runes; longer titles are cut.
const MaxTitleLen = 120

// ErrEmptyRole is returned by Append for a message without a role.
var ErrEmptyRole = errors.New("message has no role")

// TokenCounter counts tokens of a text; prompt.NewCounter provides one.
type TokenCounter interface {
	Count(s string) int
}

// Options configures a Store.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Counter computes the token_count stored with each message; nil means
	// prompt.NewCounter("") (the calibrated estimate).
	Counter TokenCounter
	// Secrets are replaced by [REDACTED] in every message (an error reply,
	// a tool result, tool-call arguments) before it is stored; nil: none.
	Secrets *redact.Secrets
}

// Store is the conversation store.
type Store struct {
	db      *sql.DB
	now     func() time.Time
	counter TokenCounter
	secrets *redact.Secrets
	recent  historyCache
}

// Thread is one conversation.
type Thread struct {
	ID                chat.ThreadID
	Channel           string
	Title             string
	Language          string
	CreatedAt         time.Time
	UpdatedAt         time.Time
	LastUserMessageAt time.Time // zero when the thread has no user message yet
}

// StoredMessage is a message with its storage metadata.
type StoredMessage struct {
	ID         int64
	Message    llm.Message
	Source     Source
	CreatedAt  time.Time
	Tokens     int
	ArchivedAt time.Time // zero for active messages
}

// Source says who wrote a stored message.
type Source string

// Message sources.
const (
	// SourceConversation is the conversation itself: the user, the
	// assistant and tools.
	SourceConversation Source = ""
	// SourceSystemEvent is an event raised for the agent (a reminder, a
	// worker's result, a condense request, a supervisor note), stored with
	// the user role.
	SourceSystemEvent Source = "system_event"
	// SourceSeed opens a new conversation, stored with the user role.
	SourceSeed Source = "seed"
)

// Valid reports whether s is one of the sources above.
func (s Source) Valid() bool {
	switch s {
	case SourceConversation, SourceSystemEvent, SourceSeed:
		return true
	}
	return false
}

// Summary is a thread's compaction summary: it replaces the messages up to
// and including CoversThrough.
type Summary struct {
	Text          string
	CoversThrough int64
	UpdatedAt     time.Time // set by SetSummary/Compact when zero
}

// ListOptions selects threads for Threads.
type ListOptions struct {
	// IncludeSubSessions lists sub_ threads too; they are hidden by default.
	IncludeSubSessions bool
	// Limit caps the result; 0 means no limit.
	Limit int
}

// Open migrates the conversation schema on db and returns the store.
func Open(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("open conversation store: %w", err)
	}
	if err := sqlite.Migrate(ctx, db, Component, sub); err != nil {
		return nil, fmt.Errorf("open conversation store: %w", err)
	}
	s := &Store{db: db, now: opts.Now, counter: opts.Counter, secrets: opts.Secrets}
	if s.now == nil {
		s.now = time.Now
	}
	if s.counter == nil {
		s.counter = prompt.NewCounter("")
	}
	return s, nil
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func fromNull(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}

// ensureThread inserts the thread row when missing and reports whether it did.
func ensureThread(ctx context.Context, tx *sql.Tx, id chat.ThreadID, now int64) (bool, error) {
	res, err := tx.ExecContext(ctx,
		`INSERT INTO threads (id, channel, created_at, updated_at) VALUES (?, ?, ?, ?)
		 ON CONFLICT (id) DO NOTHING`,
		string(id), id.Channel(), now, now)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

const threadColumns = `id, channel, title, language, created_at, updated_at, last_user_message_at`

func scanThread(r sqlite.Scanner) (Thread, error) {
	var (
		t        Thread
		id       string
		cr, up   int64
		lastUser sql.NullInt64
	)
	if err := r.Scan(&id, &t.Channel, &t.Title, &t.Language, &cr, &up, &lastUser); err != nil {
		return Thread{}, err
	}
	t.ID = chat.ThreadID(id)
	t.CreatedAt, t.UpdatedAt, t.LastUserMessageAt = fromNanos(cr), fromNanos(up), fromNull(lastUser)
	return t, nil
}

// EnsureThread returns the thread, creating it when it does not exist; the
// bool reports creation (the agent injects the conversation seed then). An
// invalid id fails with chat.ErrInvalidThreadID.
func (s *Store) EnsureThread(ctx context.Context, id chat.ThreadID) (Thread, bool, error) {
	if err := id.Validate(); err != nil {
		return Thread{}, false, fmt.Errorf("ensure thread: %w", err)
	}
	var (
		th      Thread
		created bool
	)
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		var err error
		if created, err = ensureThread(ctx, tx, id, nanos(s.now())); err != nil {
			return err
		}
		th, err = scanThread(tx.QueryRowContext(ctx, `SELECT `+threadColumns+` FROM threads WHERE id = ?`, string(id)))
		return err
	})
	if err != nil {
		return Thread{}, false, fmt.Errorf("ensure thread %q: %w", id, err)
	}
	return th, created, nil
}

// Thread returns one thread; found is false when it does not exist.
func (s *Store) Thread(ctx context.Context, id chat.ThreadID) (Thread, bool, error) {
	th, err := scanThread(s.db.QueryRowContext(ctx, `SELECT `+threadColumns+` FROM threads WHERE id = ?`, string(id)))
	if errors.Is(err, sql.ErrNoRows) {
		return Thread{}, false, nil
	}
	if err != nil {
		return Thread{}, false, fmt.Errorf("read thread %q: %w", id, err)
	}
	return th, true, nil
}

// ThreadUpdate changes thread metadata; nil fields are left alone.
type ThreadUpdate struct {
	Title    *string
	Language *string
}

// UpdateThread sets a thread's title and/or language, creating the thread
// when missing. Titles are trimmed and cut to MaxTitleLen runes.
func (s *Store) UpdateThread(ctx context.Context, id chat.ThreadID, u ThreadUpdate) error {
	if err := id.Validate(); err != nil {
		return fmt.Errorf("update thread: %w", err)
	}
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		now := nanos(s.now())
		if _, err := ensureThread(ctx, tx, id, now); err != nil {
			return err
		}
		if u.Title != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE threads SET title = ?, updated_at = ? WHERE id = ?`,
				cleanTitle(*u.Title), now, string(id)); err != nil {
				return err
			}
		}
		if u.Language != nil {
			if _, err := tx.ExecContext(ctx, `UPDATE threads SET language = ?, updated_at = ? WHERE id = ?`,
				strings.TrimSpace(*u.Language), now, string(id)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("update thread %q: %w", id, err)
	}
	return nil
}

// cleanTitle makes a one-line title of at most MaxTitleLen runes.
func cleanTitle(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= MaxTitleLen {
		return s
	}
	r := []rune(s)
	return strings.TrimSpace(string(r[:MaxTitleLen-1])) + "…"
}

// Append stores msgs (written by the conversation: SourceConversation) at
// the end of the thread in one transaction, creating the thread when
// needed, and returns their ids in order. A thread without a title takes
// the first line of its first user message as title.
func (s *Store) Append(ctx context.Context, id chat.ThreadID, msgs ...llm.Message) ([]int64, error) {
	return s.AppendFrom(ctx, id, SourceConversation, msgs...)
}

// AppendFrom is Append for messages from src. Only the user's own messages
// (SourceConversation) name a thread and count as its last user message.
func (s *Store) AppendFrom(ctx context.Context, id chat.ThreadID, src Source, msgs ...llm.Message) ([]int64, error) {
	if err := id.Validate(); err != nil {
		return nil, fmt.Errorf("append to thread: %w", err)
	}
	if !src.Valid() {
		return nil, fmt.Errorf("append to thread %q: unknown message source %q", id, src)
	}
	if len(msgs) == 0 {
		return nil, nil
	}
	type encoded struct {
		role   string
		parts  string
		tokens int
	}
	enc := make([]encoded, len(msgs))
	var firstUser string
	hasUser := false
	for i, m := range msgs {
		if m.Role == "" {
			return nil, fmt.Errorf("append to thread %q: message %d: %w", id, i, ErrEmptyRole)
		}
		data, err := encodeParts(m.Parts)
		if err != nil {
			return nil, fmt.Errorf("append to thread %q: message %d: %w", id, i, err)
		}
		// The parts are JSON whose texts are strings: a replacement keeps
		// them valid (checked, so that a message always stays readable).
		if red := s.secrets.RedactBytes(data); len(data) > 0 && &red[0] != &data[0] && json.Valid(red) {
			data = red
		}
		enc[i] = encoded{role: string(m.Role), parts: string(data), tokens: prompt.CountMessage(s.counter, m)}
		if m.Role == llm.RoleUser && src == SourceConversation && !hasUser {
			hasUser, firstUser = true, s.secrets.Redact(m.Text())
		}
	}
	ids := make([]int64, len(msgs))
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		now := nanos(s.now())
		// One upsert creates the thread or moves its times (and gives it a
		// title from its first user message) before the rows that
		// reference it.
		var lastUser any
		title := ""
		if hasUser {
			lastUser, title = now, cleanTitle(firstLine(firstUser))
		}
		if _, err := tx.ExecContext(ctx,
			`INSERT INTO threads (id, channel, title, created_at, updated_at, last_user_message_at)
			 VALUES (?1, ?2, ?3, ?4, ?4, ?5)
			 ON CONFLICT (id) DO UPDATE SET
			     updated_at = excluded.updated_at,
			     last_user_message_at = coalesce(excluded.last_user_message_at, last_user_message_at),
			     title = CASE WHEN title = '' THEN excluded.title ELSE title END`,
			string(id), id.Channel(), title, now, lastUser); err != nil {
			return err
		}
		const insert = `INSERT INTO messages (thread_id, role, parts, created_at, token_count, source) VALUES (?, ?, ?, ?, ?, ?)`
		exec := func(args ...any) (sql.Result, error) { return tx.ExecContext(ctx, insert, args...) }
		if len(enc) > 1 {
			stmt, err := tx.PrepareContext(ctx, insert)
			if err != nil {
				return err
			}
			defer stmt.Close()
			exec = func(args ...any) (sql.Result, error) { return stmt.ExecContext(ctx, args...) }
		}
		for i, e := range enc {
			res, err := exec(string(id), e.role, e.parts, now, e.tokens, string(src))
			if err != nil {
				return err
			}
			if ids[i], err = res.LastInsertId(); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("append to thread %q: %w", id, err)
	}
	return ids, nil
}

func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}

const messageColumns = `id, role, parts, created_at, token_count, archived_at, source`

func scanMessages(rows *sql.Rows, sizeHint int) ([]StoredMessage, error) {
	defer rows.Close()
	out := make([]StoredMessage, 0, sizeHint)
	var (
		role     sql.RawBytes
		parts    sql.RawBytes
		created  int64
		archived sql.NullInt64
		source   sql.RawBytes
	)
	for rows.Next() {
		var m StoredMessage
		if err := rows.Scan(&m.ID, &role, &parts, &created, &m.Tokens, &archived, &source); err != nil {
			return nil, err
		}
		p, err := decodeParts(parts)
		if err != nil {
			return nil, fmt.Errorf("message %d: %w", m.ID, err)
		}
		m.Message = llm.Message{Role: internRole(role), Parts: p}
		m.CreatedAt, m.ArchivedAt = fromNanos(created), fromNull(archived)
		if len(source) > 0 {
			m.Source = internSource(source)
		}
		out = append(out, m)
	}
	return out, rows.Err()
}

// internRole returns the shared constant for the common roles, saving an
// allocation per row.
func internRole(b []byte) llm.Role {
	switch string(b) {
	case string(llm.RoleUser):
		return llm.RoleUser
	case string(llm.RoleAssistant):
		return llm.RoleAssistant
	case string(llm.RoleTool):
		return llm.RoleTool
	case string(llm.RoleSystem):
		return llm.RoleSystem
	}
	return llm.Role(b)
}

// internSource returns the shared constant for the known sources.
func internSource(b []byte) Source {
	switch string(b) {
	case string(SourceSystemEvent):
		return SourceSystemEvent
	case string(SourceSeed):
		return SourceSeed
	}
	return Source(b)
}

// History returns the thread's active (non-archived) messages in order. An
// unknown thread has an empty history. The caller may modify the returned
// slice but not the messages' parts (they are shared with the cache).
//
// The active histories of the most recently read threads are kept in
// memory, so a turn on a long thread reads and decodes only the messages
// added since the previous one instead of the whole history (see
// historyCache for why this stays correct whatever else writes to the
// database).
func (s *Store) History(ctx context.Context, id chat.ThreadID) ([]StoredMessage, error) {
	if cached := s.recent.get(id); len(cached) > 0 {
		last := cached[len(cached)-1].ID
		var first sql.NullInt64
		if err := s.db.QueryRowContext(ctx,
			`SELECT min(id) FROM messages WHERE thread_id = ? AND archived_at IS NULL`, string(id)).Scan(&first); err != nil {
			return nil, fmt.Errorf("read history of %q: %w", id, err)
		}
		if first.Valid && first.Int64 == cached[0].ID {
			added, err := s.Messages(ctx, id, MessageQuery{AfterID: last})
			if err != nil {
				return nil, fmt.Errorf("read history of %q: %w", id, err)
			}
			return s.recent.extend(id, cached, added), nil
		}
	}
	rows, err := s.db.QueryContext(ctx,
		`SELECT `+messageColumns+` FROM messages
		 WHERE thread_id = ? AND archived_at IS NULL ORDER BY id`, string(id))
	if err != nil {
		return nil, fmt.Errorf("read history of %q: %w", id, err)
	}
	out, err := scanMessages(rows, 64)
	if err != nil {
		return nil, fmt.Errorf("read history of %q: %w", id, err)
	}
	s.recent.put(id, out)
	return out[:len(out):len(out)], nil
}

// historyCacheThreads is how many threads' active histories a Store keeps.
const historyCacheThreads = 4

// historyCache holds the active histories last read by History, for a few
// threads (least recently used out).
//
// A cached history is checked on every use by one index lookup (the first
// active id), which makes it safe against any writer (another Store,
// another process), because of two invariants of the messages table: a
// stored message is never changed, and the active messages of a thread are
// always its newest ones (Archive, Compact and Reset archive every active
// message up to an id; Purge and a thread's deletion delete only archived
// messages or all of them). So while the first active id is the cached
// first one, no cached message was archived or deleted, and new messages
// have larger ids (AUTOINCREMENT, one writer at a time): they are read
// after the cached last id. Anything else (an archive, a /new, a purge, a
// thread deleted and made again) reads the whole history again.
type historyCache struct {
	mu      sync.Mutex
	threads []cachedHistory // most recently used last
}

type cachedHistory struct {
	id   chat.ThreadID
	msgs []StoredMessage
}

func (c *historyCache) get(id chat.ThreadID) []StoredMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, t := range c.threads {
		if t.id == id {
			return t.msgs[:len(t.msgs):len(t.msgs)]
		}
	}
	return nil
}

// extend appends added to the cached history of id, which was read as
// cached, and returns the result. Earlier results stay valid: they are
// capped at their length, and the append only writes past it.
func (c *historyCache) extend(id chat.ThreadID, cached, added []StoredMessage) []StoredMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	i := slices.IndexFunc(c.threads, func(t cachedHistory) bool { return t.id == id })
	var out []StoredMessage
	if i >= 0 && len(c.threads[i].msgs) == len(cached) {
		out = append(c.threads[i].msgs, added...)
		c.threads = slices.Delete(c.threads, i, i+1)
	} else {
		// Another reader changed the entry meanwhile: a fresh copy.
		out = append(slices.Clip(cached), added...)
		c.threads = slices.DeleteFunc(c.threads, func(t cachedHistory) bool { return t.id == id })
	}
	c.threads = append(c.threads, cachedHistory{id: id, msgs: out})
	return out[:len(out):len(out)]
}

func (c *historyCache) put(id chat.ThreadID, msgs []StoredMessage) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.threads = slices.DeleteFunc(c.threads, func(t cachedHistory) bool { return t.id == id })
	if len(msgs) == 0 {
		return
	}
	if len(c.threads) >= historyCacheThreads {
		c.threads = slices.Delete(c.threads, 0, 1)
	}
	c.threads = append(c.threads, cachedHistory{id: id, msgs: msgs})
}

// MessageQuery selects messages for Messages.
type MessageQuery struct {
	// AfterID returns only messages with a larger id (0: from the start).
	AfterID int64
	// IncludeArchived also returns archived (not yet purged) messages.
	IncludeArchived bool
	// Limit caps the result to the first Limit messages; 0 means no limit.
	Limit int
}

// Messages returns the thread's messages in order, filtered by q: the memory
// harvest reads what arrived since its last run (archived or not), the HTTP
// API pages through a thread.
func (s *Store) Messages(ctx context.Context, id chat.ThreadID, q MessageQuery) ([]StoredMessage, error) {
	query := `SELECT ` + messageColumns + ` FROM messages WHERE thread_id = ? AND id > ?`
	if !q.IncludeArchived {
		query += ` AND archived_at IS NULL`
	}
	query += ` ORDER BY id`
	args := []any{string(id), q.AfterID}
	if q.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("read messages of %q: %w", id, err)
	}
	out, err := scanMessages(rows, min(max(q.Limit, 0), 256))
	if err != nil {
		return nil, fmt.Errorf("read messages of %q: %w", id, err)
	}
	return out, nil
}

// Archive marks the thread's active messages with id ≤ throughID archived
// and returns how many it marked.
func (s *Store) Archive(ctx context.Context, id chat.ThreadID, throughID int64) (int, error) {
	res, err := s.db.ExecContext(ctx,
		`UPDATE messages SET archived_at = ?
		 WHERE thread_id = ? AND archived_at IS NULL AND id <= ?`,
		nanos(s.now()), string(id), throughID)
	if err != nil {
		return 0, fmt.Errorf("archive messages of %q: %w", id, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("archive messages of %q: %w", id, err)
	}
	return int(n), nil
}

// Summary returns the thread's compaction summary; found is false when it
// has none.
func (s *Store) Summary(ctx context.Context, id chat.ThreadID) (Summary, bool, error) {
	var (
		sum Summary
		up  int64
	)
	err := s.db.QueryRowContext(ctx,
		`SELECT text, covers_through_message_id, updated_at FROM summaries WHERE thread_id = ?`,
		string(id)).Scan(&sum.Text, &sum.CoversThrough, &up)
	if errors.Is(err, sql.ErrNoRows) {
		return Summary{}, false, nil
	}
	if err != nil {
		return Summary{}, false, fmt.Errorf("read summary of %q: %w", id, err)
	}
	sum.UpdatedAt = fromNanos(up)
	return sum, true, nil
}

func setSummary(ctx context.Context, tx *sql.Tx, id chat.ThreadID, sum Summary, now time.Time) error {
	if _, err := ensureThread(ctx, tx, id, nanos(now)); err != nil {
		return err
	}
	up := sum.UpdatedAt
	if up.IsZero() {
		up = now
	}
	_, err := tx.ExecContext(ctx,
		`INSERT INTO summaries (thread_id, text, covers_through_message_id, updated_at) VALUES (?, ?, ?, ?)
		 ON CONFLICT (thread_id) DO UPDATE SET text = excluded.text,
		     covers_through_message_id = excluded.covers_through_message_id, updated_at = excluded.updated_at`,
		string(id), sum.Text, sum.CoversThrough, nanos(up))
	return err
}

// SetSummary replaces the thread's summary (one per thread), creating the
// thread when missing.
func (s *Store) SetSummary(ctx context.Context, id chat.ThreadID, sum Summary) error {
	if err := id.Validate(); err != nil {
		return fmt.Errorf("set summary: %w", err)
	}
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error { return setSummary(ctx, tx, id, sum, s.now()) })
	if err != nil {
		return fmt.Errorf("set summary of %q: %w", id, err)
	}
	return nil
}

// Compact stores sum as the thread's summary and archives the active
// messages it covers (id ≤ sum.CoversThrough) in one transaction, so a crash
// never leaves a summary without its archive or the reverse. It returns how
// many messages it archived.
func (s *Store) Compact(ctx context.Context, id chat.ThreadID, sum Summary) (int, error) {
	if err := id.Validate(); err != nil {
		return 0, fmt.Errorf("compact: %w", err)
	}
	var n int64
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		now := s.now()
		if err := setSummary(ctx, tx, id, sum, now); err != nil {
			return err
		}
		res, err := tx.ExecContext(ctx,
			`UPDATE messages SET archived_at = ?
			 WHERE thread_id = ? AND archived_at IS NULL AND id <= ?`,
			nanos(now), string(id), sum.CoversThrough)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("compact %q: %w", id, err)
	}
	return int(n), nil
}

// Reset starts the thread afresh (/new): every active message is archived
// and the summary dropped, in one transaction.
func (s *Store) Reset(ctx context.Context, id chat.ThreadID) error {
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		now := nanos(s.now())
		if _, err := tx.ExecContext(ctx,
			`UPDATE messages SET archived_at = ? WHERE thread_id = ? AND archived_at IS NULL`,
			now, string(id)); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM summaries WHERE thread_id = ?`, string(id)); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `UPDATE threads SET updated_at = ? WHERE id = ?`, now, string(id))
		return err
	})
	if err != nil {
		return fmt.Errorf("reset thread %q: %w", id, err)
	}
	return nil
}

// Threads lists threads, most recently updated first. Sub-session threads
// (sub_…) are hidden unless IncludeSubSessions is set.
func (s *Store) Threads(ctx context.Context, opts ListOptions) ([]Thread, error) {
	query := `SELECT ` + threadColumns + ` FROM threads`
	var args []any
	if !opts.IncludeSubSessions {
		query += ` WHERE substr(id, 1, ?) <> ?`
		args = append(args, len(chat.SubSessionPrefix), chat.SubSessionPrefix)
	}
	query += ` ORDER BY updated_at DESC, id`
	if opts.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, opts.Limit)
	}
	out, err := sqlite.Rows(ctx, s.db, scanThread, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list threads: %w", err)
	}
	return out, nil
}

// Purge deletes messages archived before now−olderThan (callers pass
// DefaultPurgeAge unless configured otherwise) and returns how many it
// deleted. Active messages are never purged.
func (s *Store) Purge(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("purge archived messages: negative age %v", olderThan)
	}
	cutoff := nanos(s.now().Add(-olderThan))
	res, err := s.db.ExecContext(ctx,
		`DELETE FROM messages WHERE archived_at IS NOT NULL AND archived_at < ?`, cutoff)
	if err != nil {
		return 0, fmt.Errorf("purge archived messages: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("purge archived messages: %w", err)
	}
	return int(n), nil
}

// CountUserMessagesSince counts the thread's user messages with id > sinceID,
// archived or not (compaction does not hide them from the memory harvest).
// System events and seeds (stored with the user role) are not messages from
// the user and are not counted.
func (s *Store) CountUserMessagesSince(ctx context.Context, id chat.ThreadID, sinceID int64) (int, error) {
	var n int
	// Counted apart, the active and the archived messages each read only
	// the index entries after sinceID (the index is thread, archived_at,
	// id), where one count would read every message of the thread.
	err := s.db.QueryRowContext(ctx,
		`SELECT (SELECT COUNT(*) FROM messages WHERE thread_id = ?1 AND archived_at IS NULL AND id > ?2 AND role = ?3 AND source = '')
		      + (SELECT COUNT(*) FROM messages WHERE thread_id = ?1 AND archived_at IS NOT NULL AND id > ?2 AND role = ?3 AND source = '')`,
		string(id), sinceID, string(llm.RoleUser)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count user messages of %q: %w", id, err)
	}
	return n, nil
}

// LastMessageID returns the id of the thread's newest message (archived or
// not), 0 when it has none.
func (s *Store) LastMessageID(ctx context.Context, id chat.ThreadID) (int64, error) {
	// The active messages are the newest ones (see historyCache): their
	// largest id is one index lookup, where the largest of all the
	// thread's messages would scan them all.
	var n sql.NullInt64
	if err := s.db.QueryRowContext(ctx, `SELECT max(id) FROM messages WHERE thread_id = ? AND archived_at IS NULL`, string(id)).Scan(&n); err != nil {
		return 0, fmt.Errorf("read last message id of %q: %w", id, err)
	}
	if n.Valid {
		return n.Int64, nil
	}
	if err := s.db.QueryRowContext(ctx, `SELECT MAX(id) FROM messages WHERE thread_id = ?`, string(id)).Scan(&n); err != nil {
		return 0, fmt.Errorf("read last message id of %q: %w", id, err)
	}
	return n.Int64, nil
}
