package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync/atomic"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/extension"
)

// DefaultContextBudget is the token budget of ContextBlock when none is
// given.
const DefaultContextBudget = 4000

// ContextBlock recalls the memories most relevant to query from s and
// writes them, best first, as an evidence packet (kind memory, one item
// per line) for the system prompt, stopping
// before the block would exceed budgetTokens (DefaultContextBudget when ≤ 0)
// as measured by count (about four characters per token when nil). An empty
// query or an empty store gives "".
func ContextBlock(ctx context.Context, s Store, query string, budgetTokens int, count func(string) int) (string, error) {
	if strings.TrimSpace(query) == "" {
		return "", nil
	}
	if budgetTokens <= 0 {
		budgetTokens = DefaultContextBudget
	}
	if count == nil {
		count = func(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }
	}
	res, err := s.Recall(ctx, Query{Text: query, Limit: 50})
	if err != nil {
		if errors.Is(err, ErrEmpty) {
			return "", nil
		}
		return "", fmt.Errorf("memory context: %w", err)
	}
	f := newPacketFit(evidence.Packet{Kind: evidence.Memory, Title: "Long-term memories", Meta: evidence.Meta{Source: "recall", Query: query}}, budgetTokens, count)
	fc := focusFor(s, query)
	for _, r := range res {
		if !f.add(r.Memory, fc) {
			break
		}
	}
	if len(f.p.Items) == 0 {
		return "", nil
	}
	text, _ := f.shownPacket()
	return text, nil
}

// packetFit fills a packet with memories while its encoding, every memory
// whole, stays within a token budget, and keeps each memory's line as the
// prompt shows it: a long episode as an excerpt about the query
// (excerptItem). The budget is charged for the whole memory, so which
// memories are shown does not depend on the cuts: the prompt is only
// shorter.
type packetFit struct {
	p      evidence.Packet // the memories whole
	used   int             // tokens of p so far
	budget int
	count  func(string) int
	// shown is p's items as the prompt shows them; cut counts the
	// excerpts among them.
	shown []evidence.Item
	cut   int
}

func newPacketFit(p evidence.Packet, budget int, count func(string) int) *packetFit {
	return &packetFit{p: p, used: count(p.Encode()), budget: budget, count: count}
}

// add appends m when its line, whole, still fits the budget and reports
// whether it did; its line as shown is an excerpt about fc (none when fc
// is nil).
func (f *packetFit) add(m Memory, fc *focus) bool {
	it := memoryItem(m)
	c := f.count(evidence.EncodeItem(it) + ",\n")
	if f.used+c > f.budget {
		return false
	}
	f.used += c
	f.p.Items = append(f.p.Items, it)
	sh, cut := excerptItem(m, fc)
	if cut {
		f.cut++
	}
	f.shown = append(f.shown, sh)
	return true
}

// shownPacket returns the packet as the prompt shows it, its title
// followed by RecallExcerptNote when some line is an excerpt, and its size
// in tokens, counted as add counts them (the header, then each line).
func (f *packetFit) shownPacket() (string, int) {
	if f.cut == 0 {
		return f.p.Encode(), f.used
	}
	p := f.p
	p.Title += RecallExcerptNote
	p.Items = nil
	n := f.count(p.Encode())
	for _, it := range f.shown {
		n += f.count(evidence.EncodeItem(it) + ",\n")
	}
	p.Items = f.shown
	return p.Encode(), n
}

// ContextBlock is the package ContextBlock over this store.
func (s *VectorStore) ContextBlock(ctx context.Context, query string, budgetTokens int, count func(string) int) (string, error) {
	return ContextBlock(ctx, s, query, budgetTokens, count)
}

// ContextBlock is the package ContextBlock over this store.
func (f *FlatStore) ContextBlock(ctx context.Context, query string, budgetTokens int, count func(string) int) (string, error) {
	return ContextBlock(ctx, f, query, budgetTokens, count)
}

// RecallContext is the context provider that adds, to every turn's prompt,
// the long-term memories most relevant to the user's message, under a token
// budget, leaving out what MEMORIES.txt (always in the prompt) already
// says. With the flat backend MEMORIES.txt is the whole store, so it adds
// nothing.
type RecallContext struct {
	Service *Service
	// Budget is the token budget (DefaultContextBudget when 0).
	Budget int
	// Count counts tokens (about four characters per token when nil).
	Count func(string) int
	// Gate decides which recalled memories earn a line (DefaultGate when
	// zero).
	Gate Gate

	// Whole shows every memory whole: no long episode is cut to an
	// excerpt (the evaluation measures the cuts against it).
	Whole bool

	// OnRecall, when set, is told what each turn's recall added (the app
	// publishes it as a memory.recalled event).
	OnRecall func(ctx context.Context, thread chat.ThreadID, st RecallStats)

	last atomic.Pointer[RecallStats] // the last turn's, for /status
}

// RecallStats is what a turn's recall put into the prompt.
type RecallStats struct {
	Lines  int `json:"lines"`         // memory lines
	Tokens int `json:"memory_tokens"` // tokens of the block, header included
}

// Last returns the stats of the last turn whose prompt this provider
// built; ok is false before the first.
func (r *RecallContext) Last() (st RecallStats, ok bool) {
	if p := r.last.Load(); p != nil {
		return *p, true
	}
	return RecallStats{}, false
}

// Gate is the relevance test a recalled memory passes to be shown in a
// turn's prompt: a fixed top-k would fill the prompt with the least bad
// of unrelated memories when nothing relevant is stored.
type Gate struct {
	// MinMatch is the share of the query's word weight (Scored.Match) a
	// memory must hold.
	MinMatch float64
	// MinCosine lets a memory whose meaning is this close to the query's
	// (Scored.Cosine) pass without the words (0: never).
	MinCosine float32
	// Ratio is the least score, relative to the best shown memory's, of
	// the others.
	Ratio float64
	// MaxLines caps the lines shown.
	MaxLines int
}

// DefaultGate is the gate of RecallContext when none is set, chosen on
// LongMemEval's dev split for the fewest lines that still hold the
// evidence (see README), and checked against a store of unrelated notes.
var DefaultGate = Gate{MinMatch: 0.3, MinCosine: 0.6, Ratio: 0.3, MaxLines: 10}

// matchMeasurer is a store that tells which of its recalled memories carry
// a measured Scored.Match.
type matchMeasurer interface{ measuresMatch(m Memory) bool }

// measuresMatch: every memory of the store is in its text index.
func (s *VectorStore) measuresMatch(Memory) bool { return true }

// measuresMatch: the episodes, recalled from the local store; the external
// server's facts carry no Match.
func (s *SplitStore) measuresMatch(m Memory) bool {
	mm, ok := s.episodes.(matchMeasurer)
	return ok && m.Kind == KindEpisode && mm.measuresMatch(m)
}

var (
	_ matchMeasurer = (*VectorStore)(nil)
	_ matchMeasurer = (*SplitStore)(nil)
)

// matches reports whether s holds enough of the query's words, or is close
// enough in meaning, to be shown (of a memory whose Match is measured).
func (g Gate) matches(s *Scored) bool {
	return s.Match >= g.MinMatch || (g.MinCosine > 0 && s.Cosine >= g.MinCosine)
}

// pass reports whether s may be shown after best (the best memory shown
// so far; nil for the first). A store that does not measure Match (an
// external one) is trusted with its own ranking.
func (g Gate) pass(s, best *Scored, measured bool) bool {
	if measured && !g.matches(s) {
		return false
	}
	return best == nil || s.Score >= g.Ratio*best.Score
}

// RecallContextLimit is how many memories a turn's recall considers at
// most (fewer when the token budget is reached first).
const RecallContextLimit = 30

// RecallContextPriority places recalled memories early among the context
// blocks.
const RecallContextPriority = 10

// ContextPriority implements extension.ContextProvider.
func (r *RecallContext) ContextPriority() int { return RecallContextPriority }

// RecallTitle is the title of the evidence packet (kind memory, source
// recall) in which a turn's recalled memories reach its prompt.
const RecallTitle = "Long-term memories that may be relevant (recalled for this message)"

// Recalled is what a turn's recall puts into the prompt.
type Recalled struct {
	Memories []Scored // the memories shown, best first
	Text     string   // the block added to the prompt ("" when none)
	Tokens   int      // its size in tokens, as Count measures them
	// Excerpts is how many of the memories the block shows as an excerpt
	// (a long episode cut to its parts about the message).
	Excerpts int
}

// Recall chooses the memories a turn's prompt shows for query, without
// recording an access to them (PromptContext does, for what it shows).
func (r *RecallContext) Recall(ctx context.Context, query string) (Recalled, error) {
	if r.Service == nil || r.Service.Flat() || strings.TrimSpace(query) == "" {
		return Recalled{}, nil
	}
	ws, err := r.Service.readLines()
	if err != nil {
		return Recalled{}, err
	}
	skip := normSet(ws)
	budget := r.Budget
	if budget <= 0 {
		budget = DefaultContextBudget
	}
	count := r.Count
	if count == nil {
		count = func(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }
	}
	gate := r.Gate
	if gate == (Gate{}) {
		gate = DefaultGate
	}
	mm, _ := r.Service.store.(matchMeasurer)
	f := newPacketFit(evidence.Packet{Kind: evidence.Memory, Title: RecallTitle, Meta: evidence.Meta{Source: "recall"}}, budget, count)
	var fc *focus // nil finds nothing: every memory whole
	if !r.Whole {
		fc = focusFor(r.Service.store, query)
	}
	var out Recalled
	// consider shows s when it earns a line; done: no later memory can.
	consider := func(s *Scored) (done bool) {
		if skip[normalise(s.Memory.Text)] {
			return false
		}
		var best *Scored
		if len(out.Memories) > 0 {
			best = &out.Memories[0]
		}
		if len(out.Memories) >= gate.MaxLines {
			return true
		}
		if !gate.pass(s, best, mm != nil && mm.measuresMatch(s.Memory)) {
			return false
		}
		if !f.add(s.Memory, fc) {
			return true
		}
		out.Memories = append(out.Memories, *s)
		return false
	}
	q := Query{Text: query, Limit: RecallContextLimit, Peek: true}
	left := func() int { return gate.MaxLines - len(out.Memories) }
	// floor: once a memory is shown, none scoring below Ratio of it is
	floor := func() float64 {
		if len(out.Memories) == 0 {
			return 0
		}
		return gate.Ratio * out.Memories[0].Score
	}
	if err := r.recallInto(ctx, q, left, floor, gate, consider); err != nil {
		if errors.Is(err, ErrEmpty) {
			return Recalled{}, nil
		}
		return Recalled{}, fmt.Errorf("memory context: %w", err)
	}
	if len(out.Memories) > 0 {
		out.Text, out.Tokens = f.shownPacket()
		out.Excerpts = f.cut
	}
	return out, nil
}

// rankReader is a store that ranks without reading the memories and reads
// the ranked ones afterwards (VectorStore).
type rankReader interface {
	Rank(ctx context.Context, q Query) ([]Scored, error)
	materialise(ctx context.Context, out []Scored, peek bool) ([]Scored, error)
}

var _ rankReader = (*VectorStore)(nil)

// recallInto recalls q and hands the memories to consider in rank order
// until it says done. From a rankReader it reads the memories only as
// consider reaches them, as many at a time as left says may still be shown,
// and none that the gate's word-and-meaning test refuses or that score
// below floor (both tests need no memory's text; floor only rises, and the
// memories come best first): a turn ranks RecallContextLimit memories but
// shows at most Gate.MaxLines, and reading every ranked row was a third of
// its recall's CPU, each read a statement. What consider sees is what a
// full Recall would have given it, in the same order, less memories it
// would have refused.
func (r *RecallContext) recallInto(ctx context.Context, q Query, left func() int, floor func() float64, gate Gate, consider func(*Scored) bool) error {
	rr, ok := r.Service.store.(rankReader)
	if !ok {
		res, err := r.Service.Search(ctx, q)
		if err != nil {
			return err
		}
		for i := range res {
			if consider(&res[i]) {
				return nil
			}
		}
		return nil
	}
	ranked, err := rr.Rank(ctx, q)
	if err != nil {
		return err
	}
	// A memory the match test refuses is never shown (every memory of a
	// rankReader has a measured Match: measuresMatch).
	ranked = slices.DeleteFunc(ranked, func(s Scored) bool { return !gate.matches(&s) })
	for len(ranked) > 0 && left() > 0 {
		if f := floor(); f > 0 {
			ranked = ranked[:sort.Search(len(ranked), func(i int) bool { return ranked[i].Score < f })]
			if len(ranked) == 0 {
				break
			}
		}
		part := ranked[:min(left(), len(ranked))]
		ranked = ranked[len(part):]
		read, err := rr.materialise(ctx, slices.Clone(part), q.Peek)
		if err != nil {
			return err
		}
		for i := range read {
			if consider(&read[i]) {
				return nil
			}
		}
	}
	return nil
}

// PromptContext implements extension.ContextProvider: the block of Recall,
// with an access recorded for each memory it shows.
func (r *RecallContext) PromptContext(ctx context.Context, req extension.ContextRequest) (string, error) {
	rec, err := r.Recall(ctx, req.Query)
	if err != nil {
		return "", err
	}
	st := RecallStats{Lines: len(rec.Memories), Tokens: rec.Tokens}
	r.last.Store(&st)
	if r.OnRecall != nil {
		r.OnRecall(ctx, req.Thread, st)
	}
	if len(rec.Memories) == 0 {
		return "", nil
	}
	shown := make([]int64, len(rec.Memories))
	for i, m := range rec.Memories {
		shown[i] = m.ID
	}
	if err := r.Service.store.RecordAccess(ctx, shown, r.Service.now()); err != nil {
		r.Service.log.Warn("record memory access", "err", err)
	}
	return rec.Text, nil
}

var _ extension.ContextProvider = (*RecallContext)(nil)
