package eventbus

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql's connection opener ends asynchronously after
		// DB.Close.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

// testLogger writes to the test log when -v is given and discards otherwise.
func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p))
	return len(p), nil
}

// openDB opens a database file in dir, closed at the end of the test.
func openDB(t testing.TB, file string) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func tempDB(t testing.TB) (*sql.DB, string) {
	file := filepath.Join(t.TempDir(), "reverie.db")
	return openDB(t, file), file
}

func openBus(t testing.TB, db *sql.DB, opts Options) *Bus {
	t.Helper()
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	b, err := Open(context.Background(), db, opts)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// runBus runs b until the returned stop is called (or the test ends) and
// checks that Run returned nil.
func runBus(t testing.TB, b *Bus) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run returned %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// delivery is one handler call.
type delivery struct {
	ID      int64
	Topic   string
	Attempt int
}

// recorder records handler calls; fn (optional) decides the outcome.
type recorder struct {
	mu    sync.Mutex
	calls []delivery
	fn    func(ctx context.Context, ev extension.Event) error
	// notify receives every call's delivery after it returned nil.
	notify chan delivery
}

func newRecorder(buffer int) *recorder {
	return &recorder{notify: make(chan delivery, buffer)}
}

func (r *recorder) handle(ctx context.Context, ev extension.Event) error {
	d := delivery{ID: ev.ID, Topic: ev.Topic, Attempt: ev.Attempt}
	r.mu.Lock()
	r.calls = append(r.calls, d)
	fn := r.fn
	r.mu.Unlock()
	if fn != nil {
		if err := fn(ctx, ev); err != nil {
			return err
		}
	}
	if r.notify != nil {
		select {
		case r.notify <- d:
		default:
		}
	}
	return nil
}

func (r *recorder) snapshot() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.calls...)
}

// waitN receives n successful deliveries.
func (r *recorder) waitN(t testing.TB, n int) []delivery {
	t.Helper()
	out := make([]delivery, 0, n)
	for len(out) < n {
		out = append(out, <-r.notify)
	}
	return out
}

// quiesce, inside a synctest bubble, lets fake time pass until every
// goroutine of the bubble is idle: SQLite's busy handler sleeps on the
// (fake) clock when dispatchers contend for the write lock, so one
// synctest.Wait alone may return while a write is still pending.
func quiesce() {
	<-time.After(time.Minute)
	synctest.Wait()
}

// countingDB opens file through a connector that counts the statements run
// (prepared, executed or queried) on its connections.
func countingDB(t testing.TB, file string) (*sql.DB, *atomic.Int64) {
	t.Helper()
	probe, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	drv := probe.Driver()
	probe.Close()
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(NORMAL)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Set("_txlock", "immediate")
	n := new(atomic.Int64)
	db := sql.OpenDB(countingConnector{drv: drv, dsn: "file:" + file + "?" + q.Encode(), n: n})
	db.SetMaxOpenConns(4)
	t.Cleanup(func() { db.Close() })
	return db, n
}

type countingConnector struct {
	drv driver.Driver
	dsn string
	n   *atomic.Int64
}

func (c countingConnector) Connect(context.Context) (driver.Conn, error) {
	conn, err := c.drv.Open(c.dsn)
	if err != nil {
		return nil, err
	}
	return &countingConn{Conn: conn, n: c.n}, nil
}

func (c countingConnector) Driver() driver.Driver { return c.drv }

type countingConn struct {
	driver.Conn
	n *atomic.Int64
}

var errUnsupported = errors.New("driver does not support the context interfaces")

func (c *countingConn) PrepareContext(ctx context.Context, query string) (driver.Stmt, error) {
	c.n.Add(1)
	if p, ok := c.Conn.(driver.ConnPrepareContext); ok {
		return p.PrepareContext(ctx, query)
	}
	return c.Conn.Prepare(query)
}

func (c *countingConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	c.n.Add(1)
	if b, ok := c.Conn.(driver.ConnBeginTx); ok {
		return b.BeginTx(ctx, opts)
	}
	return nil, errUnsupported
}

func (c *countingConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	c.n.Add(1)
	if e, ok := c.Conn.(driver.ExecerContext); ok {
		return e.ExecContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

func (c *countingConn) QueryContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Rows, error) {
	c.n.Add(1)
	if q, ok := c.Conn.(driver.QueryerContext); ok {
		return q.QueryContext(ctx, query, args)
	}
	return nil, driver.ErrSkip
}

// mustPublish publishes topic with payload and returns its id.
func mustPublish(t testing.TB, b *Bus, topic string, payload any) int64 {
	t.Helper()
	id, err := b.PublishID(context.Background(), topic, payload)
	if err != nil {
		t.Fatalf("publish %s: %v", topic, err)
	}
	return id
}

func ids(ds []delivery) []int64 {
	out := make([]int64, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func fmtDeliveries(ds []delivery) string {
	s := ""
	for _, d := range ds {
		s += fmt.Sprintf("(%d %s #%d) ", d.ID, d.Topic, d.Attempt)
	}
	return s
}
