package memory

import (
	"math"
	"math/bits"
	"slices"
	"strings"
	"unsafe"

	"github.com/reverie-ai/reverie/internal/embed"
)

// meta is a memory's metadata as read from the database or a Memory: what
// the index is given (put, setMeta) and gives back (metaAt).
type meta struct {
	kind        Kind
	createdAt   int64 // unix nanoseconds
	validFrom   int64
	validTo     int64 // 0 = current
	eventTime   int64 // 0 = unknown
	lastAccess  int64 // 0 = never
	accessCount int32
	temporal    bool // text mentions a date or relative time
	thread      string
	session     string
	speaker     string // normalised Memory.Speaker (normSpeaker), "" when none
	role        Role
	words       uint16 // word count of the text (as the text index counts)
}

// setText sets the fields derived from the memory's text.
func (m *meta) setText(text string) {
	m.temporal = mentionsTime(text)
	m.words = uint16(min(embed.CountWords(text), math.MaxUint16))
}

// slotMeta is the per-memory state the recall path needs without touching
// the database, as the index keeps it for every memory: 80 bytes and no
// pointers (a memory's thread, session and speaker are symbols of the
// index, its kind and role small codes), so that the metadata of every
// memory is one array the garbage collector need not scan, and which can
// live in a file mapping (index.metaSpace).
type slotMeta struct {
	createdAt  int64 // unix nanoseconds
	validFrom  int64
	validTo    int64 // 0 = current
	eventTime  int64 // 0 = unknown
	lastAccess int64 // 0 = never
	// prev and next link an episode to the episodes told just before and
	// after it in the same thread and session (ids, 0 = none); written at
	// ingest, followed by recall's spreading.
	prev, next  int64
	accessCount int32
	thread      sym
	session     sym
	speaker     sym
	words       uint16
	kind        kindCode
	role        roleCode
	temporal    bool
	hasVector   bool
}

// sym is a string of the index's symbol table (index.syms); 0 is "".
type sym uint32

// noSym matches no memory's symbol (a string the index does not hold).
const noSym = sym(math.MaxUint32)

// kindCode is a Kind as a small number: its position in Kinds plus one (0
// for any other kind).
type kindCode uint8

func codeOfKind(k Kind) kindCode {
	if i := slices.Index(Kinds, k); i >= 0 {
		return kindCode(i + 1)
	}
	return 0
}

// Kind returns the kind c stands for ("" for 0).
func (c kindCode) Kind() Kind {
	if c == 0 || int(c) > len(Kinds) {
		return ""
	}
	return Kinds[c-1]
}

var (
	kindEpisode    = codeOfKind(KindEpisode)
	kindPreference = codeOfKind(KindPreference)
	kindProcedure  = codeOfKind(KindProcedure)
	kindOpinion    = codeOfKind(KindOpinion)
)

// roleCode is a Role as a small number (0 for "" and any other role).
type roleCode uint8

const (
	roleNone roleCode = iota
	roleUser
	roleAssistant
)

func codeOfRole(r Role) roleCode {
	switch r {
	case RoleUser:
		return roleUser
	case RoleAssistant:
		return roleAssistant
	}
	return roleNone
}

// Role returns the role c stands for.
func (c roleCode) Role() Role {
	switch c {
	case roleUser:
		return RoleUser
	case roleAssistant:
		return RoleAssistant
	}
	return ""
}

// chained reports whether m takes part in its thread's episode chain.
func (m *slotMeta) chained() bool { return m.kind == kindEpisode && m.thread != 0 }

// chain identifies the episode chain of a thread's session.
type chain struct{ thread, session sym }

func (m *slotMeta) chainKey() chain { return chain{m.thread, m.session} }

// room returns s with room for n more elements, its capacity grown by a
// quarter when it must grow (append doubles it). The indexes' arrays hold
// every stored memory for the agent's life and their spare capacity is
// resident (append and make clear it): ~40 % more than their contents on
// average when doubling, ~12 % this way, for a few more copies as they
// grow (a load reserves its size at once). The new capacity is rounded up
// as spanFit says.
func room[S ~[]E, E any](s S, n int) S {
	if len(s)+n <= cap(s) {
		return s
	}
	var e E
	out := make(S, len(s), spanFit(max(len(s)+n, cap(s)+cap(s)/4, 16), int(unsafe.Sizeof(e))))
	copy(out, s)
	return out
}

// spanFit returns a capacity of at least n elements of size bytes for an
// array that lives as long as the index: above 2 KiB, rounded up to whole
// 8 KiB pages. The Go heap keeps arrays of 8–32 KiB in spans of several
// pages, two to six arrays a span in most size classes (27 KiB ones three
// to an 80 KiB span), and one array alive among the short-lived ones of
// a burst of turns keeps its whole span resident: up to ~55 KiB of free
// slots each, for arrays that move to another size class every few hundred
// memories. Arrays of whole pages have spans of their own (8, 16, 24 and
// 32 KiB are size classes of one object a span; larger ones are whole
// pages anyway).
func spanFit(n, size int) int {
	const page = 8 << 10
	if b := n * size; b > 2<<10 {
		return ((b + page - 1) / page * page) / size
	}
	return n
}

// normSpeaker is the form speakers are compared in: the words of the name,
// lower-cased (embed.Words), joined by single spaces.
func normSpeaker(s string) string { return strings.Join(embed.Words(s), " ") }

// index holds every memory's metadata and, for memories embedded with the
// current model, an int8-quantised copy of its unit vector plus a sign-bit
// sketch (the three each in a vecSpace of the index: a file mapping, not
// the Go heap, where it can be). Vector search scans the sketches by Hamming distance
// and re-ranks the closest candidates with the int8 dot product; small
// indexes are scanned exactly (their sketches are written, never read).
// Not safe for concurrent use: the store guards it.
type index struct {
	dims  int
	words int // uint64 words per sign sketch

	ids []int64
	// metas are in metaSpace: 80 bytes a memory that the heap would keep
	// for the agent's life, read by every recall and dropped from the
	// resident memory by trim like the vectors.
	metas     []slotMeta
	metaSpace vecSpace
	q         []int8 // len(ids)*dims, in space
	space     vecSpace
	scale     []float32 // per-slot dequantisation factor (0 when no vector)
	sign      []uint64  // len(ids)*words, in signSpace
	// signSpace holds the sketches: 48 bytes a memory at 384 dimensions,
	// which the heap would keep for the agent's life.
	signSpace vecSpace
	// slot maps memory ids to slots once ids came out of order (a removal
	// moves the last slot into the hole; a put may come with an older id);
	// nil while ids ascend with the slots (the load reads memories in id
	// order and new ones get higher ids), when slotOf finds them by binary
	// search in ids: the map would cost ~37 B a memory for the agent's life.
	slot map[int64]int

	// syms holds the strings of the memories' threads, sessions and
	// speakers, each once (symOf finds them); a string stays when its last
	// memory goes (there are few: conversations, their sessions, people).
	syms  []string
	symOf map[string]sym

	speakers map[string]int // speaker → number of memories with that speaker
	// last is the id of the latest episode of each chain.
	last map[chain]int64
}

// newIndex returns an empty index keeping its vectors and metadata in the
// heap.
func newIndex(dims int) *index { return newIndexIn(dims, heapSpace{}, heapSpace{}, heapSpace{}) }

// newIndexIn returns an empty index keeping its vectors in space, their
// sign sketches in signs and the memories' metadata in metas.
func newIndexIn(dims int, space, signs, metas vecSpace) *index {
	return &index{dims: dims, words: (dims + 63) / 64, space: space, signSpace: signs, metaSpace: metas,
		syms: []string{""}, symOf: map[string]sym{"": 0}, speakers: map[string]int{}, last: map[chain]int64{}}
}

// symbol returns str's symbol, adding it to the table when new.
func (x *index) symbol(str string) sym {
	if y, ok := x.symOf[str]; ok {
		return y
	}
	y := sym(len(x.syms))
	x.syms = append(x.syms, str)
	x.symOf[str] = y
	return y
}

// lookup returns str's symbol, or noSym when no memory ever had it.
func (x *index) lookup(str string) sym {
	if y, ok := x.symOf[str]; ok {
		return y
	}
	return noSym
}

// str returns the string of symbol y.
func (x *index) str(y sym) string { return x.syms[y] }

// metaAt returns the metadata of the memory at slot s.
func (x *index) metaAt(s int) meta {
	m := &x.metas[s]
	return meta{kind: m.kind.Kind(), createdAt: m.createdAt, validFrom: m.validFrom, validTo: m.validTo,
		eventTime: m.eventTime, lastAccess: m.lastAccess, accessCount: m.accessCount, temporal: m.temporal,
		thread: x.str(m.thread), session: x.str(m.session), speaker: x.str(m.speaker), role: m.role.Role(), words: m.words}
}

// growRows makes room for rows more vectors in x.q (doubling, so that
// adding one memory at a time copies each row a bounded number of times).
func (x *index) growRows(rows int) {
	n := len(x.q) + rows*x.dims
	if n > cap(x.q) {
		x.q = x.space.grow(x.q, max(n, 2*cap(x.q)))
	}
}

// growSigns makes room for rows more sketches in x.sign (doubling, as
// growRows).
func (x *index) growSigns(rows int) {
	n := len(x.sign) + rows*x.words
	if n > cap(x.sign) {
		x.sign = int8sAsWords(x.signSpace.grow(wordsAsInt8s(x.sign), 8*max(n, 2*cap(x.sign))))
	}
}

// growMetas makes room for rows more entries in x.metas, its capacity
// grown by a quarter when it must grow (as room).
func (x *index) growMetas(rows int) {
	n := len(x.metas) + rows
	if n > cap(x.metas) {
		c := max(n, cap(x.metas)+cap(x.metas)/4, 16)
		x.metas = int8sAsMetas(x.metaSpace.grow(metasAsInt8s(x.metas), c*metaSize))
	}
}

// metaSize is the size of a slotMeta in bytes (a multiple of 8: its
// fields are aligned on 8 bytes).
const metaSize = int(unsafe.Sizeof(slotMeta{}))

// metasAsInt8s and int8sAsMetas view the same memory as metadata or as
// the bytes a vecSpace holds (8-byte aligned, see wordsAsInt8s); slotMeta
// holds no pointers, so the garbage collector need not see them as such.
func metasAsInt8s(m []slotMeta) []int8 {
	if cap(m) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(m))), metaSize*cap(m))[:metaSize*len(m)]
}

func int8sAsMetas(b []int8) []slotMeta {
	if cap(b) < metaSize {
		return nil
	}
	return unsafe.Slice((*slotMeta)(unsafe.Pointer(unsafe.SliceData(b))), cap(b)/metaSize)[:len(b)/metaSize]
}

// wordsAsInt8s and int8sAsWords view the same memory as sketch words or
// as the bytes a vecSpace holds (its arrays are 8-byte aligned: a page
// of a mapping, or a heap allocation of a multiple of 8 bytes).
func wordsAsInt8s(w []uint64) []int8 {
	if cap(w) == 0 {
		return nil
	}
	return unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(w))), 8*cap(w))[:8*len(w)]
}

func int8sAsWords(b []int8) []uint64 {
	if cap(b) < 8 {
		return nil
	}
	return unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(b))), cap(b)/8)[:len(b)/8]
}

// trim drops the vectors' and sketches' pages from the process's resident
// memory when they are in a file mapping (see vecSpace).
func (x *index) trim() {
	x.space.trim()
	x.signSpace.trim()
	x.metaSpace.trim()
}

func (x *index) len() int { return len(x.ids) }

// reserve makes room for n more entries, so that a load of n memories does
// not grow the vector arrays by doubling (each doubling copies them and
// leaves the old ones as garbage: ~40 MB of quantised vectors at 100k).
func (x *index) reserve(n int) {
	if n <= 0 {
		return
	}
	x.ids = slices.Grow(x.ids, n)
	x.growMetas(n)
	x.growRows(n)
	x.scale = slices.Grow(x.scale, n)
	x.growSigns(n)
}

// slotOf returns the slot of memory id.
func (x *index) slotOf(id int64) (int, bool) {
	if x.slot != nil {
		s, ok := x.slot[id]
		return s, ok
	}
	return slices.BinarySearch(x.ids, id)
}

// slotOrZero returns the slot of memory id, 0 when it has none (as the
// map's zero value did: the text index's hits are the index's memories).
func (x *index) slotOrZero(id int64) int {
	s, ok := x.slotOf(id)
	if !ok {
		return 0
	}
	return s
}

// mapSlots builds the slot map: the ids are about to stop ascending.
func (x *index) mapSlots() {
	x.slot = make(map[int64]int, len(x.ids)+1)
	for s, id := range x.ids {
		x.slot[id] = s
	}
}

// put inserts or replaces the entry for id. vec may be nil (no vector).
func (x *index) put(id int64, m meta, vec []float32) {
	s, q, sg := x.place(id, m, len(vec))
	if q == nil {
		return
	}
	x.scale[s] = quantise(vec, q)
	for i, v := range vec {
		if v > 0 {
			sg[i/64] |= 1 << (uint(i) % 64)
		}
	}
}

// putCodes is put for a vector read in its stored compact form
// (encodeVector): its codes and scale. The entry is the one put makes of
// the vector that was encoded, byte for byte.
func (x *index) putCodes(id int64, m meta, codes []int8, scale float32) {
	s, q, sg := x.place(id, m, len(codes))
	if q == nil {
		return
	}
	x.scale[s] = scale
	for i, c := range codes {
		switch {
		case c == posZero:
			q[i] = 0
			sg[i/64] |= 1 << (uint(i) % 64)
		case c > 0:
			q[i] = c
			sg[i/64] |= 1 << (uint(i) % 64)
		default:
			q[i] = c
		}
	}
}

// place inserts or replaces id's entry with metadata m, for a vector of
// dims dimensions, and returns its slot with the slot's vector row and
// sign sketch (cleared) to fill; nil rows when the entry has no vector
// (dims is not the index's).
func (x *index) place(id int64, m meta, dims int) (int, []int8, []uint64) {
	s, ok := x.slotOf(id)
	if !ok {
		if n := len(x.ids); x.slot == nil && n > 0 && id < x.ids[n-1] {
			x.mapSlots()
		}
		s = len(x.ids)
		if x.slot != nil {
			x.slot[id] = s
		}
		x.ids = append(room(x.ids, 1), id)
		x.growMetas(1)
		x.metas = append(x.metas, slotMeta{})
		x.growRows(1)
		x.q = x.q[:len(x.q)+x.dims] // put writes every byte of the row
		x.scale = append(room(x.scale, 1), 0)
		x.growSigns(1)
		x.sign = x.sign[:len(x.sign)+x.words] // put clears the row
	}
	x.setMeta(s, m)
	x.metas[s].hasVector = dims == x.dims
	if !ok {
		x.link(id, s)
	}
	q := x.q[s*x.dims : (s+1)*x.dims]
	sg := x.sign[s*x.words : (s+1)*x.words]
	clear(sg)
	if !x.metas[s].hasVector {
		clear(q)
		x.scale[s] = 0
		return s, nil, nil
	}
	return s, q, sg
}

// setMeta replaces slot s's metadata, keeping its chain links, whether it
// has a vector and the speaker counts; a change of thread or session leaves
// the links as they were (the episode stays where it was told).
func (x *index) setMeta(s int, m meta) {
	old := &x.metas[s]
	x.dropSpeaker(old.speaker)
	if m.speaker != "" {
		x.speakers[m.speaker]++
	}
	*old = slotMeta{createdAt: m.createdAt, validFrom: m.validFrom, validTo: m.validTo, eventTime: m.eventTime,
		lastAccess: m.lastAccess, prev: old.prev, next: old.next, accessCount: m.accessCount,
		thread: x.symbol(m.thread), session: x.symbol(m.session), speaker: x.symbol(m.speaker), words: m.words,
		kind: codeOfKind(m.kind), role: codeOfRole(m.role), temporal: m.temporal, hasVector: old.hasVector}
}

// link appends a new episode (id at slot s) to its chain.
func (x *index) link(id int64, s int) {
	m := &x.metas[s]
	if !m.chained() {
		return
	}
	k := m.chainKey()
	if p, ok := x.last[k]; ok {
		if ps, ok := x.slotOf(p); ok {
			m.prev = p
			x.metas[ps].next = id
		}
	}
	x.last[k] = id
}

// unlink takes slot s out of its chain, joining its neighbours.
func (x *index) unlink(id int64, s int) {
	m := &x.metas[s]
	if ps, ok := x.slotOf(m.prev); ok && m.prev != 0 {
		x.metas[ps].next = m.next
	}
	if ns, ok := x.slotOf(m.next); ok && m.next != 0 {
		x.metas[ns].prev = m.prev
	}
	if m.chained() && x.last[m.chainKey()] == id {
		if m.prev != 0 {
			x.last[m.chainKey()] = m.prev
		} else {
			delete(x.last, m.chainKey())
		}
	}
}

// remove deletes id by moving the last slot into its place.
func (x *index) remove(id int64) {
	s, ok := x.slotOf(id)
	if !ok {
		return
	}
	if x.slot == nil && s != len(x.ids)-1 {
		x.mapSlots()
	}
	x.dropSpeaker(x.metas[s].speaker)
	x.unlink(id, s)
	last := len(x.ids) - 1
	if s != last {
		x.ids[s] = x.ids[last]
		x.metas[s] = x.metas[last]
		copy(x.q[s*x.dims:(s+1)*x.dims], x.q[last*x.dims:])
		x.scale[s] = x.scale[last]
		copy(x.sign[s*x.words:(s+1)*x.words], x.sign[last*x.words:])
		x.slot[x.ids[s]] = s
	}
	if x.slot != nil {
		delete(x.slot, id)
	}
	x.ids = x.ids[:last]
	x.metas = x.metas[:last]
	x.q = x.q[:last*x.dims]
	x.scale = x.scale[:last]
	x.sign = x.sign[:last*x.words]
}

func (x *index) dropSpeaker(y sym) {
	if y == 0 {
		return
	}
	sp := x.str(y)
	if x.speakers[sp]--; x.speakers[sp] <= 0 {
		delete(x.speakers, sp)
	}
}

// quantise writes round(v/scale) into q and returns scale = max|v|/127.
func quantise(v []float32, q []int8) float32 {
	var m float32
	for _, x := range v {
		if a := float32(math.Abs(float64(x))); a > m {
			m = a
		}
	}
	if m == 0 {
		clear(q)
		return 0
	}
	scale := m / 127
	inv := 1 / scale
	for i, x := range v {
		q[i] = int8(math.Round(float64(x * inv)))
	}
	return scale
}

// dot8 is the int8 dot product: sixteen products at a time where the CPU
// has AVX2 (dot8AVX2, exactly the same sum), the rest with four independent
// accumulators. Recall compares the query with every stored vector up to
// exactScanMax memories, so this loop is most of what recall's time grows
// by as a conversation gets long: ~0.45 ms a recall at 2,000 episodes of
// 384 dimensions in the portable loop, ~0.06 ms with AVX2.
func dot8(a, b []int8) int32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 int32
	i := 0
	if useAVX2 && len(a) >= 16 {
		i = len(a) &^ 15
		s0 = dot8AVX2(a[:i], b[:i])
	}
	for ; i+4 <= len(a); i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	for ; i < len(a); i++ {
		s0 += int32(a[i]) * int32(b[i])
	}
	return s0 + s1 + s2 + s3
}

// vecHit is a vector search result.
type vecHit struct {
	slot int
	cos  float32
}

// exactScanMax is the index size up to which vector search compares every
// vector; above it the sign sketch preselects rerankMin candidates.
const (
	exactScanMax = 8192
	rerankMin    = 1024
)

// search returns up to k slots accepted by keep, most similar to the unit
// vector qv first.
func (x *index) search(qv []float32, k int, keep func(slot int) bool) []vecHit {
	n := x.len()
	if n == 0 || k <= 0 || len(qv) != x.dims {
		return nil
	}
	qq := make([]int8, x.dims)
	qs := quantise(qv, qq)
	if qs == 0 {
		return nil
	}
	// the k best by a bounded heap whose root is the worst kept: the same
	// hits, in the same order, as sorting them all (better is a total
	// order), for a fraction of the comparisons
	hits := make([]vecHit, 0, min(k, n))
	d := x.dims
	offer := func(s int) {
		h := vecHit{slot: s, cos: float32(dot8(qq, x.q[s*d:(s+1)*d])) * qs * x.scale[s]}
		switch {
		case len(hits) < k:
			hits = append(hits, h)
			siftUp(hits, len(hits)-1)
		case h.better(hits[0]):
			hits[0] = h
			siftDown(hits, 0)
		}
	}
	if n <= exactScanMax {
		// every slot, in order, without a list of them as long as the
		// index (a turn would allocate one of a new size class at every
		// few hundred memories)
		for s := range n {
			if x.metas[s].hasVector && keep(s) {
				offer(s)
			}
		}
	} else {
		for _, s := range x.preselect(qv, max(rerankMin, 8*k), keep) {
			offer(s)
		}
	}
	slices.SortFunc(hits, func(a, b vecHit) int {
		if a.better(b) {
			return -1
		}
		return 1
	})
	return hits
}

// better reports whether h ranks before o: more similar, or as similar
// and an earlier slot.
func (h vecHit) better(o vecHit) bool {
	if h.cos != o.cos {
		return h.cos > o.cos
	}
	return h.slot < o.slot
}

// siftUp and siftDown keep hits a heap whose root is the worst hit.
func siftUp(hits []vecHit, i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !hits[p].better(hits[i]) {
			return
		}
		hits[p], hits[i] = hits[i], hits[p]
		i = p
	}
}

func siftDown(hits []vecHit, i int) {
	for {
		w, l, r := i, 2*i+1, 2*i+2
		if l < len(hits) && hits[w].better(hits[l]) {
			w = l
		}
		if r < len(hits) && hits[w].better(hits[r]) {
			w = r
		}
		if w == i {
			return
		}
		hits[w], hits[i] = hits[i], hits[w]
		i = w
	}
}

// preselect returns about want slots with the smallest Hamming distance
// between their sign sketch and the query's, using a counting pass over the
// distance histogram (linear time, no sort).
func (x *index) preselect(qv []float32, want int, keep func(slot int) bool) []int {
	w := x.words
	qsig := make([]uint64, w)
	for i, v := range qv {
		if v > 0 {
			qsig[i/64] |= 1 << (uint(i) % 64)
		}
	}
	n := x.len()
	dist := make([]uint16, n)
	hist := make([]int, x.dims+2)
	sign := x.sign
	for s := range n {
		row := sign[s*w : s*w+w]
		var d int
		for j, q := range qsig {
			d += bits.OnesCount64(row[j] ^ q)
		}
		if !x.metas[s].hasVector {
			d = x.dims + 1
		}
		dist[s] = uint16(d)
		hist[d]++
	}
	// find the distance cut-off that admits at least want slots
	cut, total := 0, 0
	for cut = 0; cut <= x.dims; cut++ {
		total += hist[cut]
		if total >= want {
			break
		}
	}
	out := make([]int, 0, total)
	for s, d := range dist {
		if int(d) <= cut && keep(s) {
			out = append(out, s)
		}
	}
	return out
}

// cosine returns the approximate cosine between two stored slots.
func (x *index) cosine(a, b int) float32 {
	d := x.dims
	return float32(dot8(x.q[a*d:(a+1)*d], x.q[b*d:(b+1)*d])) * x.scale[a] * x.scale[b]
}

// neighbour returns the slot of the episode told just after (forward) or
// before slot's episode in the same thread and session, or -1.
func (x *index) neighbour(slot int, forward bool) int {
	id := x.metas[slot].prev
	if forward {
		id = x.metas[slot].next
	}
	if id == 0 {
		return -1
	}
	if s, ok := x.slotOf(id); ok {
		return s
	}
	return -1
}
