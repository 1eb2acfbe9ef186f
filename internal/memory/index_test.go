package memory

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reverie-ai/reverie/internal/embed"
)

// TestIndexPreselectRecall checks that the sign-sketch preselection used
// above exactScanMax finds nearly the same top 10 as an exact scan.
func TestIndexPreselectRecall(t *testing.T) {
	if testing.Short() {
		t.Skip("embeds 10k texts")
	}
	ctx := context.Background()
	e := embed.NewOffline(0)
	r := rand.New(rand.NewPCG(7, 8))
	const n = exactScanMax + 2000
	texts := make([]string, n)
	for i := range texts {
		texts[i] = benchText(r, i)
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	x := newIndex(e.Dimensions())
	for i, v := range vecs {
		x.put(int64(i+1), meta{kind: KindFact}, v)
	}
	all := func(int) bool { return true }
	var found, total int
	for range 50 {
		qv, _ := e.Embed(ctx, []string{benchQuery(r)})
		got := x.search(qv[0], 10, all)
		// exact reference over every slot
		exact := make([]vecHit, 0, n)
		for s := range x.len() {
			exact = append(exact, vecHit{slot: s, cos: embed.Dot(qv[0], vecs[x.ids[s]-1])})
		}
		slices.SortFunc(exact, func(a, b vecHit) int {
			if a.cos > b.cos {
				return -1
			}
			if a.cos < b.cos {
				return 1
			}
			return 0
		})
		want := map[int]bool{}
		for _, h := range exact[:10] {
			want[h.slot] = true
		}
		for _, h := range got {
			if want[h.slot] {
				found++
			}
		}
		total += 10
	}
	if rate := float64(found) / float64(total); rate < 0.9 {
		t.Errorf("preselected top-10 overlap with exact = %.2f, want ≥ 0.9", rate)
	} else {
		t.Logf("preselected top-10 overlap with exact = %.3f", rate)
	}
}

func TestIndexRemoveAndTextIndexCompaction(t *testing.T) {
	x := newIndex(8)
	ti := newTextIndex()
	for i := int64(1); i <= 3000; i++ {
		v := make([]float32, 8)
		v[i%8] = 1
		x.put(i, meta{speaker: "ann"}, v)
		ti.put(i, "note number "+string(rune('a'+i%26)))
	}
	for i := int64(1); i <= 2500; i++ {
		x.remove(i)
		ti.remove(i)
	}
	if x.len() != 500 || len(x.slot) != 500 || x.speakers["ann"] != 500 {
		t.Fatalf("index after removals: len %d slots %d speakers %v", x.len(), len(x.slot), x.speakers)
	}
	for s, id := range x.ids {
		if x.slot[id] != s {
			t.Fatalf("slot map broken at %d", s)
		}
	}
	if len(ti.docID) >= 3000 || ti.live != 500 {
		t.Fatalf("text index not compacted: %d docs, %d live", len(ti.docID), ti.live)
	}
	hits := ti.search("note", nil, defaultBM25, 1000, func(int64) bool { return true })
	if len(hits) != 500 {
		t.Fatalf("search after compaction found %d, want 500", len(hits))
	}
	for _, h := range hits {
		if h.id <= 2500 {
			t.Fatalf("removed memory %d found", h.id)
		}
	}
}
