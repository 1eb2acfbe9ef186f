package eventbus

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// errInterrupted is recorded for an event dead-lettered because every one of
// its deliveries was cut short by the process ending (a crash loop).
const errInterrupted = "delivery interrupted: the process ended while the handler was running"

// nextPending is the inflight_id meaning "the first matching event after
// last_id": an acknowledgement records the next delivery as started before
// it is known, so that delivering it costs no extra write.
const nextPending = -1

// cursorState is a dispatcher's copy of its event_cursors row.
type cursorState struct {
	lastID int64
	// inflightID is the event whose deliveries inflightAttempts counts:
	// an event id, nextPending, or 0 for none.
	inflightID       int64
	inflightAttempts int
	// preRegistered means this process wrote inflightID = nextPending,
	// inflightAttempts = 1 and that delivery has not started yet.
	preRegistered bool
}

// tracker persists the progress of one event's deliveries to one subscriber.
type tracker interface {
	// started records that delivery number attempt begins.
	started(ctx context.Context, attempt int, lastErr string) error
	// done records a successful delivery.
	done(ctx context.Context) error
	// dead records that the event is given up on.
	dead(ctx context.Context, attempts int, lastErr string) error
}

// dispatch delivers s's events until ctx is done. It closes read once it
// has read its cursor and its first batch of pending events (or returns
// before: see Run).
func (b *Bus) dispatch(ctx context.Context, s *subscriber, read chan<- struct{}) {
	readDone := sync.OnceFunc(func() { close(read) })
	defer readDone()
	log := b.log.With("subscriber", s.name)
	var cur cursorState
	if !b.persist(ctx, log, "load cursor", func(ctx context.Context) error {
		return b.loadCursor(ctx, s.name, &cur)
	}) {
		return
	}
	if cur.inflightAttempts > 0 {
		log.Info("resuming delivery after restart", "cursor", cur.lastID,
			"event_id", cur.inflightID, "attempts_started", cur.inflightAttempts)
	}
	pos := cur.lastID
	defer b.unregisterNext(ctx, s.name, log, &cur)
	s.requeued.Store(true) // requeues left by an earlier run
	for {
		if ctx.Err() != nil {
			return
		}
		if s.requeued.Swap(false) && !b.drainRequeues(ctx, s, log) {
			return
		}
		var (
			evs     []extension.Event
			scanned int64
		)
		if !b.persist(ctx, log, "read pending events", func(ctx context.Context) error {
			var err error
			evs, scanned, err = b.fetch(ctx, s.prefix, pos, BatchSize)
			return err
		}) {
			return
		}
		readDone()
		for _, ev := range evs {
			if !b.deliverNext(ctx, s, log, &cur, ev) {
				return
			}
			pos = ev.ID
		}
		if len(evs) == BatchSize {
			continue // there may be more
		}
		// Everything up to scanned is handled; a later commit has
		// signalled wake (capacity 1), so nothing is missed.
		pos = max(pos, scanned)
		select {
		case <-s.wake:
		case <-ctx.Done():
			return
		}
	}
}

func (b *Bus) loadCursor(ctx context.Context, name string, cur *cursorState) error {
	err := b.db.QueryRowContext(ctx,
		`SELECT last_id, inflight_id, inflight_attempts FROM event_cursors WHERE subscriber = ?`, name).
		Scan(&cur.lastID, &cur.inflightID, &cur.inflightAttempts)
	if err != nil {
		return fmt.Errorf("load cursor of %q: %w", name, err)
	}
	return nil
}

// fetch returns up to limit events after pos matching prefix, in id order,
// and the id up to which the log has been scanned: every matching event at
// or below it is in the result (or before pos).
func (b *Bus) fetch(ctx context.Context, prefix string, pos int64, limit int) ([]extension.Event, int64, error) {
	// One statement reads one snapshot: the end of the log (first row,
	// kind 0) and the matching events after pos (kind 1) are consistent,
	// so nothing at or below end can be committed later (SQLite has one
	// writer; ids are assigned in commit order).
	q := `SELECT 0, COALESCE(MAX(id), 0), '', '', 0 FROM events
		UNION ALL
		SELECT * FROM (SELECT 1, id, topic, payload, created_at FROM events WHERE id > ?`
	args := []any{pos}
	if prefix != "" {
		lo, hi := prefixRange(prefix)
		q += ` AND topic >= ? AND topic < ?`
		args = append(args, lo, hi)
	}
	q += ` ORDER BY id LIMIT ?) ORDER BY 1, 2`
	args = append(args, limit)
	end := pos
	evs := make([]extension.Event, 0, 16)
	err := sqlite.Each(ctx, b.db, func(rows *sql.Rows) error {
		var (
			kind  int
			ev    extension.Event
			nanos int64
		)
		if err := rows.Scan(&kind, &ev.ID, &ev.Topic, (*[]byte)(&ev.Payload), &nanos); err != nil {
			return err
		}
		if kind == 0 {
			end = max(ev.ID, pos)
			return nil
		}
		ev.Time = time.Unix(0, nanos)
		evs = append(evs, ev)
		return nil
	}, q, args...)
	if err != nil {
		return nil, pos, fmt.Errorf("read pending events: %w", err)
	}
	if len(evs) == limit {
		return evs, evs[len(evs)-1].ID, nil
	}
	return evs, end, nil
}

// query reads events with pos < id <= end (end 0: no bound) matching prefix.
func (b *Bus) query(ctx context.Context, prefix string, pos, end int64, limit int) ([]extension.Event, error) {
	q := `SELECT id, topic, payload, created_at FROM events WHERE id > ?`
	args := []any{pos}
	if end > 0 {
		q += ` AND id <= ?`
		args = append(args, end)
	}
	if prefix != "" {
		lo, hi := prefixRange(prefix)
		q += ` AND topic >= ? AND topic < ?`
		args = append(args, lo, hi)
	}
	q += ` ORDER BY id LIMIT ?`
	args = append(args, limit)
	evs := make([]extension.Event, 0, min(limit, BatchSize))
	err := sqlite.Each(ctx, b.db, func(rows *sql.Rows) error {
		var (
			ev    extension.Event
			nanos int64
		)
		if err := rows.Scan(&ev.ID, &ev.Topic, (*[]byte)(&ev.Payload), &nanos); err != nil {
			return err
		}
		ev.Time = time.Unix(0, nanos)
		evs = append(evs, ev)
		return nil
	}, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read events: %w", err)
	}
	return evs, nil
}

// deliverNext delivers ev, the first matching event after the cursor. It
// reports false when ctx ended before the event was settled.
func (b *Bus) deliverNext(ctx context.Context, s *subscriber, log *slog.Logger, cur *cursorState, ev extension.Event) bool {
	attempt, registered := 1, false
	switch {
	case cur.preRegistered:
		registered = true
		cur.preRegistered = false // it starts now
	case cur.inflightID == ev.ID || cur.inflightID == nextPending:
		// Deliveries were recorded as started by an earlier run that
		// ended before settling them.
		attempt = cur.inflightAttempts + 1
	}
	tr := &cursorTracker{b: b, name: s.name, cur: cur, eventID: ev.ID}
	return b.deliver(ctx, s, log, ev, attempt, registered, tr)
}

// unregisterNext, when the dispatcher stops, withdraws a next delivery
// recorded in advance that never started, so that a clean shutdown does not
// count it.
func (b *Bus) unregisterNext(ctx context.Context, name string, log *slog.Logger, cur *cursorState) {
	if !cur.preRegistered {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
	defer cancel()
	if _, err := b.db.ExecContext(dctx,
		`UPDATE event_cursors SET inflight_id = 0, inflight_attempts = 0 WHERE subscriber = ? AND inflight_id = ?`,
		name, nextPending); err != nil {
		log.Warn("could not clear the pre-recorded delivery at shutdown; the next event will count one extra attempt", "error", err)
	}
}

// deliver runs the handler on ev until it succeeds, retrying with backoff,
// and dead-letters it after MaxAttempts. registered means that delivery
// number attempt is already recorded as started.
func (b *Bus) deliver(ctx context.Context, s *subscriber, log *slog.Logger, ev extension.Event, attempt int, registered bool, tr tracker) bool {
	lastErr := ""
	for {
		if attempt > b.opts.MaxAttempts {
			if lastErr == "" {
				lastErr = errInterrupted
			}
			log.Error("event dead-lettered", "event_id", ev.ID, "topic", ev.Topic, "attempts", attempt-1, "error", lastErr)
			return b.persistFinal(ctx, log, "dead-letter event", func(ctx context.Context) error {
				return tr.dead(ctx, attempt-1, lastErr)
			})
		}
		if !registered && !b.persist(ctx, log, "record delivery attempt", func(ctx context.Context) error {
			return tr.started(ctx, attempt, lastErr)
		}) {
			return false
		}
		registered = false
		ev.Attempt = attempt
		err := b.call(ctx, s, log, ev)
		if err == nil {
			return b.persistFinal(ctx, log, "acknowledge event", tr.done)
		}
		if ctx.Err() != nil {
			return false // shutting down: redelivered after restart
		}
		lastErr = err.Error()
		if attempt >= b.opts.MaxAttempts {
			attempt++
			continue // dead-letter
		}
		wait := b.backoff(attempt)
		log.Warn("event handler failed; will retry", "event_id", ev.ID, "topic", ev.Topic,
			"attempt", attempt, "max_attempts", b.opts.MaxAttempts, "retry_in", wait, "error", err)
		if extension.Sleep(ctx, wait) != nil {
			return false
		}
		attempt++
	}
}

// call runs the handler once with the per-delivery timeout, turning a panic
// into an error.
func (b *Bus) call(ctx context.Context, s *subscriber, log *slog.Logger, ev extension.Event) (err error) {
	hctx, cancel := context.WithTimeout(ctx, b.opts.HandlerTimeout)
	defer cancel()
	defer func() {
		if p := recover(); p != nil {
			log.Error("event handler panicked", "event_id", ev.ID, "topic", ev.Topic,
				"attempt", ev.Attempt, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", p)
		}
	}()
	err = s.h(hctx, ev)
	if errors.Is(hctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		if err == nil {
			log.Warn("event handler succeeded after its timeout", "event_id", ev.ID, "timeout", b.opts.HandlerTimeout)
			return nil
		}
		return fmt.Errorf("handler timed out after %s: %w", b.opts.HandlerTimeout, err)
	}
	return err
}

// backoff returns the wait after failed attempt n: a random duration in
// [d/2, d], d = BaseBackoff·2^(n-1) capped at MaxBackoff.
func (b *Bus) backoff(n int) time.Duration {
	return extension.Backoff{Base: b.opts.BaseBackoff, Max: b.opts.MaxBackoff}.Delay(n - 1)
}

// persist runs a database step until it succeeds, backing off between
// failures (a locked or full database); false if ctx ended first.
func (b *Bus) persist(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) bool {
	for failures := 1; ; failures++ {
		err := fn(ctx)
		if err == nil {
			return true
		}
		if ctx.Err() != nil {
			return false
		}
		wait := b.backoff(failures)
		log.Error("event bus database step failed; retrying", "step", what, "retry_in", wait, "error", err)
		if extension.Sleep(ctx, wait) != nil {
			return false
		}
	}
}

// persistFinal is persist for a step that settles a delivery already made:
// if ctx ends first it is tried once more, detached from ctx, so that a
// handled event is not redelivered after a clean shutdown. It reports false
// when ctx has ended.
func (b *Bus) persistFinal(ctx context.Context, log *slog.Logger, what string, fn func(context.Context) error) bool {
	if b.persist(ctx, log, what, fn) {
		return true
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), dbTimeout)
	defer cancel()
	if err := fn(dctx); err != nil {
		log.Warn("event bus step not saved at shutdown; the event will be redelivered", "step", what, "error", err)
	}
	return false
}

// cursorTracker records progress in the subscriber's event_cursors row.
type cursorTracker struct {
	b       *Bus
	name    string
	cur     *cursorState
	eventID int64
}

func (t *cursorTracker) started(ctx context.Context, attempt int, lastErr string) error {
	_, err := t.b.db.ExecContext(ctx,
		`UPDATE event_cursors SET inflight_id = ?, inflight_attempts = ?, last_error = ?, updated_at = ? WHERE subscriber = ?`,
		t.eventID, attempt, lastErr, t.b.opts.Now().UnixNano(), t.name)
	if err != nil {
		return fmt.Errorf("record attempt %d of event %d: %w", attempt, t.eventID, err)
	}
	*t.cur = cursorState{lastID: t.cur.lastID, inflightID: t.eventID, inflightAttempts: attempt}
	return nil
}

// done moves the cursor past the event and, in the same write, records the
// first delivery of the next matching event as started (one write per
// delivered event). A crash before that delivery starts counts it once too
// often; a clean stop withdraws it (unregisterNext).
func (t *cursorTracker) done(ctx context.Context) error {
	_, err := t.b.db.ExecContext(ctx,
		`UPDATE event_cursors SET last_id = ?, inflight_id = ?, inflight_attempts = 1, last_error = '', updated_at = ? WHERE subscriber = ?`,
		t.eventID, nextPending, t.b.opts.Now().UnixNano(), t.name)
	if err != nil {
		return fmt.Errorf("acknowledge event %d: %w", t.eventID, err)
	}
	*t.cur = cursorState{lastID: t.eventID, inflightID: nextPending, inflightAttempts: 1, preRegistered: true}
	return nil
}

func (t *cursorTracker) dead(ctx context.Context, attempts int, lastErr string) error {
	now := t.b.opts.Now().UnixNano()
	err := sqlite.Tx(ctx, t.b.db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`INSERT OR REPLACE INTO event_dead_letters (subscriber, event_id, error, attempts, at) VALUES (?, ?, ?, ?, ?)`,
			t.name, t.eventID, lastErr, attempts, now); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`UPDATE event_cursors SET last_id = ?, inflight_id = 0, inflight_attempts = 0, last_error = ?, updated_at = ? WHERE subscriber = ?`,
			t.eventID, lastErr, now, t.name)
		return err
	})
	if err != nil {
		return fmt.Errorf("dead-letter event %d: %w", t.eventID, err)
	}
	*t.cur = cursorState{lastID: t.eventID}
	return nil
}

// requeueTracker records progress in an event_requeues row.
type requeueTracker struct {
	b       *Bus
	name    string
	eventID int64
}

func (t *requeueTracker) started(ctx context.Context, attempt int, _ string) error {
	_, err := t.b.db.ExecContext(ctx,
		`UPDATE event_requeues SET attempts = ? WHERE subscriber = ? AND event_id = ?`, attempt, t.name, t.eventID)
	if err != nil {
		return fmt.Errorf("record attempt %d of requeued event %d: %w", attempt, t.eventID, err)
	}
	return nil
}

func (t *requeueTracker) done(ctx context.Context) error {
	_, err := t.b.db.ExecContext(ctx,
		`DELETE FROM event_requeues WHERE subscriber = ? AND event_id = ?`, t.name, t.eventID)
	if err != nil {
		return fmt.Errorf("acknowledge requeued event %d: %w", t.eventID, err)
	}
	return nil
}

func (t *requeueTracker) dead(ctx context.Context, attempts int, lastErr string) error {
	err := sqlite.Tx(ctx, t.b.db, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx,
			`DELETE FROM event_requeues WHERE subscriber = ? AND event_id = ?`, t.name, t.eventID); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx,
			`INSERT OR REPLACE INTO event_dead_letters (subscriber, event_id, error, attempts, at) VALUES (?, ?, ?, ?, ?)`,
			t.name, t.eventID, lastErr, attempts, t.b.opts.Now().UnixNano())
		return err
	})
	if err != nil {
		return fmt.Errorf("dead-letter requeued event %d: %w", t.eventID, err)
	}
	return nil
}

// requeued is one row of event_requeues with its event.
type requeued struct {
	ev       extension.Event
	attempts int
	missing  bool
}

// drainRequeues delivers s's requeued dead letters in id order; false if
// ctx ended first.
func (b *Bus) drainRequeues(ctx context.Context, s *subscriber, log *slog.Logger) bool {
	for {
		var batch []requeued
		if !b.persist(ctx, log, "read requeued events", func(ctx context.Context) error {
			var err error
			batch, err = b.readRequeues(ctx, s.name)
			return err
		}) {
			s.requeued.Store(true)
			return false
		}
		if len(batch) == 0 {
			return true
		}
		for _, r := range batch {
			tr := &requeueTracker{b: b, name: s.name, eventID: r.ev.ID}
			if r.missing {
				log.Warn("requeued event no longer in the log; dropping the requeue", "event_id", r.ev.ID)
				if !b.persist(ctx, log, "drop requeue", tr.done) {
					s.requeued.Store(true)
					return false
				}
				continue
			}
			if !b.deliver(ctx, s, log, r.ev, r.attempts+1, false, tr) {
				s.requeued.Store(true)
				return false
			}
		}
	}
}

func (b *Bus) readRequeues(ctx context.Context, name string) ([]requeued, error) {
	out, err := sqlite.Rows(ctx, b.db, scanRequeued, `
		SELECT r.event_id, r.attempts, e.topic, e.payload, e.created_at
		FROM event_requeues r LEFT JOIN events e ON e.id = r.event_id
		WHERE r.subscriber = ? ORDER BY r.event_id LIMIT ?`, name, BatchSize)
	if err != nil {
		return nil, fmt.Errorf("read requeued events of %q: %w", name, err)
	}
	return out, nil
}

func scanRequeued(row sqlite.Scanner) (requeued, error) {
	var (
		r       requeued
		topic   sql.NullString
		payload []byte
		nanos   sql.NullInt64
	)
	if err := row.Scan(&r.ev.ID, &r.attempts, &topic, &payload, &nanos); err != nil {
		return requeued{}, err
	}
	r.missing = !topic.Valid
	r.ev.Topic, r.ev.Payload, r.ev.Time = topic.String, payload, time.Unix(0, nanos.Int64)
	return r, nil
}
