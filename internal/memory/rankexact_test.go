package memory

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/reverie-ai/reverie/internal/embed"
)

// scoreTermsPlain is scoreTerms as it was before its speed-ups, the
// reference they must agree with bit for bit: one pass per term, the
// length normaliser computed at every posting, fresh arrays.
func (t *textIndex) scoreTermsPlain(qterms []qterm, p bm25, k int, keep func(id int64) bool) []textHit {
	n := len(t.docID)
	acc := make([]float32, n)
	var touched, inGroup []uint32
	var best []float32 // a group's best term score per document
	avg := float64(t.totalLen) / float64(max(t.live, 1))
	if avg <= 0 {
		avg = 1
	}
	// per-document length normaliser k1·(1 − b + b·len/avg), computed lazily
	N := float64(t.live)
	for j, qt := range qterms {
		tid := qt.tid
		df := float64(t.df[tid])
		if df > 0 {
			idf := qt.w * float32(max(math.Log((N-df+0.5)/(df+0.5)), 1e-6))
			pl := t.postings[tid]
			var d uint32
			var tfb uint8
			for i := 0; i < len(pl); {
				d, tfb, i = nextPosting(pl, i, d)
				if t.docID[d] <= 0 {
					continue
				}
				tf := float32(tfb)
				norm := float32(p.k1 * (1 - p.b + p.b*float64(t.docLen[d])/avg))
				sc := idf * tf * float32(p.k1+1) / (tf + norm)
				if qt.group == 0 {
					if acc[d] == 0 {
						touched = append(touched, d)
					}
					acc[d] += sc
					continue
				}
				if best == nil {
					best = make([]float32, n)
				}
				if best[d] == 0 {
					inGroup = append(inGroup, d)
				}
				best[d] = max(best[d], sc)
			}
		}
		if qt.group != 0 && (j+1 == len(qterms) || qterms[j+1].group != qt.group) {
			// the group's last term: its best scores join the sums
			for _, d := range inGroup {
				if acc[d] == 0 {
					touched = append(touched, d)
				}
				acc[d] += best[d]
				best[d] = 0
			}
			inGroup = inGroup[:0]
		}
	}
	h := make(hitHeap, 0, min(k, len(touched)))
	for _, d := range touched {
		x := textHit{id: t.docID[d], score: acc[d]}
		if len(h) == k && !worse(h[0], x) {
			continue
		}
		if !keep(x.id) {
			continue
		}
		h.offer(x, k)
	}
	slices.SortFunc(h, func(a, b textHit) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
	return h
}

// TestScoreTermsMatchesPlain: the ranking scoreTerms returns is, hit for
// hit and bit for bit in its scores, the one of the plain ranking, on
// stores of a few thousand documents of every shape recall meets:
// conversation turns whose words are in most documents, sparse
// memories, copies of one text (equal scores, ordered by id), removed
// documents, documents longer than the table of length normalisers,
// groups of kind terms, a keep filter, and k from 1 to more than the
// documents.
func TestScoreTermsMatchesPlain(t *testing.T) {
	cases := []struct {
		name  string
		docs  func(r *rand.Rand, i int) string
		n     int
		drop  int // every drop-th document is removed (0: none)
		keep  int // only ids not divisible by keep are kept (0: all)
		group bool
	}{
		{name: "conversation turns", n: 3000, docs: func(r *rand.Rand, i int) string {
			u, a := convExchange(r)
			if i%2 == 0 {
				return u
			}
			return a
		}},
		{name: "sparse memories", n: 3000, docs: benchText},
		{name: "copies tie", n: 2000, docs: func(r *rand.Rand, i int) string { return convText(rand.New(rand.NewPCG(uint64(i%7), 1)), 40) }},
		{name: "removed documents", n: 3000, drop: 3, docs: func(r *rand.Rand, i int) string { return convText(r, 20+r.IntN(200)) }},
		{name: "longer than the norm table", n: 600, docs: func(r *rand.Rand, i int) string { return convText(r, 10+r.IntN(3*normTable)) }},
		{name: "kind groups", n: 3000, group: true, docs: func(r *rand.Rand, i int) string { return convText(r, 30+r.IntN(200)) }},
		{name: "keep filter", n: 3000, keep: 3, group: true, docs: func(r *rand.Rand, i int) string { return convText(r, 30+r.IntN(200)) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(11, 12))
			ti := newTextIndex()
			for i := range tc.n {
				ti.put(int64(i+1), tc.docs(r, i))
			}
			if tc.drop > 0 {
				for id := int64(tc.drop); id <= int64(tc.n); id += int64(tc.drop) {
					ti.remove(id)
				}
			}
			keep := func(id int64) bool { return tc.keep == 0 || id%int64(tc.keep) != 0 }
			for q := range 40 {
				query := convText(r, 5+r.IntN(50))
				if q%4 == 0 {
					query = benchQuery(r)
				}
				qt := ti.queryTerms(query, nil)
				if tc.group {
					// the terms of two words of the query, as kindTerms
					// groups the kinds of a noun
					for g, kinds := range [][]string{{"piano", "lesson", "music"}, {"recipe", "lunch", "dinner", "market"}} {
						for _, k := range kinds {
							if tid, ok := ti.terms[embed.Stem(k)]; ok {
								qt = append(qt, qterm{tid: tid, w: 0.2, group: uint16(g + 1)})
							}
						}
					}
				}
				for _, k := range []int{1, 10, 100, tc.n + 1} {
					got := ti.scoreTerms(qt, defaultBM25, k, keep)
					want := ti.scoreTermsPlain(qt, defaultBM25, k, keep)
					if !slices.Equal(got, want) {
						t.Fatalf("query %q, k %d: got %d hits %v…, want %d %v…", query, k, len(got), got[:min(5, len(got))], len(want), want[:min(5, len(want))])
					}
				}
			}
		})
	}
}

// TestDot8 checks dot8 (sixteen products at a time with AVX2) against the
// sum of the products one by one, on every length up to 1,100 and on the
// extremes of int8, where a 16-bit product or pair sum would overflow.
func TestDot8(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	plain := func(a, b []int8) int32 {
		var s int32
		for i := range a {
			s += int32(a[i]) * int32(b[i])
		}
		return s
	}
	fills := []struct {
		name string
		v    func() int8
	}{
		{"random", func() int8 { return int8(r.IntN(255) - 127) }},
		{"all -128", func() int8 { return math.MinInt8 }},
		{"all 127", func() int8 { return math.MaxInt8 }},
		{"-128 or 127", func() int8 { return []int8{math.MinInt8, math.MaxInt8}[r.IntN(2)] }},
	}
	for _, f := range fills {
		t.Run(f.name, func(t *testing.T) {
			for n := range 1100 {
				// offsets so that rows start off any alignment
				off := r.IntN(16)
				a, b := make([]int8, n+off), make([]int8, n+off)
				for i := range a {
					a[i], b[i] = f.v(), f.v()
				}
				if got, want := dot8(a[off:], b[off:]), plain(a[off:], b[off:]); got != want {
					t.Fatalf("length %d: dot8 = %d, want %d", n, got, want)
				}
			}
		})
	}
}
