package eval

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/world"
)

// LMETurn is one message of a LongMemEval chat session.
type LMETurn struct {
	Role      string `json:"role"` // "user" or "assistant"
	Content   string `json:"content"`
	HasAnswer bool   `json:"has_answer"`
}

// LMEQuestion is one LongMemEval question with its own haystack of
// timestamped user–assistant sessions.
type LMEQuestion struct {
	ID       string          `json:"question_id"`
	Type     string          `json:"question_type"`
	Question string          `json:"question"`
	Answer   json.RawMessage `json:"answer"`
	Date     string          `json:"question_date"`
	// Haystack sessions, their dates and ids, in the same order.
	Dates      []string    `json:"haystack_dates"`
	SessionIDs []string    `json:"haystack_session_ids"`
	Sessions   [][]LMETurn `json:"haystack_sessions"`
	// AnswerSessionIDs are the evidence sessions.
	AnswerSessionIDs []string `json:"answer_session_ids"`
}

// Abstention reports whether q is an abstention question (a false premise:
// nothing should be recalled as the answer).
func (q LMEQuestion) Abstention() bool { return strings.HasSuffix(q.ID, "_abs") }

// ParseLongMemEval decodes a LongMemEval JSON file (an array of questions)
// and checks that every question's dates parse and its haystack lists line
// up.
func ParseLongMemEval(r io.Reader) ([]LMEQuestion, error) {
	var qs []LMEQuestion
	if err := json.NewDecoder(r).Decode(&qs); err != nil {
		return nil, fmt.Errorf("parse LongMemEval file: %w", err)
	}
	for i, q := range qs {
		if q.ID == "" || strings.TrimSpace(q.Question) == "" {
			return nil, fmt.Errorf("parse LongMemEval file: question %d has no id or no question", i+1)
		}
		if len(q.Dates) != len(q.Sessions) || len(q.SessionIDs) != len(q.Sessions) {
			return nil, fmt.Errorf("parse LongMemEval %s: %d sessions, %d dates, %d session ids", q.ID, len(q.Sessions), len(q.Dates), len(q.SessionIDs))
		}
		if _, err := parseLMEDate(q.Date); err != nil {
			return nil, fmt.Errorf("parse LongMemEval %s: question date: %w", q.ID, err)
		}
		for _, d := range q.Dates {
			if _, err := parseLMEDate(d); err != nil {
				return nil, fmt.Errorf("parse LongMemEval %s: session date: %w", q.ID, err)
			}
		}
	}
	return qs, nil
}

// parseLMEDate reads LongMemEval dates like "2023/05/20 (Sat) 02:21".
func parseLMEDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"2006/01/02 (Mon) 15:04", "2006/01/02 15:04", "2006/01/02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("unrecognised date %q", s)
}

// LMEOptions configure a LongMemEval run.
type LMEOptions struct {
	K        []int          // cut-offs; LMEDefaultK when empty
	Embedder embed.Embedder // DefaultEmbedder's when nil (the built-in sentence encoder)
	Tuning   *memory.Tuning // the store's retrieval parameters when nil
	// UserName and AssistantName are the speakers stored on the user's
	// turns and on the replies, as a private web conversation stores them:
	// the user's display name and the assistant's own name (DefaultUserName
	// and world.DefaultAgentName when empty).
	UserName, AssistantName string
	// Gate is the relevance gate of the turn's recall (memory.DefaultGate
	// when zero).
	Gate memory.Gate
	// Workers is how many questions are ingested and scored at once
	// (GOMAXPROCS when ≤ 0).
	Workers int
	// Progress, when non-nil, is called after each question (from one
	// goroutine at a time).
	Progress func(done, total int)
	Logger   *slog.Logger
	// Whole shows every recalled memory whole in the injected block (no
	// excerpts: memory.RecallContext.Whole), to measure the excerpts
	// against.
	Whole bool
	// Misses, when set, makes the report list every question whose
	// evidence rounds are not all in the top ten, with where each ranked
	// (LMEReport.Misses).
	Misses bool
	// CVRepeats is how many times CrossValidateLongMemEval repeats its
	// cross-validation, each repeat over another partition of the
	// questions into folds (0 or 1: once, over lmeFold's; negative: an
	// error).
	CVRepeats int
}

// LMEDefaultK are the cut-offs reported when LMEOptions.K is empty.
var LMEDefaultK = []int{1, 5, 10, 25}

// DefaultUserName is the display name the evaluation's user has (a
// name as the web setup screen would take; nothing of the dataset).
const DefaultUserName = "Sam"

func (o LMEOptions) cutoffs() ([]int, error) {
	if len(o.K) == 0 {
		return cutoffs(Options{K: LMEDefaultK})
	}
	return cutoffs(Options{K: o.K})
}

// lmeStore is one question's haystack stored as episodes in a fresh store.
type lmeStore struct {
	q       LMEQuestion
	at      time.Time // the question's date
	db      *sql.DB
	dir     string
	store   *memory.VectorStore
	svc     *memory.Service
	clock   *Clock
	session map[int64]int // memory id → haystack session index
	round   map[int64]int // memory id → round number (within the question)
	goldSes []int         // evidence sessions
	goldRnd []int         // evidence rounds
	// rounds[n] is round n's haystack session and the turns it holds.
	rounds []lmeRoundAt
	// answer is the question's answer, normalised, when an evidence turn
	// holds it (checkableAnswer), else "".
	answer string
	whole  bool // inject every memory whole (LMEOptions.Whole)
}

// lmeRoundAt locates a round in its question's haystack.
type lmeRoundAt struct {
	session int
	turns   []int
}

func (g *lmeStore) close(ctx context.Context) {
	g.store.Shutdown(context.WithoutCancel(ctx))
	g.db.Close()
	os.RemoveAll(g.dir)
}

// lmeRound is one round of a private web conversation as the web channel
// hands it over: the user's message and the assistant's reply after it.
type lmeRound struct {
	msg   chat.Inbound
	reply memory.Reply
	turns []int // the session's turns it holds
}

// lmeRounds turns a haystack session into the rounds a private web
// conversation records (see memory.Ingest): each user message with the
// user's display name and the reply after it under the assistant's name,
// received at the session's time on the session's own web thread. An
// assistant turn with no user message before it is a round of its own
// (an empty message, which Ingest leaves out).
func lmeRounds(thread chat.ThreadID, at time.Time, turns []LMETurn, user, assistant string) []lmeRound {
	var out []lmeRound
	for i, t := range turns {
		if t.Role == "user" {
			out = append(out, lmeRound{msg: chat.Inbound{Address: chat.Address{Channel: "web", Thread: thread},
				Sender: chat.Sender{ID: "web", DisplayName: user}, Text: t.Content, Received: at}, turns: []int{i}})
			continue
		}
		if len(out) == 0 || out[len(out)-1].reply.Text != "" {
			out = append(out, lmeRound{msg: chat.Inbound{Address: chat.Address{Channel: "web", Thread: thread},
				Sender: chat.Sender{ID: "web", DisplayName: user}, Received: at}})
		}
		r := &out[len(out)-1]
		r.reply = memory.Reply{Speaker: assistant, Text: t.Content}
		r.turns = append(r.turns, i)
	}
	return out
}

// ingestLME stores q's haystack through memory.Service.Ingest, the call a
// live web turn's episodes go through, into
// a fresh in-memory store whose clock stands at each session's time.
// opts.Embedder must be set (the entry points resolve it).
func ingestLME(ctx context.Context, q LMEQuestion, opts LMEOptions) (*lmeStore, error) {
	emb := opts.Embedder
	if emb == nil {
		return nil, fmt.Errorf("longmemeval %s: no embedding model", q.ID)
	}
	user, assistant := opts.UserName, opts.AssistantName
	if user == "" {
		user = DefaultUserName
	}
	if assistant == "" {
		assistant = world.DefaultAgentName
	}
	at, err := parseLMEDate(q.Date)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "reverie-lme-")
	if err != nil {
		return nil, fmt.Errorf("data dir: %w", err)
	}
	db, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	clk := &Clock{}
	tune := memory.DefaultTuning
	if opts.Tuning != nil {
		tune = *opts.Tuning
	}
	store, err := memory.OpenVector(ctx, db, emb, clk.Now, opts.Logger, tune)
	if err != nil {
		db.Close()
		os.RemoveAll(dir)
		return nil, err
	}
	g := &lmeStore{q: q, at: at, db: db, dir: dir, store: store, clock: clk, session: map[int64]int{}, round: map[int64]int{}, whole: opts.Whole}
	var evid []string
	for _, turns := range q.Sessions {
		for _, t := range turns {
			if t.HasAnswer {
				evid = append(evid, t.Content)
			}
		}
	}
	g.answer = checkableAnswer(answerOf(q.Answer), evid)
	g.svc, err = memory.NewService(memory.ServiceOptions{Store: store, DataDir: dir, Now: clk.Now, Logger: opts.Logger})
	if err != nil {
		g.close(ctx)
		return nil, err
	}
	gold := map[string]bool{}
	for _, id := range q.AnswerSessionIDs {
		gold[id] = true
	}
	nextRound := 0
	for si, turns := range q.Sessions {
		when, _ := parseLMEDate(q.Dates[si]) // checked by ParseLongMemEval
		if gold[q.SessionIDs[si]] {
			g.goldSes = append(g.goldSes, si)
		}
		clk.Set(when)
		at = maxTime(at, when)
		for _, r := range lmeRounds(chat.NewThreadID("web", fmt.Sprintf("s%d", si+1)), when, turns, user, assistant) {
			ids, err := g.svc.Ingest(ctx, time.UTC, r.msg, r.reply)
			if err != nil && !errors.Is(err, memory.ErrSecret) {
				g.close(ctx)
				return nil, fmt.Errorf("ingest %s session %d: %w", q.ID, si+1, err)
			}
			for _, ti := range r.turns {
				if turns[ti].HasAnswer && !slices.Contains(g.goldRnd, nextRound) {
					g.goldRnd = append(g.goldRnd, nextRound)
				}
			}
			for _, id := range ids {
				g.session[id] = si
				g.round[id] = nextRound
			}
			g.rounds = append(g.rounds, lmeRoundAt{session: si, turns: r.turns})
			nextRound++
		}
	}
	// The question comes after everything told: some haystacks have
	// sessions stamped later on the question's day than the question
	// itself, which a live user could not have asked about yet (their
	// episodes would not be valid at the question's time).
	g.at = at
	clk.Set(at)
	return g, nil
}

func maxTime(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// lmeRankLimit is how many episodes a question's ranking reads: enough for
// the largest cut-off in distinct rounds.
const lmeRankLimit = 200

// Level names the unit recall is counted in.
type Level int

// The levels of a LongMemEval report.
const (
	RoundLevel   Level = iota // a user message and the reply after it
	SessionLevel              // a haystack session
)

func (l Level) String() string {
	if l == SessionLevel {
		return "session"
	}
	return "round"
}

var levels = []Level{RoundLevel, SessionLevel}

// lmeResult is one question's outcome.
type lmeResult struct {
	typ  string
	abs  bool
	any  [2][]float64 // level → per cut-off: 1 when some evidence is in the top k
	all  [2][]float64 // level → per cut-off: 1 when all of it is
	ndcg [2]float64   // level → NDCG@10
	// What the turn's recall would put into the prompt.
	lines, tokens, excerpts int
	inAll                   [2]float64 // level → 1 when every evidence unit is among the lines
	// checkable: the answer occurs in an evidence turn; answerIn: the
	// lines' text holds it
	checkable, answerIn bool
	// miss is where the evidence ranked, when asked for and not all of it
	// is in the top ten rounds.
	miss *LMEMiss
}

// ranked returns the distinct units of the ranked episodes, in order of
// first appearance.
func ranked(res []memory.Scored, unit map[int64]int) []int {
	var out []int
	seen := map[int]bool{}
	for _, r := range res {
		u, ok := unit[r.ID]
		if ok && !seen[u] {
			seen[u] = true
			out = append(out, u)
		}
	}
	return out
}

// units returns, per level, the map from memory id to unit and the
// evidence units.
func (g *lmeStore) units(l Level) (map[int64]int, []int) {
	if l == SessionLevel {
		return g.session, g.goldSes
	}
	return g.round, g.goldRnd
}

// score ranks the question with tuning tune (nil: the store's) and, when
// inject is set, also runs the turn's recall as the prompt would show it;
// with misses, a question whose evidence rounds are not all in the top ten
// gets its LMEMiss.
func (g *lmeStore) score(ctx context.Context, ks []int, tune *memory.Tuning, gate memory.Gate, inject, misses bool) (lmeResult, error) {
	if tune != nil {
		g.store.SetTuning(*tune)
	}
	out := lmeResult{typ: g.q.Type, abs: g.q.Abstention()}
	if !out.abs {
		res, err := g.store.Rank(ctx, memory.Query{Text: g.q.Question, Limit: lmeRankLimit, Peek: true})
		if err != nil {
			return out, fmt.Errorf("recall %s: %w", g.q.ID, err)
		}
		for _, l := range levels {
			unit, gold := g.units(l)
			got := ranked(res, unit)
			for _, k := range ks {
				top := got[:min(k, len(got))]
				n := 0
				for _, gd := range gold {
					if slices.Contains(top, gd) {
						n++
					}
				}
				out.any[l] = append(out.any[l], b2f(n > 0))
				out.all[l] = append(out.all[l], b2f(n == len(gold) && n > 0))
			}
			out.ndcg[l] = ndcg(got, gold, 10)
		}
		if misses {
			m, err := g.miss(ctx, res)
			if err != nil {
				return out, err
			}
			out.miss = m
		}
	}
	if inject {
		rec, err := (&memory.RecallContext{Service: g.svc, Gate: gate, Whole: g.whole}).Recall(ctx, g.q.Question)
		if err != nil {
			return out, fmt.Errorf("recall %s: %w", g.q.ID, err)
		}
		out.lines, out.tokens, out.excerpts = len(rec.Memories), rec.Tokens, rec.Excerpts
		if g.answer != "" {
			out.checkable, out.answerIn = true, shownHolds(rec, g.answer)
		}
		for _, l := range levels {
			unit, gold := g.units(l)
			got := ranked(rec.Memories, unit)
			n := 0
			for _, gd := range gold {
				if slices.Contains(got, gd) {
					n++
				}
			}
			out.inAll[l] = b2f(n == len(gold) && n > 0)
		}
	}
	return out, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// ndcg is the binary-relevance NDCG@k of the ranked units against gold.
func ndcg(got, gold []int, k int) float64 {
	if len(gold) == 0 {
		return 0
	}
	var dcg, ideal float64
	for i, u := range got[:min(k, len(got))] {
		if slices.Contains(gold, u) {
			dcg += 1 / log2(float64(i+2))
		}
	}
	for i := range min(len(gold), k) {
		ideal += 1 / log2(float64(i+2))
	}
	return dcg / ideal
}

func log2(x float64) float64 { return math.Log2(x) }

// LMELevelReport holds one level's figures, in percent.
type LMELevelReport struct {
	Any, All []float64 // per cut-off of LMEReport.K
	NDCG10   float64
}

// LMETypeReport is one question type's figures.
type LMETypeReport struct {
	Questions int
	Levels    [2]LMELevelReport // by Level
}

// LMEInjected describes what a turn's recall puts into the prompt.
type LMEInjected struct {
	MeanLines  float64 // memory lines per question
	MeanTokens float64 // their tokens per question
	// RecallAll is, per level, the percentage of questions whose every
	// evidence unit is among the lines.
	RecallAll [2]float64
	// MeanExcerpts is how many of the lines a question are excerpts.
	MeanExcerpts float64
	// Checkable is how many questions have their answer, normalised
	// (case, punctuation), verbatim in an evidence turn; AnswerIn the
	// percentage of them whose lines' text holds it.
	Checkable int
	AnswerIn  float64
}

// LMEAbstention describes the abstention questions (left out of recall).
type LMEAbstention struct {
	Questions  int
	MeanLines  float64 // memory lines their turns would inject
	MeanTokens float64
}

// LMEReport is the result of a LongMemEval run. Values are percentages
// (NDCG too), means over the questions without abstention.
type LMEReport struct {
	K          []int
	Levels     [2]LMELevelReport // by Level
	ByType     map[string]LMETypeReport
	Questions  int // scored (abstention excluded)
	Injected   LMEInjected
	Abstention LMEAbstention
	// Misses are the questions whose evidence rounds are not all in the
	// top ten, in id order, when LMEOptions.Misses asked for them.
	Misses []LMEMiss
}

// Figure returns the recall_any@k or recall_all@k of level l (NaN when k is
// not a cut-off of the report).
func (r LMEReport) Figure(l Level, all bool, k int) float64 {
	i := slices.Index(r.K, k)
	if i < 0 {
		return math.NaN()
	}
	if all {
		return r.Levels[l].All[i]
	}
	return r.Levels[l].Any[i]
}

// lmeReport pools per-question results.
func lmeReport(ks []int, rs []lmeResult) LMEReport {
	rep := LMEReport{K: ks, ByType: map[string]LMETypeReport{}}
	level := func(sel []lmeResult) [2]LMELevelReport {
		var out [2]LMELevelReport
		for _, l := range levels {
			lr := LMELevelReport{Any: make([]float64, len(ks)), All: make([]float64, len(ks))}
			for _, r := range sel {
				for i := range ks {
					lr.Any[i] += r.any[l][i]
					lr.All[i] += r.all[l][i]
				}
				lr.NDCG10 += r.ndcg[l]
			}
			if n := float64(len(sel)); n > 0 {
				for i := range ks {
					lr.Any[i] *= 100 / n
					lr.All[i] *= 100 / n
				}
				lr.NDCG10 *= 100 / n
			}
			out[l] = lr
		}
		return out
	}
	var scored []lmeResult
	byType := map[string][]lmeResult{}
	for _, r := range rs {
		if r.abs {
			rep.Abstention.Questions++
			rep.Abstention.MeanLines += float64(r.lines)
			rep.Abstention.MeanTokens += float64(r.tokens)
			continue
		}
		scored = append(scored, r)
		byType[r.typ] = append(byType[r.typ], r)
		rep.Injected.MeanLines += float64(r.lines)
		rep.Injected.MeanTokens += float64(r.tokens)
		rep.Injected.MeanExcerpts += float64(r.excerpts)
		if r.checkable {
			rep.Injected.Checkable++
			rep.Injected.AnswerIn += b2f(r.answerIn)
		}
		for _, l := range levels {
			rep.Injected.RecallAll[l] += r.inAll[l]
		}
	}
	rep.Questions = len(scored)
	if n := float64(len(scored)); n > 0 {
		rep.Injected.MeanLines /= n
		rep.Injected.MeanTokens /= n
		rep.Injected.MeanExcerpts /= n
		for _, l := range levels {
			rep.Injected.RecallAll[l] *= 100 / n
		}
	}
	if rep.Injected.Checkable > 0 {
		rep.Injected.AnswerIn *= 100 / float64(rep.Injected.Checkable)
	}
	if n := float64(rep.Abstention.Questions); n > 0 {
		rep.Abstention.MeanLines /= n
		rep.Abstention.MeanTokens /= n
	}
	rep.Levels = level(scored)
	rep.Misses = misses(rs)
	for t, sel := range byType {
		rep.ByType[t] = LMETypeReport{Questions: len(sel), Levels: level(sel)}
	}
	return rep
}

// forQuestions ingests every question (opts.Workers at a time, each into
// its own store), calls use with it and closes it, and returns use's
// results in question order. With keep, the stores are returned open
// instead (the caller closes them).
func forQuestions[T any](ctx context.Context, qs []LMEQuestion, opts LMEOptions, keep bool, use func(context.Context, *lmeStore) (T, error)) ([]T, []*lmeStore, error) {
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	out := make([]T, len(qs))
	var stores []*lmeStore
	if keep {
		stores = make([]*lmeStore, len(qs))
	}
	var mu sync.Mutex
	done := 0
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(workers)
	for i, q := range qs {
		eg.Go(func() error {
			g, err := ingestLME(ctx, q, opts)
			if err != nil {
				return err
			}
			out[i], err = use(ctx, g)
			if keep {
				stores[i] = g
			} else {
				g.close(ctx)
			}
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			done++
			if opts.Progress != nil {
				opts.Progress(done, len(qs))
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		for _, g := range stores {
			if g != nil {
				g.close(ctx)
			}
		}
		return nil, nil, err
	}
	return out, stores, nil
}

// RunLongMemEval evaluates already parsed questions: each question's
// haystack goes into a fresh store as private web conversations between the
// user and the assistant, then the question is asked at its date.
func RunLongMemEval(ctx context.Context, qs []LMEQuestion, opts LMEOptions) (LMEReport, error) {
	ks, err := opts.cutoffs()
	if err != nil {
		return LMEReport{}, err
	}
	emb, done, err := orDefault(ctx, opts.Embedder)
	if err != nil {
		return LMEReport{}, err
	}
	defer done()
	opts.Embedder = emb
	rs, _, err := forQuestions(ctx, qs, opts, false, func(ctx context.Context, g *lmeStore) (lmeResult, error) {
		return g.score(ctx, ks, nil, opts.Gate, true, opts.Misses)
	})
	if err != nil {
		return LMEReport{}, err
	}
	return lmeReport(ks, rs), nil
}
