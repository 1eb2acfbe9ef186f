package pulse

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/textcheck"
)

// Component is the name under which the schema is versioned.
const Component = "pulse"

// TopicChanged is the bus topic the app publishes a Change on.
const TopicChanged = "pulse.changed"

// Limits and defaults.
const (
	MinPriority     = 1  // urgent
	MaxPriority     = 10 // low
	DefaultPriority = 5
	// MaxTextChars is the default limit on an item's text, in characters
	// (runes). The whole active pulse has its own, configurable prompt
	// limit (limits.pulse_chars).
	MaxTextChars = 1000
	// MaxSourceLen caps NewItem.Source.
	MaxSourceLen = 64
	// DefaultPurgeAge is how long closed items are kept (seed 001: completed
	// tasks older than 30 days are purged).
	DefaultPurgeAge = 30 * 24 * time.Hour
)

// Errors. Each is wrapped with the offending value; test with errors.Is.
var (
	// ErrEmpty: the item text is empty (after trimming).
	ErrEmpty = textcheck.ErrEmpty
	// ErrTooLong: the item text exceeds the limit.
	ErrTooLong = textcheck.ErrTooLong
	// ErrSecret: the text looks like it contains a credential; it is never
	// stored.
	ErrSecret = textcheck.ErrSecret
	// ErrPriority: the priority is outside MinPriority–MaxPriority.
	ErrPriority = errors.New("priority must be between 1 (urgent) and 10 (low)")
	// ErrStatus: the status is not one of active, completed, cancelled.
	ErrStatus = errors.New("unknown status (want active, completed or cancelled)")
	// ErrNotFound: no item has that id. Errors read "pulse item 9 not
	// found".
	ErrNotFound = errors.New("not found")
	// ErrNoChange: an update names nothing to change.
	ErrNoChange = errors.New("nothing to update: give text, priority or status")
)

// Status is an item's state.
type Status string

// Statuses. Completed and cancelled items are closed: they leave the prompt
// and are purged after DefaultPurgeAge.
const (
	StatusActive    Status = "active"
	StatusCompleted Status = "completed"
	StatusCancelled Status = "cancelled"
)

// EnumValues lists the statuses (tool.Enumerator).
func (Status) EnumValues() []string {
	return []string{string(StatusActive), string(StatusCompleted), string(StatusCancelled)}
}

// Valid reports whether s is a known status.
func (s Status) Valid() bool {
	return s == StatusActive || s == StatusCompleted || s == StatusCancelled
}

// Closed reports whether s is completed or cancelled.
func (s Status) Closed() bool { return s == StatusCompleted || s == StatusCancelled }

// ParseStatus returns the status named s (case-insensitive; "done" and
// "complete" mean completed, "canceled" and "dropped" cancelled) or
// ErrStatus.
func ParseStatus(s string) (Status, error) {
	switch st := Status(strings.ToLower(strings.TrimSpace(s))); st {
	case StatusActive, StatusCompleted, StatusCancelled:
		return st, nil
	case "done", "complete":
		return StatusCompleted, nil
	case "canceled", "dropped":
		return StatusCancelled, nil
	}
	return "", fmt.Errorf("%w: %q", ErrStatus, s)
}

// Source says who created an item. The type is open.
type Source string

// Sources of items.
const (
	SourceAgent  Source = "agent"  // the pulse tool
	SourceUser   Source = "user"   // the web page or a command
	SourceDream  Source = "dream"  // nightly consolidation
	SourceReview Source = "review" // the periodic pulse review
)

// Item is one pulse item.
type Item struct {
	ID       int64  `json:"id"`
	Text     string `json:"text"`
	Priority int    `json:"priority"`
	Status   Status `json:"status"`
	// Thread is the conversation the item came from, if known.
	Thread    chat.ThreadID `json:"thread,omitempty"`
	Source    Source        `json:"source,omitempty"`
	CreatedAt time.Time     `json:"created_at"`
	UpdatedAt time.Time     `json:"updated_at"`
	// CompletedAt is when the item was completed or cancelled; zero while
	// active.
	CompletedAt time.Time `json:"completed_at,omitzero"`
}

// Line is the item as the prompt shows it: "[P2] #3: Fix auth bug".
func (it Item) Line() string {
	return "[P" + strconv.Itoa(it.Priority) + "] #" + strconv.FormatInt(it.ID, 10) + ": " + it.Text
}

// NewItem is what Add stores.
type NewItem struct {
	Text string
	// Priority 1 (urgent) – 10 (low); 0 means DefaultPriority.
	Priority int
	Thread   chat.ThreadID
	Source   Source
}

// Patch changes an item; nil fields are left alone.
type Patch struct {
	Text     *string
	Priority *int
	Status   *Status
	Thread   *chat.ThreadID
}

// Filter selects items for List. Zero fields do not filter.
type Filter struct {
	Status Status
	Thread chat.ThreadID
	// Limit caps the result; 0 means no limit.
	Limit int
}

// ChangeAction says what a Change did.
type ChangeAction string

// Change actions.
const (
	ChangeAdded   ChangeAction = "added"
	ChangeUpdated ChangeAction = "updated"
	ChangeDeleted ChangeAction = "deleted"
	ChangePurged  ChangeAction = "purged"
)

// Change describes one committed change, for the Changed hook and the
// TopicChanged event.
type Change struct {
	Action ChangeAction `json:"action"`
	// ID is the item added, updated or deleted (0 for purges).
	ID int64 `json:"id,omitempty"`
	// Status is the item's status after the change.
	Status Status `json:"status,omitempty"`
	// Count is how many items a purge removed.
	Count    int   `json:"count,omitempty"`
	Revision int64 `json:"revision"`
}

// Options configure a Store.
type Options struct {
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Changed, when set, is called after every committed change.
	Changed func(ctx context.Context, c Change)
	// MaxTextChars caps an item's text (0: MaxTextChars).
	MaxTextChars int
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// Store holds the pulse items.
type Store struct {
	db      *sql.DB
	now     func() time.Time
	changed func(ctx context.Context, c Change)
	maxText int
	revStmt *sql.Stmt // Revision's query, prepared once (it runs every turn)

	mu    sync.Mutex
	cache struct { // Format's last result
		valid bool
		rev   int64
		text  string
	}
}

//go:embed migrations/*.sql
var migrations embed.FS

// Open migrates the pulse schema on db and returns the store.
func Open(ctx context.Context, db *sql.DB, opts Options) (*Store, error) {
	if db == nil {
		return nil, errors.New("open pulse: no database")
	}
	if err := opts.Migrations.Migrate(ctx, db, Component, migrations, "migrations"); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MaxTextChars <= 0 {
		opts.MaxTextChars = MaxTextChars
	}
	rev, err := db.PrepareContext(ctx, `SELECT revision, changed_at FROM pulse_revision WHERE id = 1`)
	if err != nil {
		return nil, fmt.Errorf("open pulse: %w", err)
	}
	return &Store{db: db, now: opts.Now, changed: opts.Changed, maxText: opts.MaxTextChars, revStmt: rev}, nil
}

// Close releases the store's prepared statement; the database stays open.
func (s *Store) Close() error { return s.revStmt.Close() }

// CleanText trims text, collapses its white space and checks it: ErrEmpty,
// ErrTooLong (over limit characters; 0 means MaxTextChars) or ErrSecret.
func CleanText(text string, limit int) (string, error) {
	if limit <= 0 {
		limit = MaxTextChars
	}
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	t := strings.Join(strings.Fields(text), " ")
	if t == "" {
		return "", fmt.Errorf("pulse item %w", ErrEmpty)
	}
	if n := utf8.RuneCountInString(t); n > limit {
		return "", fmt.Errorf("pulse item %w: %d characters, at most %d", ErrTooLong, n, limit)
	}
	if what := textcheck.LooksSecret(t); what != "" {
		return "", fmt.Errorf("pulse item %w (%s); describe it without the secret", ErrSecret, what)
	}
	return t, nil
}

func checkPriority(p int) error {
	if p < MinPriority || p > MaxPriority {
		return fmt.Errorf("%w (got %d)", ErrPriority, p)
	}
	return nil
}

const itemColumns = `id, text, priority, status, thread, source, created_at, updated_at, completed_at`

func scanItem(s sqlite.Scanner) (Item, error) {
	var (
		it               Item
		status, thr, src string
		created, updated int64
		completed        sql.NullInt64
	)
	if err := s.Scan(&it.ID, &it.Text, &it.Priority, &status, &thr, &src, &created, &updated, &completed); err != nil {
		return Item{}, err
	}
	it.Status, it.Thread, it.Source = Status(status), chat.ThreadID(thr), Source(src)
	it.CreatedAt, it.UpdatedAt = time.Unix(0, created).UTC(), time.Unix(0, updated).UTC()
	if completed.Valid {
		it.CompletedAt = time.Unix(0, completed.Int64).UTC()
	}
	return it, nil
}

// bump increments the revision inside tx and returns the new value.
func bump(ctx context.Context, tx *sql.Tx, at time.Time) (int64, error) {
	var rev int64
	err := tx.QueryRowContext(ctx,
		`UPDATE pulse_revision SET revision = revision + 1, changed_at = ? WHERE id = 1 RETURNING revision`,
		at.UnixNano()).Scan(&rev)
	if err != nil {
		return 0, fmt.Errorf("bump pulse revision: %w", err)
	}
	return rev, nil
}

func (s *Store) notify(ctx context.Context, c Change) {
	if s.changed != nil {
		s.changed(ctx, c)
	}
}

// Add stores a new active item and returns it with its id.
func (s *Store) Add(ctx context.Context, n NewItem) (Item, error) {
	// Refusals of the input say what is wrong on their own ("pulse item
	// text is empty"); the operation's words go only on store errors.
	text, err := CleanText(n.Text, s.maxText)
	if err != nil {
		return Item{}, err
	}
	if n.Priority == 0 {
		n.Priority = DefaultPriority
	}
	if err := checkPriority(n.Priority); err != nil {
		return Item{}, err
	}
	if len(n.Source) > MaxSourceLen {
		return Item{}, fmt.Errorf("pulse item source is longer than %d bytes", MaxSourceLen)
	}
	now := s.now()
	var (
		it  Item
		rev int64
	)
	err = sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		row := tx.QueryRowContext(ctx, `INSERT INTO pulse_items (text, priority, status, thread, source, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) RETURNING `+itemColumns,
			text, n.Priority, string(StatusActive), string(n.Thread), string(n.Source), now.UnixNano(), now.UnixNano())
		var err error
		if it, err = scanItem(row); err != nil {
			return err
		}
		rev, err = bump(ctx, tx, now)
		return err
	})
	if err != nil {
		return Item{}, fmt.Errorf("add pulse item: %w", err)
	}
	s.notify(ctx, Change{Action: ChangeAdded, ID: it.ID, Status: it.Status, Revision: rev})
	return it, nil
}

// Get returns item id or ErrNotFound.
func (s *Store) Get(ctx context.Context, id int64) (Item, error) {
	it, err := get(ctx, s.db.QueryRowContext, id)
	if errors.Is(err, ErrNotFound) {
		return Item{}, err // names the item
	}
	if err != nil {
		return Item{}, fmt.Errorf("get pulse item %d: %w", id, err)
	}
	return it, nil
}

type queryRow func(ctx context.Context, query string, args ...any) *sql.Row

func get(ctx context.Context, q queryRow, id int64) (Item, error) {
	it, err := scanItem(q(ctx, `SELECT `+itemColumns+` FROM pulse_items WHERE id = ?`, id))
	if errors.Is(err, sql.ErrNoRows) {
		return Item{}, fmt.Errorf("pulse item %d %w", id, ErrNotFound)
	}
	return it, err
}

// Update applies p to item id and returns the item as it is now. Setting a
// closed status records CompletedAt; setting active again clears it. An
// update that changes nothing returns the item untouched (no revision bump,
// no hook call). An empty patch is ErrNoChange.
func (s *Store) Update(ctx context.Context, id int64, p Patch) (Item, error) {
	it, _, err := s.update(ctx, id, p)
	return it, err
}

// update is Update that also reports whether anything changed.
func (s *Store) update(ctx context.Context, id int64, p Patch) (Item, bool, error) {
	if p.Text == nil && p.Priority == nil && p.Status == nil && p.Thread == nil {
		return Item{}, false, fmt.Errorf("update pulse item #%d: %w", id, ErrNoChange)
	}
	var text string
	if p.Text != nil {
		t, err := CleanText(*p.Text, s.maxText)
		if err != nil {
			return Item{}, false, fmt.Errorf("update pulse item #%d: %w", id, err)
		}
		text = t
	}
	if p.Priority != nil {
		if err := checkPriority(*p.Priority); err != nil {
			return Item{}, false, fmt.Errorf("update pulse item #%d: %w", id, err)
		}
	}
	if p.Status != nil && !p.Status.Valid() {
		return Item{}, false, fmt.Errorf("update pulse item #%d: %w: %q", id, ErrStatus, *p.Status)
	}
	now := s.now()
	var (
		it      Item
		rev     int64
		changed bool
	)
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		cur, err := get(ctx, tx.QueryRowContext, id)
		if err != nil {
			return err
		}
		next := cur
		if p.Text != nil {
			next.Text = text
		}
		if p.Priority != nil {
			next.Priority = *p.Priority
		}
		if p.Thread != nil {
			next.Thread = *p.Thread
		}
		if p.Status != nil && *p.Status != cur.Status {
			next.Status = *p.Status
			if next.Status.Closed() {
				next.CompletedAt = now
			} else {
				next.CompletedAt = time.Time{}
			}
		}
		if next == cur {
			it = cur
			return nil
		}
		next.UpdatedAt = now
		var completed any
		if !next.CompletedAt.IsZero() {
			completed = next.CompletedAt.UnixNano()
		}
		row := tx.QueryRowContext(ctx, `UPDATE pulse_items SET text = ?, priority = ?, status = ?, thread = ?, updated_at = ?, completed_at = ?
			WHERE id = ? RETURNING `+itemColumns,
			next.Text, next.Priority, string(next.Status), string(next.Thread), now.UnixNano(), completed, id)
		if it, err = scanItem(row); err != nil {
			return err
		}
		changed = true
		rev, err = bump(ctx, tx, now)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return Item{}, false, err // names the item
	}
	if err != nil {
		return Item{}, false, fmt.Errorf("update pulse item #%d: %w", id, err)
	}
	if changed {
		s.notify(ctx, Change{Action: ChangeUpdated, ID: it.ID, Status: it.Status, Revision: rev})
	}
	return it, changed, nil
}

// Delete removes item id for good (the web page's delete; the model
// completes or cancels instead). An unknown id is ErrNotFound.
func (s *Store) Delete(ctx context.Context, id int64) error {
	now := s.now()
	var rev int64
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM pulse_items WHERE id = ?`, id)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return fmt.Errorf("pulse item %d %w", id, ErrNotFound)
		}
		rev, err = bump(ctx, tx, now)
		return err
	})
	if errors.Is(err, ErrNotFound) {
		return err // names the item
	}
	if err != nil {
		return fmt.Errorf("delete pulse item #%d: %w", id, err)
	}
	s.notify(ctx, Change{Action: ChangeDeleted, ID: id, Revision: rev})
	return nil
}

// Complete marks item id completed. Completing a completed item changes
// nothing and is not an error.
func (s *Store) Complete(ctx context.Context, id int64) (Item, error) {
	st := StatusCompleted
	return s.Update(ctx, id, Patch{Status: &st})
}

// List returns the items f selects: active ones first by priority then id,
// then closed ones, most recently closed first.
func (s *Store) List(ctx context.Context, f Filter) ([]Item, error) {
	var (
		where []string
		args  []any
	)
	if f.Status != "" {
		if !f.Status.Valid() {
			return nil, fmt.Errorf("list pulse items: %w: %q", ErrStatus, f.Status)
		}
		where = append(where, "status = ?")
		args = append(args, string(f.Status))
	}
	if f.Thread != "" {
		where = append(where, "thread = ?")
		args = append(args, string(f.Thread))
	}
	q := `SELECT ` + itemColumns + ` FROM pulse_items`
	if len(where) > 0 {
		q += ` WHERE ` + strings.Join(where, " AND ")
	}
	q += ` ORDER BY status <> 'active', CASE WHEN status = 'active' THEN priority END, completed_at DESC, id`
	if f.Limit > 0 {
		q += ` LIMIT ?`
		args = append(args, f.Limit)
	}
	out, err := sqlite.Rows(ctx, s.db, scanItem, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list pulse items: %w", err)
	}
	if out == nil {
		out = []Item{}
	}
	return out, nil
}

// Active returns the active items by priority, then id.
func (s *Store) Active(ctx context.Context) ([]Item, error) {
	return s.List(ctx, Filter{Status: StatusActive})
}

// CountActive returns how many items are active.
func (s *Store) CountActive(ctx context.Context) (int, error) {
	var n int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM pulse_items WHERE status = 'active'`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count pulse items: %w", err)
	}
	return n, nil
}

// Format returns the active pulse for the system prompt: one Line per
// active item, by priority then id; "" when there are none. The text is
// cached by revision, so a call when nothing changed costs one single-row
// read.
func (s *Store) Format(ctx context.Context) (string, error) {
	// The revision is read before the items: a change in between makes the
	// cached text look older than it is (recomputed next time), never newer.
	rev, _, err := s.Revision(ctx)
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	if s.cache.valid && s.cache.rev == rev {
		text := s.cache.text
		s.mu.Unlock()
		return text, nil
	}
	s.mu.Unlock()
	items, err := s.Active(ctx)
	if err != nil {
		return "", err
	}
	text := FormatItems(items)
	s.mu.Lock()
	s.cache.valid, s.cache.rev, s.cache.text = true, rev, text
	s.mu.Unlock()
	return text, nil
}

// FormatItems renders items one Line each, in the order given.
func FormatItems(items []Item) string {
	var b strings.Builder
	for i, it := range items {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(it.Line())
	}
	return b.String()
}

// PurgeCompleted deletes items completed or cancelled more than olderThan
// ago (0 means DefaultPurgeAge) and returns how many went.
func (s *Store) PurgeCompleted(ctx context.Context, olderThan time.Duration) (int, error) {
	if olderThan <= 0 {
		olderThan = DefaultPurgeAge
	}
	now := s.now()
	cutoff := now.Add(-olderThan).UnixNano()
	var (
		n   int64
		rev int64
	)
	err := sqlite.Tx(ctx, s.db, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM pulse_items WHERE status IN ('completed', 'cancelled') AND completed_at < ?`, cutoff)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil || n == 0 {
			return err
		}
		rev, err = bump(ctx, tx, now)
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("purge pulse items: %w", err)
	}
	if n > 0 {
		s.notify(ctx, Change{Action: ChangePurged, Count: int(n), Revision: rev})
	}
	return int(n), nil
}

// Revision returns a counter bumped by every change (0 before the first),
// and when it last changed (zero before the first change).
func (s *Store) Revision(ctx context.Context) (int64, time.Time, error) {
	var rev, at int64
	if err := s.revStmt.QueryRowContext(ctx).Scan(&rev, &at); err != nil {
		return 0, time.Time{}, fmt.Errorf("read pulse revision: %w", err)
	}
	var t time.Time
	if at != 0 {
		t = time.Unix(0, at).UTC()
	}
	return rev, t, nil
}
