package memory

import (
	"bytes"
	"compress/gzip"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// legacyStore returns the path of a copy of testdata/legacy/store-v9.db.gz:
// a store written by Reverie before migration 010 (main at d38ea0f, see
// make_fixture_test.go.txt beside it): 127 memories with float32 vectors,
// 121 of the offline embedder at 384 dimensions (one of them closed by an
// edit), 6 at 16 dimensions, one memory without a vector, and a pending
// 384-dimension vector of a re-embedding that stopped midway.
func legacyStore(t *testing.T) string {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", "legacy", "store-v9.db.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "reverie.db")
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// storedRow is one row's vector as the database holds it.
type storedRow struct {
	text, model string
	blob        []byte
}

// storedRows reads every row of memories and memory_pending_embeddings,
// keyed by table and id.
func storedRows(t *testing.T, db *sql.DB) map[string]storedRow {
	t.Helper()
	out := map[string]storedRow{}
	ctx := context.Background()
	for _, q := range []struct{ table, query string }{
		{"memories", `SELECT id, text, embed_model, embedding FROM memories`},
		{"pending", `SELECT id, '', model, embedding FROM memory_pending_embeddings`},
	} {
		err := sqlite.Each(ctx, db, func(rows *sql.Rows) error {
			var id int64
			var r storedRow
			if err := rows.Scan(&id, &r.text, &r.model, &r.blob); err != nil {
				return err
			}
			out[fmt.Sprintf("%s/%03d", q.table, id)] = r
			return nil
		}, q.query)
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// checkConverted checks that after holds every row of before, each vector
// in the compact form of the float32 one it had (none left as float32),
// and nothing else changed.
func checkConverted(t *testing.T, before, after map[string]storedRow) {
	t.Helper()
	if len(after) != len(before) {
		t.Fatalf("%d rows after the conversion, %d before", len(after), len(before))
	}
	for k, b := range before {
		a, ok := after[k]
		if !ok {
			t.Fatalf("%s is gone", k)
		}
		if a.text != b.text || a.model != b.model {
			t.Fatalf("%s changed: %q (%s), was %q (%s)", k, a.text, a.model, b.text, b.model)
		}
		if b.blob == nil {
			if a.blob != nil {
				t.Fatalf("%s got a vector", k)
			}
			continue
		}
		want := b.blob
		if len(b.blob)%4 == 0 {
			v, err := embed.Decode(b.blob)
			if err != nil {
				t.Fatal(err)
			}
			want = encodeVector(v)
		}
		if !bytes.Equal(a.blob, want) {
			t.Fatalf("%s: vector stored as % x…, want % x…", k, a.blob[:min(len(a.blob), 12)], want[:min(len(want), 12)])
		}
	}
}

// snapshot is every entry of an index, by memory id.
func snapshot(x *index) map[int64]indexEntry {
	out := make(map[int64]indexEntry, len(x.ids))
	for _, id := range x.ids {
		out[id] = entryOf(x, id)
	}
	return out
}

func sameIndex(t *testing.T, what string, a, b *index) {
	t.Helper()
	sa, sb := snapshot(a), snapshot(b)
	if len(sa) != len(sb) {
		t.Fatalf("%s: %d entries against %d", what, len(sa), len(sb))
	}
	for id, e := range sa {
		if !e.equal(sb[id]) {
			t.Fatalf("%s: memory %d's entry differs:\n%+v\n%+v", what, id, e, sb[id])
		}
	}
}

// TestConvertLegacyStore opens a store written before migration 010: its
// float32 vectors are rewritten compact in the background once the index
// has loaded, every row kept, and recall's index and results are the
// same, byte for byte, as the float32 vectors give.
func TestConvertLegacyStore(t *testing.T) {
	ctx := context.Background()
	e := embed.NewOffline(0)
	clk := &clock{t: time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)}
	open := func(path string) (*sql.DB, *VectorStore) {
		db, err := sqlite.Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		s, err := OpenVector(ctx, db, e, clk.now, nil, DefaultTuning)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Shutdown(ctx) })
		return db, s
	}
	queries := []string{"who bought a guitar in Lisbon", "what does the user prefer", "Anna kayak last summer"}
	recall := func(s *VectorStore) [][]Scored {
		var out [][]Scored
		for _, q := range queries {
			r, err := s.Recall(ctx, Query{Text: q, Limit: 10, IncludeClosed: true})
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, r)
		}
		return out
	}

	// One copy recalls from the index its float32 vectors make (the
	// conversion waits for the load the recall starts).
	_, plain := open(legacyStore(t))
	want := recall(plain)
	fromFloats := plain.idx

	// The other converts, then recalls from the compact vectors.
	db, s := open(legacyStore(t))
	raw := storedRows(t, db)
	legacy := 0
	for _, r := range raw {
		if r.blob != nil && len(r.blob)%4 == 0 {
			legacy++
		}
	}
	// Open moved the pending vector of the configured model into its
	// memory (chooseServing); the fixture's 128 rows are 127 now.
	if len(raw) != 127 || legacy != 126 {
		t.Fatalf("the fixture holds %d rows, %d float32 vectors after the open: not the store it should be", len(raw), legacy)
	}
	s.LoadIndex()
	s.loading.Wait() // the load, and the conversion that follows
	after := storedRows(t, db)
	checkConverted(t, raw, after)
	var marks int
	if err := db.QueryRowContext(ctx, `SELECT count(*) FROM memory_vectors_float32`).Scan(&marks); err != nil || marks != 0 {
		t.Fatalf("the conversion left %d marks (%v)", marks, err)
	}
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	s2, err := OpenVector(ctx, db, e, clk.now, nil, DefaultTuning)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Shutdown(ctx)
	got := recall(s2)
	sameIndex(t, "the index from float32 and from compact vectors", fromFloats, s2.idx)
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("%q: %d results from float32 vectors, %d from compact ones", queries[i], len(want[i]), len(got[i]))
		}
		for j := range want[i] {
			a, b := want[i][j], got[i][j]
			if a.ID != b.ID || a.Score != b.Score || a.Cosine != b.Cosine || a.VecRank != b.VecRank {
				t.Fatalf("%q, result %d: memory %d (%v, cosine %v) from float32 vectors, %d (%v, cosine %v) from compact ones",
					queries[i], j, a.ID, a.Score, a.Cosine, b.ID, b.Score, b.Cosine)
			}
		}
	}
	// Readers of floats get each stored vector within half a step.
	for k, r := range raw {
		if r.blob == nil || !strings.HasPrefix(k, "memories/") {
			continue
		}
		var id int64
		if _, err := fmt.Sscanf(k, "memories/%d", &id); err != nil {
			t.Fatal(err)
		}
		m, err := s2.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		v, _ := embed.Decode(r.blob)
		sv, _ := decodeVector(after[k].blob, nil)
		step := float64(sv.scale) * (0.5 + 1e-4) // half a step, and float32 rounding
		for i := range v {
			if d := math.Abs(float64(m.Embedding[i] - v[i])); d > step {
				t.Fatalf("memory %d, component %d: read %v, stored %v", id, i, m.Embedding[i], v[i])
			}
		}
	}
}

// TestConvertVectorsResumes stops the conversion midway: the store reads
// both formats meanwhile (the same index), and the next run converts the
// rest from where the first stopped.
func TestConvertVectorsResumes(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, legacyStore(t))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before := storedRows(t, db)
	if err := migrate(ctx, nil, db); err != nil {
		t.Fatal(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	batches := 0
	n, err := convertVectors(cctx, db, 16, func(int) {
		if batches++; batches == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a cancelled conversion returned %d, %v", n, err)
	}
	// the pending vector (one batch), then two batches of memories
	var mark int64
	if err := db.QueryRowContext(ctx, `SELECT after_id FROM memory_vectors_float32`).Scan(&mark); err != nil {
		t.Fatal(err)
	}
	mid := storedRows(t, db)
	compact, legacy := 0, 0
	for k, r := range mid {
		if r.blob == nil {
			continue
		}
		if len(r.blob)%4 == 0 {
			legacy++
		} else {
			compact++
		}
		if k == "pending/081" && len(r.blob)%4 == 0 {
			t.Fatal("the pending vector was not converted first")
		}
	}
	if n != 33 || compact != 33 || mark == 0 || legacy != 127-33 {
		t.Fatalf("stopped after %d converted (%d compact, %d float32, mark %d), want 33 = 1 pending + 2 batches of 16", n, compact, legacy, mark)
	}

	// both formats load into the index the float32 vectors make
	e := embed.NewOffline(0)
	open := func() *VectorStore {
		s, err := OpenVector(ctx, db, e, nil, nil, DefaultTuning)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	s := open()
	mixed, _, _, err := s.loadIndex(ctx, e.ID(), e.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	s.stop() // no conversion by this store
	s.Shutdown(ctx)

	n2, err := convertVectors(ctx, db, 16, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 127 in all less memory 81's float32 vector, which the open replaced
	// by the pending one, converted already
	if n+n2 != 126 {
		t.Fatalf("the second run converted %d, the first %d: want 126 in all", n2, n)
	}
	after := storedRows(t, db)
	// Open moved the pending vector into its memory (chooseServing)
	before["memories/081"] = storedRow{text: before["memories/081"].text, model: before["pending/081"].model, blob: before["pending/081"].blob}
	delete(before, "pending/081")
	checkConverted(t, before, after)
	if n3, err := convertVectors(ctx, db, 16, nil); n3 != 0 || err != nil {
		t.Fatalf("a finished conversion ran again: %d, %v", n3, err)
	}
	s = open()
	defer s.Shutdown(ctx)
	done, _, _, err := s.loadIndex(ctx, e.ID(), e.Dimensions())
	if err != nil {
		t.Fatal(err)
	}
	sameIndex(t, "the index of a half-converted store and of a converted one", mixed, done)
}

// TestNewStoreHasNothingToConvert: a new store's vectors are written
// compact, with no conversion mark.
func TestNewStoreHasNothingToConvert(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	if _, err := s.AddBatch(ctx, []Memory{{Text: "Sam plays the violin"}, {Text: "Sam lives in Oslo"}}); err != nil {
		t.Fatal(err)
	}
	var marks, float32s int
	if err := s.db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM memory_vectors_float32),
		(SELECT count(*) FROM memories WHERE length(embedding) % 4 = 0)`).Scan(&marks, &float32s); err != nil {
		t.Fatal(err)
	}
	if marks != 0 || float32s != 0 {
		t.Fatalf("a new store has %d conversion marks and %d float32 vectors", marks, float32s)
	}
	ids := slices.Collect(func(yield func(int64) bool) {
		for v, err := range s.AllVectors(ctx) {
			if err != nil || len(v.Vector) != embed.DefaultDimensions || !yield(v.ID) {
				return
			}
		}
	})
	if len(ids) != 2 {
		t.Fatalf("AllVectors yields %d vectors of %d dimensions, want 2", len(ids), embed.DefaultDimensions)
	}
}
