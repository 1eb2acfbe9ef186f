package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
)

// go test -run XXX -bench . -benchmem ./internal/scheduler

func BenchmarkNext(b *testing.B) {
	loc := berlin(b)
	specs := []struct {
		name string
		spec Spec
	}{
		{"once", Spec{Kind: Once, At: time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)}},
		{"daily", Spec{Kind: Daily, Time: "09:00"}},
		{"weekly", Spec{Kind: Weekly, Time: "09:00", Weekdays: []string{"mon", "fri"}}},
		{"monthly", Spec{Kind: Monthly, Time: "09:00", Day: 31}},
		{"interval", Spec{Kind: Interval, Every: Duration(time.Hour)}},
		{"interval_window", Spec{Kind: Interval, Every: Duration(90 * time.Minute), WindowStart: "08:00", WindowEnd: "20:00"}},
		{"cron_weekdays", Spec{Kind: Cron, Cron: "30 8 * * 1-5"}},
		{"cron_every_minute", Spec{Kind: Cron, Cron: "* * * * *"}},
		{"cron_yearly", Spec{Kind: Cron, Cron: "0 0 1 1 *"}},
	}
	for _, sc := range specs {
		s, err := Compile(sc.spec, loc)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(sc.name, func(b *testing.B) {
			// Walk across a year that includes both DST changes.
			from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
			t := from
			for b.Loop() {
				t = s.Next(t)
				if t.IsZero() || t.Year() > 2026 {
					t = from
				}
			}
		})
	}
}

func BenchmarkCompile(b *testing.B) {
	for b.Loop() {
		if _, err := Compile(Spec{Kind: Cron, Cron: "*/15 8-18 * * 1-5"}, time.UTC); err != nil {
			b.Fatal(err)
		}
	}
}

type nopExecutor struct {
	mu sync.Mutex
	n  int
}

func (e *nopExecutor) Remind(ctx context.Context, thread chat.ThreadID, text string) (chat.ThreadID, error) {
	e.mu.Lock()
	e.n++
	e.mu.Unlock()
	return thread, nil
}
func (e *nopExecutor) runs() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.n
}

func (e *nopExecutor) RunAIPrompt(ctx context.Context, t Task) (RunReport, error) {
	return RunReport{}, nil
}

// load10k stores 10,000 daily tasks spread over the day.
func load10k(b *testing.B, s *Scheduler) {
	ctx := context.Background()
	for i := range 10_000 {
		spec := Spec{Kind: Daily, Time: fmt.Sprintf("%02d:%02d", (i/60)%24, i%60)}
		if i%4 == 1 {
			spec = Spec{Kind: Cron, Cron: fmt.Sprintf("%d %d * * 1-5", i%60, (i/60)%24)}
		}
		if _, err := s.Add(ctx, NewTask{Text: fmt.Sprint("task ", i), Thread: "web:bench", Spec: spec}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAdd10k: storing 10,000 schedules (one transaction each).
func BenchmarkAdd10k(b *testing.B) {
	for b.Loop() {
		s := open(b, openDB(b), Options{Logger: slog.New(slog.DiscardHandler)})
		load10k(b, s)
	}
}

// BenchmarkRearm10k: one timer wake-up with 10,000 schedules and nothing
// due (read the earliest next run and re-arm).
func BenchmarkRearm10k(b *testing.B) {
	s := open(b, openDB(b), Options{Logger: slog.New(slog.DiscardHandler)})
	load10k(b, s)
	ctx := context.Background()
	s.pruned = time.Now()
	for b.Loop() {
		if _, err := s.tick(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFire: one due task run end to end (plan, receipt, next run,
// executor, completed receipt) among 10,000 schedules.
func BenchmarkFire(b *testing.B) {
	ex := &nopExecutor{}
	clock := time.Now()
	var mu sync.Mutex
	now := func() time.Time { mu.Lock(); defer mu.Unlock(); return clock }
	s := open(b, openDB(b), Options{Logger: slog.New(slog.DiscardHandler), Executor: ex, Now: now, MaxParallel: 1})
	load10k(b, s)
	ctx := context.Background()
	s.pruned = clock
	b.ResetTimer()
	fired := 0
	for b.Loop() {
		// Advance the clock to the next due time and run what is due.
		var next int64
		if err := s.db.QueryRow(`SELECT MIN(next_run) FROM scheduler_tasks WHERE status = 'active'`).Scan(&next); err != nil {
			b.Fatal(err)
		}
		mu.Lock()
		clock = fromNanos(next)
		mu.Unlock()
		if _, err := s.tick(ctx); err != nil {
			b.Fatal(err)
		}
		s.runs.Wait()
		fired++
	}
	b.StopTimer()
	if ex.runs() < fired {
		b.Fatalf("%d runs for %d ticks", ex.runs(), fired)
	}
}
