package workflow

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm"
)

// counter is a Deliverer that signals after n deliveries.
type counter struct {
	n    atomic.Int64
	want int64
	done chan struct{}
}

func (c *counter) EnqueueSystemEvent(context.Context, chat.ThreadID, string) error {
	if c.n.Add(1) == c.want {
		close(c.done)
	}
	return nil
}

// benchDAG spawns n sessions with instant workers — wide (independent) or
// deep (a chain) — and waits until every result is delivered. It reports
// the scheduling overhead per node: spawn, dependency resolution, start,
// completion and delivery, each durably committed to SQLite.
func benchDAG(b *testing.B, n int, deep bool) {
	model := newModel()
	for range b.N {
		b.StopTimer()
		db := openDB(b, filepath.Join(b.TempDir(), "reverie.db"))
		c := &counter{want: int64(n), done: make(chan struct{})}
		m, err := Open(context.Background(), Options{DB: db, Model: model, Deliver: c, MaxConcurrent: 8})
		if err != nil {
			b.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- m.Run(ctx) }()
		b.StartTimer()
		start := time.Now()
		prev := ""
		for i := range n {
			req := SpawnRequest{Objective: fmt.Sprintf("step %d", i), Parent: thread}
			if deep && prev != "" {
				req.DependsOn = []string{prev}
			}
			res, err := m.Spawn(ctx, req)
			if err != nil {
				b.Fatal(err)
			}
			prev = res.ID
		}
		<-c.done
		elapsed := time.Since(start)
		b.StopTimer()
		cancel()
		<-done
		db.Close()
		b.ReportMetric(float64(elapsed.Microseconds())/float64(n), "µs/node")
		b.StartTimer()
	}
}

func BenchmarkDAGWide1000(b *testing.B) { benchDAG(b, 1000, false) }
func BenchmarkDAGDeep1000(b *testing.B) { benchDAG(b, 1000, true) }

// BenchmarkIdlePendingNodeMemory measures the heap held per pending
// session waiting on a dependency (the in-memory graph; SQLite holds the
// rest).
func BenchmarkIdlePendingNodeMemory(b *testing.B) {
	const n = 5000
	for range b.N {
		b.StopTimer()
		db := openDB(b, filepath.Join(b.TempDir(), "reverie.db"))
		model := newModel()
		model.on("blocker", blockUntilDone)
		m, err := Open(context.Background(), Options{DB: db, Model: model})
		if err != nil {
			b.Fatal(err)
		}
		ctx := context.Background()
		blocker, err := m.Spawn(ctx, SpawnRequest{Objective: "blocker", Parent: thread})
		if err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		b.StartTimer()
		for i := range n {
			obj := fmt.Sprintf("waiting task number %d: summarise the findings of the research", i)
			if _, err := m.Spawn(ctx, SpawnRequest{Objective: obj, Parent: thread, DependsOn: []string{blocker.ID}}); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/n, "B/pending-node")
		runtime.KeepAlive(m)
		db.Close()
		b.StartTimer()
	}
}

// BenchmarkWorkerToolCalls runs one worker at a time whose model asks for
// calls instant tool calls in one round and then answers, from spawn to
// delivered result. It measures what saving the message list costs per
// tool call (the assistant message and every tool result are committed to
// SQLite before the next call starts).
func BenchmarkWorkerToolCalls(b *testing.B) {
	for _, calls := range []int{1, 4, 16} {
		b.Run(fmt.Sprintf("calls=%d", calls), func(b *testing.B) {
			db := openDB(b, filepath.Join(b.TempDir(), "reverie.db"))
			model := newModel()
			model.on("busy", func(ctx context.Context, req llm.Request) (llm.Response, error) {
				if lastMessage(req).Role == llm.RoleTool {
					return reply("done"), nil
				}
				cs := make([]llm.ToolCall, calls)
				for i := range cs {
					cs[i] = call("lookup", map[string]string{"q": fmt.Sprint(i)})
				}
				return callTools(cs...), nil
			})
			delivered := make(chan struct{}, 1)
			m, err := Open(context.Background(), Options{DB: db, Model: model, Tools: testTools,
				Deliver: deliverFunc(func() { delivered <- struct{}{} })})
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- m.Run(ctx) }()
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				if _, err := m.Spawn(ctx, SpawnRequest{Objective: "busy", Parent: thread}); err != nil {
					b.Fatal(err)
				}
				<-delivered
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N), "µs/worker")
			cancel()
			<-done
		})
	}
}

// deliverFunc is a Deliverer calling f for every delivery.
type deliverFunc func()

func (f deliverFunc) EnqueueSystemEvent(context.Context, chat.ThreadID, string) error {
	f()
	return nil
}
