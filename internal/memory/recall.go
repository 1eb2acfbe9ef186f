package memory

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/sqlite"
)

// Recall runs hybrid retrieval; see doc.go for the scoring. Each numbered
// phase of doc.go is one method of recallRun.
func (s *VectorStore) Recall(ctx context.Context, q Query) ([]Scored, error) {
	r, err := s.newRecallRun(ctx, q)
	if err != nil {
		return nil, err
	}
	out, err := r.rank()
	if err != nil {
		return nil, err
	}
	return s.materialise(ctx, out, q.Peek)
}

// Rank is Recall without reading the memories: the ranked ids with their
// scores (Scored.Memory holds only the ID), no access recorded. The
// evaluation and the debug panel use it.
func (s *VectorStore) Rank(ctx context.Context, q Query) ([]Scored, error) {
	r, err := s.newRecallRun(ctx, q)
	if err != nil {
		return nil, err
	}
	return r.rank()
}

// rank runs the phases under the index read lock. It fails only when the
// index could not be loaded.
func (r *recallRun) rank() ([]Scored, error) {
	defer r.release() // after the unlock: top's results hold no part of it
	r.s.rlock()
	defer r.s.mu.RUnlock()
	if r.s.loadErr != nil {
		return nil, fmt.Errorf("recall: %w", r.s.loadErr)
	}
	r.bind()
	r.textCandidates()
	r.feedback()
	r.vectorCandidates()
	r.passage()
	r.spread()
	r.rescore()
	return r.top(), nil
}

// cand is one candidate of a recall, kept by value and found by slot.
type cand struct {
	slot  int
	fused float64
	tr    int
	vr    int
	cos   float32
	score float64
}

// recallRun is the state of one Recall while it holds the read lock.
type recallRun struct {
	s     *VectorStore
	q     Query
	tune  Tuning
	text  string
	limit int
	nCand int
	atNS  int64
	qv    []float32 // nil: recall by words only
	gen   uint64    // the index generation qv was embedded for
	in    intent
	when  period
	bp    bm25

	named map[string]bool // speakers the query names
	// the query's thread and kinds as the index holds them (bind)
	thread sym
	kinds  uint32          // bit c set: kindCode c recalled (all when Query.Kinds is empty)
	skip   map[string]bool // their words, left out of the full-text query
	hits   []textHit       // full-text candidates
	pool   []textHit       // the full-text matches past them, for the passage ranking
	kterms []qterm         // the kinds of the query's nouns (kindTerms)
	nouns  [][]string      // by kinds' group − 1: the stems of the noun's words

	byslot idTable[int32] // slot → index in cs
	cs     []cand
	priors []float64 // by word count: the length prior, NaN until known (rescore)
}

// newRecallRun validates the query, embeds it (before any lock is taken)
// and reads what the query asks for: intent and time span.
func (s *VectorStore) newRecallRun(ctx context.Context, q Query) (*recallRun, error) {
	text := strings.TrimSpace(q.Text)
	if text == "" {
		return nil, fmt.Errorf("recall: %w", ErrEmpty)
	}
	if utf8.RuneCountInString(text) > MaxTextLen {
		text = string([]rune(text)[:MaxTextLen])
	}
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultLimit
	}
	at := q.At
	if at.IsZero() {
		at = s.now()
	}
	qv, gen := s.queryVector(ctx, text) // nil: recall by words only
	tune := s.tuning()
	nCand := max(tune.Candidates, limit)
	r := &recallRun{s: s, q: q, tune: tune, text: text, limit: limit, nCand: nCand, atNS: ns(at), qv: qv, gen: gen,
		in: detectIntent(text), when: queryPeriod(text, at), bp: tune.bm25()}
	if sc, ok := s.scratch.Get().(*recallScratch); ok {
		r.byslot, r.cs, r.priors = sc.byslot, sc.cs[:0], sc.priors
	} else {
		r.byslot, r.cs = newIDTable[int32](3*nCand), make([]cand, 0, 3*nCand)
	}
	return r, nil
}

// recallScratch is a recall's candidate table, kept for the next recall
// (VectorStore.scratch).
type recallScratch struct {
	byslot idTable[int32]
	cs     []cand
	priors []float64
}

// release hands the run's candidate table to the next recall; the run
// must not be used after.
func (r *recallRun) release() {
	r.byslot.reset()
	r.s.scratch.Put(&recallScratch{byslot: r.byslot, cs: r.cs[:0], priors: r.priors})
	r.byslot, r.cs, r.priors = idTable[int32]{}, nil, nil
}

// bind resolves the query's thread and kinds against the index (under its
// lock): a thread no memory has matches none, a kind outside Kinds none.
func (r *recallRun) bind() {
	r.thread = 0
	if r.q.Thread != "" {
		r.thread = r.s.idx.lookup(r.q.Thread)
	}
	r.kinds = math.MaxUint32
	if len(r.q.Kinds) > 0 {
		r.kinds = 0
		for _, k := range r.q.Kinds {
			if c := codeOfKind(k); c != 0 {
				r.kinds |= 1 << c
			}
		}
	}
}

// keep reports whether the memory at slot sl may be recalled by this query
// (valid at its time, in its thread and kinds).
func (r *recallRun) keep(sl int) bool {
	m := &r.s.idx.metas[sl]
	if !r.q.IncludeClosed && (m.validFrom > r.atNS || (m.validTo != 0 && m.validTo <= r.atNS)) {
		return false
	}
	if r.thread != 0 && m.thread != r.thread {
		return false
	}
	return r.kinds&(1<<m.kind) != 0
}

func (r *recallRun) keepID(id int64) bool {
	sl, ok := r.s.idx.slotOf(id)
	return ok && r.keep(sl)
}

// get returns the candidate for slot sl, adding it when new; the pointer is
// valid until the next get.
func (r *recallRun) get(sl int) *cand {
	i, ok := r.byslot.get(uint32(sl))
	if !ok {
		i = int32(len(r.cs))
		*r.byslot.ref(uint32(sl)) = i
		r.cs = append(r.cs, cand{slot: sl})
	}
	return &r.cs[i]
}

// textCandidates is phase 1's full-text half: BM25 over the query's content
// words, without the names of speakers it mentions when SkipNames is set.
func (r *recallRun) textCandidates() {
	r.named = namedSpeakers(r.text, r.s.idx.speakers)
	if r.tune.SkipNames && len(r.named) > 0 {
		r.skip = map[string]bool{}
		for sp := range r.named {
			for _, w := range strings.Fields(sp) {
				r.skip[w] = true
			}
		}
	}
	if w := r.tune.relWeights(); w.any() {
		r.kterms, r.nouns = r.s.text.kindTerms(r.text, r.skip, r.s.text.queryTerms(r.text, r.skip), w)
	}
	r.hits = r.s.text.search(r.text, r.skip, r.bp, max(r.nCand, r.passagePool()), r.keepID, r.kterms)
	if len(r.hits) > r.nCand {
		r.pool, r.hits = r.hits[r.nCand:], r.hits[:r.nCand]
	}
	for i, h := range r.hits {
		c := r.get(r.s.idx.slotOrZero(h.id))
		c.tr = i + 1
		c.fused += r.tune.TextWeight / (r.tune.RRFK + float64(i+1))
	}
}

// feedback is phase 2: a second full-text ranking whose query adds the
// terms common in the best full-text matches.
func (r *recallRun) feedback() {
	if r.tune.FeedbackWeight <= 0 || len(r.hits) == 0 {
		return
	}
	qt := r.s.text.expand(r.text, r.skip, r.hits[:min(len(r.hits), r.tune.FeedbackDocs)], r.tune.FeedbackTerms)
	if len(qt) == 0 {
		return
	}
	for i, h := range r.s.text.scoreTerms(qt, r.bp, r.nCand, r.keepID) {
		r.get(r.s.idx.slotOrZero(h.id)).fused += r.tune.FeedbackWeight / (r.tune.RRFK + float64(i+1))
	}
}

// vectorCandidates is phase 1's vector half, fused as phase 3 describes.
func (r *recallRun) vectorCandidates() {
	for i, h := range r.s.idx.search(r.qv, r.nCand, r.keep) {
		c := r.get(h.slot)
		c.vr = i + 1
		c.cos = h.cos
		c.fused += r.tune.VectorWeight / (r.tune.RRFK + float64(i+1))
	}
}

// spread is phase 4: relevance passed along the episode chains to the
// episodes told just before and after each candidate.
func (r *recallRun) spread() {
	t := r.tune
	if t.Spread <= 0 && t.AnswerSpread <= 0 && t.ExchangeSpread <= 0 {
		return
	}
	n := len(r.cs)
	own := make([]float64, n)
	for i := range own {
		own[i] = r.cs[i].fused
	}
	pass := func(nb int, w float64) {
		if nb < 0 || !r.keep(nb) {
			return
		}
		var o float64
		if i, ok := r.byslot.get(uint32(nb)); ok && int(i) < n {
			o = own[i]
		}
		c := r.get(nb)
		c.fused = max(c.fused, o+w)
	}
	idx := r.s.idx
	for i, f := range own {
		sl := r.cs[i].slot
		fwd, back := t.Spread, t.Spread
		if t.AnswerSpread > 0 {
			fwd = t.AnswerSpread
		}
		if nb, ok := idx.partner(sl); ok {
			// an exchange with the assistant: ExchangeSpread passes to the
			// other half, and from a reply to the message after it (the
			// user's answer to what the assistant asked), no further
			if w := t.ExchangeSpread; w > 0 {
				pass(nb, w*f)
				if idx.metas[sl].role == roleAssistant {
					pass(idx.neighbour(sl, true), w*f)
				}
			}
			continue
		}
		if t.Spread <= 0 && t.AnswerSpread <= 0 {
			continue
		}
		prev, next := sl, sl
		for range max(t.SpreadReach, 1) {
			if next >= 0 {
				nx := idx.neighbour(next, true)
				// the reply by someone else inherits AnswerSpread
				w := t.Spread
				if nx >= 0 && idx.metas[nx].speaker != idx.metas[next].speaker {
					w = fwd
				}
				pass(nx, w*f)
				next = nx
			}
			if prev >= 0 {
				prev = idx.neighbour(prev, false)
				pass(prev, back*f)
			}
			f *= t.Spread
		}
	}
}

// partner returns the other half of the exchange with the assistant that
// the episode at slot sl belongs to: the assistant's reply after a user's
// message, the message before a reply. ok is false for an episode outside
// such an exchange (a group room's overheard messages, a message with no
// reply).
func (x *index) partner(sl int) (int, bool) {
	switch x.metas[sl].role {
	case roleUser:
		if nx := x.neighbour(sl, true); nx >= 0 && x.metas[nx].role == roleAssistant {
			return nx, true
		}
	case roleAssistant:
		if pv := x.neighbour(sl, false); pv >= 0 && x.metas[pv].role == roleUser {
			return pv, true
		}
	}
	return -1, false
}

// rescore is phase 5: the fused score times the boosts of doc.go.
func (r *recallRun) rescore() {
	avgLen := r.s.text.avgLen()
	// the length prior (math.Pow) once per word count: a long
	// conversation's recall has some 400 candidates, of a few hundred
	// lengths
	var priors []float64
	if len(r.cs) > 64 {
		priors = r.priors[:cap(r.priors)]
		if len(priors) == 0 {
			priors = make([]float64, 1024)
		}
		nan := math.NaN()
		for i := range priors {
			priors[i] = nan
		}
		r.priors = priors
	}
	for i := range r.cs {
		c := &r.cs[i]
		m := &r.s.idx.metas[c.slot]
		named := m.speaker != 0 && r.named[r.s.idx.str(m.speaker)]
		w := max(m.words, 1)
		var prior float64
		if int(w) < len(priors) {
			if prior = priors[w]; prior != prior {
				prior = r.tune.lengthPrior(float64(w) / avgLen)
				priors[w] = prior
			}
		} else {
			prior = r.tune.lengthPrior(float64(w) / avgLen)
		}
		c.score = r.tune.finalScore(c.fused, m, r.in, named, r.when, prior, r.atNS)
	}
}

// top is phase 6's ranking: the best Limit candidates, ties by id, as
// Scored values holding only the id (materialise reads the rest).
func (r *recallRun) top() []Scored {
	idx := r.s.idx
	order := func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(idx.ids[a.slot], idx.ids[b.slot])
	}
	cands := bestFirst(r.cs, r.limit, order)
	out := make([]Scored, len(cands))
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = idx.ids[c.slot]
	}
	cover := r.s.text.coverage(r.text, r.skip, ids, r.kterms, r.nouns)
	for i, c := range cands {
		out[i] = Scored{Memory: Memory{ID: ids[i]}, Score: c.score, Fused: c.fused, TextRank: c.tr, VecRank: c.vr, Cosine: c.cos, Match: cover[i]}
	}
	return out
}

// bestFirst returns the first k of cs in the order order (a total order:
// the same k, in the same order, as sorting them all), reordering cs. A
// long conversation's recall has some 400 candidates and shows at most 30
// (RecallContextLimit): they are selected with a heap whose root is the
// worst kept, and only they are sorted.
func bestFirst(cs []cand, k int, order func(a, b cand) int) []cand {
	if k <= 0 {
		return cs[:0]
	}
	if len(cs) <= k {
		slices.SortFunc(cs, order)
		return cs
	}
	h := cs[:k]
	// down restores the heap below i: each kept candidate ranks no worse
	// than the root of its subtree, which ranks worst
	down := func(i int) {
		for {
			w, l, r := i, 2*i+1, 2*i+2
			if l < k && order(h[l], h[w]) > 0 {
				w = l
			}
			if r < k && order(h[r], h[w]) > 0 {
				w = r
			}
			if w == i {
				return
			}
			h[i], h[w] = h[w], h[i]
			i = w
		}
	}
	for i := k/2 - 1; i >= 0; i-- {
		down(i)
	}
	for _, c := range cs[k:] {
		if order(c, h[0]) < 0 {
			h[0] = c
			down(0)
		}
	}
	slices.SortFunc(h, order)
	return h
}

// materialise reads the ranked memories from the database (dropping any
// deleted meanwhile) and, unless peek, records an access to each.
func (s *VectorStore) materialise(ctx context.Context, out []Scored, peek bool) ([]Scored, error) {
	ids := make([]int64, len(out))
	for i, sc := range out {
		ids[i] = sc.ID
	}
	rows, err := s.fetch(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	res := out[:0]
	for _, sc := range out {
		m, ok := rows[sc.ID]
		if !ok {
			continue // deleted meanwhile
		}
		s.applyPendingAccess(&m)
		sc.Memory = m
		res = append(res, sc)
	}
	if !peek && len(res) > 0 {
		got := make([]int64, len(res))
		for i, r := range res {
			got[i] = r.ID
		}
		if err := s.RecordAccess(ctx, got, s.now()); err != nil {
			return nil, fmt.Errorf("recall: %w", err)
		}
	}
	return res, nil
}

// TextSearch is plain full-text search through the FTS5 index (porter
// stemming, BM25 order), current and closed memories alike, without
// re-scoring or access recording: for the CLI, the web API and debugging.
// It indexes the memories the index lags behind by first (ftsIndex). It
// returns ids, best first.
func (s *VectorStore) TextSearch(ctx context.Context, text string, limit int) ([]int64, error) {
	fq := ftsQuery(text, nil)
	if fq == "" {
		return nil, nil
	}
	if limit <= 0 {
		limit = DefaultLimit
	}
	if err := s.catchUpIndex(ctx); err != nil {
		return nil, fmt.Errorf("recall: %w", err)
	}
	rows, err := s.db.QueryContext(ctx, `SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rank LIMIT ?`, fq, limit)
	if err != nil {
		return nil, fmt.Errorf("recall: full-text search: %w", err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("recall: full-text search: %w", err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("recall: full-text search: %w", err)
	}
	return ids, nil
}

func (s *VectorStore) fetch(ctx context.Context, ids []int64) (map[int64]Memory, error) {
	out := make(map[int64]Memory, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	rows, err := s.db.QueryContext(ctx, `SELECT `+selectCols+` FROM memories_read WHERE id IN (?`+strings.Repeat(",?", len(ids)-1)+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read memories: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		m, err := scanMemory(rows)
		if err != nil {
			return nil, fmt.Errorf("read memories: %w", err)
		}
		out[m.ID] = m
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read memories: %w", err)
	}
	return out, nil
}

// RecordAccess counts one access to each id at time at. The in-memory index
// is updated at once (so the next recall sees it); the database is updated
// in batches by the background writer.
func (s *VectorStore) RecordAccess(ctx context.Context, ids []int64, at time.Time) error {
	if at.IsZero() {
		at = s.now()
	}
	t := ns(at)
	s.lock()
	for _, id := range ids {
		if sl, ok := s.idx.slotOf(id); ok {
			m := &s.idx.metas[sl]
			m.accessCount++
			m.lastAccess = max(m.lastAccess, t)
		}
	}
	s.mu.Unlock()
	s.access.add(ids, t)
	return ctx.Err()
}

func (s *VectorStore) applyPendingAccess(m *Memory) {
	d, ok := s.access.pendingFor(m.ID)
	if !ok {
		return
	}
	m.AccessCount += d.count
	if m.LastAccess == nil || m.LastAccess.UnixNano() < d.last {
		t := fromNS(d.last)
		m.LastAccess = &t
	}
}

// Flush writes pending access statistics now.
func (s *VectorStore) Flush(ctx context.Context) error { return s.access.flush(ctx) }

// Shutdown stops the conversion of stored vectors (convertStored) and the
// access writer, and flushes what is pending.
func (s *VectorStore) Shutdown(ctx context.Context) error {
	s.stop()
	s.loading.Wait()
	return s.access.stop(ctx)
}

// accessDelta is pending access statistics for one memory.
type accessDelta struct {
	count int
	last  int64
}

// accessFlushAt is the number of pending memories that wakes the writer
// before its periodic tick.
const (
	accessFlushAt    = 256
	accessFlushEvery = 5 * time.Second
	// accessDeferEvery: with a Committer, how soon after queuing a write
	// of the statistics recording an access queues the next one.
	accessDeferEvery = time.Second
)

// accessQueue batches access-statistic updates. Without a Committer it
// writes them in a transaction of its own from one goroutine it owns, on
// accessFlushAt pending memories or every accessFlushEvery; stop waits for
// it. With one (the agent's), recording an access queues a write of every
// pending one (sqlite.Committer.Defer) that goes out with the next shared
// transaction, at most once every accessDeferEvery, and the goroutine
// queues one every accessFlushEvery for what is still pending: a turn's
// recall then adds no commit of its own (its memory.recalled event is
// deferred alike), where the periodic flush made one, and concurrent
// turns write their accesses in one statement a second, not one each.
type accessQueue struct {
	db      *sql.DB
	commits *sqlite.Committer // nil: the queue writes on its own
	log     *slog.Logger

	mu      sync.Mutex
	pending map[int64]accessDelta
	// queued: a deferred write (commits) is queued and has not taken
	// pending yet; deferred is when the last one was queued.
	queued   bool
	deferred time.Time
	// taken is what the writes of transaction tx took from pending; tx
	// committed unless it is still tx when the next one writes, and the
	// writes it took are then taken again (a failed commit loses nothing).
	taken   map[int64]accessDelta
	takenTx *sql.Tx
	flushMu sync.Mutex // one flush at a time

	kick     chan struct{}
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func newAccessQueue(db *sql.DB, commits *sqlite.Committer, log *slog.Logger) *accessQueue {
	a := &accessQueue{db: db, commits: commits, log: log, pending: map[int64]accessDelta{},
		kick: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	go a.run()
	return a
}

func (a *accessQueue) run() {
	defer close(a.done)
	t := time.NewTicker(accessFlushEvery)
	defer t.Stop()
	for {
		select {
		case <-a.quit:
			return
		case <-a.kick:
		case <-t.C:
		}
		if a.commits != nil {
			a.deferWrite(true)
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if err := a.flush(ctx); err != nil {
			a.log.Warn("write memory access statistics", "err", err)
		}
		cancel()
	}
}

func (a *accessQueue) add(ids []int64, at int64) {
	a.mu.Lock()
	for _, id := range ids {
		d := a.pending[id]
		d.count++
		d.last = max(d.last, at)
		a.pending[id] = d
	}
	n := len(a.pending)
	a.mu.Unlock()
	if a.commits != nil {
		a.deferWrite(false)
		return
	}
	if n >= accessFlushAt {
		select {
		case a.kick <- struct{}{}:
		default:
		}
	}
}

// deferWrite queues a write of the pending statistics with the Committer,
// unless one is queued or (but on the periodic tick) was queued less than
// accessDeferEvery ago. A write queued accessFlushEvery ago that has not
// run (its transaction failed to begin) is queued again on the tick.
func (a *accessQueue) deferWrite(tick bool) {
	a.mu.Lock()
	now := time.Now()
	since := now.Sub(a.deferred)
	due := (len(a.pending) > 0 || a.taken != nil) &&
		(!a.queued && (tick || since >= accessDeferEvery) || a.queued && tick && since >= accessFlushEvery)
	if due {
		a.queued, a.deferred = true, now
	}
	a.mu.Unlock()
	if due {
		// Outside mu: before the Committer's Run (or after it), Defer
		// writes at once, through writeTx.
		a.commits.Defer(context.Background(), "memory access statistics", a.writeTx, a.committed)
	}
}

func (a *accessQueue) pendingFor(id int64) (accessDelta, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	d, ok := a.pending[id]
	return d, ok
}

func (a *accessQueue) forget(id int64) {
	a.mu.Lock()
	delete(a.pending, id)
	a.mu.Unlock()
}

// flush writes all pending deltas in one statement; on failure they are
// put back to be retried.
//
// One statement, not one per memory: the SQLite driver watches the context
// of every statement from a goroutine of its own, and a loop of updates
// started them faster than they ran to their end (256 alive at once at
// every flush of a full batch), so the runtime's goroutine descriptors,
// which it never frees, and their stacks grew to that peak.
func (a *accessQueue) flush(ctx context.Context) error {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	if a.commits != nil {
		a.mu.Lock()
		idle := len(a.pending) == 0 && a.taken == nil
		a.mu.Unlock()
		if idle {
			return nil
		}
		if err := a.commits.Write(ctx, a.writeTx, a.committed); err != nil {
			return fmt.Errorf("write access statistics: %w", err)
		}
		return nil
	}
	a.mu.Lock()
	batch := a.pending
	a.pending = map[int64]accessDelta{}
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := sqlite.Tx(ctx, a.db, func(tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, flushAccessSQL, accessJSON(batch))
		return err
	})
	if err != nil {
		a.mu.Lock()
		a.putBack(batch)
		a.mu.Unlock()
		return fmt.Errorf("write access statistics: %w", err)
	}
	return nil
}

// writeTx writes the pending deltas in tx, a transaction of the Committer
// (it runs on whichever goroutine writes the batch, and takes only mu);
// committed forgets them once tx is committed.
func (a *accessQueue) writeTx(ctx context.Context, tx *sql.Tx) error {
	a.mu.Lock()
	a.queued = false
	if a.taken != nil && a.takenTx != tx {
		// The transaction that took them failed to commit.
		a.putBack(a.taken)
		a.taken, a.takenTx = nil, nil
	}
	batch := a.pending
	a.pending = map[int64]accessDelta{}
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, flushAccessSQL, accessJSON(batch)); err != nil {
		a.mu.Lock()
		a.putBack(batch)
		a.mu.Unlock()
		return fmt.Errorf("write access statistics: %w", err)
	}
	a.mu.Lock()
	if a.taken == nil {
		a.taken, a.takenTx = batch, tx
	} else { // a second write in the same transaction
		a.putInto(a.taken, batch)
	}
	a.mu.Unlock()
	return nil
}

// committed forgets the deltas the committed transaction's writeTx took.
func (a *accessQueue) committed() {
	a.mu.Lock()
	a.taken, a.takenTx = nil, nil
	a.mu.Unlock()
}

// putBack adds batch to the pending deltas (under mu).
func (a *accessQueue) putBack(batch map[int64]accessDelta) { a.putInto(a.pending, batch) }

// putInto adds the deltas of batch to dst.
func (a *accessQueue) putInto(dst, batch map[int64]accessDelta) {
	for id, d := range batch {
		p := dst[id]
		p.count += d.count
		p.last = max(p.last, d.last)
		dst[id] = p
	}
}

// flushAccessSQL adds a JSON array of [id, count, last] deltas (accessJSON)
// to memory_access, for the memories that still exist: a row of a few
// bytes each, where updating memories rewrote each memory's whole row
// (migration 009).
const flushAccessSQL = `INSERT INTO memory_access (memory_id, access_count, last_access)
	SELECT d.id, d.n, d.at FROM (SELECT json_extract(value, '$[0]') AS id, json_extract(value, '$[1]') AS n,
		json_extract(value, '$[2]') AS at FROM json_each(?)) AS d
	WHERE EXISTS (SELECT 1 FROM memories WHERE memories.id = d.id)
	ON CONFLICT (memory_id) DO UPDATE SET access_count = access_count + excluded.access_count,
		last_access = MAX(COALESCE(last_access, 0), excluded.last_access)`

// accessJSON encodes deltas as a JSON array of [id, count, last] triples.
func accessJSON(batch map[int64]accessDelta) string {
	b := make([]byte, 0, 48*len(batch))
	b = append(b, '[')
	for id, d := range batch {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, id, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(d.count), 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, d.last, 10)
		b = append(b, ']')
	}
	return string(append(b, ']'))
}

func (a *accessQueue) stop(ctx context.Context) error {
	a.stopOnce.Do(func() { close(a.quit) })
	<-a.done
	return a.flush(ctx)
}
