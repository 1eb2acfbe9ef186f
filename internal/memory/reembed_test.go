package memory

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// countingEmbedder counts the texts it embeds and fails while down is set.
type countingEmbedder struct {
	embed.Embedder
	mu    sync.Mutex
	texts int
	down  bool
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.mu.Lock()
	down := c.down
	if !down {
		c.texts += len(texts)
	}
	c.mu.Unlock()
	if down {
		return nil, errors.New("connection refused")
	}
	return c.Embedder.Embed(ctx, texts)
}

func (c *countingEmbedder) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.texts }
func (c *countingEmbedder) setDown(d bool) {
	c.mu.Lock()
	c.down = d
	c.mu.Unlock()
}

func openMigrating(t *testing.T, path string, e embed.Embedder, prev Previous, clk *clock) *VectorStore {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenVectorMigrating(ctx, db, e, prev, clk.now, nil, DefaultTuning)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		db.Close()
	})
	return s
}

func status(t *testing.T, s *VectorStore) EmbeddingStatus {
	t.Helper()
	st, err := s.Embedding(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// After memory.embedding.model changes, recall keeps using the previous
// model's vectors (queries embedded with that model, its dimensions) while
// Reembed makes the new ones aside; an interrupted re-embedding resumes
// after a restart; at the end the index switches to the new model at once
// and nothing of the old one is mixed in.
func TestReembedServesPreviousModel(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "m.db")
	old := &countingEmbedder{Embedder: embed.NewOffline(0)} // 384 dimensions
	s := openMigrating(t, path, old, nil, clk)
	var ms []Memory
	for i := range 150 {
		ms = append(ms, Memory{Text: fmt.Sprintf("memory number %d about topic %d", i, i%7)})
	}
	seed(t, s, ms...)
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	next := &countingEmbedder{Embedder: embed.NewOfflineWeighted(64, embed.OfflineWeights{Words: 1, Chars: 0.3})}
	prev := func(id string) (embed.Embedder, bool) { return old, id == old.ID() }
	s2 := openMigrating(t, path, next, prev, clk)
	want := EmbeddingStatus{Model: next.ID(), Serving: old.ID(), Dimensions: 384, Pending: 150}
	if st := status(t, s2); st != want {
		t.Fatalf("status after the change = %+v, want %+v", st, want)
	}
	recallByVector := func(t *testing.T, s *VectorStore, e *countingEmbedder) {
		t.Helper()
		before := e.count()
		got, err := s.Recall(ctx, Query{Text: "memory number 42", Peek: true})
		if err != nil {
			t.Fatal(err)
		}
		if e.count() != before+1 {
			t.Errorf("the query was not embedded with %s", e.ID())
		}
		if len(got) == 0 || got[0].VecRank == 0 || got[0].Cosine <= 0 {
			t.Fatalf("no vector hit: %+v", got)
		}
	}
	recallByVector(t, s2, old)

	// The first run is interrupted after its first batch (a restart).
	rctx, cancel := context.WithCancel(ctx)
	err := s2.Reembed(rctx, func(done, total int) {
		if st := status(t, s2); !st.Running || st.Done != done || st.Total != 150 || st.Serving != old.ID() {
			t.Errorf("status during re-embedding = %+v", st)
		}
		recallByVector(t, s2, old)
		cancel()
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("interrupted Reembed = %v", err)
	}
	// A memory added meanwhile gets the new model's vector, which stays out
	// of the old model's index.
	id, err := s2.Add(ctx, Memory{Text: "added while re-embedding"})
	if err != nil {
		t.Fatal(err)
	}
	s2.rlock()
	if s2.idx.metas[s2.idx.slotOrZero(id)].hasVector {
		t.Error("a new model's vector entered the previous model's index")
	}
	s2.mu.RUnlock()
	if err := s2.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}

	s3 := openMigrating(t, path, next, prev, clk)
	want = EmbeddingStatus{Model: next.ID(), Serving: old.ID(), Dimensions: 384, Pending: 150 - ReembedBatch}
	if st := status(t, s3); st != want {
		t.Fatalf("status after the restart = %+v, want %+v", st, want)
	}
	var last int
	if err := s3.Reembed(ctx, func(done, total int) {
		last = done
		if total != 150-ReembedBatch {
			t.Errorf("resumed total = %d", total)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if last != 150-ReembedBatch {
		t.Errorf("resumed run embedded %d", last)
	}
	want = EmbeddingStatus{Model: next.ID(), Serving: next.ID(), Dimensions: 64, Done: last, Total: last}
	if st := status(t, s3); st != want {
		t.Fatalf("status when done = %+v, want %+v", st, want)
	}
	recallByVector(t, s3, next)
	s3.rlock()
	for sl, m := range s3.idx.metas {
		if !m.hasVector {
			t.Errorf("memory %d has no vector of the new model", s3.idx.ids[sl])
		}
	}
	s3.mu.RUnlock()
	var pending int
	if err := s3.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_pending_embeddings`).Scan(&pending); err != nil || pending != 0 {
		t.Errorf("pending vectors left: %d, %v", pending, err)
	}
	for v, err := range s3.AllVectors(ctx) {
		if err != nil || len(v.Vector) != 64 {
			t.Fatalf("vector %d: %d dimensions, %v", v.ID, len(v.Vector), err)
		}
	}
}

// Without a way to build the previous model, the store serves the new one
// at once and the old memories are found by their words until re-embedded.
func TestReembedWithoutPrevious(t *testing.T) {
	cases := []struct {
		name string
		prev Previous
	}{
		{"no resolver", nil},
		{"previous model unknown", func(string) (embed.Embedder, bool) { return nil, false }},
		{"resolver returns another model", func(string) (embed.Embedder, bool) { return embed.NewOffline(32), true }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, clk, path := newStore(t)
			seed(t, s, Memory{Text: "the user's sister is called Anna"}, Memory{Text: "the user lives in Lyon"})
			if err := s.Shutdown(ctx); err != nil {
				t.Fatal(err)
			}
			next := embed.NewOffline(64)
			s2 := openMigrating(t, path, next, c.prev, clk)
			want := EmbeddingStatus{Model: next.ID(), Serving: next.ID(), Dimensions: 64, Pending: 2}
			if st := status(t, s2); st != want {
				t.Fatalf("status = %+v, want %+v", st, want)
			}
			got, err := s2.Recall(ctx, Query{Text: "where does the user live", Peek: true})
			if err != nil || len(got) == 0 || got[0].Text != "the user lives in Lyon" || got[0].VecRank != 0 {
				t.Fatalf("recall by words = %+v, %v", got, err)
			}
			if err := s2.Reembed(ctx, nil); err != nil {
				t.Fatal(err)
			}
			got, _ = s2.Recall(ctx, Query{Text: "where does the user live", Peek: true})
			if len(got) == 0 || got[0].VecRank == 0 {
				t.Fatalf("no vector hit after re-embedding: %+v", got)
			}
		})
	}
}

// A failing embedding model loses nothing: memories are stored without a
// vector, recall answers by words, the status says what failed, and the
// next Reembed fills the vectors in once the model answers.
func TestEmbeddingFailureFallsBackToWords(t *testing.T) {
	ctx := context.Background()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	e := &countingEmbedder{Embedder: embed.NewOffline(0)}
	s := openMigrating(t, filepath.Join(t.TempDir(), "m.db"), e, nil, clk)
	e.setDown(true)
	ids := seed(t, s, Memory{Text: "the user's sister is called Anna"}, Memory{Text: "the user lives in Lyon"})
	if _, err := s.Update(ctx, Memory{ID: ids[0], Text: "the user's sister is called Anne"}); err != nil {
		t.Fatalf("update while the model is down: %v", err)
	}
	if _, err := s.EnsureCurrent(ctx, []Memory{{Text: "the user plays chess"}}); err != nil {
		t.Fatalf("ensure while the model is down: %v", err)
	}
	got, err := s.Recall(ctx, Query{Text: "who is the user's sister", Peek: true})
	if err != nil || len(got) == 0 || got[0].Text != "the user's sister is called Anne" {
		t.Fatalf("recall while the model is down = %+v, %v", got, err)
	}
	st := status(t, s)
	if st.Pending != 4 || st.Error == "" { // the closed version of the sister too
		t.Fatalf("status while the model is down = %+v", st)
	}
	if err := s.Reembed(ctx, nil); err == nil {
		t.Fatal("Reembed succeeded with the model down")
	}
	e.setDown(false)
	if err := s.Reembed(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if st := status(t, s); st.Pending != 0 || st.Error != "" {
		t.Fatalf("status after the model came back = %+v", st)
	}
	m, err := s.Get(ctx, ids[1])
	if err != nil || len(m.Embedding) != embed.DefaultDimensions {
		t.Fatalf("memory after re-embedding: %d dimensions, %v", len(m.Embedding), err)
	}
}
