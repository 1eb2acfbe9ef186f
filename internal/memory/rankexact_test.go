package memory

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

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
			ti := indexOf(r, tc.n, tc.drop, tc.docs)
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

// coveragePlain is coverage as it was before its speed-ups (two maps
// looked up at every term of every memory), the reference it must agree
// with bit for bit. It returns, for each memory id, the share of the query's word
// weight its text holds: the idf of the query's content-word stems it
// contains over the idf of all of them (a stem counted once however often
// it occurs), a stem no memory holds weighing as
// one held by none (so a query about something never told is barely
// covered by any memory). A memory holding one of the kinds of a noun of
// the query (kindTerms: kinds and, by group, the stems of the noun's words)
// holds the noun's words. 0 for a memory not indexed or a query without
// content words.
func (t *textIndex) coveragePlain(query string, skip map[string]bool, ids []int64, kinds []qterm, nouns [][]string) []float64 {
	out := make([]float64, len(ids))
	N := float64(t.live)
	// Lucene's idf, which stays positive for a word most memories hold (in
	// a small store BM25's own would weigh it zero).
	idf := func(df float64) float64 { return math.Log(1 + (N-df+0.5)/(df+0.5)) }
	var total float64
	weight := map[uint32]float64{}
	stemWeight := map[string]float64{}
	seen := map[string]bool{}
	for _, w := range embed.Words(query) {
		if skip[w] || embed.IsStopWord(w) {
			continue
		}
		st := embed.Stem(w)
		if seen[st] {
			continue
		}
		seen[st] = true
		tid, ok := t.terms[st]
		if !ok || t.df[tid] <= 0 {
			total += idf(0)
			stemWeight[st] = idf(0) // a kind of it may be held
			continue
		}
		wt := idf(float64(t.df[tid]))
		weight[tid] = wt
		stemWeight[st] = wt
		total += wt
	}
	if total <= 0 {
		return out
	}
	kc := t.newKindCoverPlain(kinds, nouns, stemWeight)
	for i, id := range ids {
		d, ok := t.docOf(id)
		if !ok {
			continue
		}
		var s float64
		for _, tid := range t.docTerms(d) {
			s += weight[tid]
		}
		out[i] = (s + kc.weight(t.docTerms(d))) / total
	}
	return out
}

// kindCoverPlain is kindCover as it was: it measures how much of a query's word weight a memory holds
// through the kinds of its nouns.
type kindCoverPlain struct {
	t      *textIndex
	group  map[uint32]uint16 // kind term → its group
	nouns  [][]string        // by group − 1: the noun's stems
	stemWt map[string]float64
}

// newKindCoverPlain prepares kindCoverPlain for the kinds and nouns kindTerms
// returned, stemWeight being the query stems' weights.
func (t *textIndex) newKindCoverPlain(kinds []qterm, nouns [][]string, stemWeight map[string]float64) kindCoverPlain {
	kc := kindCoverPlain{t: t, nouns: nouns, stemWt: stemWeight}
	if len(kinds) > 0 {
		kc.group = make(map[uint32]uint16, len(kinds))
		for _, k := range kinds {
			kc.group[k.tid] = k.group
		}
	}
	return kc
}

// weight returns the weight of the nouns' stems that a memory with the
// distinct terms doc covers through a kind and does not hold itself
// (coverage counts those).
func (kc kindCoverPlain) weight(doc []uint32) float64 {
	if len(kc.group) == 0 {
		return 0
	}
	var covered []string
	for _, tid := range doc {
		g, ok := kc.group[tid]
		if !ok {
			continue
		}
		for _, st := range kc.nouns[g-1] {
			if !slices.Contains(covered, st) {
				covered = append(covered, st)
			}
		}
	}
	var s float64
	for _, st := range covered {
		if tid, ok := kc.t.terms[st]; ok && slices.Contains(doc, tid) {
			continue // held itself
		}
		s += kc.stemWt[st]
	}
	return s
}

// kindWords are nouns with kinds in the lexicon and some of their kinds,
// so that coverage's queries name nouns whose kinds the memories hold.
var kindWords = strings.Fields(`musical instruments instrument guitar violin drum piano doctors doctor
dermatologist surgeon dentist tools tool hammer saw drill vehicles car bicycle truck fruit apple banana
marriage married photography photographer`)

// TestCoverageMatchesPlain: coverage gives every memory the share the
// plain code gives it, bit for bit, on stores of conversation turns and
// of memories naming nouns and their kinds, with removed documents, for
// queries naming nouns with kinds (both relations, as DefaultTuning
// weighs them), skipped words, and ids of removed and unknown memories.
func TestCoverageMatchesPlain(t *testing.T) {
	mixed := func(r *rand.Rand, n int) string {
		ws := make([]string, n)
		for i := range ws {
			if r.IntN(4) == 0 {
				ws[i] = kindWords[r.IntN(len(kindWords))]
			} else {
				ws[i] = convWords[r.IntN(len(convWords))]
			}
		}
		return strings.Join(ws, " ")
	}
	cases := []struct {
		name string
		n    int
		drop int
		docs func(r *rand.Rand, i int) string
	}{
		{name: "conversation turns", n: 2000, docs: func(r *rand.Rand, i int) string {
			u, a := convExchange(r)
			if i%2 == 0 {
				return u
			}
			return a
		}},
		{name: "nouns and kinds", n: 2000, docs: func(r *rand.Rand, i int) string { return mixed(r, 5+r.IntN(120)) }},
		{name: "removed documents", n: 2000, drop: 3, docs: func(r *rand.Rand, i int) string { return mixed(r, 5+r.IntN(60)) }},
		{name: "sparse memories", n: 1000, docs: benchText},
	}
	w := DefaultTuning.relWeights()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(21, 22))
			ti := indexOf(r, tc.n, tc.drop, tc.docs)
			all := func(int64) bool { return true }
			withKinds := 0
			for q := range 60 {
				query := mixed(r, 3+r.IntN(40))
				if q%5 == 0 {
					query = benchQuery(r)
				}
				var skip map[string]bool
				if q%3 == 0 {
					skip = map[string]bool{embed.Words(query)[0]: true}
				}
				kinds, nouns := ti.kindTerms(query, skip, ti.queryTerms(query, skip), w)
				var ids []int64
				for _, h := range ti.search(query, skip, defaultBM25, 30, all, kinds) {
					ids = append(ids, h.id)
				}
				ids = append(ids, int64(1+r.IntN(tc.n)), int64(tc.n+5), 0)
				got := ti.coverage(query, skip, ids, kinds, nouns)
				want := ti.coveragePlain(query, skip, ids, kinds, nouns)
				for i := range want {
					if math.Float64bits(got[i]) != math.Float64bits(want[i]) {
						t.Fatalf("query %q, memory %d: coverage %v, want %v (kinds %v)", query, ids[i], got[i], want[i], kinds)
					}
				}
				if len(kinds) > 0 {
					withKinds++
				}
			}
			if tc.name == "nouns and kinds" && withKinds < 20 {
				t.Fatalf("%d queries of 60 with kind terms: the test tests too few", withKinds)
			}
		})
	}
}

// TestBestFirstMatchesSort: bestFirst gives the first k candidates of a
// full sort, in its order, for k from 0 to more than the candidates, with
// equal scores (ordered by id) and NaN.
func TestBestFirstMatchesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(31, 32))
	ids := make([]int64, 600)
	for i := range ids {
		ids[i] = int64(r.IntN(1 << 20))
	}
	order := func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(ids[a.slot], ids[b.slot])
	}
	for _, n := range []int{0, 1, 7, 30, 31, 100, 400} {
		for _, k := range []int{0, 1, 2, 29, 30, 31, 399, 401} {
			cs := make([]cand, n)
			perm := r.Perm(len(ids))
			for i := range cs {
				cs[i] = cand{slot: perm[i], score: float64(r.IntN(20)) / 4}
				if r.IntN(50) == 0 {
					cs[i].score = math.NaN()
				}
			}
			want := slices.Clone(cs)
			slices.SortFunc(want, order)
			want = want[:min(k, n)]
			got := bestFirst(cs, k, order)
			if len(got) != len(want) {
				t.Fatalf("n %d, k %d: %d candidates, want %d", n, k, len(got), len(want))
			}
			for i := range want {
				if got[i].slot != want[i].slot {
					t.Fatalf("n %d, k %d: candidate %d is slot %d, want %d", n, k, i, got[i].slot, want[i].slot)
				}
			}
		}
	}
}

// TestSlotTable: the table of recall's candidates by slot holds what a map
// holds, through growth and resets, for slots from 0 on; ref finds what
// the table holds.
func TestSlotTable(t *testing.T) {
	r := rand.New(rand.NewPCG(41, 42))
	st := newIDTable[int32](8)
	for round := range 4 {
		want := map[uint32]int32{}
		for i := range int32(3000) {
			sl := uint32(r.IntN(5000))
			if round == 0 && i == 0 {
				sl = 0
			}
			if w, ok := want[sl]; !ok {
				want[sl] = i
				*st.ref(sl) = i
			} else if got := *st.ref(sl); got != w {
				t.Fatalf("round %d: ref(%d) = %d, want %d", round, sl, got, w)
			}
			probe := uint32(r.IntN(5000))
			got, ok := st.get(probe)
			w, wok := want[probe]
			if ok != wok || (ok && got != w) {
				t.Fatalf("round %d: get(%d) = %d, %v, want %d, %v", round, probe, got, ok, w, wok)
			}
		}
		st.reset()
		if _, ok := st.get(0); ok {
			t.Fatal("a reset table holds slot 0")
		}
	}
}

// finalScorePlain is finalScore as it was, computing the length prior
// itself, the reference it must agree with bit for bit. It combines the
// fused rank score with the re-scoring factors; see
// doc.go for the formula. named: the query names the memory's speaker;
// lenRatio is the memory's word count over the average.
func (t Tuning) finalScorePlain(fused float64, m *slotMeta, in intent, named bool, when period, lenRatio float64, at int64) float64 {
	maxFused := (t.TextWeight + t.VectorWeight) / (t.RRFK + 1)
	rel := fused / maxFused
	boost := 1 + t.RecencyBoost*recency(m, at, t.RecencyDays) +
		t.StrengthBoost*recallGain(m, at, t.strengthDays(m.kind.Kind())) +
		t.IntentBoost*intentMatch(in, m)
	if named {
		boost *= 1 + t.SpeakerBoost
	}
	if t.DateBoost > 0 && when.named() {
		d := m.eventTime
		if d == 0 {
			d = m.createdAt
		}
		if when.contains(d, 24*time.Hour, time.Duration(t.DateSlackDays*float64(24*time.Hour))) {
			boost *= 1 + t.DateBoost
		}
	}
	if t.LengthPrior != 0 && lenRatio > 0 {
		boost *= math.Pow(lenRatio, t.LengthPrior)
	}
	return rel * boost
}

// TestFinalScoreMatchesPlain: finalScore with the length prior computed
// apart (lengthPrior, once per word count in rescore) scores every memory
// bit for bit as the plain code, for every boost at once and with the
// length prior off.
func TestFinalScoreMatchesPlain(t *testing.T) {
	r := rand.New(rand.NewPCG(51, 52))
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	off := DefaultTuning
	off.LengthPrior = 0
	intents := []intent{{}, {temporal: true}, {preference: true}, {procedure: true, opinion: true}}
	periods := []period{queryPeriod("what did I do", at), queryPeriod("what happened in February 2026", at), queryPeriod("on 13 February, 2026", at)}
	for _, tune := range []Tuning{DefaultTuning, off} {
		for range 20000 {
			m := &slotMeta{
				createdAt:   ns(at.Add(-time.Duration(r.IntN(90*24)) * time.Hour)),
				kind:        kindCode(r.IntN(6)),
				words:       uint16(r.IntN(400)),
				accessCount: int32(r.IntN(5)),
				temporal:    r.IntN(2) == 0,
			}
			if r.IntN(2) == 0 {
				m.eventTime = m.createdAt - int64(r.IntN(10*24))*int64(time.Hour)
			}
			if r.IntN(2) == 0 {
				m.lastAccess = m.createdAt + int64(r.IntN(24))*int64(time.Hour)
			}
			fused := r.Float64() * 0.3
			avgLen := 20 + r.Float64()*200
			lenRatio := float64(max(m.words, 1)) / avgLen
			in, when, named := intents[r.IntN(len(intents))], periods[r.IntN(len(periods))], r.IntN(3) == 0
			got := tune.finalScore(fused, m, in, named, when, tune.lengthPrior(lenRatio), ns(at))
			want := tune.finalScorePlain(fused, m, in, named, when, lenRatio, ns(at))
			if math.Float64bits(got) != math.Float64bits(want) {
				t.Fatalf("memory %+v: score %v, want %v", *m, got, want)
			}
		}
	}
}

// indexOf is a text index of n documents docs(r, i), ids 1..n, with every
// drop-th id removed again (none when drop is 0).
func indexOf(r *rand.Rand, n, drop int, docs func(*rand.Rand, int) string) *textIndex {
	ti := newTextIndex()
	for i := range n {
		ti.put(int64(i+1), docs(r, i))
	}
	if drop > 0 {
		for id := int64(drop); id <= int64(n); id += int64(drop) {
			ti.remove(id)
		}
	}
	return ti
}
