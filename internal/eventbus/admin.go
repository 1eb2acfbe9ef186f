package eventbus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// DefaultListLimit is the limit used by DeadLetters and Recent for a limit of
// zero or less; MaxListLimit caps a larger one.
const (
	DefaultListLimit = 100
	MaxListLimit     = 10000
)

func listLimit(n int) int {
	switch {
	case n <= 0:
		return DefaultListLimit
	case n > MaxListLimit:
		return MaxListLimit
	}
	return n
}

// DeadLetter is an event a subscriber gave up on.
type DeadLetter struct {
	Subscriber string
	Event      extension.Event // Attempt is unset
	// Error is the last delivery's error.
	Error    string
	Attempts int
	At       time.Time
}

// DeadLetters lists subscriber's dead letters ("" for every subscriber's),
// oldest event first, at most limit of them.
func (b *Bus) DeadLetters(ctx context.Context, subscriber string, limit int) ([]DeadLetter, error) {
	out, err := sqlite.Rows(ctx, b.db, scanDeadLetter, `
		SELECT d.subscriber, d.event_id, d.error, d.attempts, d.at,
		       COALESCE(e.topic, ''), COALESCE(e.payload, 'null'), COALESCE(e.created_at, 0)
		FROM event_dead_letters d LEFT JOIN events e ON e.id = d.event_id
		WHERE ? = '' OR d.subscriber = ?
		ORDER BY d.event_id, d.subscriber LIMIT ?`, subscriber, subscriber, listLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("list dead letters: %w", err)
	}
	return out, nil
}

func scanDeadLetter(row sqlite.Scanner) (DeadLetter, error) {
	var (
		d            DeadLetter
		at, created  int64
		payloadBytes []byte
	)
	if err := row.Scan(&d.Subscriber, &d.Event.ID, &d.Error, &d.Attempts, &at,
		&d.Event.Topic, &payloadBytes, &created); err != nil {
		return DeadLetter{}, err
	}
	d.Event.Payload = payloadBytes
	d.Event.Time = time.Unix(0, created)
	d.At = time.Unix(0, at)
	return d, nil
}

// Requeue hands a dead letter back to its subscriber for another round of up
// to MaxAttempts deliveries, ahead of the subscriber's newer events. A
// subscriber running on this Bus picks it up at once; otherwise it is
// delivered when the subscriber next runs. It returns ErrNotFound when the
// subscriber has no dead letter for eventID.
func (b *Bus) Requeue(ctx context.Context, subscriber string, eventID int64) error {
	err := sqlite.Tx(ctx, b.db, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx,
			`DELETE FROM event_dead_letters WHERE subscriber = ? AND event_id = ?`, subscriber, eventID)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		_, err = tx.ExecContext(ctx,
			`INSERT OR REPLACE INTO event_requeues (subscriber, event_id, attempts, at) VALUES (?, ?, 0, ?)`,
			subscriber, eventID, b.opts.Now().UnixNano())
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) {
			return fmt.Errorf("requeue event %d for %q: no such dead letter: %w", eventID, subscriber, ErrNotFound)
		}
		return fmt.Errorf("requeue event %d for %q: %w", eventID, subscriber, err)
	}
	b.mu.RLock()
	s := b.byName[subscriber]
	b.mu.RUnlock()
	if s != nil {
		s.requeued.Store(true)
		s.signal()
	}
	b.log.Info("dead letter requeued", "subscriber", subscriber, "event_id", eventID)
	return nil
}

// Stats describes the log and every subscriber known to the database.
type Stats struct {
	// Events is the number of events in the log; LastEventID the highest
	// id.
	Events      int64
	LastEventID int64
	// WatchDropped counts events dropped for slow watchers since Open.
	WatchDropped int64
	Subscribers  []SubscriberStats
}

// SubscriberStats describes one durable subscriber.
type SubscriberStats struct {
	Name   string
	Prefix string
	// Cursor is the last handled (or dead-lettered) event id.
	Cursor int64
	// Backlog counts matching events after the cursor.
	Backlog int64
	// DeadLetters and Requeued count its dead and requeued events.
	DeadLetters int64
	Requeued    int64
	// InFlightEvent and InFlightAttempts describe an event whose
	// deliveries have started and failed or been interrupted (zero when
	// none); LastError is its last failure.
	InFlightEvent    int64
	InFlightAttempts int
	LastError        string
	UpdatedAt        time.Time
	// Registered reports whether the subscriber was registered on this
	// Bus (a cursor left by an extension no longer running is not; see
	// Forget).
	Registered bool
}

// Stats reports cursors, backlogs and dead letters per subscriber, by name.
func (b *Bus) Stats(ctx context.Context) (Stats, error) {
	var st Stats
	if err := b.db.QueryRowContext(ctx,
		`SELECT COUNT(*), COALESCE(MAX(id), 0) FROM events`).Scan(&st.Events, &st.LastEventID); err != nil {
		return Stats{}, fmt.Errorf("event bus stats: %w", err)
	}
	st.WatchDropped = b.dropped.Load()
	subs, err := sqlite.Rows(ctx, b.db, scanSubscriberStats, `
		SELECT c.subscriber, c.prefix, c.last_id, c.inflight_id, c.inflight_attempts, c.last_error, c.updated_at,
		       (SELECT COUNT(*) FROM event_dead_letters d WHERE d.subscriber = c.subscriber),
		       (SELECT COUNT(*) FROM event_requeues r WHERE r.subscriber = c.subscriber)
		FROM event_cursors c ORDER BY c.subscriber`)
	if err != nil {
		return Stats{}, fmt.Errorf("event bus stats: %w", err)
	}
	st.Subscribers = subs
	b.mu.RLock()
	for i := range st.Subscribers {
		_, st.Subscribers[i].Registered = b.byName[st.Subscribers[i].Name]
	}
	b.mu.RUnlock()
	for i := range st.Subscribers {
		s := &st.Subscribers[i]
		lo, hi := prefixRange(s.Prefix)
		q := `SELECT COUNT(*) FROM events WHERE id > ?`
		args := []any{s.Cursor}
		if s.Prefix != "" {
			q += ` AND topic >= ? AND topic < ?`
			args = append(args, lo, hi)
		}
		if err := b.db.QueryRowContext(ctx, q, args...).Scan(&s.Backlog); err != nil {
			return Stats{}, fmt.Errorf("event bus stats: backlog of %q: %w", s.Name, err)
		}
	}
	return st, nil
}

func scanSubscriberStats(row sqlite.Scanner) (SubscriberStats, error) {
	var (
		s       SubscriberStats
		updated int64
	)
	if err := row.Scan(&s.Name, &s.Prefix, &s.Cursor, &s.InFlightEvent, &s.InFlightAttempts,
		&s.LastError, &updated, &s.DeadLetters, &s.Requeued); err != nil {
		return SubscriberStats{}, err
	}
	if s.InFlightEvent <= 0 {
		// None, or the next delivery recorded before its event was known.
		s.InFlightEvent, s.InFlightAttempts = 0, 0
	}
	s.UpdatedAt = time.Unix(0, updated)
	return s, nil
}

// Recent returns up to limit events with id > afterID whose topic starts
// with prefix, in id order (Attempt is unset). Paging: pass the last id
// returned as the next afterID.
func (b *Bus) Recent(ctx context.Context, prefix string, afterID int64, limit int) ([]extension.Event, error) {
	if err := validatePrefix(prefix); err != nil {
		return nil, fmt.Errorf("read recent events: %w", err)
	}
	evs, err := b.query(ctx, prefix, afterID, 0, listLimit(limit))
	if err != nil {
		return nil, fmt.Errorf("read recent events: %w", err)
	}
	return evs, nil
}

// pruneChunk bounds how many events one Prune transaction deletes, so the
// write lock is never held for long.
const pruneChunk = 5000

// Prune deletes events older than Options.Retention that no subscriber
// still needs: every subscriber with a cursor whose prefix matches has
// handled them, and none holds them as a dead letter or requeue. It returns
// the number deleted.
func (b *Bus) Prune(ctx context.Context) (int64, error) {
	cutoff := b.opts.Now().Add(-b.opts.Retention).UnixNano()
	var total int64
	for {
		res, err := b.db.ExecContext(ctx, `
			DELETE FROM events WHERE id IN (
				SELECT e.id FROM events e
				WHERE e.created_at < ?
				  AND NOT EXISTS (SELECT 1 FROM event_cursors c
				                  WHERE e.id > c.last_id AND substr(e.topic, 1, length(c.prefix)) = c.prefix)
				  AND NOT EXISTS (SELECT 1 FROM event_dead_letters d WHERE d.event_id = e.id)
				  AND NOT EXISTS (SELECT 1 FROM event_requeues r WHERE r.event_id = e.id)
				ORDER BY e.id LIMIT ?)`, cutoff, pruneChunk)
		if err != nil {
			return total, fmt.Errorf("prune events: %w", err)
		}
		n, err := res.RowsAffected()
		if err != nil {
			return total, fmt.Errorf("prune events: %w", err)
		}
		total += n
		if n < pruneChunk {
			break
		}
	}
	if total > 0 {
		b.log.Info("pruned events", "deleted", total, "retention", b.opts.Retention)
	}
	return total, nil
}

// ErrRegistered is returned by Forget for a subscriber registered on this
// Bus.
var ErrRegistered = errors.New("event subscriber is registered")

// Forget deletes the cursor, dead letters and requeues of a subscriber that
// is no longer registered (an extension that was removed), so that its
// cursor stops holding events back from Prune. It returns ErrRegistered for
// a subscriber registered on this Bus and ErrNotFound for an unknown one.
func (b *Bus) Forget(ctx context.Context, subscriber string) error {
	b.mu.RLock()
	_, registered := b.byName[subscriber]
	b.mu.RUnlock()
	if registered {
		return fmt.Errorf("forget subscriber %q: %w", subscriber, ErrRegistered)
	}
	err := sqlite.Tx(ctx, b.db, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM event_cursors WHERE subscriber = ?`, subscriber)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil {
			return err
		} else if n == 0 {
			return ErrNotFound
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM event_dead_letters WHERE subscriber = ?`, subscriber); err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, `DELETE FROM event_requeues WHERE subscriber = ?`, subscriber)
		return err
	})
	if err != nil {
		return fmt.Errorf("forget subscriber %q: %w", subscriber, err)
	}
	return nil
}
