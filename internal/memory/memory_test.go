package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// clock is an injected, manually advanced time source.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func openStore(t *testing.T, path string, e embed.Embedder, clk *clock) *VectorStore {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := OpenVector(ctx, db, e, clk.now, nil, DefaultTuning)
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

func newStore(t *testing.T) (*VectorStore, *clock, string) {
	t.Helper()
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	path := filepath.Join(t.TempDir(), "m.db")
	return openStore(t, path, embed.NewOffline(0), clk), clk, path
}

func TestAddGetDuplicate(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := newStore(t)
	ev := time.Date(2025, 5, 8, 0, 0, 0, 0, time.UTC)
	id, err := s.Add(ctx, Memory{Text: "  The user's sister is called Anna. ", Kind: KindFact, Source: SourceUserExplicit, EventTime: &ev, Thread: "web:1"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if m.Text != "The user's sister is called Anna." || m.Kind != KindFact || m.Source != SourceUserExplicit ||
		!m.EventTime.Equal(ev) || m.Thread != "web:1" || len(m.Embedding) != embed.DefaultDimensions || m.ValidTo != nil {
		t.Fatalf("stored memory = %+v", m)
	}
	clk.advance(time.Hour)
	id2, err := s.Add(ctx, Memory{Text: "the user's sister is   called ANNA"})
	if err != nil || id2 != id {
		t.Fatalf("duplicate add = %d, %v; want existing id %d", id2, err, id)
	}
	m2, _ := s.Get(ctx, id)
	if !m2.UpdatedAt.Equal(clk.now()) || !m2.CreatedAt.Equal(m.CreatedAt) {
		t.Errorf("duplicate should bump UpdatedAt only: %v / %v", m2.CreatedAt, m2.UpdatedAt)
	}
	if n, _ := s.Count(ctx, true); n != 1 {
		t.Errorf("count = %d, want 1", n)
	}
	if _, err := s.Get(ctx, 999); !errors.Is(err, ErrNotFound) {
		t.Errorf("get missing: %v", err)
	}
	// defaults
	id3, err := s.Add(ctx, Memory{Text: "Likes green tea"})
	if err != nil {
		t.Fatal(err)
	}
	m3, _ := s.Get(ctx, id3)
	if m3.Kind != KindFact || m3.Source != SourceAgent {
		t.Errorf("defaults = %s/%s", m3.Kind, m3.Source)
	}
}

func TestBadInput(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	for _, tc := range []struct {
		name string
		m    Memory
		want error
	}{
		{"empty", Memory{Text: ""}, ErrEmpty},
		{"blank", Memory{Text: " \n\t "}, ErrEmpty},
		{"too long", Memory{Text: strings.Repeat("é", MaxTextLen+1)}, ErrTooLong},
		{"openai key", Memory{Text: "my key is sk-proj-abcdefghijklmnopqrstuvwx123456"}, ErrSecret},
		{"aws key", Memory{Text: "AKIAIOSFODNN7EXAMPLE is the access key"}, ErrSecret},
		{"github token", Memory{Text: "token ghp_aBcDeFgHiJkLmNoPqRsTuVwXyZ0123456789"}, ErrSecret},
		{"slack token", Memory{Text: "xoxb-123456789012-abcdefghij"}, ErrSecret},
		{"private key", Memory{Text: "-----BEGIN RSA PRIVATE KEY-----\nMIIE..."}, ErrSecret},
		{"password", Memory{Text: "wifi password: hunter2!"}, ErrSecret},
		{"high entropy", Memory{Text: "use 9fQ2xL7mPz4KwR8vT1bN6cY3hJ5gD0sA to log in"}, ErrSecret},
		{"url credentials", Memory{Text: "db at postgres://admin:s3cret@db.local/app"}, ErrSecret},
		{"bad kind", Memory{Text: "fine text", Kind: "gossip"}, ErrInvalid},
		{"bad source", Memory{Text: "fine text", Source: "rumour"}, ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := s.Add(ctx, tc.m); !errors.Is(err, tc.want) {
				t.Fatalf("Add = %v, want %v", err, tc.want)
			}
		})
	}
	if n, _ := s.Count(ctx, true); n != 0 {
		t.Fatalf("%d memories stored from bad input", n)
	}
	for _, ok := range []string{
		"The user prefers short answers",
		"Project code name is Bluebird-2026",
		"She said the password manager is 1Password",
		"Meeting at https://example.com/calendar/2026-03-01",
		strings.Repeat("x", MaxTextLen),
	} {
		if _, err := s.Add(ctx, Memory{Text: ok}); err != nil {
			t.Errorf("Add(%.40q) = %v, want ok", ok, err)
		}
	}
	// a bad memory fails the whole batch
	if _, err := s.AddBatch(ctx, []Memory{{Text: "good one"}, {Text: ""}}); !errors.Is(err, ErrEmpty) {
		t.Fatalf("batch = %v", err)
	}
	if got, _ := s.Recall(ctx, Query{Text: "good one", Peek: true}); len(got) > 0 && got[0].Text == "good one" {
		t.Error("partial batch stored")
	}
}

func seed(t *testing.T, s Store, ms ...Memory) []int64 {
	t.Helper()
	ids, err := s.AddBatch(context.Background(), ms)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func texts(rs []Scored) []string {
	var out []string
	for _, r := range rs {
		out = append(out, r.Text)
	}
	return out
}

func TestRecallHybridAndFilters(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	day := func(d int) *time.Time { t := time.Date(2025, 6, d, 0, 0, 0, 0, time.UTC); return &t }
	ids := seed(t, s,
		Memory{Text: "The user's favourite food is ramen", Kind: KindPreference},
		Memory{Text: "The user went hiking in the Alps last weekend", Kind: KindEpisode, EventTime: day(3)},
		Memory{Text: "To deploy the blog, run make publish", Kind: KindProcedure},
		Memory{Text: "The user thinks remote work is better", Kind: KindOpinion},
		Memory{Text: "The user's dog is called Pixel", Kind: KindFact},
		Memory{Text: "The user works as a nurse in Lisbon", Kind: KindFact},
	)
	for _, tc := range []struct {
		name  string
		q     Query
		first int64
	}{
		{"keyword", Query{Text: "what is my dog's name?"}, ids[4]},
		{"morphology via vectors and stems", Query{Text: "hike mountains"}, ids[1]},
		{"preference intent", Query{Text: "what food do I like?"}, ids[0]},
		{"time intent", Query{Text: "when did I go hiking?"}, ids[1]},
		{"procedure", Query{Text: "how do I deploy the blog"}, ids[2]},
		{"kinds filter", Query{Text: "user", Kinds: []Kind{KindOpinion}}, ids[3]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.q.Peek = true
			got, err := s.Recall(ctx, tc.q)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) == 0 || got[0].ID != tc.first {
				t.Fatalf("Recall(%q) = %q, want first %d", tc.q.Text, texts(got), tc.first)
			}
			if len(tc.q.Kinds) > 0 {
				for _, r := range got {
					if r.Kind != tc.q.Kinds[0] {
						t.Errorf("kind filter let through %q", r.Text)
					}
				}
			}
		})
	}
	if _, err := s.Recall(ctx, Query{Text: "   "}); !errors.Is(err, ErrEmpty) {
		t.Errorf("empty query: %v", err)
	}
}

func TestFTSQueryIsSafe(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	seed(t, s, Memory{Text: "Quotes \"inside\" and NEAR(a b) are just words"})
	for _, q := range []string{`"unbalanced`, `NEAR(a b)`, `a AND OR NOT b`, `col:term*`, `^start -minus (paren`, `""""`, `*`, `😀 émoji`} {
		if _, err := s.Recall(ctx, Query{Text: q, Peek: true}); err != nil {
			t.Errorf("Recall(%q) = %v", q, err)
		}
	}
	if got := ftsQuery(`say "hello" OR die`, nil); got != `"say" OR "hello" OR "die"` {
		t.Errorf("ftsQuery = %s", got)
	}
	if got := ftsQuery("what is it", nil); got != `"what" OR "is" OR "it"` {
		t.Errorf("all-stop-word query = %s", got)
	}
}

func TestCloseValidity(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := newStore(t)
	old := seed(t, s, Memory{Text: "The user lives in Berlin"})[0]
	before := clk.now()
	clk.advance(24 * time.Hour)
	if err := s.Close(ctx, old, clk.now()); err != nil {
		t.Fatal(err)
	}
	neu := seed(t, s, Memory{Text: "The user lives in Madrid"})[0]
	got, _ := s.Recall(ctx, Query{Text: "where does the user live", Peek: true})
	for _, r := range got {
		if r.ID == old {
			t.Fatalf("closed memory recalled: %q", texts(got))
		}
	}
	if len(got) == 0 || got[0].ID != neu {
		t.Fatalf("current memory missing: %q", texts(got))
	}
	past, _ := s.Recall(ctx, Query{Text: "where does the user live", At: before.Add(time.Minute), Peek: true})
	if len(past) != 1 || past[0].ID != old {
		t.Fatalf("recall at a past time = %q, want only Berlin", texts(past))
	}
	all, _ := s.Recall(ctx, Query{Text: "where does the user live", IncludeClosed: true, Peek: true})
	if len(all) != 2 {
		t.Fatalf("IncludeClosed = %q", texts(all))
	}
	m, _ := s.Get(ctx, old)
	if m.ValidTo == nil || !m.ValidTo.Equal(clk.now()) {
		t.Errorf("ValidTo = %v", m.ValidTo)
	}
	// closing again is a no-op; re-adding the closed text creates a new current row
	if err := s.Close(ctx, old, time.Time{}); err != nil {
		t.Error(err)
	}
	if id, _ := s.Add(ctx, Memory{Text: "The user lives in Berlin"}); id == old {
		t.Error("re-adding a closed memory returned the closed row")
	}
	if err := s.Close(ctx, 12345, time.Time{}); !errors.Is(err, ErrNotFound) {
		t.Errorf("close missing: %v", err)
	}
	if n, _ := s.Count(ctx, false); n != 2 {
		t.Errorf("current count = %d", n)
	}
	list, _ := s.List(ctx, Filter{})
	if len(list) != 2 {
		t.Errorf("List current = %d", len(list))
	}
	list, _ = s.List(ctx, Filter{IncludeClosed: true})
	if len(list) != 3 {
		t.Errorf("List all = %d", len(list))
	}
}

func TestAccessStatsAndDecay(t *testing.T) {
	ctx := context.Background()
	s, clk, path := newStore(t)
	ids := seed(t, s, Memory{Text: "Coffee order is a flat white"}, Memory{Text: "Coffee beans come from Ethiopia"})
	for range 3 {
		if _, err := s.Recall(ctx, Query{Text: "flat white coffee", Limit: 1}); err != nil {
			t.Fatal(err)
		}
	}
	m, _ := s.Get(ctx, ids[0])
	if m.AccessCount != 3 || m.LastAccess == nil || !m.LastAccess.Equal(clk.now()) {
		t.Fatalf("pending stats: count %d last %v", m.AccessCount, m.LastAccess)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	list, _ := s.List(ctx, Filter{OrderByAccess: true})
	if list[0].ID != ids[0] || list[0].AccessCount != 3 {
		t.Fatalf("persisted stats: %+v", list[0])
	}
	// Peek leaves stats alone
	if _, err := s.Recall(ctx, Query{Text: "coffee", Peek: true}); err != nil {
		t.Fatal(err)
	}
	if m, _ := s.Get(ctx, ids[1]); m.AccessCount != 0 {
		t.Errorf("peek recorded an access")
	}
	// retention decays with time and grows with accesses
	mt := slotMeta{createdAt: ns(clk.now()), lastAccess: ns(clk.now())}
	r0 := retention(&mt, ns(clk.now().Add(7*24*time.Hour)), 7)
	mt.accessCount = 10
	r10 := retention(&mt, ns(clk.now().Add(7*24*time.Hour)), 7)
	if !(r0 < r10 && r10 < 1 && r0 > 0) {
		t.Errorf("retention %f (0 accesses) vs %f (10 accesses)", r0, r10)
	}
	// stats survive reopening
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s2 := openStore(t, path, embed.NewOffline(0), clk)
	s2.rlock()
	got := s2.idx.metas[s2.idx.slotOrZero(ids[0])].accessCount
	s2.mu.RUnlock()
	if got != 3 {
		t.Errorf("reloaded access count %d", got)
	}
}

func TestUpdateDelete(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	ids := seed(t, s, Memory{Text: "Favourite colour is blue"}, Memory{Text: "Owns a bicycle"})
	green, err := s.Update(ctx, Memory{ID: ids[0], Text: "Favourite colour is green", Kind: KindPreference})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := s.Recall(ctx, Query{Text: "green colour", Peek: true})
	if len(got) == 0 || got[0].ID != green || got[0].Kind != KindPreference {
		t.Fatalf("after update: %+v", got)
	}
	if got, _ := s.Recall(ctx, Query{Text: "blue", Peek: true}); len(got) > 0 && got[0].Text == "Favourite colour is blue" {
		t.Error("superseded text still recalled")
	}
	if _, err := s.Update(ctx, Memory{ID: green, Text: "owns a bicycle"}); !errors.Is(err, ErrDuplicate) {
		t.Errorf("update to duplicate: %v", err)
	}
	if _, err := s.Update(ctx, Memory{ID: 777, Text: "x"}); !errors.Is(err, ErrNotFound) {
		t.Errorf("update missing: %v", err)
	}
	if err := s.Delete(ctx, ids[1]); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, ids[1]); !errors.Is(err, ErrNotFound) {
		t.Errorf("second delete: %v", err)
	}
	got, _ = s.Recall(ctx, Query{Text: "bicycle", Peek: true})
	for _, r := range got {
		if r.ID == ids[1] {
			t.Errorf("deleted memory recalled: %q", texts(got))
		}
	}
}

func TestVectorsForDreaming(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	ids := seed(t, s,
		Memory{Text: "The user drinks oat milk in coffee"},
		Memory{Text: "The user takes oat milk in their coffee"},
		Memory{Text: "Quarterly taxes are due in April"},
	)
	var n int
	for v, err := range s.AllVectors(ctx) {
		if err != nil {
			t.Fatal(err)
		}
		if len(v.Vector) != embed.DefaultDimensions {
			t.Fatalf("vector %d has %d dims", v.ID, len(v.Vector))
		}
		n++
	}
	if n != 3 {
		t.Fatalf("AllVectors yielded %d", n)
	}
	nb, err := s.Neighbours(ctx, ids[0], 0.5)
	if err != nil {
		t.Fatal(err)
	}
	if len(nb) != 1 || nb[0].ID != ids[1] {
		t.Fatalf("neighbours = %+v", nb)
	}
	a, _ := s.Get(ctx, ids[0])
	b, _ := s.Get(ctx, ids[1])
	if exact := embed.Dot(a.Embedding, b.Embedding); abs32(exact-nb[0].Cosine) > 0.02 {
		t.Errorf("quantised cosine %.3f vs exact %.3f", nb[0].Cosine, exact)
	}
	if _, err := s.Neighbours(ctx, 999, 0.5); !errors.Is(err, ErrNotFound) {
		t.Errorf("neighbours of missing: %v", err)
	}
}

func abs32(x float32) float32 {
	if x < 0 {
		return -x
	}
	return x
}

func TestReembedOnModelChange(t *testing.T) {
	ctx := context.Background()
	s, clk, path := newStore(t)
	var ms []Memory
	for i := range 150 {
		ms = append(ms, Memory{Text: fmt.Sprintf("memory number %d about topic %d", i, i%7)})
	}
	seed(t, s, ms...)
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	e2 := embed.NewOfflineWeighted(0, embed.OfflineWeights{Words: 1, Chars: 0.3})
	s2 := openStore(t, path, e2, clk)
	if n, _ := s2.StaleEmbeddings(ctx); n != 150 {
		t.Fatalf("stale = %d, want 150", n)
	}
	// stale vectors are out of vector search but text search still works
	if got, _ := s2.Recall(ctx, Query{Text: "number 42", Peek: true}); len(got) == 0 {
		t.Fatal("text recall failed before re-embedding")
	}
	var calls, last int
	err := s2.Reembed(ctx, func(done, total int) {
		calls++
		if done <= last || total != 150 {
			t.Errorf("progress %d/%d after %d", done, total, last)
		}
		last = done
	})
	if err != nil {
		t.Fatal(err)
	}
	if last != 150 || calls != 3 {
		t.Errorf("progress ended at %d after %d calls", last, calls)
	}
	if n, _ := s2.StaleEmbeddings(ctx); n != 0 {
		t.Errorf("stale after reembed = %d", n)
	}
	s2.rlock()
	for i := range s2.idx.metas {
		if !s2.idx.metas[i].hasVector {
			t.Errorf("slot %d has no vector", i)
		}
	}
	s2.mu.RUnlock()
}

func TestConcurrentWriters(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	var wg sync.WaitGroup
	const workers, each = 4, 25
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				// every worker also adds the same shared texts: no duplicates
				if _, err := s.Add(ctx, Memory{Text: fmt.Sprintf("worker %d note %d", w, i)}); err != nil {
					t.Error(err)
				}
				if _, err := s.Add(ctx, Memory{Text: fmt.Sprintf("shared note %d", i)}); err != nil {
					t.Error(err)
				}
				if _, err := s.Recall(ctx, Query{Text: fmt.Sprintf("note %d", i)}); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if n, _ := s.Count(ctx, true); n != workers*each+each {
		t.Errorf("count = %d, want %d", n, workers*each+each)
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memories`).Scan(&rows); err != nil || rows != workers*each+each {
		t.Errorf("rows = %d, %v", rows, err)
	}
}

func TestContextBlockBudget(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	ev := time.Date(2025, 1, 2, 0, 0, 0, 0, time.UTC)
	seed(t, s,
		Memory{Text: "The user plays the cello", Kind: KindFact},
		Memory{Text: "The user performed a cello recital", Kind: KindEpisode, EventTime: &ev},
		Memory{Text: "The user's cello teacher is Ms. Ortiz"},
	)
	words := func(s string) int { return len(strings.Fields(s)) }
	full, err := s.ContextBlock(ctx, "cello", 0, words)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Count(full, "\n") != 4 || !strings.Contains(full, `{"label":"episode","when":"2025-01-02","text":"The user performed a cello recital"}`) {
		t.Fatalf("block:\n%s", full)
	}
	small, _ := s.ContextBlock(ctx, "cello", 8, words)
	if p, ok := evidence.Decode(small); !ok || len(p.Items) != 1 {
		t.Fatalf("budget 8 block:\n%s", small)
	}
	if got, _ := s.ContextBlock(ctx, " ", 100, nil); got != "" {
		t.Errorf("empty query block %q", got)
	}
}

func TestOpenBackends(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st, err := Open(ctx, Options{DB: db})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := st.(*VectorStore); !ok {
		t.Errorf("default backend %T", st)
	}
	st.Shutdown(ctx)
	fl, err := Open(ctx, Options{Backend: BackendFlat, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fl.(*FlatStore); !ok {
		t.Errorf("flat backend %T", fl)
	}
	if _, err := Open(ctx, Options{Backend: "qdrant", DB: db}); !errors.Is(err, ErrInvalid) {
		t.Errorf("unknown backend: %v", err)
	}
	if _, err := Open(ctx, Options{Backend: BackendFlat}); !errors.Is(err, ErrInvalid) {
		t.Errorf("flat without dir: %v", err)
	}
}

// The index is not read by Open; when it cannot be read, Open still
// returns and every recall fails with the reason instead of finding
// nothing. Without LoadIndex, the first use loads it.
func TestIndexLoadFailureFailsRecall(t *testing.T) {
	ctx := context.Background()
	s, clk, path := newStore(t)
	if _, err := s.Add(ctx, Memory{Text: "The user's sister is called Anna."}); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, `UPDATE memories SET embedding = x'01'`); err != nil {
		t.Fatal(err)
	}
	reopened := openStore(t, path, embed.NewOffline(0), clk)
	reopened.LoadIndex()
	reopened.LoadIndex() // once only
	if _, err := reopened.Recall(ctx, Query{Text: "sister"}); err == nil || !strings.Contains(err.Error(), "load memory index") {
		t.Fatalf("Recall over an unreadable index = %v, want the load error", err)
	}
	if _, err := reopened.Rank(ctx, Query{Text: "sister"}); err == nil {
		t.Fatal("Rank over an unreadable index succeeded")
	}
	// A good index, reopened, answers at once.
	if _, err := db.ExecContext(ctx, `UPDATE memories SET embedding = NULL`); err != nil {
		t.Fatal(err)
	}
	again := openStore(t, path, embed.NewOffline(0), clk)
	got, err := again.Recall(ctx, Query{Text: "sister Anna"})
	if err != nil || len(got) != 1 {
		t.Fatalf("Recall after reopening = %v, %v", got, err)
	}
}

// Every query of vectors by model reads 006's partial index
// (memories_vector_model), and every lookup by normalised text an index of
// non-episodes (migration 008): no statement needs an index that holds
// episodes by model or by text.
func TestQueriesUseThePartialIndexes(t *testing.T) {
	_, _, path := newStore(t)
	db, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, tc := range []struct {
		name, query, index string
	}{
		{"stored models (StoredModels)", `SELECT embed_model FROM memories WHERE embedding IS NOT NULL GROUP BY embed_model ORDER BY COUNT(*) DESC, embed_model`, "memories_vector_model"},
		{"the previous model's count (open)", `SELECT embed_model, COUNT(*) FROM memories WHERE embedding IS NOT NULL AND embed_model <> 'x' GROUP BY embed_model ORDER BY 2 DESC, 1 LIMIT 1`, "memories_vector_model"},
		{"the model's count (open)", `SELECT COUNT(*) FROM memories WHERE embedding IS NOT NULL AND embed_model = 'x'`, "memories_vector_model"},
		{"the serving model's vectors (AllVectors)", `SELECT id, embedding FROM memories WHERE embedding IS NOT NULL AND embed_model = 'x' ORDER BY id`, "memories_vector_model"},
		{"a current twin (AddBatch)", `SELECT id FROM memories WHERE norm = 'x' AND valid_to IS NULL AND kind <> 'episode'`, "memories_norm_current"},
		{"another current twin (Update)", `SELECT id FROM memories WHERE norm = 'x' AND valid_to IS NULL AND id <> 1 AND kind <> 'episode'`, "memories_norm_current"},
		{"closed versions (Reconcile)", `SELECT id, text FROM memories WHERE norm = 'x' AND valid_to IS NOT NULL AND kind <> 'episode' ORDER BY valid_to DESC, id DESC`, "memories_norm"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := sqlite.Rows(context.Background(), db, func(rows sqlite.Scanner) (string, error) {
				var id, parent, unused int
				var detail string
				err := rows.Scan(&id, &parent, &unused, &detail)
				return detail, err
			}, `EXPLAIN QUERY PLAN `+tc.query)
			if err != nil {
				t.Fatal(err)
			}
			uses := func(d string) bool { // "SEARCH memories USING INDEX name (…)"
				f := strings.Fields(d)
				i := slices.Index(f, "INDEX")
				return i >= 0 && i+1 < len(f) && f[i+1] == tc.index
			}
			if !slices.ContainsFunc(plan, uses) {
				t.Errorf("%s\n  plan: %v", tc.query, plan)
			}
		})
	}
}

// A batch that starts with episodes (never deduplicated) still finds the
// twin of a later fact.
func TestAddBatchEpisodesThenDuplicate(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	id, err := s.Add(ctx, Memory{Text: "The user's sister is called Anna."})
	if err != nil {
		t.Fatal(err)
	}
	ids, err := s.AddBatch(ctx, []Memory{
		{Text: "The user's sister is called Anna.", Kind: KindEpisode},
		{Text: "the user's sister is called anna"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if ids[0] == id || ids[1] != id {
		t.Fatalf("ids = %v; want a new episode, then the existing fact %d", ids, id)
	}
	if n, _ := s.Count(ctx, true); n != 2 {
		t.Errorf("count = %d, want 2 (the fact and the episode)", n)
	}
}

// TestTextSearchIndexesInBatches: the full-text index takes memories in
// batches (ftsBatch) and TextSearch first indexes what it lags behind by;
// deletes and text changes of memories it holds, and of those it does not
// hold yet, keep it consistent with the table (FTS5's integrity-check).
func TestTextSearchIndexesInBatches(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	checkIndex := func(when string) {
		t.Helper()
		if _, err := s.db.ExecContext(ctx, `INSERT INTO memories_fts(memories_fts, rank) VALUES ('integrity-check', 1)`); err != nil {
			t.Fatalf("%s: full-text index inconsistent: %v", when, err)
		}
	}
	mark := func() (done, max int64) {
		t.Helper()
		if err := s.db.QueryRowContext(ctx, `SELECT (SELECT id FROM memories_fts_done), (SELECT coalesce(max(id), 0) FROM memories)`).Scan(&done, &max); err != nil {
			t.Fatal(err)
		}
		return done, max
	}
	search := func(text string) []int64 {
		t.Helper()
		ids, err := s.TextSearch(ctx, text, 100)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	add := func(texts ...string) []int64 {
		t.Helper()
		ms := make([]Memory, len(texts))
		for i, x := range texts {
			ms[i] = Memory{Text: x, Kind: KindEpisode, Source: SourceConversation, Thread: "web:fts", Role: RoleUser}
		}
		ids, err := s.AddBatch(ctx, ms)
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}

	first := add("The kayak trip to Lake Bled is in June.", "Remember the kayak paddles.", "Buy sunscreen.")
	if done, max := mark(); done >= max {
		t.Fatalf("index mark %d after a small batch (largest id %d): want the index behind", done, max)
	}
	// not indexed yet: deleted, and its text changed, before any search
	if _, err := s.db.ExecContext(ctx, `DELETE FROM memories WHERE id = ?`, first[1]); err != nil {
		t.Fatal(err)
	}
	if _, err := s.db.ExecContext(ctx, `UPDATE memories SET text = 'Buy sunscreen and a kayak map.' WHERE id = ?`, first[2]); err != nil {
		t.Fatal(err)
	}
	if got := search("kayak"); !slices.Equal(sortedIDs(got), []int64{first[0], first[2]}) {
		t.Fatalf("kayak after a search caught up = %v, want %v", got, []int64{first[0], first[2]})
	}
	checkIndex("after catching up")
	if done, max := mark(); done != max {
		t.Fatalf("index mark %d after a search, want the largest id %d", done, max)
	}

	// held by the index: text changed and deleted
	if _, err := s.db.ExecContext(ctx, `UPDATE memories SET text = 'The canoe trip to Lake Bled is in June.' WHERE id = ?`, first[0]); err != nil {
		t.Fatal(err)
	}
	if got := search("kayak"); !slices.Equal(got, []int64{first[2]}) {
		t.Fatalf("kayak after a text change = %v, want [%d]", got, first[2])
	}
	checkIndex("after a text change")

	// a batch's worth of inserts indexes in the insert's own transaction
	var many []string
	for i := range ftsBatch {
		many = append(many, fmt.Sprintf("Canoe lesson number %d.", i))
	}
	more := add(many...)
	if done, max := mark(); done != max || max != more[len(more)-1] {
		t.Fatalf("index mark %d after a full batch (largest id %d), want them equal", done, max)
	}
	checkIndex("after a full batch")

	// the largest id, indexed, deleted: the next memory takes its id and
	// must be indexed anew
	last := more[len(more)-1]
	if err := s.Delete(ctx, last); err != nil {
		t.Fatal(err)
	}
	again := add("A paddleboard for the lake.")
	if again[0] != last {
		t.Logf("the new memory took id %d, not the deleted %d", again[0], last)
	}
	if got := search("paddleboard"); !slices.Equal(got, again) {
		t.Fatalf("paddleboard = %v, want %v", got, again)
	}
	// the trip whose text changed and the lessons left
	if got := search("canoe"); len(got) != 1+ftsBatch-1 {
		t.Fatalf("canoe found %d memories, want %d", len(got), ftsBatch)
	}
	checkIndex("after a deleted largest id was given again")
}

func sortedIDs(ids []int64) []int64 {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	return ids
}

// TestAddBatchGroupCommit: AddBatch calls that wait for one another are
// written together (one transaction, a savepoint each): each caller gets
// its own ids once they are committed, twins across calls are stored once,
// and a call whose rows fail leaves the others' in place. With a Committer
// (Options.Commits) the memories wait for, and commit with, the other
// stores' writes queued with them.
func TestAddBatchGroupCommit(t *testing.T) {
	for _, shared := range []bool{false, true} {
		name := "own transaction"
		if shared {
			name = "through the database's committer"
		}
		t.Run(name, func(t *testing.T) { testAddBatchGroupCommit(t, shared) })
	}
}

func testAddBatchGroupCommit(t *testing.T, shared bool) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	// a memory whose text says "explode" cannot be stored
	if _, err := s.db.ExecContext(ctx, `CREATE TRIGGER test_refuse BEFORE INSERT ON memories
		WHEN new.text LIKE '%explode%' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	const callers = 12
	type outcome struct {
		ids []int64
		err error
	}
	outs := make([]outcome, callers)
	// two fail, so that the batch written together holds one
	failing := map[int]bool{5: true, 9: true}
	// One call takes the writer and waits (for the write lock, or for
	// another store's write holding the shared transaction); the others
	// queue up behind it and are written together, after it.
	release := s.writeMu.Unlock
	var other sync.WaitGroup
	if shared {
		s.commits = sqlite.NewCommitter(s.db, nil)
		if _, err := s.db.ExecContext(ctx, `CREATE TABLE test_other (n INTEGER)`); err != nil {
			t.Fatal(err)
		}
		writing, hold := make(chan struct{}), make(chan struct{})
		other.Go(func() {
			err := s.commits.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
				close(writing)
				<-hold
				_, err := tx.ExecContext(ctx, `INSERT INTO test_other VALUES (1)`)
				return err
			}, nil)
			if err != nil {
				t.Error(err)
			}
		})
		<-writing
		release = func() { close(hold) }
	} else {
		s.writeMu.Lock()
	}
	var returned atomic.Int32
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			defer returned.Add(1)
			ms := []Memory{
				{Text: fmt.Sprintf("Caller %d asked about the ferry.", c), Kind: KindEpisode, Source: SourceConversation, Thread: "web:gc", Role: RoleUser},
				{Text: fmt.Sprintf("Caller %d got the timetable.", c), Kind: KindEpisode, Source: SourceConversation, Thread: "web:gc", Role: RoleAssistant},
				{Text: "The ferry leaves at nine.", Kind: KindFact, Source: SourceAgent}, // the same in every call
			}
			if failing[c] {
				ms[1].Text = "This one will explode."
			}
			ids, err := s.AddBatch(ctx, ms)
			outs[c] = outcome{ids, err}
		})
	}
	// Every caller is inside Write: the first writer's batch may hold
	// more than its own item (those queued before it took the batch).
	for s.adds.Pending() < callers {
		runtime.Gosched()
	}
	if n := returned.Load(); n != 0 {
		t.Fatalf("%d AddBatch calls returned before the write they wait for", n)
	}
	release()
	wg.Wait()
	other.Wait()
	if shared {
		var n int
		if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM test_other`).Scan(&n); err != nil || n != 1 {
			t.Fatalf("the other store's write: %d rows, %v", n, err)
		}
	}

	var fact int64
	seen := map[int64]bool{}
	for c, o := range outs {
		if failing[c] {
			if o.err == nil || !strings.Contains(o.err.Error(), "refused by the test") || o.ids != nil {
				t.Fatalf("caller %d = %v, %v; want the trigger's refusal and no ids", c, o.ids, o.err)
			}
			continue
		}
		if o.err != nil || len(o.ids) != 3 {
			t.Fatalf("caller %d = %v, %v", c, o.ids, o.err)
		}
		for _, id := range o.ids[:2] {
			if seen[id] {
				t.Fatalf("id %d given twice", id)
			}
			seen[id] = true
		}
		if fact == 0 {
			fact = o.ids[2]
		} else if o.ids[2] != fact {
			t.Fatalf("caller %d stored the shared fact as %d, another as %d", c, o.ids[2], fact)
		}
	}
	all, err := s.List(ctx, Filter{})
	if err != nil {
		t.Fatal(err)
	}
	if want := 2*(callers-len(failing)) + 1; len(all) != want {
		t.Fatalf("%d memories stored, want %d", len(all), want)
	}
	for _, m := range all {
		if strings.HasPrefix(m.Text, "Caller 5 ") || strings.HasPrefix(m.Text, "Caller 9 ") {
			t.Fatalf("a failed call's first row stayed: %q", m.Text)
		}
	}
	// the committed rows are in the in-memory indexes too
	res, err := s.Recall(ctx, Query{Text: "did caller 7 get the timetable?", Limit: 3, Peek: true})
	if err != nil || len(res) < 2 || !strings.HasPrefix(res[0].Text, "Caller 7 ") || !strings.HasPrefix(res[1].Text, "Caller 7 ") {
		t.Fatalf("recall after the group commit = %v, %v", res, err)
	}
}

// A flush writes every pending delta of a large batch in one statement:
// counts add up, the last access only moves forward, and a memory removed
// meanwhile is skipped.
func TestAccessFlushBatch(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	ms := make([]Memory, 300)
	for i := range ms {
		ms[i] = Memory{Text: fmt.Sprintf("memory number %d about the garden", i)}
	}
	ids := seed(t, s, ms...)
	// An earlier flush left a later access on the first memory than the
	// one pending for it below.
	s.access.add(ids[:1], 5_000)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		for range i%3 + 1 {
			s.access.add([]int64{id}, int64(1_000+i))
		}
	}
	s.access.add([]int64{ids[len(ids)-1] + 1000}, 1) // no such memory
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for i, id := range ids {
		var count, last int64
		if err := s.db.QueryRowContext(ctx, `SELECT access_count, last_access FROM memories_read WHERE id = ?`, id).Scan(&count, &last); err != nil {
			t.Fatal(err)
		}
		wantCount, wantLast := int64(i%3+1), int64(1_000+i)
		if i == 0 {
			wantCount, wantLast = wantCount+1, 5_000
		}
		if count != wantCount || last != wantLast {
			t.Fatalf("memory %d: access_count %d, last_access %d; want %d, %d", i, count, last, wantCount, wantLast)
		}
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_access`).Scan(&rows); err != nil || rows != len(ids) {
		t.Errorf("memory_access holds %d rows (%v), want %d: none for the missing memory", rows, err, len(ids))
	}
	s.access.mu.Lock()
	left := len(s.access.pending)
	s.access.mu.Unlock()
	if left != 0 {
		t.Errorf("%d deltas still pending after a flush", left)
	}
}
