package scheduler

import (
	"context"
	"database/sql"
	"log/slog"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// database/sql's connection opener ends asynchronously after
		// DB.Close.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

func openDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(p[:len(p)-1]))
	return len(p), nil
}

// delivery is one thing the recording executor was asked to do.
type delivery struct {
	At     time.Time
	Kind   TaskKind
	Thread chat.ThreadID
	Text   string
}

// recorder is an Executor that records what it is asked, at the (fake)
// time it is asked.
type recorder struct {
	mu  sync.Mutex
	got []delivery
	// fail, when set, is returned by every call.
	fail error
}

func (r *recorder) add(d delivery) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.got = append(r.got, d)
	return r.fail
}

func (r *recorder) Remind(ctx context.Context, thread chat.ThreadID, text string) (chat.ThreadID, error) {
	if thread == "" {
		thread = chat.DefaultThread
	}
	return thread, r.add(delivery{time.Now(), KindReminder, thread, text})
}

func (r *recorder) RunAIPrompt(ctx context.Context, t Task) (RunReport, error) {
	return RunReport{}, r.add(delivery{time.Now(), KindAITask, t.Thread, t.AIPrompt})
}

func (r *recorder) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.got)
}

// byText returns the times of the deliveries whose text is text.
func (r *recorder) byText(text string) []time.Time {
	var out []time.Time
	for _, d := range r.deliveries() {
		if d.Text == text || d.Text == "Reminder: "+text {
			out = append(out, d.At)
		}
	}
	return out
}

// open opens a scheduler on db with test defaults.
func open(t testing.TB, db *sql.DB, opts Options) *Scheduler {
	t.Helper()
	opts.DB = db
	if opts.Logger == nil {
		opts.Logger = testLogger(t)
	}
	s, err := Open(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// start runs s until the returned stop is called (or the test ends) and
// checks that Run returned nil.
func start(t testing.TB, s *Scheduler) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// sleepUntil advances the bubble's clock to at and lets everything settle.
func sleepUntil(at time.Time) {
	if d := time.Until(at); d > 0 {
		time.Sleep(d)
	}
	synctest.Wait()
}

func mustAdd(t testing.TB, s *Scheduler, nt NewTask) Task {
	t.Helper()
	task, err := s.Add(context.Background(), nt)
	if err != nil {
		t.Fatalf("Add(%+v): %v", nt, err)
	}
	return task
}

func receipts(t testing.TB, s *Scheduler, id string) []Receipt {
	t.Helper()
	rs, err := s.Receipts(context.Background(), id, 1000)
	if err != nil {
		t.Fatal(err)
	}
	slices.Reverse(rs) // oldest first
	return rs
}

func outcomes(rs []Receipt) map[Outcome]int {
	m := map[Outcome]int{}
	for _, r := range rs {
		m[r.Outcome] += r.Count
	}
	return m
}

func fmtTimes(ts []time.Time, loc *time.Location) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.In(loc).Format("01-02 15:04 MST")
	}
	return out
}

func usage(in, out int) llm.Usage { return llm.Usage{InputTokens: in, OutputTokens: out} }
