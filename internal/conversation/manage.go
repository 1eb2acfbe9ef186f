package conversation

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

// Errors of the conversation management methods.
var (
	// ErrNoThread: the thread does not exist.
	ErrNoThread = errors.New("no such conversation")
	// ErrNoMessage: the message does not exist in the thread, or is not
	// one the operation applies to.
	ErrNoMessage = errors.New("no such message in the conversation")
	// ErrNoSegment: the segment does not exist.
	ErrNoSegment = errors.New("no such archived conversation or branch")
	// ErrEmptyTitle: a rename to an empty title.
	ErrEmptyTitle = errors.New("the title is empty")
	// ErrEmptyQuery: a search without a word to look for.
	ErrEmptyQuery = errors.New("the search has no word to look for")
)

// SegmentKind says why messages were taken out of the history together.
type SegmentKind string

// Segment kinds.
const (
	// SegmentConversation: a conversation /new closed.
	SegmentConversation SegmentKind = "conversation"
	// SegmentBranch: turns an edit or a regeneration replaced.
	SegmentBranch SegmentKind = "branch"
)

// Segment is a run of a thread's messages archived together, kept readable
// (Purge leaves them).
type Segment struct {
	ID     int64
	Thread chat.ThreadID
	Kind   SegmentKind
	// Title is the thread's title when a conversation was closed; for a
	// branch, the start of its first message.
	Title string
	// AfterMessageID is the active message a branch followed when it was
	// made (0: the start of the history); 0 for a conversation.
	AfterMessageID int64
	CreatedAt      time.Time
	Messages       int
}

// Rename sets a thread's title as the user chose it (TitleFromUser: a
// generated title never replaces it).
func (s *Store) Rename(ctx context.Context, id chat.ThreadID, title string) (Thread, error) {
	title = cleanTitle(title)
	if title == "" {
		return Thread{}, fmt.Errorf("rename %q: %w", id, ErrEmptyTitle)
	}
	return s.updateThread(ctx, id, "rename",
		`UPDATE threads SET title = ?, title_source = 'user' WHERE id = ?`, title, string(id))
}

// SetGeneratedTitle sets a title made by a model, unless the user renamed
// the thread; it reports whether it set it.
func (s *Store) SetGeneratedTitle(ctx context.Context, id chat.ThreadID, title string) (bool, error) {
	title = cleanTitle(strings.TrimRight(strings.Trim(strings.TrimSpace(title), "\"'*#“”«»"), ".!"))
	if title == "" {
		return false, nil
	}
	res, err := s.db.ExecContext(ctx,
		`UPDATE threads SET title = ?, title_source = 'model' WHERE id = ? AND title_source <> 'user'`, title, string(id))
	if err != nil {
		return false, fmt.Errorf("set the title of %q: %w", id, err)
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// ArchiveThread deletes a thread from the list: it is archived, with all its
// messages, and only RestoreThread brings it back as it was (a message
// stored in it meanwhile leaves it deleted). What a later message does is
// the router's decision: refused on a channel whose user makes a thread per
// conversation (the web page), a fresh conversation (Reopen) on one whose
// chat is the thread (Telegram, Matrix, the terminal).
func (s *Store) ArchiveThread(ctx context.Context, id chat.ThreadID) (Thread, error) {
	return s.updateThread(ctx, id, "archive",
		`UPDATE threads SET archived_at = coalesce(archived_at, ?) WHERE id = ?`, nanos(s.now()), string(id))
}

// RestoreThread puts an archived thread back in the list.
func (s *Store) RestoreThread(ctx context.Context, id chat.ThreadID) (Thread, error) {
	return s.updateThread(ctx, id, "restore", `UPDATE threads SET archived_at = NULL WHERE id = ?`, string(id))
}

// Reopen starts a deleted thread afresh: its conversation is closed as a
// segment of kind SegmentConversation (readable in the archive, as one /new
// closed) and the thread is listed again, empty and untitled, so that its
// next message opens a new conversation without the old history. It
// reports whether the thread was deleted; one that is not (or does not
// exist) is left alone.
func (s *Store) Reopen(ctx context.Context, id chat.ThreadID) (bool, error) {
	reopened := false
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		var archived sql.NullInt64
		err := tx.QueryRowContext(ctx, `SELECT archived_at FROM threads WHERE id = ?`, string(id)).Scan(&archived)
		if errors.Is(err, sql.ErrNoRows) || (err == nil && !archived.Valid) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := closeConversation(ctx, tx, id, nanos(s.now())); err != nil {
			return err
		}
		reopened = true
		_, err = tx.ExecContext(ctx,
			`UPDATE threads SET archived_at = NULL, title = '', title_source = '', last_user_message_at = NULL WHERE id = ?`, string(id))
		return err
	})
	if err != nil {
		return false, fmt.Errorf("reopen deleted thread %q: %w", id, err)
	}
	return reopened, nil
}

// updateThread runs one update of an existing thread and returns the
// thread as it is then; ErrNoThread when it does not exist.
func (s *Store) updateThread(ctx context.Context, id chat.ThreadID, what, query string, args ...any) (Thread, error) {
	var th Thread
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, query, args...)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNoThread
		}
		th, err = scanThread(tx.QueryRowContext(ctx, `SELECT `+threadColumns+` FROM threads WHERE id = ?`, string(id)))
		return err
	})
	if err != nil {
		return Thread{}, fmt.Errorf("%s %q: %w", what, id, err)
	}
	return th, nil
}

// Branch takes the thread's active messages from fromID on out of the
// history, as a segment of kind SegmentBranch (an edit replaces a message
// and what followed it; a regeneration the replies after the last user
// message). It returns the segment; ErrNoMessage when no active message has
// an id ≥ fromID.
func (s *Store) Branch(ctx context.Context, id chat.ThreadID, fromID int64) (Segment, error) {
	var seg Segment
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		now := s.now()
		var (
			n     int
			after sql.NullInt64
			first sql.NullInt64
		)
		if err := tx.QueryRowContext(ctx,
			`SELECT count(*), min(id) FROM messages WHERE thread_id = ? AND archived_at IS NULL AND id >= ?`,
			string(id), fromID).Scan(&n, &first); err != nil {
			return err
		}
		if n == 0 {
			return ErrNoMessage
		}
		if err := tx.QueryRowContext(ctx,
			`SELECT max(id) FROM messages WHERE thread_id = ? AND archived_at IS NULL AND id < ?`,
			string(id), fromID).Scan(&after); err != nil {
			return err
		}
		title := ""
		var parts []byte
		if err := tx.QueryRowContext(ctx, `SELECT parts FROM messages WHERE id = ?`, first.Int64).Scan(&parts); err != nil {
			return err
		}
		if p, err := decodeParts(parts); err == nil {
			title = titleOf(llm.Message{Parts: p}.Text())
		}
		res, err := tx.ExecContext(ctx,
			`INSERT INTO segments (thread_id, kind, title, after_message_id, created_at) VALUES (?, ?, ?, ?, ?)`,
			string(id), string(SegmentBranch), title, after.Int64, nanos(now))
		if err != nil {
			return err
		}
		segID, err := res.LastInsertId()
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx,
			`UPDATE messages SET archived_at = ?, segment = ? WHERE thread_id = ? AND archived_at IS NULL AND id >= ?`,
			nanos(now), segID, string(id), fromID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `UPDATE threads SET updated_at = ? WHERE id = ?`, nanos(now), string(id)); err != nil {
			return err
		}
		seg = Segment{ID: segID, Thread: id, Kind: SegmentBranch, Title: title, AfterMessageID: after.Int64, CreatedAt: fromNanos(nanos(now)), Messages: n}
		return nil
	})
	if err != nil {
		return Segment{}, fmt.Errorf("branch %q from message %d: %w", id, fromID, err)
	}
	return seg, nil
}

// SegmentQuery selects segments.
type SegmentQuery struct {
	// Thread limits the result to one thread ("": every thread but
	// sub-sessions).
	Thread chat.ThreadID
	// Kind limits the result to one kind ("": both).
	Kind SegmentKind
	// Limit caps the result; 0 means no limit.
	Limit int
}

const segmentSelect = `SELECT s.id, s.thread_id, s.kind, s.title, s.after_message_id, s.created_at,
       (SELECT count(*) FROM messages m WHERE m.segment = s.id)
  FROM segments s`

func scanSegment(r sqlite.Scanner) (Segment, error) {
	var (
		sg      Segment
		thread  string
		kind    string
		created int64
	)
	if err := r.Scan(&sg.ID, &thread, &kind, &sg.Title, &sg.AfterMessageID, &created, &sg.Messages); err != nil {
		return Segment{}, err
	}
	sg.Thread, sg.Kind, sg.CreatedAt = chat.ThreadID(thread), SegmentKind(kind), fromNanos(created)
	return sg, nil
}

// Segments lists archived segments, newest first; those whose messages
// were all deleted are left out.
func (s *Store) Segments(ctx context.Context, q SegmentQuery) ([]Segment, error) {
	query := segmentSelect + ` WHERE EXISTS (SELECT 1 FROM messages m WHERE m.segment = s.id)`
	var args []any
	if q.Thread != "" {
		query += ` AND s.thread_id = ?`
		args = append(args, string(q.Thread))
	} else {
		query += ` AND substr(s.thread_id, 1, ?) <> ?`
		args = append(args, len(chat.SubSessionPrefix), chat.SubSessionPrefix)
	}
	if q.Kind != "" {
		query += ` AND s.kind = ?`
		args = append(args, string(q.Kind))
	}
	query += ` ORDER BY s.id DESC`
	if q.Limit > 0 {
		query += ` LIMIT ?`
		args = append(args, q.Limit)
	}
	rows, err := s.db.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("list archived segments: %w", err)
	}
	defer rows.Close()
	var out []Segment
	for rows.Next() {
		sg, err := scanSegment(rows)
		if err != nil {
			return nil, fmt.Errorf("list archived segments: %w", err)
		}
		out = append(out, sg)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list archived segments: %w", err)
	}
	return out, nil
}

// Segment returns one segment with its messages in order; ErrNoSegment
// when it does not exist.
func (s *Store) Segment(ctx context.Context, segID int64) (Segment, []StoredMessage, error) {
	sg, err := scanSegment(s.db.QueryRowContext(ctx, segmentSelect+` WHERE s.id = ?`, segID))
	if errors.Is(err, sql.ErrNoRows) {
		return Segment{}, nil, fmt.Errorf("read segment %d: %w", segID, ErrNoSegment)
	}
	if err != nil {
		return Segment{}, nil, fmt.Errorf("read segment %d: %w", segID, err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE segment = ? ORDER BY id`, segID)
	if err != nil {
		return Segment{}, nil, fmt.Errorf("read segment %d: %w", segID, err)
	}
	msgs, err := scanMessages(rows, sg.Messages)
	if err != nil {
		return Segment{}, nil, fmt.Errorf("read segment %d: %w", segID, err)
	}
	return sg, msgs, nil
}

// Message returns one message of a thread; ErrNoMessage when the thread
// has no message with that id.
func (s *Store) Message(ctx context.Context, id chat.ThreadID, msgID int64) (StoredMessage, error) {
	rows, err := s.db.QueryContext(ctx, `SELECT `+messageColumns+` FROM messages WHERE id = ? AND thread_id = ?`, msgID, string(id))
	if err != nil {
		return StoredMessage{}, fmt.Errorf("read message %d of %q: %w", msgID, id, err)
	}
	msgs, err := scanMessages(rows, 1)
	if err != nil {
		return StoredMessage{}, fmt.Errorf("read message %d of %q: %w", msgID, id, err)
	}
	if len(msgs) == 0 {
		return StoredMessage{}, fmt.Errorf("read message %d of %q: %w", msgID, id, ErrNoMessage)
	}
	return msgs[0], nil
}

// Hit is one search result: a thread whose title matches (MessageID 0) or
// one of its messages.
type Hit struct {
	Thread      chat.ThreadID
	ThreadTitle string
	// ThreadArchived: the thread was deleted (it is in the archive).
	ThreadArchived bool
	MessageID      int64
	Role           llm.Role
	// Segment is the archived segment holding the message (0: the thread's
	// current conversation, or a part compaction archived).
	Segment int64
	// Snippet is the matching text with the matches between « and ».
	Snippet string
	At      time.Time
}

// SearchQuery is a full-text search over titles and messages.
type SearchQuery struct {
	// Text is the words to look for; every word must match (the last one
	// as a prefix, so that results come while typing).
	Text string
	// Limit caps the result (default 50).
	Limit int
}

// Search looks for q's words in thread titles and in what the user and the
// assistant wrote (archived conversations and branches too; sub-sessions
// never), best matches first, title matches before messages.
func (s *Store) Search(ctx context.Context, q SearchQuery) ([]Hit, error) {
	match := ftsQuery(q.Text)
	if match == "" {
		return nil, fmt.Errorf("search: %w", ErrEmptyQuery)
	}
	limit := q.Limit
	if limit <= 0 {
		limit = 50
	}
	if err := s.catchUpIndex(ctx); err != nil {
		return nil, fmt.Errorf("search: %w", err)
	}
	subLen, subPrefix := len(chat.SubSessionPrefix), chat.SubSessionPrefix
	var out []Hit
	rows, err := s.db.QueryContext(ctx,
		`SELECT t.id, t.title, t.archived_at IS NOT NULL, highlight(threads_fts, 1, '«', '»'), t.updated_at
		   FROM threads_fts f JOIN threads t ON t.id = f.thread_id
		  WHERE threads_fts MATCH ? AND substr(t.id, 1, ?) <> ?
		  ORDER BY rank LIMIT ?`, match, subLen, subPrefix, limit)
	if err != nil {
		return nil, fmt.Errorf("search titles: %w", err)
	}
	for rows.Next() {
		var (
			h  Hit
			id string
			at int64
		)
		if err := rows.Scan(&id, &h.ThreadTitle, &h.ThreadArchived, &h.Snippet, &at); err != nil {
			rows.Close()
			return nil, fmt.Errorf("search titles: %w", err)
		}
		h.Thread, h.At = chat.ThreadID(id), fromNanos(at)
		out = append(out, h)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search titles: %w", err)
	}
	rows, err = s.db.QueryContext(ctx,
		`SELECT m.thread_id, t.title, t.archived_at IS NOT NULL, m.id, m.role, coalesce(m.segment, 0),
		        snippet(messages_fts, 0, '«', '»', '…', 16), m.created_at
		   FROM messages_fts f JOIN messages m ON m.id = f.rowid JOIN threads t ON t.id = m.thread_id
		  WHERE messages_fts MATCH ? AND substr(m.thread_id, 1, ?) <> ?
		  ORDER BY rank LIMIT ?`, match, subLen, subPrefix, limit)
	if err != nil {
		return nil, fmt.Errorf("search messages: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var (
			h    Hit
			id   string
			role string
			at   int64
		)
		if err := rows.Scan(&id, &h.ThreadTitle, &h.ThreadArchived, &h.MessageID, &role, &h.Segment, &h.Snippet, &at); err != nil {
			return nil, fmt.Errorf("search messages: %w", err)
		}
		h.Thread, h.Role, h.At = chat.ThreadID(id), llm.Role(role), fromNanos(at)
		out = append(out, h)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("search messages: %w", err)
	}
	if len(out) > limit {
		out = out[:limit]
	}
	return out, nil
}

// ftsQuery makes an FTS5 query of free text: each word quoted (so that
// operators and punctuation are plain text), all required, the last one a
// prefix. "" when there is no word.
func ftsQuery(text string) string {
	words := strings.FieldsFunc(text, func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsNumber(r) })
	if len(words) > 16 {
		words = words[:16]
	}
	for i, w := range words {
		words[i] = `"` + w + `"`
	}
	if len(words) == 0 {
		return ""
	}
	return strings.Join(words, " ") + "*"
}
