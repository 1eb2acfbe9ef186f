package memory

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// newStoreTB is newStore for benchmarks.
func newStoreTB(tb testing.TB) (*VectorStore, *clock, string) {
	tb.Helper()
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(tb.TempDir(), "m.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		tb.Fatal(err)
	}
	s, err := OpenVector(ctx, db, embed.NewOffline(0), clk.now, nil, DefaultTuning)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			tb.Error(err)
		}
		db.Close()
	})
	return s, clk, path
}

// benchService is a vector-backed service over a store of size memories,
// the first keep of them also lines of MEMORIES.txt.
func benchService(b *testing.B, size, keep int) (*Service, string, []string) {
	b.Helper()
	ctx := context.Background()
	vs, _, _ := newStoreTB(b)
	r := rand.New(rand.NewPCG(7, 7))
	texts := make([]string, size)
	ms := make([]Memory, size)
	for i := range ms {
		texts[i] = benchText(r, i)
		ms[i] = Memory{Text: texts[i], Kind: KindFact, Source: SourceAgent}
	}
	for i := 0; i < size; i += 1000 {
		if _, err := vs.AddBatch(ctx, ms[i:min(i+1000, size)]); err != nil {
			b.Fatal(err)
		}
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, MemoriesFile), []byte(strings.Join(texts[:keep], "\n")+"\n"), 0o600); err != nil {
		b.Fatal(err)
	}
	svc, err := NewService(ServiceOptions{Store: vs, DataDir: dir})
	if err != nil {
		b.Fatal(err)
	}
	return svc, dir, texts
}

// BenchmarkReconcile measures the start-up re-sync: every line already a
// current memory (the usual case), or every line new (a restore that
// brings back lines the store lost), in a store of 10,000 memories.
func BenchmarkReconcile(b *testing.B) {
	ctx := context.Background()
	for _, lines := range []int{50, 500} {
		b.Run(fmt.Sprintf("present/lines=%d", lines), func(b *testing.B) {
			svc, _, _ := benchService(b, 10_000, lines)
			b.ResetTimer()
			for b.Loop() {
				r, err := svc.Reconcile(ctx)
				if err != nil || r.Present != lines {
					b.Fatalf("%+v, %v", r, err)
				}
			}
		})
		b.Run(fmt.Sprintf("imported/lines=%d", lines), func(b *testing.B) {
			svc, dir, _ := benchService(b, 10_000, 0)
			path := filepath.Join(dir, MemoriesFile)
			r := rand.New(rand.NewPCG(9, 9))
			n := 0
			for b.Loop() {
				b.StopTimer()
				var sb strings.Builder
				for range lines {
					n++
					sb.WriteString(benchText(r, 1_000_000+n) + "\n")
				}
				if err := os.WriteFile(path, []byte(sb.String()), 0o600); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				got, err := svc.Reconcile(ctx)
				if err != nil || got.Imported != lines {
					b.Fatalf("%+v, %v", got, err)
				}
			}
		})
	}
}

// BenchmarkUpdateSupersede measures a person's edit of a memory's text
// (close, insert, link, MEMORIES.txt line) in a store of 10,000.
func BenchmarkUpdateSupersede(b *testing.B) {
	ctx := context.Background()
	svc, _, _ := benchService(b, 10_000, 50)
	ids, err := svc.List(ctx, Filter{Limit: 1})
	if err != nil || len(ids) == 0 {
		b.Fatal(err)
	}
	id := ids[0].ID
	i := 0
	for b.Loop() {
		i++
		next, err := svc.Update(ctx, Memory{ID: id, Text: fmt.Sprintf("The edited memory, version %d", i)})
		if err != nil {
			b.Fatal(err)
		}
		id = next
	}
}
