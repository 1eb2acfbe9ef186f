package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/internal/logtest"
)

// TestCommitter: writes of concurrent callers queued while a batch is
// being written share the next transaction; each is committed once, a
// failing write is undone alone (its savepoint) and reported to its caller
// only, and the committed callbacks run in queue order, once committed.
func TestCommitter(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE w (v INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	c := NewCommitter(db, nil)
	var rec writeRecorder
	insert, committed := rec.insert, rec.committed
	// The first write holds the batch until the others are queued.
	release := make(chan struct{})
	first := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		err := c.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			close(first)
			<-release
			return insert(0)(ctx, tx)
		}, committed(0))
		if err != nil {
			t.Error(err)
		}
	})
	<-first
	const callers = 8
	errBad := errors.New("bad write")
	errs := make([]error, callers+1)
	for v := 1; v <= callers; v++ {
		wg.Go(func() {
			fn := insert(v)
			if v == 3 {
				fn = func(ctx context.Context, tx *sql.Tx) error {
					if err := insert(v)(ctx, tx); err != nil {
						return err
					}
					return errBad // after writing: undone with its savepoint
				}
			}
			errs[v] = c.Write(ctx, fn, committed(v))
		})
	}
	for c.gc.Queued() < callers {
		runtime.Gosched()
	}
	close(release)
	wg.Wait()
	for v := 1; v <= callers; v++ {
		if want := error(nil); v == 3 {
			if !errors.Is(errs[v], errBad) {
				t.Errorf("caller 3: %v, want its own error", errs[v])
			}
		} else if errs[v] != want {
			t.Errorf("caller %d: %v", v, errs[v])
		}
	}
	rows, err := db.QueryContext(ctx, `SELECT v FROM w ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var got []int
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if want := []int{0, 1, 2, 4, 5, 6, 7, 8}; !slices.Equal(slices.Sorted(slices.Values(got)), want) {
		t.Fatalf("stored %v, want %v", got, want)
	}
	// the callbacks of the committed writes, once each, in the order the
	// rows were written (the first alone, then the others as queued)
	if order := rec.committedOrder(); !slices.Equal(order, got) {
		t.Fatalf("committed callbacks %v, rows written %v", order, got)
	}
	if q := c.gc.Pending(); q != 0 {
		t.Fatalf("%d writes left pending", q)
	}
}

// A lone write that fails leaves nothing and says why; its callback is not
// called.
func TestCommitterLoneFailure(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	c := NewCommitter(db, nil)
	called := false
	err := c.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO missing (v) VALUES (1)`)
		return err
	}, func() { called = true })
	if err == nil || called {
		t.Fatalf("err %v, callback called %v", err, called)
	}
}

// TestCommitterCheckpoints: on a database opened with ManualCheckpoint no
// commit copies the WAL into the database file, however long it grows (the
// automatic checkpoint would have run after 1,000 pages); Run does, once
// checkpointEvery shared transactions have committed, and returns when its
// context ends.
func TestCommitterCheckpoints(t *testing.T) {
	ctx := context.Background()
	file := filepath.Join(t.TempDir(), "test.db")
	db, err := OpenWith(ctx, file, Options{ManualCheckpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	var auto int
	if err := db.QueryRowContext(ctx, `PRAGMA wal_autocheckpoint`).Scan(&auto); err != nil || auto != 0 {
		t.Fatalf("wal_autocheckpoint = %d, %v; want 0", auto, err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE w (b BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		fi, err := os.Stat(file)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	before := size()
	c := NewCommitter(db, nil)
	blob := make([]byte, 16<<10) // four pages and more a row
	for range checkpointEvery + 8 {
		if err := c.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO w (b) VALUES (?)`, blob)
			return err
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if got := size(); got != before {
		t.Fatalf("database file %d bytes after the writes, was %d: a commit checkpointed", got, before)
	}
	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	// A checkpoint was due when the writes passed checkpointEvery.
	for size() < int64(checkpointEvery)*int64(len(blob)) {
		runtime.Gosched()
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
}

// TestCommitterBoundsWAL: under writes that never pause, with a reader
// beside them, the write-ahead log file stays within what a few checkpoint
// intervals write, not what all of them do: a passive checkpoint alone
// never catches up with writes committed while it runs, so the log would
// not restart, and the file would keep its largest size.
func TestCommitterBoundsWAL(t *testing.T) {
	ctx := context.Background()
	const (
		limit     = 16 << 10 // the log restarts past four times this
		every     = 16
		intervals = 40
		row       = 6 << 10 // two pages and more a commit
	)
	file := filepath.Join(t.TempDir(), "test.db")
	db, err := OpenWith(ctx, file, Options{ManualCheckpoint: true, WALLimit: limit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if _, err := db.ExecContext(ctx, `CREATE TABLE w (b BLOB NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	c := NewCommitter(db, nil)
	c.every = every
	rctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		if err := c.Run(rctx); err != nil {
			t.Errorf("Run = %v", err)
		}
	}()
	var reading atomic.Bool
	reading.Store(true)
	go func() { // a reader that never pauses either
		defer wg.Done()
		for reading.Load() {
			var n int
			if err := db.QueryRowContext(ctx, `SELECT count(*) FROM w`).Scan(&n); err != nil {
				t.Errorf("read: %v", err)
				return
			}
		}
	}()
	walSize := func() int64 {
		fi, err := os.Stat(file + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	blob := make([]byte, row)
	var most int64
	for i := range intervals * every {
		if err := c.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO w (b) VALUES (?)`, blob)
			return err
		}, nil); err != nil {
			t.Fatal(err)
		}
		most = max(most, walSize())
		// Run checkpoints beside the writes; they do not get more than an
		// interval ahead of it.
		for (i+1)%every == 0 && c.checkpoints.Load() < int64((i+1)/every) {
			runtime.Gosched()
		}
	}
	reading.Store(false)
	stop()
	wg.Wait()
	// Between two restarts of the log: what Run's checkpoint saw, what was
	// written while it ran and the interval after it, about four intervals
	// (each commit writes four pages, with a frame header each); a restart
	// now and then fails when the reader is not scheduled for restartWait
	// (a loaded machine), so the bound allows three times that.
	interval := int64(every * 4 * (4096 + 24))
	if bound := 12 * interval; most > bound {
		t.Errorf("write-ahead log reached %d bytes (%d written in all); want at most %d", most, int64(intervals)*interval, bound)
	}
	if c.restarts.Load() == 0 {
		t.Error("no RESTART checkpoint ran")
	}
	t.Logf("write-ahead log at most %d bytes; %d checkpoints, %d restarts", most, c.checkpoints.Load(), c.restarts.Load())
	// Run's last checkpoint, with no writes beside it, caught up: the next
	// write restarts the log and cuts the file back to the limit.
	if err := c.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO w (b) VALUES (?)`, blob)
		return err
	}, nil); err != nil {
		t.Fatal(err)
	}
	if got, want := walSize(), max(limit, 32+4*(4096+24)); got > int64(want) {
		t.Errorf("write-ahead log %d bytes after a write following a checkpoint that caught up; want at most %d (journal_size_limit, or that write's frames)", got, want)
	}
}

// TestCommitterRestartResetWaits: the RESTART checkpoint's connection
// takes its busy timeout back within resetWait even when that does not
// answer (here a connection that answers it only once its context ends):
// the checkpoint returns, and the connection is discarded rather than
// pooled with restartWait's busy timeout.
func TestCommitterRestartResetWaits(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		base, err := newCachingConnector(dsnOf(filepath.Join(dir, "test.db"), Options{ManualCheckpoint: true, WALLimit: 4 << 10}))
		if err != nil {
			t.Fatal(err)
		}
		sc := &stuckConnector{base: base, stuck: fmt.Sprintf(`PRAGMA busy_timeout = %d`, BusyTimeout.Milliseconds())}
		db := sql.OpenDB(sc)
		defer db.Close()
		if _, err := db.ExecContext(ctx, `CREATE TABLE w (b BLOB NOT NULL)`); err != nil {
			t.Fatal(err)
		}
		c := NewCommitter(db, nil)
		blob := make([]byte, 6<<10)
		for range 8 { // the log past restartFactor times its limit
			if err := c.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
				_, err := tx.ExecContext(ctx, `INSERT INTO w (b) VALUES (?)`, blob)
				return err
			}, nil); err != nil {
				t.Fatal(err)
			}
		}
		sc.on.Store(true)
		start := time.Now()
		if err := c.checkpoint(ctx); err != nil {
			t.Fatalf("checkpoint = %v", err)
		}
		if c.restarts.Load() != 1 {
			t.Fatal("no RESTART checkpoint ran")
		}
		if waited := time.Since(start); waited != resetWait {
			t.Errorf("the checkpoint waited %v for the busy timeout's reset; want resetWait (%v)", waited, resetWait)
		}
		if got := sc.closed.Load(); got != 1 {
			t.Errorf("%d connections closed; want the one whose busy timeout was not reset", got)
		}
	})
}

// stuckConnector opens the connections of base; while on is set, the
// statement stuck does not answer on them until its context ends.
type stuckConnector struct {
	base   driver.Connector
	stuck  string
	on     atomic.Bool
	closed atomic.Int64 // connections closed
}

func (c *stuckConnector) Connect(ctx context.Context) (driver.Conn, error) {
	cn, err := c.base.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return stuckConn{cn.(conn), c}, nil
}

func (c *stuckConnector) Driver() driver.Driver { return c.base.Driver() }

type stuckConn struct {
	conn
	c *stuckConnector
}

func (s stuckConn) ExecContext(ctx context.Context, query string, args []driver.NamedValue) (driver.Result, error) {
	if s.c.on.Load() && query == s.c.stuck {
		<-ctx.Done()
		return nil, ctx.Err()
	}
	return s.conn.ExecContext(ctx, query, args)
}

func (s stuckConn) Close() error {
	s.c.closed.Add(1)
	return s.conn.Close()
}

// TestCommitterLogsFailedCheckpoint: Run says when a checkpoint fails (the
// WAL then grows until one succeeds) and stays quiet when it succeeds.
func TestCommitterLogsFailedCheckpoint(t *testing.T) {
	cases := []struct {
		name    string
		closed  bool // the database is closed before Run
		wantLog bool
	}{
		{"a checkpoint that succeeds is not logged", false, false},
		{"a checkpoint that fails is", true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			db, err := OpenWith(context.Background(), filepath.Join(t.TempDir(), "test.db"), Options{ManualCheckpoint: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { db.Close() })
			if tc.closed {
				db.Close()
			}
			var out bytes.Buffer
			c := NewCommitter(db, slog.New(slog.NewTextHandler(&out, nil)))
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // Run checkpoints once more as it returns
			if err := c.Run(ctx); err != nil {
				t.Fatalf("Run = %v", err)
			}
			logged := strings.Contains(out.String(), "checkpoint failed")
			if logged != tc.wantLog {
				t.Errorf("log %q; want a failed checkpoint logged: %v", out.String(), tc.wantLog)
			}
		})
	}
}

// TestCommitterDefer: a deferred write returns at once and is committed by
// the next caller's write (before that write's own, in queue order), or by
// Run when none comes, or at Run's end; without Run it is written at once;
// its failure is logged and undoes only itself.
func TestCommitterDefer(t *testing.T) {
	ctx := context.Background()
	db := openTemp(t)
	if _, err := db.ExecContext(ctx, `CREATE TABLE w (v INTEGER NOT NULL CHECK (v >= 0))`); err != nil {
		t.Fatal(err)
	}
	var out logtest.Buffer
	c := NewCommitter(db, slog.New(slog.NewTextHandler(&out, nil)))
	var rec writeRecorder
	insert, committed := rec.insert, rec.committed
	stored := func() []int {
		vs, err := Rows(ctx, db, Scan1[int], `SELECT v FROM w ORDER BY rowid`)
		if err != nil {
			t.Fatal(err)
		}
		return vs
	}

	c.Defer(ctx, "without Run", insert(1), committed(1))
	if got := stored(); !slices.Equal(got, []int{1}) {
		t.Fatalf("without Run, a deferred write is not written at once: %v", got)
	}

	rctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- c.Run(rctx) }()
	for running := false; !running; runtime.Gosched() {
		c.dmu.Lock()
		running = c.running
		c.dmu.Unlock()
	}

	// carried by the next write, before it; a failing one undoes itself only
	c.Defer(ctx, "the second", insert(2), committed(2))
	c.Defer(ctx, "a failing one", insert(-1), committed(-1))
	if err := c.Write(ctx, insert(3), committed(3)); err != nil {
		t.Fatal(err)
	}
	if got := stored(); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("after the next write: %v, want the deferred write before it", got)
	}
	if !strings.Contains(out.String(), `what="a failing one"`) {
		t.Errorf("the failed deferred write was not logged: %q", out.String())
	}

	// written by Run when no write comes
	c.Defer(ctx, "alone", insert(4), committed(4))
	for !slices.Contains(stored(), 4) {
		runtime.Gosched()
	}

	// queued as Run ends: written at its end (or before, if Run's wait was over)
	c.Defer(ctx, "at the end", insert(5), committed(5))
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v", err)
	}
	if got := stored(); !slices.Equal(got, []int{1, 2, 3, 4, 5}) {
		t.Fatalf("after Run: %v", got)
	}
	if order := rec.committedOrder(); !slices.Equal(order, []int{1, 2, 3, 4, 5}) {
		t.Errorf("committed callbacks ran for %v, want 1…5 in order (not the failed one)", order)
	}
}

// writeRecorder makes the committer tests' writes (insert: a row v of
// table w) and records the order their committed callbacks run in.
type writeRecorder struct {
	mu    sync.Mutex
	order []int
}

func (r *writeRecorder) insert(v int) func(ctx context.Context, tx *sql.Tx) error {
	return func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, `INSERT INTO w (v) VALUES (?)`, v)
		return err
	}
}

func (r *writeRecorder) committed(v int) func() {
	return func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		r.order = append(r.order, v)
	}
}

func (r *writeRecorder) committedOrder() []int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.order)
}
