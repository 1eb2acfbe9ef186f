package memory

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
)

// The passage ranking (Tuning.PassageWeight) scores a memory by its best
// window of Tuning.PassageWidth consecutive sentences, read from the
// sentences the text index keeps (appendSentences): a long message that
// mixes a request with the fact a later question asks for matches that
// question in one sentence, where whole-text BM25 weighs the fact against
// everything else the message says. It ranks the candidates of the other
// rankings (and PassageCandidates full-text matches) and is fused with
// them as one more ranking.

// passageQuery is a query prepared for scoring windows of sentences: each
// distinct query term's weight (its idf times qterm.w) and group, a table
// from term id to its index in terms, and scratch kept between documents.
type passageQuery struct {
	terms  []passageTerm
	byTID  idTable[int32]
	k1     float64
	width  int32
	slot   []int32      // by a document's distinct term: its index in terms, −1 for none
	hits   []passageHit // a document's occurrences of query terms
	count  []int32      // by index in terms: its occurrences in the window
	groups []float64    // by group: its best term's score in the window
}

type passageTerm struct {
	idf   float64
	group uint16
}

// passageHit is an occurrence of a query term in a document: the sentence
// it is in and the term's index in passageQuery.terms.
type passageHit struct {
	sent int32
	term int32
}

// newPassageQuery prepares qterms (query terms and kind groups, as
// scoreTerms takes them) for windows of width sentences (at least 1), with
// BM25's term-frequency saturation k1. A term no live document holds, and
// a term repeated, are left out (the first of a repeated term counts).
func (t *textIndex) newPassageQuery(qterms []qterm, k1 float64, width int) *passageQuery {
	pq := &passageQuery{byTID: newIDTable[int32](len(qterms)), k1: k1, width: int32(max(width, 1))}
	N := float64(t.live)
	var maxGroup uint16
	for _, qt := range qterms {
		if t.df[qt.tid] <= 0 {
			continue
		}
		if _, ok := pq.byTID.get(qt.tid); ok {
			continue
		}
		df := float64(t.df[qt.tid])
		idf := float64(qt.w) * max(math.Log((N-df+0.5)/(df+0.5)), 1e-6)
		*pq.byTID.ref(qt.tid) = int32(len(pq.terms))
		pq.terms = append(pq.terms, passageTerm{idf: idf, group: qt.group})
		maxGroup = max(maxGroup, qt.group)
	}
	pq.count = make([]int32, len(pq.terms))
	pq.groups = make([]float64, int(maxGroup)+1)
	return pq
}

// passageScore returns the score of document d's best window of pq.width
// consecutive sentences: the sum over the query terms in it of
// idf·tf·(k1+1)/(tf+k1), tf counted in the window, a group counting its
// best term only (as scoreTerms counts them); 0 when d holds no query
// term.
func (t *textIndex) passageScore(pq *passageQuery, d uint32) float64 {
	if len(pq.terms) == 0 {
		return 0
	}
	pq.slot = pq.slot[:0]
	any := false
	for _, tid := range t.docTerms(d) {
		i, ok := pq.byTID.get(tid)
		if !ok {
			i = -1
		}
		any = any || ok
		pq.slot = append(pq.slot, i)
	}
	if !any {
		return 0
	}
	pq.hits = pq.hits[:0]
	sents := t.docSentences(d)
	if len(sents) == 0 {
		// one sentence holding each of the document's terms once
		for _, i := range pq.slot {
			if i >= 0 {
				pq.hits = append(pq.hits, passageHit{term: i})
			}
		}
		return pq.best()
	}
	sent := int32(0)
	for len(sents) > 0 {
		v, n := binary.Uvarint(sents)
		if n <= 0 || v > uint64(len(pq.slot)) {
			break // cannot happen: the index wrote them for this document
		}
		sents = sents[n:]
		if v == 0 {
			sent++
			continue
		}
		if i := pq.slot[v-1]; i >= 0 {
			pq.hits = append(pq.hits, passageHit{sent: sent, term: i})
		}
	}
	return pq.best()
}

// best returns the best window's score over pq.hits (in sentence order):
// each window that starts at a sentence holding a hit is scored.
func (pq *passageQuery) best() float64 {
	hits := pq.hits
	var best float64
	j := 0
	for i := 0; i < len(hits); {
		from := hits[i].sent
		for j < len(hits) && hits[j].sent < from+pq.width {
			pq.count[hits[j].term]++
			j++
		}
		best = max(best, pq.windowScore(hits[i:j]))
		for i < len(hits) && hits[i].sent == from {
			pq.count[hits[i].term]--
			i++
		}
	}
	return best
}

// windowScore scores the window holding hits, whose terms' counts are in
// pq.count (left as they were).
func (pq *passageQuery) windowScore(hits []passageHit) float64 {
	var s float64
	k1 := pq.k1
	for _, h := range hits {
		c := pq.count[h.term]
		if c <= 0 {
			continue // scored at its first occurrence
		}
		pq.count[h.term] = -c
		pt := pq.terms[h.term]
		tf := float64(c)
		v := pt.idf * tf * (k1 + 1) / (tf + k1)
		if pt.group == 0 {
			s += v
		} else {
			pq.groups[pt.group] = max(pq.groups[pt.group], v)
		}
	}
	for _, h := range hits {
		if c := pq.count[h.term]; c < 0 {
			pq.count[h.term] = -c
		}
	}
	for g, v := range pq.groups {
		s += v
		pq.groups[g] = 0
	}
	return s
}

// passage is the passage ranking: the candidates so far, and the
// full-text matches past them (pool), ranked by their best window of
// sentences (passageScore), best first and ties by id, fused at
// PassageWeight. A memory that holds no query term in any sentence is not
// ranked.
func (r *recallRun) passage() {
	if r.tune.PassageWeight <= 0 || (len(r.cs) == 0 && len(r.pool) == 0) {
		return
	}
	qterms := append(r.s.text.queryTerms(r.text, r.skip), r.kterms...)
	pq := r.s.text.newPassageQuery(qterms, r.bp.k1, r.tune.PassageWidth)
	type scored struct {
		slot  int
		id    int64
		score float64
	}
	var ranked []scored
	idx := r.s.idx
	score := func(sl int) {
		id := idx.ids[sl]
		d, ok := r.s.text.docOf(id)
		if !ok {
			return
		}
		if s := r.s.text.passageScore(pq, d); s > 0 {
			ranked = append(ranked, scored{sl, id, s})
		}
	}
	for i := range r.cs {
		score(r.cs[i].slot)
	}
	for _, h := range r.pool {
		if sl, ok := idx.slotOf(h.id); ok {
			if _, seen := r.byslot.get(uint32(sl)); !seen {
				score(sl)
			}
		}
	}
	slices.SortFunc(ranked, func(a, b scored) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(a.id, b.id)
	})
	for rank, p := range ranked {
		r.get(p.slot).fused += r.tune.PassageWeight / (r.tune.RRFK + float64(rank+1))
	}
}

// passagePool is how many full-text matches the passage ranking scores
// (0 when it is off).
func (r *recallRun) passagePool() int {
	if r.tune.PassageWeight <= 0 {
		return 0
	}
	return r.tune.PassageCandidates
}
