package memory

import (
	"context"
	"errors"
	"fmt"
	"math"
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
	s.TrimIndex()
	check(s, "after a trim")
	// a reload writes the vectors into a new file and trims it
	again := openStore(t, path, s.emb, clk)
	again.TrimIndex() // before the load: nothing to trim, and no wait for it
	select {
	case <-again.Loaded():
		t.Fatal("TrimIndex loaded the index")
	default:
	}
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
	x := newIndexIn(4, sp, sp, sp)
	x.put(1, meta{kind: KindFact}, []float32{0.5, 0.5, 0.5, 0.5})
	if hits := x.search([]float32{0.5, 0.5, 0.5, 0.5}, 1, func(int) bool { return true }); len(hits) != 1 || hits[0].cos < 0.99 {
		t.Fatalf("heap index search = %v", hits)
	}
}

// TestSketchesInAFile checks that an index keeping its vectors, sign
// sketches and metadata in files finds exactly what one in the heap finds
// above exactScanMax, where the sketches preselect, and holds the same
// metadata: as it grows (the files are mapped anew), after removals (the
// last slot's sketch and metadata move) and after a trim of the files'
// pages.
func TestSketchesInAFile(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("no file mappings")
	}
	dir := t.TempDir()
	space, err1 := newVecSpace(dir)
	signs, err2 := newVecSpace(dir)
	metas, err3 := newVecSpace(dir)
	if err := errors.Join(err1, err2, err3); err != nil {
		t.Fatal(err)
	}
	const dims = 64
	file, heap := newIndexIn(dims, space, signs, metas), newIndex(dims)
	r := rand.New(rand.NewPCG(5, 6))
	vec := func() []float32 {
		v := make([]float32, dims)
		var n float32
		for i := range v {
			v[i] = float32(r.NormFloat64())
			n += v[i] * v[i]
		}
		for i := range v {
			v[i] /= float32(math.Sqrt(float64(n)))
		}
		return v
	}
	const n = exactScanMax + 1500
	for i := range n {
		v := vec()
		// episodes of three threads (chained, so removals relink them)
		// and facts
		m := meta{kind: KindFact, createdAt: int64(i), words: uint16(i % 40)}
		if i%2 == 0 {
			m.kind, m.thread, m.session, m.speaker, m.role = KindEpisode, fmt.Sprint("web:", i%3), "1", "sam", RoleUser
		}
		file.put(int64(i+1), m, v)
		heap.put(int64(i+1), m, v)
	}
	for id := int64(1); id <= n; id += 97 {
		file.remove(id)
		heap.remove(id)
	}
	if file.signSpace.kind() != "file" || file.space.kind() != "file" || file.metaSpace.kind() != "file" {
		t.Fatalf("vectors in %s, sketches in %s, metadata in %s; want files",
			file.space.kind(), file.signSpace.kind(), file.metaSpace.kind())
	}
	if !slices.Equal(file.sign, heap.sign) {
		t.Fatal("the sketches in the file differ from those in the heap")
	}
	if !slices.Equal(file.metas, heap.metas) {
		t.Fatal("the metadata in the file differs from the heap's")
	}
	all := func(int) bool { return true }
	check := func(when string) {
		t.Helper()
		for range 20 {
			q := vec()
			got, want := file.search(q, 10, all), heap.search(q, 10, all)
			if len(got) != 10 || !slices.Equal(got, want) {
				t.Fatalf("%s: the file index found %v, the heap index %v", when, got, want)
			}
		}
	}
	check("after adding and removing")
	file.trim()
	check("after a trim")
	if !slices.Equal(file.metas, heap.metas) {
		t.Fatal("after a trim, the metadata in the file differs from the heap's")
	}
}
