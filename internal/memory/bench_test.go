package memory

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/embedtest"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// Synthetic, realistic personal-assistant memories: people, activities,
// places, times and preferences combined from templates with a fixed seed.
var (
	benchNames  = strings.Fields("Anna Ben Carla Dev Elif Farid Greta Hiro Ines Jonas Kemal Lena Mateo Nora Omar Priya Quinn Rosa Sami Tara Uma Viktor Wen Yusuf Zoe")
	benchThings = strings.Fields("guitar bicycle garden novel recipe marathon painting laptop camera sourdough kayak chessboard telescope violin puppy kitten apartment car piano tent podcast thesis startup quilt aquarium")
	benchPlaces = strings.Fields("Lisbon Berlin Kyoto Toronto Nairobi Oslo Lima Austin Prague Dublin Seoul Porto Denver Madrid Hanoi Zurich")
	benchVerbs  = strings.Fields("bought fixed started finished sold painted borrowed visited planned cancelled practised repaired photographed cooked adopted organised")
	benchTimes  = []string{"yesterday", "last week", "in March", "two years ago", "last summer", "on Sunday", "this morning", "in 2023"}
	benchLikes  = strings.Fields("jazz hiking sushi board-games poetry cycling tea mountains horror-films gardening yoga football")
)

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

func benchText(r *rand.Rand, i int) string {
	switch r.IntN(5) {
	case 0:
		return fmt.Sprintf("%s %s a %s in %s %s and said it was worth it (#%d)", pick(r, benchNames), pick(r, benchVerbs), pick(r, benchThings), pick(r, benchPlaces), pick(r, benchTimes), i)
	case 1:
		return fmt.Sprintf("The user prefers %s over %s, especially with %s (#%d)", pick(r, benchLikes), pick(r, benchLikes), pick(r, benchNames), i)
	case 2:
		return fmt.Sprintf("%s: I %s my %s %s, then we went to %s for the weekend (#%d)", pick(r, benchNames), pick(r, benchVerbs), pick(r, benchThings), pick(r, benchTimes), pick(r, benchPlaces), i)
	case 3:
		return fmt.Sprintf("To look after the %s, %s checks it every %d days and keeps notes in the %s log (#%d)", pick(r, benchThings), pick(r, benchNames), 2+r.IntN(9), pick(r, benchThings), i)
	default:
		return fmt.Sprintf("%s thinks %s in %s is overrated but loves %s (#%d)", pick(r, benchNames), pick(r, benchLikes), pick(r, benchPlaces), pick(r, benchLikes), i)
	}
}

func benchQuery(r *rand.Rand) string {
	switch r.IntN(4) {
	case 0:
		return fmt.Sprintf("When did %s %s the %s?", pick(r, benchNames), pick(r, benchVerbs), pick(r, benchThings))
	case 1:
		return fmt.Sprintf("What does the user like about %s?", pick(r, benchLikes))
	case 2:
		return fmt.Sprintf("who went to %s with a %s", pick(r, benchPlaces), pick(r, benchThings))
	default:
		return fmt.Sprintf("how does %s look after the %s", pick(r, benchNames), pick(r, benchThings))
	}
}

// memoEmbedder answers from the vectors it was primed with, else asks the
// embedder it wraps: recall timed without the query's embedding.
type memoEmbedder struct {
	embed.Embedder
	mu   sync.Mutex
	vecs map[string][]float32
}

func (m *memoEmbedder) prime(ctx context.Context, texts []string) error {
	vs, err := m.Embedder.Embed(ctx, texts)
	if err != nil {
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.vecs == nil {
		m.vecs = make(map[string][]float32, len(texts))
	}
	for i, t := range texts {
		m.vecs[t] = vs[i]
	}
	return nil
}

func (m *memoEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	m.mu.Lock()
	miss := false
	for i, t := range texts {
		v, ok := m.vecs[t]
		out[i], miss = v, miss || !ok
	}
	m.mu.Unlock()
	if miss {
		return m.Embedder.Embed(ctx, texts)
	}
	return out, nil
}

var (
	benchDBs   sync.Map // size → path of a built database
	benchDir   string
	benchDirMu sync.Mutex
)

func TestMain(m *testing.M) {
	code := m.Run()
	if benchDir != "" {
		os.RemoveAll(benchDir)
	}
	os.Exit(code)
}

// benchDB returns the path of a database holding n synthetic memories,
// building it once per process. With REVERIE_BENCH_DB_DIR=DIR it is built
// once into DIR (a file per size and embedder) and each process works on
// a copy: interleaved runs then need not rebuild it.
func benchDB(b *testing.B, n int) string {
	b.Helper()
	if p, ok := benchDBs.Load(n); ok {
		return p.(string)
	}
	benchDirMu.Lock()
	defer benchDirMu.Unlock()
	if p, ok := benchDBs.Load(n); ok {
		return p.(string)
	}
	if benchDir == "" {
		d, err := os.MkdirTemp("", "reverie-memory-bench-")
		if err != nil {
			b.Fatal(err)
		}
		benchDir = d
	}
	ctx := context.Background()
	path := filepath.Join(benchDir, "m"+strconv.Itoa(n)+".db")
	var kept string
	if dir := os.Getenv("REVERIE_BENCH_DB_DIR"); dir != "" {
		kept = filepath.Join(dir, "m"+strconv.Itoa(n)+"-"+strings.NewReplacer("/", "_", "@", "_").Replace(embedtest.FromEnv(b).ID())+".db")
		if data, err := os.ReadFile(kept); err == nil {
			if err := os.WriteFile(path, data, 0o600); err != nil {
				b.Fatal(err)
			}
			benchDBs.Store(n, path)
			return path
		}
	}
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := OpenVector(ctx, db, embedtest.FromEnv(b), nil, nil, DefaultTuning)
	if err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewPCG(1, 2))
	const batch = 500
	for i := 0; i < n; i += batch {
		ms := make([]Memory, 0, batch)
		for j := i; j < min(i+batch, n); j++ {
			m := Memory{Text: benchText(r, j), Kind: Kinds[j%len(Kinds)]}
			if m.Kind == KindEpisode {
				// episodes of 50 threads, 40 per session: chains to spread along
				m.Source, m.Thread, m.Session, m.Role = SourceConversation, "web:"+strconv.Itoa(j%50), strconv.Itoa(j/2000), RoleUser
			}
			ms = append(ms, m)
		}
		if _, err := s.AddBatch(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
	s.Shutdown(ctx)
	db.Close()
	if kept != "" {
		data, err := os.ReadFile(path)
		if err == nil {
			err = os.WriteFile(kept, data, 0o600)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	benchDBs.Store(n, path)
	return path
}

func openBench(b *testing.B, n int) *VectorStore {
	b.Helper()
	return openBenchWith(b, n, embedtest.FromEnv(b))
}

// openBenchWith opens the benchmark database of n memories with e, which
// must be the embedder that built it (or wrap it).
func openBenchWith(b *testing.B, n int, e embed.Embedder) *VectorStore {
	b.Helper()
	ctx := context.Background()
	path := benchDB(b, n)
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := OpenVector(ctx, db, e, nil, nil, DefaultTuning)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Shutdown(ctx); db.Close() })
	return s
}

func reportPercentiles(b *testing.B, d []time.Duration) {
	slices.Sort(d)
	at := func(p float64) float64 {
		return float64(d[min(len(d)-1, int(p*float64(len(d))))].Microseconds()) / 1000
	}
	b.ReportMetric(at(0.50), "p50-ms")
	b.ReportMetric(at(0.95), "p95-ms")
	b.ReportMetric(at(0.99), "p99-ms")
}

func benchRecall(b *testing.B, n int, queryEmbedded bool) {
	ctx := context.Background()
	r := rand.New(rand.NewPCG(3, 4))
	qs := make([]string, 512)
	for i := range qs {
		qs[i] = benchQuery(r)
	}
	var s *VectorStore
	if queryEmbedded {
		s = openBench(b, n)
	} else {
		m := &memoEmbedder{Embedder: embedtest.FromEnv(b)}
		if err := m.prime(ctx, qs); err != nil {
			b.Fatal(err)
		}
		s = openBenchWith(b, n, m)
	}
	timeEach(b, func(i int) {
		if _, err := s.Recall(ctx, Query{Text: qs[i%len(qs)], Limit: 10}); err != nil {
			b.Fatal(err)
		}
	})
	if fi, err := os.Stat(benchDB(b, n)); err == nil {
		b.ReportMetric(float64(fi.Size())/1e6, "db-MB")
	}
}

// BenchmarkRecall10k and BenchmarkRecall100k measure hybrid recall latency
// (query embedding, FTS5 BM25, vector search, fusion, row fetch, access
// recording). Run on one core: go test -bench Recall -cpu 1 -benchtime 2000x.
// BenchmarkRecall10kEmbedded and BenchmarkRecall100kEmbedded are the same
// with the queries' vectors made before the timing (what recall costs beyond the model).
// REVERIE_BENCH_EMBEDDING=builtin/use-lite measures them with the sentence
// encoder (its stores built with it); db-MB is the database file's size.
func BenchmarkRecall10k(b *testing.B)          { benchRecall(b, 10_000, true) }
func BenchmarkRecall100k(b *testing.B)         { benchRecall(b, 100_000, true) }
func BenchmarkRecall10kEmbedded(b *testing.B)  { benchRecall(b, 10_000, false) }
func BenchmarkRecall100kEmbedded(b *testing.B) { benchRecall(b, 100_000, false) }

// BenchmarkIngest measures Add (one memory per transaction, as the tools
// do) and AddBatch (100 per transaction, as imports do) into a store that
// already holds 10k memories.
func BenchmarkIngest(b *testing.B) {
	for _, size := range []int{1, 100} {
		b.Run("batch="+strconv.Itoa(size), func(b *testing.B) {
			ctx := context.Background()
			db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "i.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s, err := OpenVector(ctx, db, embed.NewOffline(0), nil, nil, DefaultTuning)
			if err != nil {
				b.Fatal(err)
			}
			defer s.Shutdown(ctx)
			r := rand.New(rand.NewPCG(5, 6))
			next := 0
			mk := func(k int) []Memory {
				ms := make([]Memory, k)
				for j := range ms {
					ms[j] = Memory{Text: benchText(r, next)}
					next++
				}
				return ms
			}
			for range 100 {
				if _, err := s.AddBatch(ctx, mk(100)); err != nil {
					b.Fatal(err)
				}
			}
			b.ResetTimer()
			t0 := time.Now()
			added := 0
			for b.Loop() {
				if _, err := s.AddBatch(ctx, mk(size)); err != nil {
					b.Fatal(err)
				}
				added += size
			}
			b.ReportMetric(float64(added)/time.Since(t0).Seconds(), "memories/s")
		})
	}
}

// BenchmarkIngestEpisodes measures what every answered message costs the
// memory: Ingest of the message and the reply (two episodes, one
// embedding call, one transaction) into a store holding 10k memories.
func BenchmarkIngestEpisodes(b *testing.B) {
	s := openBench(b, 10_000)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(7, 8))
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	i := 0
	for b.Loop() {
		msg := chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:bench"}, Sender: chat.Sender{ID: "web", DisplayName: "Sam"},
			Text: benchText(r, i), Received: at}
		if _, err := Ingest(ctx, s, nil, msg, Reply{Speaker: "Reverie", Text: benchText(r, i+1)}); err != nil {
			b.Fatal(err)
		}
		i += 2
	}
}

// BenchmarkLoad10k and BenchmarkLoad100k open a store over 10k and 100k
// memories and report the time to load the index and the Go heap it holds.
func BenchmarkLoad10k(b *testing.B)  { benchLoad(b, 10_000) }
func BenchmarkLoad100k(b *testing.B) { benchLoad(b, 100_000) }

func benchLoad(b *testing.B, n int) {
	path := benchDB(b, n)
	ctx := context.Background()
	var keep []*VectorStore
	for b.Loop() {
		db, err := sqlite.Open(ctx, path)
		if err != nil {
			b.Fatal(err)
		}
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		s, err := OpenVector(ctx, db, embedtest.FromEnv(b), nil, nil, DefaultTuning)
		if err != nil {
			b.Fatal(err)
		}
		s.rlock() // Open leaves the index to load on first use: wait for it
		s.mu.RUnlock()
		b.StopTimer()
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), "index-heap-MB")
		b.ReportMetric(float64(after.HeapAlloc)/(1<<20), "total-heap-MB")
		if st, err := os.ReadFile("/proc/self/status"); err == nil {
			for _, l := range strings.Split(string(st), "\n") {
				if strings.HasPrefix(l, "VmRSS:") {
					f := strings.Fields(l)
					kb, _ := strconv.Atoi(f[1])
					b.ReportMetric(float64(kb)/1024, "process-RSS-MB")
				}
			}
		}
		keep = append(keep, s)
		s.Shutdown(ctx)
		db.Close()
		b.StartTimer()
	}
	runtime.KeepAlive(keep)
}

// processCPU is the user and system CPU time the process used so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkIndexFootprint reports the Go heap the in-memory indexes hold
// per stored episode (the vectors, their sign sketches, the metadata and
// the documents' term ids and sentences apart: they are in file mappings, as in an
// agent), for 20k episodes of one conversation,
// a user's message and the reply in turn, as the agent stores them:
// index-B/memory for the vector index's metadata and maps, text-B/memory
// for the full-text index; sentences-file-B/memory is what the sentences
// take in their file mappings.
func BenchmarkIndexFootprint(b *testing.B) {
	const n = 20_000
	dir := b.TempDir()
	r := rand.New(rand.NewPCG(9, 10))
	texts := make([]string, n)
	for i := range texts {
		texts[i] = benchText(r, i)
	}
	heap := func() uint64 {
		var ms runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&ms)
		return ms.HeapAlloc
	}
	for b.Loop() {
		b.StopTimer()
		h0 := heap()
		space, err1 := newVecSpace(dir)
		signs, err2 := newVecSpace(dir)
		metas, err3 := newVecSpace(dir)
		terms, err4 := newVecSpace(dir)
		sents, err5 := newVecSpace(dir)
		offs, err6 := newVecSpace(dir)
		if err := errors.Join(err1, err2, err3, err4, err5, err6); err != nil {
			b.Fatal(err)
		}
		x := newIndexIn(embed.DefaultDimensions, space, signs, metas)
		for i := range n {
			m := meta{kind: KindEpisode, createdAt: int64(i), validFrom: int64(i), thread: "web:footprint", session: "1",
				speaker: "sam", role: RoleUser}
			if i%2 == 1 {
				m.speaker, m.role = "reverie", RoleAssistant
			}
			x.put(int64(i+1), m, nil)
		}
		h1 := heap()
		t := newTextIndexIn(terms, sents, offs)
		for i, s := range texts {
			t.put(int64(i+1), s)
		}
		h2 := heap()
		b.ReportMetric(float64(h1-h0)/n, "index-B/memory")
		b.ReportMetric(float64(h2-h1)/n, "text-B/memory")
		// the sentences' bytes in their file mappings, offsets included
		b.ReportMetric(float64(len(t.sents)+4*len(t.sentOff))/n, "sentences-file-B/memory")
		runtime.KeepAlive(x)
		runtime.KeepAlive(t)
		b.StartTimer()
	}
}
