package agent

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/embedtest"
	"github.com/reverie-ai/reverie/internal/eventbus"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

// BenchmarkTurnOverhead measures the orchestration cost of one turn with a
// model that answers instantly: on a thread of 10,000 stored messages whose
// older part is compacted into a summary, with the shipped data dir
// (BASE_PROMPT.txt, starter skills), six tools, the interaction log and the
// real event bus. The active (unsummarised) history is held at a fixed size
// per sub-benchmark by archiving, outside the measured time, the two oldest
// active messages after each turn, as compaction would; p50 and p99 are per
// turn (Turn alone).
//
// The memories=10k variant adds the recall context provider over 10,000
// long-term memories (offline embedder), as the app runs every turn.
// REVERIE_BENCH_EMBEDDING=builtin/use-lite stores and recalls them with the
// sentence encoder built into the binary instead; the time the embedder
// takes in a turn (the query's vector: model time, as an embedding
// server's would be) is reported apart (embed-p50-ms) and the turn without
// it as p50-ex-embed-ms and p99-ex-embed-ms.
func BenchmarkTurnOverhead(b *testing.B) {
	for _, active := range []int{40, 400} {
		b.Run(fmt.Sprintf("active=%d", active), func(b *testing.B) { benchTurn(b, active, 0) })
	}
	b.Run("active=40/memories=10k", func(b *testing.B) { benchTurn(b, 40, 10_000) })
}

func benchTurn(b *testing.B, active, memories int) {
	ctx := context.Background()
	dir := b.TempDir()
	if _, err := datadir.Bootstrap(dir, nil); err != nil {
		b.Fatal(err)
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "reverie.db"))
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	store, err := conversation.Open(ctx, db, conversation.Options{})
	if err != nil {
		b.Fatal(err)
	}
	ilog, err := interactions.Open(ctx, db, interactions.Options{})
	if err != nil {
		b.Fatal(err)
	}
	bus, err := eventbus.Open(ctx, db, eventbus.Options{})
	if err != nil {
		b.Fatal(err)
	}
	const thread chat.ThreadID = "web:bench"
	const total = 10000
	for i := 0; i < total; i += 500 {
		seedThread(b, store, thread, 500, 12)
	}
	h, err := store.History(ctx, thread)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := store.Compact(ctx, thread, conversation.Summary{Text: "The user and the assistant discussed many things.", CoversThrough: h[len(h)-active-1].ID}); err != nil {
		b.Fatal(err)
	}
	var tools []tool.Tool
	for i := range 6 {
		tools = append(tools, tool.New(fmt.Sprintf("tool_%d", i), "A tool for the benchmark.", func(ctx context.Context, a echoArgs) (any, error) { return a.Text, nil }))
	}
	instant := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.AssistantText("Sure, here you go."), Usage: llm.Usage{InputTokens: 1000, OutputTokens: 5}}, nil
	})
	var providers []extension.ContextProvider
	emb := &timedEmbedder{Embedder: embedtest.FromEnv(b)}
	if memories > 0 {
		vs, err := memory.OpenVector(ctx, db, emb, nil, nil, memory.DefaultTuning)
		if err != nil {
			b.Fatal(err)
		}
		defer vs.Shutdown(ctx)
		topics := []string{"garden", "piano", "Lyon", "sister", "budget", "marathon", "plan", "trip", "dentist", "novel"}
		ms := make([]memory.Memory, memories)
		for i := range ms {
			ms[i] = memory.Memory{Text: fmt.Sprintf("Memory %d: the user talked about the %s and the %s on day %d.", i,
				topics[i%len(topics)], topics[(i/7)%len(topics)], i%365)}
		}
		if _, err := vs.AddBatch(ctx, ms); err != nil {
			b.Fatal(err)
		}
		svc, err := memory.NewService(memory.ServiceOptions{Store: vs, DataDir: dir})
		if err != nil {
			b.Fatal(err)
		}
		providers = append(providers, &memory.RecallContext{Service: svc})
	}
	a, err := New(Options{
		Conversations: store, DataDir: dir, ContextProviders: providers,
		Models:       &fakeModels{main: instant, limits: map[string]modelrouter.Limits{modelrouter.RoleMain: {ContextSize: 32768, MaxTokens: 4096}}},
		Tools:        func(chat.ThreadID) []tool.Tool { return tools },
		Interactions: ilog, Events: bus,
		Location: time.UTC,
	})
	if err != nil {
		b.Fatal(err)
	}
	durations := make([]time.Duration, 0, b.N)
	exEmbed := make([]time.Duration, 0, b.N)
	embeds := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start, e0 := time.Now(), emb.spent.Load()
		if _, err := a.Turn(ctx, Input{Thread: thread, Text: fmt.Sprintf("question number %d about the plan", i)}); err != nil {
			b.Fatal(err)
		}
		d, e := time.Since(start), time.Duration(emb.spent.Load()-e0)
		durations = append(durations, d)
		exEmbed = append(exEmbed, d-e)
		embeds = append(embeds, e)
		b.StopTimer()
		last, err := store.LastMessageID(ctx, thread)
		if err != nil {
			b.Fatal(err)
		}
		// Message ids are consecutive here (one thread in the database).
		if _, err := store.Archive(ctx, thread, last-int64(active)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.StopTimer()
	pct := func(ds []time.Duration, p float64) float64 {
		slices.Sort(ds)
		return float64(ds[min(len(ds)-1, int(float64(len(ds))*p))].Microseconds()) / 1000
	}
	b.ReportMetric(pct(durations, 0.50), "p50-ms")
	b.ReportMetric(pct(durations, 0.99), "p99-ms")
	if memories > 0 {
		b.ReportMetric(pct(embeds, 0.50), "embed-p50-ms")
		b.ReportMetric(pct(exEmbed, 0.50), "p50-ex-embed-ms")
		b.ReportMetric(pct(exEmbed, 0.99), "p99-ex-embed-ms")
	}
}

// timedEmbedder adds up the wall time its calls take.
type timedEmbedder struct {
	embed.Embedder
	spent atomic.Int64 // nanoseconds
}

func (t *timedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	t0 := time.Now()
	defer func() { t.spent.Add(int64(time.Since(t0))) }()
	return t.Embedder.Embed(ctx, texts)
}
