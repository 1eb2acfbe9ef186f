package memory

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/sqlite"
)

// Recall runs hybrid retrieval; see doc.go for the scoring.
func (s *VectorStore) Recall(ctx context.Context, q Query) ([]Scored, error) {
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
	atNS := ns(at)
	qv, gen := s.queryVector(ctx, text) // nil: recall by words only
	nCand := max(s.tune.Candidates, limit)
	in := detectIntent(text)
	when := queryPeriod(text, at.Location())

	type cand struct {
		slot  int
		fused float64
		tr    int
		vr    int
		cos   float32
		score float64
	}
	s.mu.RLock()
	if gen != s.gen {
		qv = nil // the index changed model since the query was embedded
	}
	named := namedSpeakers(text, s.idx.speakers)
	var skip map[string]bool
	if s.tune.SkipNames {
		skip = map[string]bool{}
		for sp := range named {
			for _, w := range strings.Fields(sp) {
				skip[w] = true
			}
		}
	}
	keep := func(sl int) bool {
		m := &s.idx.metas[sl]
		if !q.IncludeClosed && (m.validFrom > atNS || (m.validTo != 0 && m.validTo <= atNS)) {
			return false
		}
		if q.Thread != "" && m.thread != q.Thread {
			return false
		}
		return len(q.Kinds) == 0 || slices.Contains(q.Kinds, m.kind)
	}
	// candidates by value, found by slot; a *cand from get is valid until
	// the next get
	byslot := make(map[int]int, 3*nCand)
	cs := make([]cand, 0, 3*nCand)
	get := func(sl int) *cand {
		i, ok := byslot[sl]
		if !ok {
			i = len(cs)
			byslot[sl] = i
			cs = append(cs, cand{slot: sl})
		}
		return &cs[i]
	}
	keepID := func(id int64) bool {
		sl, ok := s.idx.slot[id]
		return ok && keep(sl)
	}
	bp := s.tune.bm25()
	hits := s.text.search(text, skip, bp, nCand, keepID)
	for i, h := range hits {
		c := get(s.idx.slot[h.id])
		c.tr = i + 1
		c.fused += s.tune.TextWeight / (s.tune.RRFK + float64(i+1))
	}
	if s.tune.FeedbackWeight > 0 && len(hits) > 0 {
		if qt := s.text.expand(text, skip, hits[:min(len(hits), s.tune.FeedbackDocs)], s.tune.FeedbackTerms); len(qt) > 0 {
			for i, h := range s.text.scoreTerms(qt, bp, nCand, keepID) {
				get(s.idx.slot[h.id]).fused += s.tune.FeedbackWeight / (s.tune.RRFK + float64(i+1))
			}
		}
	}
	for i, h := range s.idx.search(qv, nCand, keep) {
		c := get(h.slot)
		c.vr = i + 1
		c.cos = h.cos
		c.fused += s.tune.VectorWeight / (s.tune.RRFK + float64(i+1))
	}
	if s.tune.Spread > 0 {
		n := len(cs)
		own := make([]float64, n)
		for i := range own {
			own[i] = cs[i].fused
		}
		pass := func(nb int, w float64) {
			if nb < 0 || !keep(nb) {
				return
			}
			var o float64
			if i, ok := byslot[nb]; ok && i < n {
				o = own[i]
			}
			c := get(nb)
			c.fused = max(c.fused, o+w)
		}
		for i, f := range own {
			sl := cs[i].slot
			fwd, back := s.tune.Spread, s.tune.Spread
			if s.tune.AnswerSpread > 0 && s.idx.metas[sl].question {
				fwd = s.tune.AnswerSpread
			}
			for d := 1; d <= max(s.tune.SpreadReach, 1); d++ {
				pass(s.idx.threadNeighbour(sl, d), fwd*f)
				pass(s.idx.threadNeighbour(sl, -d), back*f)
				fwd *= s.tune.Spread
				back *= s.tune.Spread
			}
		}
	}
	avgLen := s.text.avgLen()
	for i := range cs {
		c := &cs[i]
		m := &s.idx.metas[c.slot]
		c.score = s.tune.finalScore(c.fused, m, in, named, when, float64(max(m.words, 1))/avgLen, atNS)
	}
	cands := cs
	slices.SortFunc(cands, func(a, b cand) int {
		if c := cmp.Compare(b.score, a.score); c != 0 {
			return c
		}
		return cmp.Compare(s.idx.ids[a.slot], s.idx.ids[b.slot])
	})
	if len(cands) > limit {
		cands = cands[:limit]
	}
	out := make([]Scored, len(cands))
	ids := make([]int64, len(cands))
	for i, c := range cands {
		ids[i] = s.idx.ids[c.slot]
		out[i] = Scored{Memory: Memory{ID: ids[i]}, Score: c.score, Fused: c.fused, TextRank: c.tr, VecRank: c.vr, Cosine: c.cos}
	}
	s.mu.RUnlock()

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
	if !q.Peek && len(res) > 0 {
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
// It returns ids, best first.
func (s *VectorStore) TextSearch(ctx context.Context, text string, limit int) ([]int64, error) {
	fq := ftsQuery(text, nil)
	if fq == "" {
		return nil, nil
	}
	if limit <= 0 {
		limit = DefaultLimit
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
	rows, err := s.db.QueryContext(ctx, `SELECT `+selectCols+` FROM memories WHERE id IN (?`+strings.Repeat(",?", len(ids)-1)+`)`, args...)
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
	s.mu.Lock()
	for _, id := range ids {
		if sl, ok := s.idx.slot[id]; ok {
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

// Shutdown stops the access writer and flushes what is pending.
func (s *VectorStore) Shutdown(ctx context.Context) error { return s.access.stop(ctx) }

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
)

// accessQueue batches access-statistic updates and writes them from one
// goroutine it owns; stop waits for it.
type accessQueue struct {
	db  *sql.DB
	log *slog.Logger

	mu      sync.Mutex
	pending map[int64]accessDelta
	flushMu sync.Mutex // one flush at a time

	kick     chan struct{}
	quit     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

func newAccessQueue(db *sql.DB, log *slog.Logger) *accessQueue {
	a := &accessQueue{db: db, log: log, pending: map[int64]accessDelta{},
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
	if n >= accessFlushAt {
		select {
		case a.kick <- struct{}{}:
		default:
		}
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

// flush writes all pending deltas in one transaction; on failure they are
// put back to be retried.
func (a *accessQueue) flush(ctx context.Context) error {
	a.flushMu.Lock()
	defer a.flushMu.Unlock()
	a.mu.Lock()
	batch := a.pending
	a.pending = map[int64]accessDelta{}
	a.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	err := sqlite.Tx(ctx, a.db, func(tx *sql.Tx) error {
		stmt, err := tx.PrepareContext(ctx, `UPDATE memories SET access_count = access_count + ?, last_access = MAX(COALESCE(last_access, 0), ?) WHERE id = ?`)
		if err != nil {
			return err
		}
		defer stmt.Close()
		for id, d := range batch {
			if _, err := stmt.ExecContext(ctx, d.count, d.last, id); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		a.mu.Lock()
		for id, d := range batch {
			p := a.pending[id]
			p.count += d.count
			p.last = max(p.last, d.last)
			a.pending[id] = p
		}
		a.mu.Unlock()
		return fmt.Errorf("write access statistics: %w", err)
	}
	return nil
}

func (a *accessQueue) stop(ctx context.Context) error {
	a.stopOnce.Do(func() { close(a.quit) })
	<-a.done
	return a.flush(ctx)
}
