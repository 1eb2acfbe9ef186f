package memory

import (
	"context"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestIndexVectorsInAFile checks that a store on disk keeps its index's
// vectors in an unlinked file next to the database (nothing left in the
// directory), and that the index finds the same neighbours as one in the
// heap through the file's growth, a reload and a trim of its pages.
func TestIndexVectorsInAFile(t *testing.T) {
	ctx := context.Background()
	s, clk, path := newStore(t)
	r := rand.New(rand.NewPCG(3, 4))
	const n = 700 // rows of 384 bytes: the file grows and is mapped anew several times
	ms := make([]Memory, n)
	for i := range ms {
		ms[i] = Memory{Text: benchText(r, i), Kind: KindEpisode, Thread: "web:t"}
	}
	for i := 0; i < n; i += 100 {
		if _, err := s.AddBatch(ctx, ms[i:i+100]); err != nil {
			t.Fatal(err)
		}
	}
	if runtime.GOOS != "windows" {
		if got := s.idx.space.kind(); got != "file" {
			t.Fatalf("vectors in %s, want a file", got)
		}
	}
	assertOnlyDatabaseFiles(t, filepath.Dir(path))
	queries := make([][]float32, 10)
	for i := range queries {
		v, err := s.emb.Embed(ctx, []string{benchQuery(r)})
		if err != nil {
			t.Fatal(err)
		}
		queries[i] = v[0]
	}
	check := func(s *VectorStore, when string) {
		t.Helper()
		heap := newIndex(s.idx.dims)
		for v, err := range s.AllVectors(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			heap.put(v.ID, meta{kind: KindEpisode}, v.Vector)
		}
		all := func(int) bool { return true }
		for _, q := range queries {
			got, want := s.idx.search(q, 20, all), heap.search(q, 20, all)
			if len(got) != 20 || !slices.EqualFunc(got, want, func(a, b vecHit) bool {
				return s.idx.ids[a.slot] == heap.ids[b.slot] && a.cos == b.cos
			}) {
				t.Fatalf("%s: the file index found %v, the heap index %v", when, got, want)
			}
		}
	}
	check(s, "after adding")
	s.idx.trim()
	check(s, "after a trim")
	// a reload writes the vectors into a new file and trims it
	again := openStore(t, path, s.emb, clk)
	again.LoadIndex()
	<-again.Loaded()
	check(again, "after a reload")
	assertOnlyDatabaseFiles(t, filepath.Dir(path))
}

// assertOnlyDatabaseFiles fails when dir holds anything but the database
// and its companions.
func assertOnlyDatabaseFiles(t *testing.T, dir string) {
	t.Helper()
	es, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range es {
		if !strings.HasPrefix(e.Name(), "m.db") {
			t.Errorf("%s left in the data dir", e.Name())
		}
	}
}

// TestVecSpaceFallsBackToTheHeap checks that a directory where the file
// cannot be made leaves the vectors in the heap, with the reason.
func TestVecSpaceFallsBackToTheHeap(t *testing.T) {
	sp, err := newVecSpace(filepath.Join(t.TempDir(), "missing"))
	if err == nil || sp.kind() != "heap" {
		t.Fatalf("space %s, err %v; want the heap and an error", sp.kind(), err)
	}
	sp, err = newVecSpace("")
	if err != nil || sp.kind() != "heap" {
		t.Fatalf("in-memory database: space %s, err %v; want the heap", sp.kind(), err)
	}
	x := newIndexIn(4, sp)
	x.put(1, meta{kind: KindFact}, []float32{0.5, 0.5, 0.5, 0.5})
	if hits := x.search([]float32{0.5, 0.5, 0.5, 0.5}, 1, func(int) bool { return true }); len(hits) != 1 || hits[0].cos < 0.99 {
		t.Fatalf("heap index search = %v", hits)
	}
}
