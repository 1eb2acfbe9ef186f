package eventbus

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Defaults for zero Options fields.
const (
	DefaultMaxAttempts    = 8
	DefaultBaseBackoff    = 500 * time.Millisecond
	DefaultMaxBackoff     = 5 * time.Minute
	DefaultHandlerTimeout = 2 * time.Minute
	DefaultRetention      = 7 * 24 * time.Hour
	// BatchSize is how many pending events a dispatcher reads per query.
	BatchSize = 256
)

// dbTimeout bounds the bus's own database calls made without a caller's
// context (Subscribe) or after shutdown began (the final acknowledgement).
const dbTimeout = 10 * time.Second

// Sentinel errors.
var (
	// ErrRunning is returned by Subscribe after Run has started and by a
	// second call to Run.
	ErrRunning = errors.New("event bus already running")
	// ErrDuplicateSubscriber is returned by Subscribe for a name already
	// registered on this Bus.
	ErrDuplicateSubscriber = errors.New("event subscriber already registered")
	// ErrInvalidSubscriber is returned by Subscribe for an empty name or a
	// nil handler.
	ErrInvalidSubscriber = errors.New("invalid event subscriber")
	// ErrNotFound is returned by Requeue when the subscriber has no dead
	// letter for the event, and by Forget for an unknown subscriber.
	ErrNotFound = errors.New("not found")
)

// Options configure a Bus. Zero fields take the defaults above.
type Options struct {
	// Logger receives delivery failures, dead letters and dropped watch
	// events. nil discards.
	Logger *slog.Logger
	// MaxAttempts is how many deliveries of one event to one subscriber
	// are made before it is dead-lettered.
	MaxAttempts int
	// BaseBackoff and MaxBackoff bound the wait before a retry: attempt n
	// waits a random duration in [d/2, d] with d = BaseBackoff·2^(n-1)
	// capped at MaxBackoff.
	BaseBackoff, MaxBackoff time.Duration
	// HandlerTimeout bounds one delivery (through the handler's context).
	HandlerTimeout time.Duration
	// Retention is how long acknowledged events are kept before Prune may
	// delete them.
	Retention time.Duration
	// Now stamps events and dead letters. nil means time.Now. Waits
	// (backoff, timeouts) always use the runtime's timers.
	Now func() time.Time
	// Secrets are removed from every payload before it is stored or
	// delivered (redact.Secrets.RedactJSON): a failure event carrying a
	// provider error that echoes an API key is stored with [REDACTED].
	// nil removes nothing.
	Secrets *redact.Secrets
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
	// Commits, when set, is the database's shared group commit: each
	// Publish is written in a transaction shared with the other stores'
	// concurrent writes. nil: Publish calls share transactions only with
	// one another.
	Commits *sqlite.Committer
}

func (o Options) withDefaults() Options {
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = DefaultMaxAttempts
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = DefaultBaseBackoff
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = DefaultMaxBackoff
	}
	if o.MaxBackoff < o.BaseBackoff {
		o.MaxBackoff = o.BaseBackoff
	}
	if o.HandlerTimeout <= 0 {
		o.HandlerTimeout = DefaultHandlerTimeout
	}
	if o.Retention <= 0 {
		o.Retention = DefaultRetention
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Message is one event of a PublishBatch.
type Message struct {
	Topic   string
	Payload any
}

// Bus is the durable event bus. Its methods are safe for concurrent use.
type Bus struct {
	db   *sql.DB
	opts Options
	log  *slog.Logger

	mu      sync.RWMutex
	subs    []*subscriber
	byName  map[string]*subscriber
	running bool

	// pubs writes the Publish calls that wait for one another together
	// (writeQueued).
	pubs sqlite.GroupCommit[*queuedEvent]

	wmu      sync.RWMutex
	watchers map[*watcher]struct{}
	dropped  atomic.Int64
}

var _ extension.Bus = (*Bus)(nil)

// subscriber is a named durable subscription.
type subscriber struct {
	name   string
	prefix string
	h      extension.Handler
	// wake is signalled (non-blocking, capacity 1) after a matching event
	// is committed or a dead letter is requeued.
	wake chan struct{}
	// requeued is set by Requeue; the dispatcher then reads its requeues.
	requeued atomic.Bool
}

func (s *subscriber) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// watcher is a live, in-memory Watch.
type watcher struct {
	prefix  string
	ch      chan extension.Event
	dropped atomic.Int64
}

// Open runs the bus's migrations (component "eventbus") on db and returns a
// Bus. Cursors, in-flight attempt counts and requeues are recovered from the
// database when Run starts.
func Open(ctx context.Context, db *sql.DB, opts Options) (*Bus, error) {
	if db == nil {
		return nil, errors.New("open event bus: nil database")
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("open event bus: %w", err)
	}
	if err := opts.Migrations.Migrate(ctx, db, "eventbus", sub, "."); err != nil {
		return nil, fmt.Errorf("open event bus: %w", err)
	}
	opts = opts.withDefaults()
	b := &Bus{
		db:       db,
		opts:     opts,
		log:      opts.Logger,
		byName:   map[string]*subscriber{},
		watchers: map[*watcher]struct{}{},
	}
	var last int64
	var cursors int
	if err := db.QueryRowContext(ctx,
		`SELECT COALESCE((SELECT MAX(id) FROM events), 0), (SELECT COUNT(*) FROM event_cursors)`).
		Scan(&last, &cursors); err != nil {
		return nil, fmt.Errorf("open event bus: read log state: %w", err)
	}
	b.log.Debug("event bus open", "last_event_id", last, "cursors", cursors)
	return b, nil
}

// Publish persists one event and returns once it is committed. The payload
// is marshalled with encoding/json; a json.RawMessage passes through.
func (b *Bus) Publish(ctx context.Context, topic string, payload any) error {
	_, err := b.PublishID(ctx, topic, payload)
	return err
}

// PublishID is Publish returning the event's id.
func (b *Bus) PublishID(ctx context.Context, topic string, payload any) (int64, error) {
	if err := validateTopic(topic); err != nil {
		return 0, fmt.Errorf("publish: %w", err)
	}
	data, err := marshalPayload(payload)
	if err != nil {
		return 0, fmt.Errorf("publish %s: %w", topic, err)
	}
	data = b.opts.Secrets.RedactJSON(data)
	p := &queuedEvent{ev: extension.Event{Topic: topic, Payload: data, Time: b.opts.Now()}}
	if b.opts.Commits != nil {
		return b.publishShared(ctx, p.ev)
	}
	// The batch holds other callers' events: one caller's end must not cut
	// theirs short.
	wctx := context.WithoutCancel(ctx)
	b.pubs.Write(p, func(batch []*queuedEvent) { b.writeQueued(wctx, batch) })
	if p.err != nil {
		return 0, fmt.Errorf("publish %s: %w", topic, p.err)
	}
	return p.ev.ID, nil
}

// PublishDeferred is Publish for an event its caller need not wait for (an
// informational one, such as memory.recalled): through the shared group
// commit (Options.Commits) it returns once the event is queued, and the
// event is written with the next shared transaction any caller commits
// (sqlite.Committer.Defer), so that it still comes before the events its
// caller publishes after it; subscribers and watchers learn of it once it
// is committed, in the order of the ids. A crash can lose it before then.
// Without Options.Commits it is Publish. The error is the topic's or the
// payload's: a failed write is logged.
func (b *Bus) PublishDeferred(ctx context.Context, topic string, payload any) error {
	if b.opts.Commits == nil {
		return b.Publish(ctx, topic, payload)
	}
	if err := validateTopic(topic); err != nil {
		return fmt.Errorf("publish: %w", err)
	}
	data, err := marshalPayload(payload)
	if err != nil {
		return fmt.Errorf("publish %s: %w", topic, err)
	}
	ev := extension.Event{Topic: topic, Payload: b.opts.Secrets.RedactJSON(data), Time: b.opts.Now()}
	b.opts.Commits.Defer(ctx, "event "+topic, func(ctx context.Context, tx *sql.Tx) (err error) {
		ev.ID, err = insertEvent(ctx, tx, ev)
		return err
	}, func() { b.published([]extension.Event{ev}) })
	return nil
}

// ErrNoSharedCommits is PublishTx's error on a bus opened without
// Options.Commits.
var ErrNoSharedCommits = errors.New("publishing within a transaction needs the database's shared group commit (Options.Commits)")

// PublishTx writes one event within tx, a transaction of the shared group
// commit the bus was opened with (Options.Commits: a write function given
// to its Write), so that the event is committed with the writes it reports,
// in the same commit, and returns the function that tells the subscribers
// and watchers: the caller passes it to Write as its committed function (or
// calls it from there), so that they learn of it once it is committed and
// in the order of the ids, as from Publish. If tx is rolled back, the event
// was never published: the function must not be called.
func (b *Bus) PublishTx(ctx context.Context, tx *sql.Tx, topic string, payload any) (published func(), err error) {
	if b.opts.Commits == nil {
		return nil, fmt.Errorf("publish %s: %w", topic, ErrNoSharedCommits)
	}
	if err := validateTopic(topic); err != nil {
		return nil, fmt.Errorf("publish: %w", err)
	}
	data, err := marshalPayload(payload)
	if err != nil {
		return nil, fmt.Errorf("publish %s: %w", topic, err)
	}
	ev := extension.Event{Topic: topic, Payload: b.opts.Secrets.RedactJSON(data), Time: b.opts.Now()}
	if ev.ID, err = insertEvent(ctx, tx, ev); err != nil {
		return nil, fmt.Errorf("publish %s: %w", topic, err)
	}
	return func() { b.published([]extension.Event{ev}) }, nil
}

// insertEvent inserts ev within tx and returns its id.
func insertEvent(ctx context.Context, tx *sql.Tx, ev extension.Event) (int64, error) {
	res, err := tx.ExecContext(ctx, insertRows(1), ev.Topic, string(ev.Payload), ev.Time.UnixNano())
	if err != nil {
		return 0, err
	}
	return res.LastInsertId()
}

// publishShared writes ev through the shared group commit (Options.Commits)
// and, once it is committed, tells the subscribers and watchers, in the
// order of the ids.
func (b *Bus) publishShared(ctx context.Context, ev extension.Event) (int64, error) {
	err := b.opts.Commits.Write(ctx, func(ctx context.Context, tx *sql.Tx) (err error) {
		ev.ID, err = insertEvent(ctx, tx, ev)
		return err
	}, func() { b.published([]extension.Event{ev}) })
	if err != nil {
		return 0, fmt.Errorf("publish %s: %w", ev.Topic, err)
	}
	return ev.ID, nil
}

// queuedEvent is a Publish waiting for its event to be written, and then
// the outcome (ev.ID set, or err).
type queuedEvent struct {
	ev  extension.Event
	err error
}

// writeQueued writes the events queued by concurrent Publish calls
// (b.pubs) in one transaction. Every event was an autocommit insert of its
// own, a WAL commit each; a turn publishes several, and concurrent turns'
// now share a commit. Each caller still returns only once its event is
// committed.
func (b *Bus) writeQueued(ctx context.Context, batch []*queuedEvent) {
	evs := make([]extension.Event, len(batch))
	for i, q := range batch {
		evs[i] = q.ev
	}
	var err error
	if len(evs) == 1 {
		// alone: an autocommit insert, without BEGIN and COMMIT
		var res sql.Result
		if res, err = b.db.ExecContext(ctx, insertRows(1), evs[0].Topic, string(evs[0].Payload), evs[0].Time.UnixNano()); err == nil {
			evs[0].ID, err = res.LastInsertId()
		}
	} else {
		err = sqlite.Tx(ctx, b.db, func(tx *sql.Tx) error { return insertEvents(ctx, tx, evs) })
	}
	if err == nil {
		b.published(evs)
	}
	for i, q := range batch {
		q.ev.ID, q.err = evs[i].ID, err
	}
}

// PublishBatch persists msgs in one transaction: all of them or, on error,
// none. Their ids are consecutive in the order given.
func (b *Bus) PublishBatch(ctx context.Context, msgs []Message) error {
	if len(msgs) == 0 {
		return nil
	}
	evs := make([]extension.Event, len(msgs))
	now := b.opts.Now()
	for i, m := range msgs {
		if err := validateTopic(m.Topic); err != nil {
			return fmt.Errorf("publish batch: message %d: %w", i, err)
		}
		data, err := marshalPayload(m.Payload)
		if err != nil {
			return fmt.Errorf("publish batch: message %d (%s): %w", i, m.Topic, err)
		}
		data = b.opts.Secrets.RedactJSON(data)
		evs[i] = extension.Event{Topic: m.Topic, Payload: data, Time: now}
	}
	err := sqlite.Tx(ctx, b.db, func(tx *sql.Tx) error { return insertEvents(ctx, tx, evs) })
	if err != nil {
		return fmt.Errorf("publish batch of %d events: %w", len(msgs), err)
	}
	b.published(evs)
	return nil
}

// insertEvents inserts evs within tx and sets their IDs, consecutive in
// the order given.
func insertEvents(ctx context.Context, tx *sql.Tx, evs []extension.Event) error {
	// Multi-row inserts cut the per-statement overhead; 300 rows × 3
	// parameters stays under SQLite's default 32766-variable limit.
	const chunk = 300
	var stmt *sql.Stmt
	defer func() {
		if stmt != nil {
			stmt.Close()
		}
	}()
	args := make([]any, 0, 3*min(chunk, len(evs)))
	for start := 0; start < len(evs); start += chunk {
		part := evs[start:min(start+chunk, len(evs))]
		args = args[:0]
		for _, ev := range part {
			args = append(args, ev.Topic, string(ev.Payload), ev.Time.UnixNano())
		}
		var res sql.Result
		var err error
		if len(part) == chunk {
			if stmt == nil {
				if stmt, err = tx.PrepareContext(ctx, insertRows(chunk)); err != nil {
					return err
				}
			}
			res, err = stmt.ExecContext(ctx, args...)
		} else {
			res, err = tx.ExecContext(ctx, insertRows(len(part)), args...)
		}
		if err != nil {
			return err
		}
		// A multi-row INSERT assigns consecutive rowids (one writer,
		// AUTOINCREMENT); the last one is the last row's.
		last, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for i := range part {
			part[i].ID = last - int64(len(part)-1-i)
		}
	}
	return nil
}

func insertRows(n int) string {
	const head = `INSERT INTO events (topic, payload, created_at) VALUES `
	buf := make([]byte, 0, len(head)+n*10)
	buf = append(buf, head...)
	for i := range n {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, "(?,?,?)"...)
	}
	return string(buf)
}

// published wakes the dispatchers of matching subscribers and fans the
// committed events out to watchers.
func (b *Bus) published(evs []extension.Event) {
	b.mu.RLock()
	for _, s := range b.subs {
		for _, ev := range evs {
			if matches(s.prefix, ev.Topic) {
				s.signal()
				break
			}
		}
	}
	b.mu.RUnlock()

	b.wmu.RLock()
	defer b.wmu.RUnlock()
	for w := range b.watchers {
		for _, ev := range evs {
			if !matches(w.prefix, ev.Topic) {
				continue
			}
			select {
			case w.ch <- ev:
			default:
				n := w.dropped.Add(1)
				b.dropped.Add(1)
				if n == 1 || n%1000 == 0 {
					b.log.Warn("event watcher too slow, dropping events",
						"prefix", w.prefix, "dropped", n, "topic", ev.Topic, "event_id", ev.ID)
				}
			}
		}
	}
}

// Subscribe registers a durable subscriber named name for every topic that
// starts with prefix ("" for all). It must be called before Run. A name
// seen for the first time starts at the current end of the log (history is
// not replayed; events published after Subscribe returns are delivered); a
// known name keeps its cursor (and its prefix is updated if it changed).
func (b *Bus) Subscribe(name, prefix string, h extension.Handler) error {
	if name == "" || h == nil {
		return fmt.Errorf("subscribe %q: %w: name and handler are required", name, ErrInvalidSubscriber)
	}
	if err := validatePrefix(prefix); err != nil {
		return fmt.Errorf("subscribe %q: %w", name, err)
	}
	// Checked here and again on registration: the database work below
	// runs without the lock so that publishers are not held up.
	if err := b.canRegister(name); err != nil {
		return fmt.Errorf("subscribe %q: %w", name, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), dbTimeout)
	defer cancel()
	var (
		created   bool
		oldPrefix string
		start     int64
	)
	err := sqlite.Tx(ctx, b.db, func(tx *sql.Tx) error {
		err := tx.QueryRowContext(ctx,
			`SELECT prefix, last_id FROM event_cursors WHERE subscriber = ?`, name).Scan(&oldPrefix, &start)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			created = true
			if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(id), 0) FROM events`).Scan(&start); err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx,
				`INSERT INTO event_cursors (subscriber, prefix, last_id, updated_at) VALUES (?, ?, ?, ?)`,
				name, prefix, start, b.opts.Now().UnixNano())
			return err
		case err != nil:
			return err
		case oldPrefix != prefix:
			_, err = tx.ExecContext(ctx,
				`UPDATE event_cursors SET prefix = ?, updated_at = ? WHERE subscriber = ?`,
				prefix, b.opts.Now().UnixNano(), name)
			return err
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("subscribe %q: save cursor: %w", name, err)
	}
	switch {
	case created:
		b.log.Info("new event subscriber starts at the end of the log", "subscriber", name, "prefix", prefix, "cursor", start)
	case oldPrefix != prefix:
		b.log.Warn("event subscriber prefix changed; cursor kept", "subscriber", name, "old_prefix", oldPrefix, "prefix", prefix, "cursor", start)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.canRegisterLocked(name); err != nil {
		return fmt.Errorf("subscribe %q: %w", name, err)
	}
	s := &subscriber{name: name, prefix: prefix, h: h, wake: make(chan struct{}, 1)}
	b.subs = append(b.subs, s)
	b.byName[name] = s
	return nil
}

func (b *Bus) canRegister(name string) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.canRegisterLocked(name)
}

func (b *Bus) canRegisterLocked(name string) error {
	if b.running {
		return ErrRunning
	}
	if _, dup := b.byName[name]; dup {
		return ErrDuplicateSubscriber
	}
	return nil
}

// Watch returns a channel receiving every event with a matching topic
// published by this process after the call, in memory and without
// durability. Publishers never wait for a watcher: when its buffer (at least
// 1) is full the event is dropped for it, counted (Stats.WatchDropped) and
// logged. The channel is closed when ctx is done. An invalid prefix (see
// ErrInvalidTopic) yields a closed channel and a logged warning.
func (b *Bus) Watch(ctx context.Context, prefix string, buffer int) <-chan extension.Event {
	w := &watcher{prefix: prefix, ch: make(chan extension.Event, max(buffer, 1))}
	if err := validatePrefix(prefix); err != nil || ctx.Err() != nil {
		if err != nil {
			b.log.Warn("watch refused", "error", err)
		}
		close(w.ch)
		return w.ch
	}
	b.wmu.Lock()
	b.watchers[w] = struct{}{}
	b.wmu.Unlock()
	context.AfterFunc(ctx, func() {
		b.wmu.Lock()
		delete(b.watchers, w)
		close(w.ch)
		b.wmu.Unlock()
		if n := w.dropped.Load(); n > 0 {
			b.log.Info("event watcher closed", "prefix", w.prefix, "dropped", n)
		}
	})
	return w.ch
}

// Run delivers events to every subscriber, one goroutine per subscriber,
// until ctx is cancelled. It returns nil once every delivery goroutine has
// exited. It may be called once.
//
// The goroutines start one after the other: each starts once the one
// before has read its cursor and its first batch of pending events (a few
// queries, well under a millisecond). Started together they each took a
// database connection at once, and every SQLite connection the pool opens
// parses the whole schema and keeps its own cache for the life of the
// process (a quarter of a megabyte or more each).
func (b *Bus) Run(ctx context.Context) error {
	b.mu.Lock()
	if b.running {
		b.mu.Unlock()
		return fmt.Errorf("run event bus: %w", ErrRunning)
	}
	b.running = true
	subs := append([]*subscriber(nil), b.subs...)
	b.mu.Unlock()

	var wg sync.WaitGroup
	for _, s := range subs {
		read := make(chan struct{})
		wg.Go(func() { b.dispatch(ctx, s, read) })
		select {
		case <-read:
		case <-ctx.Done():
		}
	}
	<-ctx.Done()
	wg.Wait()
	return nil
}
