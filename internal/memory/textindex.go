package memory

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"sync"
	"unsafe"

	"github.com/reverie-ai/reverie/internal/embed"
)

// textIndex is an in-memory BM25 inverted index over memory texts, the
// full-text side of recall. It mirrors the FTS5 table (which stays the
// durable index and serves TextSearch) because FTS5 under the pure-Go SQLite
// scores every matching row through a callback: about 5 ms per query at 10k
// memories and 50 ms at 100k, against well under 1 ms here.
//
// Documents get sequential numbers that are never reused; removal leaves a
// tombstone and the lists are compacted when a quarter are dead. Not safe
// for concurrent use: the store guards it (queries under its read lock use a
// pooled accumulator).
//
// The layout is dense because every stored memory (two episodes a turn)
// stays in it for the agent's life: a term's postings are one byte slice
// (see appendPosting), a document's distinct terms a range of one shared array
// (docOff into termIDs), no per-document allocation; about 110 B a
// document against 270 B with a slice pair per term and a slice per
// document.
type textIndex struct {
	terms    map[string]uint32
	postings [][]byte // by term id, encoded as appendPosting says
	lastDoc  []uint32 // by term id: the last document in its postings
	df       []int32  // live documents per term

	docID  []int64  // docno → memory id, negated once removed
	docLen []uint16 // docno → number of indexed terms
	docOff []uint32 // docno → start of its distinct term ids in termIDs
	// termIDs are every document's distinct term ids, in docno order, in
	// termSpace: ~15 a document, the largest part of the index, read
	// only for the few documents a recall shows (coverage) and when one
	// is removed, so a file mapping keeps them out of the heap and trim
	// out of the resident memory.
	termIDs   []uint32
	termSpace vecSpace
	// sents holds every document's indexed terms grouped by sentence
	// (appendSentences), from sentOff[docno]: read only for the few
	// hundred documents a recall's passage ranking scores (passageScore),
	// so both are in file mappings too (sentSpace, offSpace), as termIDs.
	sents     []byte
	sentOff   []uint32
	sentSpace vecSpace
	offSpace  vecSpace
	// byID maps memory ids to live docnos once a document came out of
	// order; nil while the ids ascend with the docnos (memories are put
	// in the order the database numbers them), when docOf finds them by
	// binary search in docID: a map would cost ~30 B a document.
	byID map[int64]uint32
	live int
	// dead counts the term ids in termIDs of removed documents.
	dead     int
	totalLen int64
	// fresh counts the documents put since the last pack.
	fresh int

	pool sync.Pool // *scoreScratch
}

// A posting list holds a term's documents in ascending docno order, each
// one uvarint of (docno − previous docno)<<1 | (tf > 1) (the first's
// previous docno is 0), followed by a byte holding tf (≤ 255) when tf > 1.
// Most postings take one byte.

// appendPosting adds document d (above every document in p; prev is the
// last of them, 0 when p is empty) with term frequency tf to p.
func appendPosting(p []byte, prev, d uint32, tf int) []byte {
	v := uint64(d-prev) << 1
	if tf > 1 {
		v |= 1
	}
	for v >= 0x80 {
		p = append(p, byte(v)|0x80)
		v >>= 7
	}
	p = append(p, byte(v))
	if tf > 1 {
		p = append(p, uint8(min(tf, 255)))
	}
	return p
}

// nextPosting decodes the posting at p[i:] after document d (0 for the
// first): it returns the document, its term frequency and the offset of
// the next posting.
func nextPosting(p []byte, i int, d uint32) (uint32, uint8, int) {
	v := uint64(p[i])
	i++
	if v >= 0x80 {
		v &= 0x7f
		for shift := 7; ; shift += 7 {
			b := p[i]
			i++
			v |= uint64(b&0x7f) << shift
			if b < 0x80 {
				break
			}
		}
	}
	tf := uint8(1)
	if v&1 != 0 {
		tf = p[i]
		i++
	}
	return d + uint32(v>>1), tf, i
}

// docTerms returns document d's distinct term ids (in termIDs: valid until
// the next put or compaction).
func (t *textIndex) docTerms(d uint32) []uint32 {
	end := uint32(len(t.termIDs))
	if int(d)+1 < len(t.docOff) {
		end = t.docOff[d+1]
	}
	return t.termIDs[t.docOff[d]:end]
}

// bm25 holds the BM25 parameters: k1 (term-frequency saturation) and b
// (length normalisation).
// (length normalisation), and the weight of a query's consecutive-word
// pairs relative to its single words (0: pairs are not matched).
type bm25 struct{ k1, b, bigram float64 }

// defaultBM25 is the textbook setting, used when Tuning leaves them zero.
var defaultBM25 = bm25{k1: 1.2, b: 0.75}

// newTextIndex returns an empty text index keeping everything in the
// heap.
func newTextIndex() *textIndex { return newTextIndexIn(heapSpace{}, heapSpace{}, heapSpace{}) }

// newTextIndexIn returns an empty text index keeping the documents' term
// ids in terms, their sentences in sents and where each document's
// sentences start in offs.
func newTextIndexIn(terms, sents, offs vecSpace) *textIndex {
	return &textIndex{terms: map[string]uint32{}, termSpace: terms, sentSpace: sents, offSpace: offs}
}

// growTermIDs makes room for n more term ids in t.termIDs, its capacity
// grown by a quarter when it must grow (as room).
func (t *textIndex) growTermIDs(n int) { t.termIDs = growUint32s(t.termSpace, t.termIDs, n) }

// growUint32s makes room for n more values in u, kept in space, its
// capacity grown by a quarter (at least 64) when it must grow.
func growUint32s(space vecSpace, u []uint32, n int) []uint32 {
	need := len(u) + n
	if need > cap(u) {
		c := max(need, cap(u)+cap(u)/4, 64)
		u = int8sAsUint32s(space.grow(uint32sAsInt8s(u), 4*c))
	}
	return u
}

// growSents makes room for n more bytes of sentences in t.sents and one
// more offset in t.sentOff, as growTermIDs does.
func (t *textIndex) growSents(n int) {
	if need := len(t.sents) + n; need > cap(t.sents) {
		c := max(need, cap(t.sents)+cap(t.sents)/4, 256)
		t.sents = int8sAsBytes(t.sentSpace.grow(bytesAsInt8s(t.sents), c))
	}
	t.sentOff = growUint32s(t.offSpace, t.sentOff, 1)
}

// bytesAsInt8s and int8sAsBytes view the same memory as bytes of either
// type.
func bytesAsInt8s(b []byte) []int8 {
	if cap(b) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), cap(b))[:len(b)]
}

func int8sAsBytes(b []int8) []byte {
	if cap(b) == 0 {
		return nil
	}
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), cap(b))[:len(b)]
}

// uint32sAsInt8s and int8sAsUint32s view the same memory as term ids or as
// the bytes a vecSpace holds (4-byte aligned, see wordsAsInt8s).
func uint32sAsInt8s(u []uint32) []int8 {
	if cap(u) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(u))), 4*cap(u))[:4*len(u)]
}

func int8sAsUint32s(b []int8) []uint32 {
	if cap(b) < 4 {
		return nil
	}
	return unsafe.Slice((*uint32)(unsafe.Pointer(unsafe.SliceData(b))), cap(b)/4)[:len(b)/4]
}

// trim drops the term ids' and sentences' pages from the resident memory
// when they are in file mappings (see vecSpace).
func (t *textIndex) trim() {
	t.termSpace.trim()
	t.sentSpace.trim()
	t.offSpace.trim()
}

// reserve makes room for n more documents (see index.reserve).
func (t *textIndex) reserve(n int) {
	if n <= 0 {
		return
	}
	t.docID = slices.Grow(t.docID, n)
	t.docLen = slices.Grow(t.docLen, n)
	t.docOff = slices.Grow(t.docOff, n)
}

// docOf returns the live document of memory id.
func (t *textIndex) docOf(id int64) (uint32, bool) {
	if t.byID != nil {
		d, ok := t.byID[id]
		return d, ok
	}
	i, found := slices.BinarySearchFunc(t.docID, id, func(e, id int64) int { return cmp.Compare(max(e, -e), id) })
	if !found || t.docID[i] <= 0 {
		return 0, false
	}
	return uint32(i), true
}

// mapIDs builds byID from the live documents: id, about to be put, does
// not ascend from the last document's (an update of an older memory, or
// writers that raced).
func (t *textIndex) mapIDs() {
	t.byID = make(map[int64]uint32, t.live+1)
	for d, id := range t.docID {
		if id > 0 {
			t.byID[id] = uint32(d)
		}
	}
}

// indexText returns the stemmed content words of text in order, the unit
// both documents and queries are matched on, and the number of words,
// stop words included (for BM25's length normalisation), from one pass
// over its words. cuts are the indexes in terms where a sentence starts
// (the first's, 0, left out): each line of text is split into sentences as
// an excerpt splits a paragraph (sentences), and a sentence without a
// content word starts none.
func indexText(text string) (terms []string, cuts []int, length int) {
	ends := sentenceEnds(text)
	k, last := 0, 0 // the sentence of the word at hand, of the last term
	embed.EachWord(text, func(w string, at int) {
		length++
		if embed.IsStopWord(w) {
			return
		}
		for k+1 < len(ends) && at >= ends[k] {
			k++
		}
		if k != last && len(terms) > 0 {
			cuts = append(cuts, len(terms))
		}
		last = k
		terms = append(terms, embed.Stem(w))
	})
	return terms, cuts, length
}

// sentenceEnds returns where each sentence of text ends (ascending byte
// offsets): its lines split as sentences splits a paragraph, so that a
// heading, a list item, a line of code or of a table is a sentence or
// more of its own.
func sentenceEnds(text string) []int {
	var ends []int
	for from := 0; from < len(text); {
		to := strings.IndexByte(text[from:], '\n')
		if to < 0 {
			to = len(text)
		} else {
			to += from
		}
		for _, sp := range sentences(text, span{from, to}) {
			ends = append(ends, sp.to)
		}
		from = to + 1
	}
	return ends
}

// A document's sentences (sents, from sentOff[docno]) are its indexed
// terms in text order, each one uvarint of the term's index among the
// document's distinct terms (docTerms, in order of first occurrence) plus
// one, and a 0 between two sentences. Most terms take one byte. A
// document of one sentence whose terms are all distinct (the sequence
// would be 1, 2, …, n) stores nothing: the empty sequence stands for it,
// as for a document without terms.

// appendSentences appends the sentences of a document's terms (in text
// order, a sentence starting at each of cuts) to b, given each distinct
// term's index among the document's (local; distinct of them).
func appendSentences(b []byte, terms []string, cuts []int, local map[string]int, distinct int) []byte {
	if len(cuts) == 0 && len(terms) == distinct {
		return b
	}
	for i, w := range terms {
		if len(cuts) > 0 && cuts[0] == i {
			b = append(b, 0)
			cuts = cuts[1:]
		}
		b = binary.AppendUvarint(b, uint64(local[w])+1)
	}
	return b
}

// docSentences returns document d's sentences (see appendSentences; in
// sents: valid until the next put or compaction).
func (t *textIndex) docSentences(d uint32) []byte {
	end := uint32(len(t.sents))
	if int(d)+1 < len(t.sentOff) {
		end = t.sentOff[d+1]
	}
	return t.sents[t.sentOff[d]:end]
}

// put indexes text for id, replacing any previous text of id.
func (t *textIndex) put(id int64, text string) {
	t.remove(id)
	if n := len(t.docID); t.byID == nil && n > 0 && id <= max(t.docID[n-1], -t.docID[n-1]) {
		t.mapIDs()
	}
	terms, cuts, length := indexText(text)
	// each distinct term's index among the document's (in order of first
	// occurrence), and its frequency by that index
	local := map[string]int{}
	var order []string
	var tf []int
	for _, w := range terms {
		i, ok := local[w]
		if !ok {
			i = len(order)
			local[w] = i
			order = append(order, w)
			tf = append(tf, 0)
		}
		tf[i]++
	}
	doc := uint32(len(t.docID))
	t.docOff = append(room(t.docOff, 1), uint32(len(t.termIDs)))
	t.growSents(len(cuts) + binary.MaxVarintLen32*len(terms))
	t.sentOff = append(t.sentOff, uint32(len(t.sents)))
	t.sents = appendSentences(t.sents, terms, cuts, local, len(order))
	t.growTermIDs(len(order))
	for i, w := range order {
		n := tf[i]
		tid, ok := t.terms[w]
		if !ok {
			tid = uint32(len(t.postings))
			t.terms[w] = tid
			t.postings = append(room(t.postings, 1), nil)
			t.lastDoc = append(room(t.lastDoc, 1), 0)
			t.df = append(room(t.df, 1), 0)
		}
		t.postings[tid] = appendPosting(t.postings[tid], t.lastDoc[tid], doc, n)
		t.lastDoc[tid] = doc
		t.df[tid]++
		t.termIDs = append(t.termIDs, tid)
	}
	t.docID = append(room(t.docID, 1), id)
	t.docLen = append(room(t.docLen, 1), uint16(min(length, math.MaxUint16)))
	if t.byID != nil {
		t.byID[id] = doc
	}
	t.live++
	t.totalLen += int64(min(length, math.MaxUint16))
	t.fresh++
}

// pack moves every posting list into one array and every term's text into
// one string, and rebuilds the term map at its size. Growing one small
// posting list and one term string at a time leaves them scattered across
// the heap's spans among a turn's short-lived garbage, and each keeps its
// span resident after that garbage is collected; packed, they are two
// allocations and the spans can go back to the OS. A list grown later
// moves out to a fresh array of its own (each packed list's capacity is
// its length), until the next pack. It runs when the process hands memory
// back (VectorStore.TrimIndex), not on the way of a turn, whenever a
// document was put since the last pack: a pack takes ~0.1 ms at 3,000
// documents and ~5 ms at 100k (one core, under the store's lock), and the
// lists and term strings a burst of turns left unpacked are small objects
// that live as long as the index, each keeping a span of the heap resident
// that the burst's garbage shared (an earlier rule, packing only when the
// new documents were an eighth of the live ones, left a few hundred turns'
// worth unpacked after most bursts: ~60 KB of lists at 3,000 documents, and
// as much again of free slots in the spans they held).
func (t *textIndex) pack() {
	if t.fresh == 0 {
		return
	}
	t.fresh = 0
	var n int
	for _, p := range t.postings {
		n += len(p)
	}
	arena := make([]byte, 0, spanFit(n, 1))
	for i, p := range t.postings {
		at := len(arena)
		arena = append(arena, p...)
		t.postings[i] = arena[at:len(arena):len(arena)]
	}
	words := make([]string, len(t.postings))
	n = 0
	for w, tid := range t.terms {
		words[tid] = w
		n += len(w)
	}
	var b strings.Builder
	b.Grow(spanFit(n, 1))
	for _, w := range words {
		b.WriteString(w)
	}
	all := b.String()
	terms := make(map[string]uint32, len(words))
	at := 0
	for tid, w := range words {
		terms[all[at:at+len(w)]] = uint32(tid)
		at += len(w)
	}
	t.terms = terms
}

// remove drops id's document (a tombstone until compaction).
func (t *textIndex) remove(id int64) {
	doc, ok := t.docOf(id)
	if !ok {
		return
	}
	if t.byID != nil {
		delete(t.byID, id)
	}
	terms := t.docTerms(doc)
	for _, tid := range terms {
		t.df[tid]--
	}
	t.dead += len(terms)
	t.totalLen -= int64(t.docLen[doc])
	t.docID[doc] = -id
	t.live--
	if dead := len(t.docID) - t.live; dead > 1024 && dead*4 > len(t.docID) {
		t.compact()
	}
}

// compact renumbers live documents and drops dead postings and term ids.
func (t *textIndex) compact() {
	remap := make([]uint32, len(t.docID))
	ids := make([]int64, 0, t.live)
	lens := make([]uint16, 0, t.live)
	offs := make([]uint32, 0, t.live)
	tids := make([]uint32, 0, len(t.termIDs)-t.dead)
	sentOff := make([]uint32, 0, t.live)
	var sents []byte
	for d, id := range t.docID {
		if id <= 0 {
			remap[d] = math.MaxUint32
			continue
		}
		remap[d] = uint32(len(ids))
		if t.byID != nil {
			t.byID[id] = remap[d]
		}
		ids = append(ids, id)
		lens = append(lens, t.docLen[d])
		offs = append(offs, uint32(len(tids)))
		tids = append(tids, t.docTerms(uint32(d))...)
		sentOff = append(sentOff, uint32(len(sents)))
		sents = append(sents, t.docSentences(uint32(d))...)
	}
	for tid, p := range t.postings {
		var out []byte
		var d, last uint32
		var tf uint8
		for i := 0; i < len(p); {
			d, tf, i = nextPosting(p, i, d)
			if nd := remap[d]; nd != math.MaxUint32 {
				out = appendPosting(out, last, nd, int(tf))
				last = nd
			}
		}
		t.postings[tid], t.lastDoc[tid] = out, last
	}
	// the live term ids and sentences, collected in the heap, replace the
	// old ones in their spaces
	t.termIDs = t.termIDs[:0]
	t.growTermIDs(len(tids))
	t.termIDs = append(t.termIDs, tids...)
	t.sents, t.sentOff = t.sents[:0], t.sentOff[:0]
	t.growSents(len(sents))
	t.sents = append(t.sents, sents...)
	t.sentOff = growUint32s(t.offSpace, t.sentOff, len(sentOff))
	t.sentOff = append(t.sentOff, sentOff...)
	t.docID, t.docLen, t.docOff, t.dead = ids, lens, offs, 0
	t.pool = sync.Pool{}
}

// avgLen returns the average word count of the indexed texts (1 when
// empty).
func (t *textIndex) avgLen() float64 {
	if t.live == 0 || t.totalLen <= 0 {
		return 1
	}
	return float64(t.totalLen) / float64(t.live)
}

type textHit struct {
	id    int64
	score float32
}

// hitHeap keeps the best hits seen so far as a min-heap (the worst kept
// hit at the root), typed so that no hit is boxed into an interface.
type hitHeap []textHit

// worse reports whether a ranks below b: lower score, then higher id.
func worse(a, b textHit) bool {
	if a.score != b.score {
		return a.score < b.score
	}
	return a.id > b.id
}

func (h hitHeap) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !worse(h[i], h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (h hitHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}

// offer adds x when fewer than k hits are kept or x beats the worst.
func (h *hitHeap) offer(x textHit, k int) {
	if len(*h) < k {
		*h = append(*h, x)
		h.up(len(*h) - 1)
		return
	}
	if worse((*h)[0], x) {
		(*h)[0] = x
		h.down(0)
	}
}

// qterm is a query term with its weight. Terms of the same non-zero group
// are alternatives (the kinds of one noun, see kindTerms): a document
// scores only its best term of the group.
type qterm struct {
	tid   uint32
	w     float32
	group uint16
}

// queryTerms returns the indexed content-word stems of query, weight 1.
// skip lists query words (unstemmed, lower-case) to ignore; when only stop
// words remain, they are used.
func (t *textIndex) queryTerms(query string, skip map[string]bool) []qterm {
	words := embed.Words(query)
	seen := map[uint32]bool{}
	var out []qterm
	for pass := 0; pass < 2 && len(out) == 0; pass++ {
		for _, w := range words {
			if skip[w] || (pass == 0 && embed.IsStopWord(w)) {
				continue
			}
			if tid, ok := t.terms[embed.Stem(w)]; ok && !seen[tid] {
				seen[tid] = true
				out = append(out, qterm{tid: tid, w: 1})
			}
		}
	}
	return out
}

// search returns up to k memory ids accepted by keep, best BM25 score first
// (ties by id); see queryTerms for the query. The terms kinds (kindTerms)
// are searched too.
func (t *textIndex) search(query string, skip map[string]bool, p bm25, k int, keep func(id int64) bool, kinds []qterm) []textHit {
	if t.live == 0 || k <= 0 {
		return nil
	}
	// words related to the query's (kinds) search even when none of its
	// own is in any memory
	qterms := append(t.queryTerms(query, skip), kinds...)
	if len(qterms) == 0 {
		return nil
	}
	return t.scoreTerms(qterms, p, k, keep)
}

// expand returns the query terms plus up to n feedback terms: the terms
// of the given top documents with the highest sum, over the documents
// holding them, of idf times the document's score relative to the best
// one (pseudo-relevance feedback; the score weighting is RM3's P(Q|D)).
func (t *textIndex) expand(query string, skip map[string]bool, top []textHit, n int) []qterm {
	q := map[uint32]bool{}
	var qterms []qterm
	for _, w := range embed.Words(query) {
		if skip[w] || embed.IsStopWord(w) {
			continue
		}
		if tid, ok := t.terms[embed.Stem(w)]; ok && !q[tid] {
			q[tid] = true
			qterms = append(qterms, qterm{tid: tid, w: 1})
		}
	}
	if len(qterms) == 0 {
		return nil
	}
	weight := map[uint32]float64{}
	N := float64(t.live)
	for _, h := range top {
		d, ok := t.docOf(h.id)
		if !ok {
			continue
		}
		// a document counts for what it shares with the query (RM3's
		// P(Q|D)): its score relative to the best
		dw := 1.0
		if top[0].score > 0 {
			dw = float64(h.score / top[0].score)
		}
		for _, tid := range t.docTerms(d) {
			if q[tid] {
				continue
			}
			df := float64(t.df[tid])
			if df < 2 {
				continue // a term of one document only says nothing about others
			}
			weight[tid] += dw * math.Log((N-df+0.5)/(df+0.5))
		}
	}
	type tw struct {
		tid uint32
		w   float64
	}
	var cands []tw
	for tid, w := range weight {
		if w > 0 {
			cands = append(cands, tw{tid, w})
		}
	}
	slices.SortFunc(cands, func(a, b tw) int {
		if c := cmp.Compare(b.w, a.w); c != 0 {
			return c
		}
		return cmp.Compare(a.tid, b.tid)
	})
	for i := 0; i < n && i < len(cands); i++ {
		qterms = append(qterms, qterm{tid: cands[i].tid, w: 1})
	}
	return qterms
}

// scoreScratch is what a ranking by scoreTerms works in, kept in
// textIndex.pool for the next: per-document sums and a group's best scores
// (all zero between rankings), and the lists of documents they touched.
// Sized by the index (with a quarter to spare as it grows), so that a turn
// does not allocate arrays as long as the index, of a new size class at
// every few hundred memories.
type scoreScratch struct {
	acc, best        []float32
	touched, inGroup []uint32
	// norms[l] is the length normaliser of a document of l words in the
	// ranking under way, NaN until a posting needs it (normOf)
	norms [normTable]float32
}

// normTable is how many document lengths (in words) scoreTerms keeps the
// BM25 length normaliser of; a longer document's is computed at each of
// its postings. Stored texts are MaxTextLen characters at most, so few
// documents are longer.
const normTable = 1024

// normOf returns k1·(1 − b + b·l/avg) for a document of l words, the
// normaliser of its term frequencies, computed once per ranking and
// length: it is the same for every posting of a document and for every
// document of the same length, and computing it at each posting (a
// float64 division) was a third of the ranking's time.
func (s *scoreScratch) normOf(l uint16, p bm25, avg float64) float32 {
	if int(l) < normTable {
		if v := s.norms[l]; v == v {
			return v
		}
	}
	v := float32(p.k1 * (1 - p.b + p.b*float64(l)/avg))
	if int(l) < normTable {
		s.norms[l] = v
	}
	return v
}

// bestOf returns the group scores for n documents, all zero.
func (s *scoreScratch) bestOf(n int) []float32 {
	if len(s.best) < n {
		s.best = make([]float32, n+n/4)
	}
	return s.best[:n]
}

// scoreTerms ranks the documents for the given term ids by BM25.
//
// A document's score is the sum, in the order of qterms, of its terms'
// scores (a group's best term counting as one term, see qterm), in
// float32: the order of the additions is part of the result, so every
// speed-up keeps it (TestScoreTermsMatchesPlain compares with the plain
// loop bit for bit).
func (t *textIndex) scoreTerms(qterms []qterm, p bm25, k int, keep func(id int64) bool) []textHit {
	n := len(t.docID)
	scr, _ := t.pool.Get().(*scoreScratch)
	if scr == nil {
		scr = &scoreScratch{}
	}
	if len(scr.acc) < n {
		scr.acc = make([]float32, n+n/4)
	}
	sc := scorer{t: t, scr: scr, p: p, k1p1: float32(p.k1 + 1), acc: scr.acc[:n], touched: scr.touched[:0], inGroup: scr.inGroup[:0],
		dead: t.live != n}
	defer func() {
		clear(sc.acc)
		scr.touched, scr.inGroup = sc.touched[:0], sc.inGroup[:0]
		t.pool.Put(scr)
	}()
	sc.avg = float64(t.totalLen) / float64(max(t.live, 1))
	if sc.avg <= 0 {
		sc.avg = 1
	}
	nan := float32(math.NaN())
	for i := range scr.norms {
		scr.norms[i] = nan
	}
	N := float64(t.live)
	idfOf := func(qt qterm) float32 {
		df := float64(t.df[qt.tid])
		return qt.w * float32(max(math.Log((N-df+0.5)/(df+0.5)), 1e-6))
	}
	for j := 0; j < len(qterms); j++ {
		qt := qterms[j]
		if t.df[qt.tid] > 0 {
			idf := idfOf(qt)
			if qt.group == 0 {
				sc.addTerm(t.postings[qt.tid], idf)
			} else {
				if sc.best == nil {
					sc.best = scr.bestOf(n)
				}
				sc.maxTerm(t.postings[qt.tid], idf)
			}
		}
		if qt.group != 0 && (j+1 == len(qterms) || qterms[j+1].group != qt.group) {
			// the group's last term: its best scores join the sums
			sc.flushBest()
		}
	}
	acc, touched := sc.acc, sc.touched
	// The best k of every document scored, asking keep about them only:
	// when it accepts them all, they are the best k it accepts. Otherwise
	// keep is asked at every document that would enter (~4k of them).
	h := make(hitHeap, 0, min(k, len(touched)))
	for _, d := range touched {
		x := textHit{id: t.docID[d], score: acc[d]}
		if len(h) == k && !worse(h[0], x) {
			continue
		}
		h.offer(x, k)
	}
	if !slices.ContainsFunc(h, func(x textHit) bool { return !keep(x.id) }) {
		sortHits(h)
		return h
	}
	h = h[:0]
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
	sortHits(h)
	return h
}

// sortHits sorts h best first.
func sortHits(h []textHit) {
	slices.SortFunc(h, func(a, b textHit) int {
		if worse(a, b) {
			return 1
		}
		if worse(b, a) {
			return -1
		}
		return 0
	})
}

// scorer is one ranking of scoreTerms under way.
type scorer struct {
	t    *textIndex
	scr  *scoreScratch
	p    bm25
	avg  float64
	k1p1 float32 // k1 + 1
	// dead: some documents are removed (their postings are skipped)
	dead bool
	// acc holds each document's sum so far, touched the documents whose
	// sum is not zero; best holds a group's scores until they join the
	// sums, inGroup the documents it holds.
	acc, best        []float32
	touched, inGroup []uint32
}

// add adds v to document d's sum.
func (s *scorer) add(d uint32, v float32) {
	if s.acc[d] == 0 {
		s.touched = append(s.touched, d)
	}
	s.acc[d] += v
}

// flushBest adds the scores kept in best to the sums and clears it.
func (s *scorer) flushBest() {
	for _, d := range s.inGroup {
		s.add(d, s.best[d])
		s.best[d] = 0
	}
	s.inGroup = s.inGroup[:0]
}

// The loops below decode a posting as nextPosting does, with a one-byte
// gap (most postings) decoded without a branch on whether a tf byte
// follows: which postings have one follows no pattern, and with that
// branch a ranking took ~1.8× as long (BenchmarkScoreTermsConversation).
// It is written out in each loop, as the compiler does not inline it.

// addTerm adds the scores of the postings pl to the sums.
func (s *scorer) addTerm(pl []byte, idf float32) {
	t, scr, acc, touched := s.t, s.scr, s.acc, s.touched
	docID, docLen, dead, k1p1 := t.docID, t.docLen, s.dead, s.k1p1
	var d uint32
	for i := 0; i < len(pl); {
		var tf float32
		if v := uint32(pl[i]); v < 0x80 {
			more := int(v & 1)
			d += v >> 1
			tfb := pl[i+more] // the tf byte, or the gap itself when none
			i += 1 + more
			tf = float32(1 + uint8(more)*(tfb-1))
		} else {
			var tfb uint8
			d, tfb, i = nextPosting(pl, i, d)
			tf = float32(tfb)
		}
		if dead && docID[d] <= 0 {
			continue
		}
		sc := idf * tf * k1p1 / (tf + scr.normOf(docLen[d], s.p, s.avg))
		if acc[d] == 0 {
			touched = append(touched, d)
		}
		acc[d] += sc
	}
	s.touched = touched
}

// maxTerm keeps the scores of the postings pl in best where above what it
// holds (a group's term).
func (s *scorer) maxTerm(pl []byte, idf float32) {
	t, scr, best, inGroup := s.t, s.scr, s.best, s.inGroup
	docID, docLen, dead, k1p1 := t.docID, t.docLen, s.dead, s.k1p1
	var d uint32
	for i := 0; i < len(pl); {
		var tf float32
		if v := uint32(pl[i]); v < 0x80 {
			more := int(v & 1)
			d += v >> 1
			tfb := pl[i+more]
			i += 1 + more
			tf = float32(1 + uint8(more)*(tfb-1))
		} else {
			var tfb uint8
			d, tfb, i = nextPosting(pl, i, d)
			tf = float32(tfb)
		}
		if dead && docID[d] <= 0 {
			continue
		}
		sc := idf * tf * k1p1 / (tf + scr.normOf(docLen[d], s.p, s.avg))
		if best[d] == 0 {
			inGroup = append(inGroup, d)
		}
		best[d] = max(best[d], sc)
	}
	s.inGroup = inGroup
}

// coverage returns, for each memory id, the share of the query's word
// weight its text holds: the idf of the query's content-word stems it
// contains over the idf of all of them (a stem counted once however often
// it occurs), a stem no memory holds weighing as
// one held by none (so a query about something never told is barely
// covered by any memory). A memory holding one of the kinds of a noun of
// the query (kindTerms: kinds and, by group, the stems of the noun's words)
// holds the noun's words. 0 for a memory not indexed or a query without
// content words.
func (t *textIndex) coverage(query string, skip map[string]bool, ids []int64, kinds []qterm, nouns [][]string) []float64 {
	out := make([]float64, len(ids))
	N := float64(t.live)
	// Lucene's idf, which stays positive for a word most memories hold (in
	// a small store BM25's own would weigh it zero).
	idf := func(df float64) float64 { return math.Log(1 + (N-df+0.5)/(df+0.5)) }
	var total float64
	type termWeight struct {
		tid uint32
		w   float64
	}
	var weights []termWeight
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
		weights = append(weights, termWeight{tid, wt})
		stemWeight[st] = wt
		total += wt
	}
	if total <= 0 {
		return out
	}
	terms := newIDTable[termVal](len(weights) + len(kinds))
	for _, tw := range weights {
		terms.ref(tw.tid).weight = tw.w
	}
	kc := t.newKindCover(kinds, nouns, stemWeight, &terms)
	var groups []uint16 // a memory's kind terms' groups
	for i, id := range ids {
		d, ok := t.docOf(id)
		if !ok {
			continue
		}
		doc := t.docTerms(d)
		var s float64
		groups = groups[:0]
		for _, tid := range doc {
			v, _ := terms.get(tid)
			s += v.weight
			if v.group != 0 {
				groups = append(groups, v.group)
			}
		}
		out[i] = (s + kc.weight(doc, groups)) / total
	}
	return out
}
