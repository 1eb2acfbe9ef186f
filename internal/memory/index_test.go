package memory

import (
	"context"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
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

// The exact scan's k best, kept by a bounded heap, are the first k of all
// its hits sorted (more similar first, ties by slot), for every k, with
// ties (the same vector stored several times) and a keep filter.
func TestIndexSearchTopK(t *testing.T) {
	ctx := context.Background()
	e := embed.NewOffline(0)
	r := rand.New(rand.NewPCG(3, 4))
	texts := make([]string, 300)
	for i := range texts {
		texts[i] = benchText(r, i%120) // each text up to three times: equal scores
	}
	vecs, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	x := newIndex(e.Dimensions())
	for i, v := range vecs {
		x.put(int64(i+1), meta{kind: KindFact}, v)
	}
	keep := func(s int) bool { return s%7 != 3 }
	for q := range 5 {
		qv, _ := e.Embed(ctx, []string{benchQuery(r)})
		all := x.search(qv[0], x.len(), keep)
		if want := x.len() - (x.len()+3)/7; len(all) != want {
			t.Fatalf("query %d: %d hits, want every kept slot (%d)", q, len(all), want)
		}
		if !slices.IsSortedFunc(all, func(a, b vecHit) int {
			if a.better(b) {
				return -1
			}
			return 1
		}) {
			t.Fatalf("query %d: the hits are not in order", q)
		}
		for _, k := range []int{1, 2, 10, 100, 257, 1000} {
			got := x.search(qv[0], k, keep)
			if want := all[:min(k, len(all))]; !slices.Equal(got, want) {
				t.Fatalf("query %d, k %d: %v, want %v", q, k, got, want)
			}
		}
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
	hits := ti.search("note", nil, defaultBM25, 1000, func(int64) bool { return true }, nil)
	if len(hits) != 500 {
		t.Fatalf("search after compaction found %d, want 500", len(hits))
	}
	for _, h := range hits {
		if h.id <= 2500 {
			t.Fatalf("removed memory %d found", h.id)
		}
	}
}

func TestPostingEncoding(t *testing.T) {
	type posting struct {
		doc uint32
		tf  int
	}
	tests := []struct {
		name string
		in   []posting
		want []uint8 // tf as decoded
		size int     // encoded bytes
	}{
		{name: "first document is 0", in: []posting{{0, 1}}, want: []uint8{1}, size: 1},
		{name: "consecutive documents take a byte each", in: []posting{{3, 1}, {4, 1}, {5, 1}}, want: []uint8{1, 1, 1}, size: 3},
		{name: "term frequency above 1 adds a byte", in: []posting{{1, 2}, {2, 7}}, want: []uint8{2, 7}, size: 4},
		{name: "frequency clipped at 255", in: []posting{{1, 300}}, want: []uint8{255}, size: 2},
		{name: "gap of 64 needs two bytes", in: []posting{{0, 1}, {64, 1}}, want: []uint8{1, 1}, size: 3},
		{name: "large gaps", in: []posting{{1 << 20, 1}, {1<<31 - 1, 3}}, want: []uint8{1, 3}, size: 4 + 5 + 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var p []byte
			var last uint32
			for _, x := range tt.in {
				p = appendPosting(p, last, x.doc, x.tf)
				last = x.doc
			}
			if len(p) != tt.size {
				t.Errorf("encoded in %d bytes, want %d", len(p), tt.size)
			}
			var d uint32
			var tf uint8
			var n int
			for i := 0; i < len(p); n++ {
				d, tf, i = nextPosting(p, i, d)
				if n >= len(tt.in) || d != tt.in[n].doc || tf != tt.want[n] {
					t.Fatalf("posting %d decoded as doc %d tf %d, want %+v tf %d", n, d, tf, tt.in[min(n, len(tt.in)-1)], tt.want[min(n, len(tt.want)-1)])
				}
			}
			if n != len(tt.in) {
				t.Fatalf("decoded %d postings, want %d", n, len(tt.in))
			}
		})
	}
}

// TestTextIndexCompactionKeepsScores checks that a text index after
// updates, removals and compaction ranks exactly as one built afresh from
// the documents that are left, in the same order, whether it keeps its
// documents' term ids in the heap or in a file (read back after a trim).
func TestTextIndexCompactionKeepsScores(t *testing.T) {
	for _, tc := range []struct {
		name  string
		space func(t *testing.T) vecSpace
	}{
		{"term ids in the heap", func(*testing.T) vecSpace { return heapSpace{} }},
		{"term ids in a file", func(t *testing.T) vecSpace {
			if runtime.GOOS == "windows" {
				t.Skip("no file mappings")
			}
			sp, err := newVecSpace(t.TempDir())
			if err != nil || sp.kind() != "file" {
				t.Fatalf("space %s: %v", sp.kind(), err)
			}
			return sp
		}},
	} {
		t.Run(tc.name, func(t *testing.T) { testTextIndexCompaction(t, tc.space(t), tc.space(t), tc.space(t)) })
	}
}

func testTextIndexCompaction(t *testing.T, space, sents, offs vecSpace) {
	words := strings.Fields("garden bike piano boat kitchen camera novel tent violin car Lyon Oslo Kyoto Lisbon weekend trip fixed repaired played")
	text := func(i int64, v int) string {
		var b strings.Builder
		for j := range 3 + i%7 {
			b.WriteString(words[(i*int64(j+1)+int64(v)*5+j)%int64(len(words))] + " ")
		}
		if i%11 == 0 {
			b.WriteString("garden garden garden")
		}
		if i%5 == 0 {
			b.WriteString(". Then " + words[(i+int64(v))%int64(len(words))] + " again!\nA new line")
		}
		return b.String()
	}
	old, fresh := newTextIndexIn(space, sents, offs), newTextIndex()
	for i := int64(1); i <= 4000; i++ {
		old.put(i, text(i, 0))
	}
	for i := int64(1); i <= 4000; i++ {
		switch {
		case i%3 != 0:
			old.remove(i)
		case i%9 == 0:
			old.put(i, text(i, 1)) // an update: a new document for the same id
		}
	}
	// the same live documents, put in the order the old index now holds them
	for _, id := range old.docID {
		if id <= 0 {
			continue
		}
		v := 0
		if id%9 == 0 {
			v = 1
		}
		fresh.put(id, text(id, v))
	}
	if old.live != fresh.live || old.totalLen != fresh.totalLen {
		t.Fatalf("live %d/%d, total length %d/%d", old.live, fresh.live, old.totalLen, fresh.totalLen)
	}
	old.trim() // term ids in a file are read back from it
	for _, id := range fresh.docID {
		a, _ := old.docOf(id)
		b, _ := fresh.docOf(id)
		if sa, sb := sentenceTerms(old, a), sentenceTerms(fresh, b); !slices.EqualFunc(sa, sb, slices.Equal) {
			t.Fatalf("memory %d: sentences after compaction %v, built afresh %v", id, sa, sb)
		}
	}
	all := func(int64) bool { return true }
	for _, q := range []string{"garden", "bike trip to Lyon", "the camera and the violin", "weekend"} {
		a, b := old.search(q, nil, defaultBM25, 50, all, nil), fresh.search(q, nil, defaultBM25, 50, all, nil)
		if len(a) == 0 || !slices.Equal(a, b) {
			t.Fatalf("%q: after compaction %v, built afresh %v", q, a, b)
		}
		ids := make([]int64, len(a))
		for i, h := range a {
			ids[i] = h.id
		}
		if ca, cb := old.coverage(q, nil, ids, nil, nil), fresh.coverage(q, nil, ids, nil, nil); !slices.Equal(ca, cb) {
			t.Fatalf("%q: coverage %v, built afresh %v", q, ca, cb)
		}
		ea, eb := old.expand(q, nil, a[:min(5, len(a))], 3), fresh.expand(q, nil, a[:min(5, len(a))], 3)
		if len(ea) != len(eb) {
			t.Fatalf("%q: feedback terms %d, built afresh %d", q, len(ea), len(eb))
		}
	}
}

// TestTextIndexPack checks that a packed text index ranks, covers and
// expands exactly as the same index unpacked, also after documents are
// added and removed once packed (a packed list grows out of the arena
// without touching its neighbours), that a pack with nothing new leaves the
// arrays as they are, and that one after a few new documents packs them.
func TestTextIndexPack(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	packed, plain := newTextIndex(), newTextIndex()
	put := func(from, to int) {
		for i := from; i < to; i++ {
			txt := benchText(r, i)
			packed.put(int64(i+1), txt)
			plain.put(int64(i+1), txt)
		}
	}
	all := func(int64) bool { return true }
	queries := textQueries(r)
	check := func(when string) {
		t.Helper()
		for _, q := range queries {
			pk, pn := packed.kindTerms(q, nil, packed.queryTerms(q, nil), relWeights{0.5, 0.5})
			uk, un := plain.kindTerms(q, nil, plain.queryTerms(q, nil), relWeights{0.5, 0.5})
			ka, kb := packed.search(q, nil, defaultBM25, 50, all, pk), plain.search(q, nil, defaultBM25, 50, all, uk)
			if !slices.Equal(ka, kb) {
				t.Fatalf("%s, %q with the kinds of its nouns: packed %v, unpacked %v", when, q, ka, kb)
			}
			kids := make([]int64, len(ka))
			for i, h := range ka {
				kids[i] = h.id
			}
			if ca, cb := packed.coverage(q, nil, kids, pk, pn), plain.coverage(q, nil, kids, uk, un); !slices.Equal(ca, cb) {
				t.Fatalf("%s, %q: coverage with the kinds %v, unpacked %v", when, q, ca, cb)
			}
		}
		sameTextAnswers(t, when+": packed, unpacked", packed, plain, queries)
	}
	put(0, 3000)
	packed.pack()
	check("packed")
	first := &packed.postings[0][0]
	packed.pack() // nothing new: nothing moves
	if &packed.postings[0][0] != first {
		t.Error("a pack with no new document moved the postings")
	}
	put(3000, 3500)
	for id := int64(1); id <= 3500; id += 3 {
		packed.remove(id)
		plain.remove(id)
	}
	check("grown and shrunk after the pack")
	packed.pack()
	check("packed again")
	put(3500, 3510)
	packed.pack() // ten new documents against 2,343 live: packed too
	if packed.fresh != 0 {
		t.Errorf("a pack after ten new documents left %d to pack", packed.fresh)
	}
	check("ten more, packed")
}

// TestTextIndexFindsIDsWithoutAMap checks that a text index whose ids
// ascend (as the database numbers memories) finds them by binary search,
// keeping no map, through removals and compaction, and answers exactly as
// one that maps them; and that a document put out of order makes it build
// the map and go on answering the same.
func TestTextIndexFindsIDsWithoutAMap(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	sorted, mapped := newTextIndex(), newTextIndex()
	mapped.byID = map[int64]uint32{}
	texts := map[int64]string{}
	for i := range 5000 {
		id := int64(2*i + 1) // with gaps
		texts[id] = benchText(r, i)
		sorted.put(id, texts[id])
		mapped.put(id, texts[id])
	}
	for id := int64(1); id < 10000; id += 4 { // a half: compaction runs
		sorted.remove(id)
		mapped.remove(id)
	}
	queries := textQueries(r)
	check := func(when string) {
		t.Helper()
		sameTextAnswers(t, when+": sorted ids, a map", sorted, mapped, queries)
	}
	if len(sorted.docID) >= 5000 {
		t.Fatalf("%d documents: the removals did not compact", len(sorted.docID))
	}
	check("ascending ids")
	if sorted.byID != nil {
		t.Fatalf("ascending ids built a map of %d", len(sorted.byID))
	}
	for _, id := range []int64{3, 4} { // an update, then a new id below the last
		sorted.put(id, "the violin in Lyon"+texts[id])
		mapped.put(id, "the violin in Lyon"+texts[id])
	}
	if sorted.byID == nil {
		t.Fatal("a document out of order built no map")
	}
	check("after documents out of order")
	if _, ok := sorted.docOf(1); ok {
		t.Error("a removed memory is found")
	}
}

// textQueries are the questions the text index tests ask: one word, and
// eight of the benchmark's questions.
func textQueries(r *rand.Rand) []string {
	queries := []string{"weekend"}
	for range 8 {
		queries = append(queries, benchQuery(r))
	}
	return queries
}

// sameTextAnswers checks that two text indexes holding the same documents
// rank, cover (also ids they do not hold) and expand each query alike.
func sameTextAnswers(t *testing.T, when string, x, y *textIndex, queries []string) {
	t.Helper()
	all := func(int64) bool { return true }
	for _, q := range queries {
		a, b := x.search(q, nil, defaultBM25, 50, all, nil), y.search(q, nil, defaultBM25, 50, all, nil)
		if len(a) < 5 || !slices.Equal(a, b) {
			t.Fatalf("%s, %q: %v against %v", when, q, a, b)
		}
		ids := []int64{1, 2, 3, 9999, 10001}
		for _, h := range a {
			ids = append(ids, h.id)
		}
		if ca, cb := x.coverage(q, nil, ids, nil, nil), y.coverage(q, nil, ids, nil, nil); !slices.Equal(ca, cb) {
			t.Fatalf("%s, %q: coverage %v against %v", when, q, ca, cb)
		}
		if ea, eb := x.expand(q, nil, a[:5], 3), y.expand(q, nil, a[:5], 3); !slices.Equal(ea, eb) {
			t.Fatalf("%s, %q: feedback terms %v against %v", when, q, ea, eb)
		}
	}
}

// TestIndexSlotsWithoutMap: while ids ascend with the slots the index keeps
// no slot map and finds slots by binary search; a put of an older id or a
// removal that moves a slot builds the map; either way every id's slot
// agrees with a reference map through random puts, updates and removals.
func TestIndexSlotsWithoutMap(t *testing.T) {
	cases := []struct {
		name    string
		ops     func(x *index, r *rand.Rand)
		wantMap bool
	}{
		{"ascending puts and removals of the last keep no map", func(x *index, r *rand.Rand) {
			for id := int64(1); id <= 300; id++ {
				x.put(id*3, meta{}, nil)
			}
			x.put(30, meta{speaker: "ann"}, nil) // an update keeps its slot
			for range 50 {
				x.remove(x.ids[len(x.ids)-1])
			}
		}, false},
		{"an older id builds the map", func(x *index, r *rand.Rand) {
			for id := int64(1); id <= 300; id++ {
				x.put(id*3, meta{}, nil)
			}
			x.put(31, meta{}, nil)
		}, true},
		{"a removal that moves a slot builds the map", func(x *index, r *rand.Rand) {
			for id := int64(1); id <= 300; id++ {
				x.put(id, meta{}, nil)
			}
			x.remove(17)
		}, true},
		{"random puts and removals", func(x *index, r *rand.Rand) {
			next := int64(1)
			for range 3000 {
				switch {
				case r.IntN(4) == 0 && len(x.ids) > 0:
					x.remove(x.ids[r.IntN(len(x.ids))])
				case r.IntN(8) == 0:
					x.put(r.Int64N(next)+1, meta{}, nil)
				default:
					x.put(next, meta{}, nil)
					next++
				}
			}
		}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			x := newIndex(8)
			tc.ops(x, rand.New(rand.NewPCG(1, 2)))
			if got := x.slot != nil; got != tc.wantMap {
				t.Fatalf("slot map kept: %v, want %v", got, tc.wantMap)
			}
			for s, id := range x.ids {
				if got, ok := x.slotOf(id); !ok || got != s {
					t.Fatalf("slotOf(%d) = %d, %v; want %d", id, got, ok, s)
				}
			}
			if _, ok := x.slotOf(-5); ok {
				t.Fatal("slotOf found an id never put")
			}
			if x.slot != nil && len(x.slot) != len(x.ids) {
				t.Fatalf("slot map holds %d ids, the index %d", len(x.slot), len(x.ids))
			}
		})
	}
}
