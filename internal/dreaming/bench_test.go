package dreaming

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// BenchmarkDream10k measures one dream over 10,000 memories (offline
// 384-dim embedder; about 2% planted near-duplicates) with an instant
// model: the orchestration cost and the number of model calls.
func BenchmarkDream10k(b *testing.B) {
	ctx := context.Background()
	words := []string{"coffee", "garden", "piano", "Lyon", "Berlin", "sister", "dentist", "marathon", "novel", "budget",
		"python", "bicycle", "sushi", "chess", "trip", "passport", "cat", "dog", "school", "work", "train", "tea",
		"meeting", "doctor", "birthday", "concert", "museum", "recipe", "holiday", "project"}
	rng := rand.New(rand.NewPCG(7, 7))
	texts := make([]string, 0, 10_000)
	for i := range 9_800 {
		texts = append(texts, fmt.Sprintf("Memory %d: the user mentioned %s, %s and %s on day %d.", i,
			words[rng.IntN(len(words))], words[rng.IntN(len(words))], words[rng.IntN(len(words))], rng.IntN(1000)))
	}
	for i := range 200 {
		texts = append(texts, texts[i*7]+" Really.")
	}
	for b.Loop() {
		b.StopTimer()
		dir := b.TempDir()
		datadir.Bootstrap(dir, nil)
		db, err := sqlite.Open(ctx, filepath.Join(dir, "r.db"))
		if err != nil {
			b.Fatal(err)
		}
		vs, err := memory.OpenVector(ctx, db, embed.NewOffline(embed.DefaultDimensions), nil, nil, memory.DefaultTuning)
		if err != nil {
			b.Fatal(err)
		}
		ms := make([]memory.Memory, len(texts))
		for i, t := range texts {
			ms[i] = memory.Memory{Text: t, Kind: memory.KindFact, Source: memory.SourceAgent}
		}
		if _, err := vs.AddBatch(ctx, ms); err != nil {
			b.Fatal(err)
		}
		svc, _ := memory.NewService(memory.ServiceOptions{Store: vs, DataDir: dir})
		d, err := New(ctx, Options{DB: db, DataDir: dir, Memory: svc, Model: llmtest.Func(func(_ context.Context, req llm.Request) (llm.Response, error) {
			answer := `{"decision":"keep_first","merged":"","reason":"x"}`
			if strings.Contains(req.Messages[0].Text(), "are worded alike") {
				answer = `{"decision":"merge","merged":"A merged memory.","reason":"x"}`
			}
			return llm.Response{Message: llm.AssistantText(answer)}, nil
		})})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		rep, err := d.Dream(ctx, "bench")
		b.StopTimer()
		if err != nil {
			b.Fatal(err)
		}
		b.ReportMetric(float64(rep.ModelCalls), "model_calls")
		vs.Shutdown(ctx)
		db.Close()
		b.StartTimer()
	}
}

// BenchmarkFindSimilar is the similarity pass alone over clustered random
// vectors (groups of near-copies among unrelated ones): every pair below
// ExactLimit, locality-sensitive hashing above.
func BenchmarkFindSimilar(b *testing.B) {
	for _, n := range []int{4000, 10_000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 3))
			items := make([]item, n)
			for i := range items {
				v := make([]float32, embed.DefaultDimensions)
				if i%10 < 3 && i > 0 { // a near-copy of the item before
					copy(v, items[i-1].vec)
					for d := range v {
						v[d] += float32(rng.NormFloat64()) * 0.02
					}
				} else {
					for d := range v {
						v[d] = float32(rng.NormFloat64())
					}
				}
				embed.Normalize(v)
				items[i] = item{id: int64(i), vec: v}
			}
			for b.Loop() {
				s := findSimilar(items, 0.5, 0.85, 20, nil)
				b.ReportMetric(float64(len(s.clusters)), "clusters")
			}
		})
	}
}
