package scheduler

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"testing/synctest"
	"time"
)

// TestMeasure10kDay measures the scheduler's overhead with 10,000 daily
// schedules (spread over the day, about 7 runs a minute) over one simulated
// day: process CPU per simulated minute and RSS. It only logs; run it with
//
//	REVERIE_MEASURE=1 go test -run TestMeasure10kDay -v ./internal/scheduler
func TestMeasure10kDay(t *testing.T) {
	if os.Getenv("REVERIE_MEASURE") == "" {
		t.Skip("set REVERIE_MEASURE=1 to measure")
	}
	synctest.Test(t, func(t *testing.T) {
		sleepUntil(time.Date(2026, 3, 2, 0, 0, 0, 0, time.UTC))
		ex := &nopExecutor{}
		s := open(t, openDB(t), Options{Executor: ex, Logger: slog.New(slog.DiscardHandler)})
		ctx := context.Background()
		for i := range 10_000 {
			m := i * 24 * 60 / 10_000
			if _, err := s.Add(ctx, NewTask{Text: fmt.Sprint("task ", i), Thread: "web:m",
				Spec: Spec{Kind: Daily, Time: fmt.Sprintf("%02d:%02d", m/60, m%60)}}); err != nil {
				t.Fatal(err)
			}
		}
		start(t, s)
		synctest.Wait()
		before := cpu()
		sleepUntil(time.Date(2026, 3, 3, 0, 0, 0, 0, time.UTC))
		used := cpu() - before
		if ex.runs() != 10_000 {
			t.Errorf("%d runs in the day, want 10000", ex.runs())
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		t.Logf("10k daily schedules, one simulated day: %d runs, CPU %s in all = %s per minute (%.4f%% of one core); heap in use %.1f MiB, RSS %s",
			ex.runs(), used.Round(time.Millisecond), (used / (24 * 60)).Round(time.Microsecond),
			100*float64(used)/float64(24*time.Hour), float64(ms.HeapInuse)/(1<<20), rss())
	})
}

func cpu() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func rss() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmRSS:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
