// Package eval measures Reverie's memory retrieval on public benchmarks.
//
// LoCoMo ingests each conversation of a LoCoMo-format file into a fresh
// memory store the way the assistant stores what it hears in a group room
// where two members talk and it only listens (memory.Ingest, the function
// the live channels' messages go through, with only the fields a channel
// supplies: one episode per dialogue turn with its speaker's name, its
// text and the session's date), asks every question, and reports recall@k
// of the gold evidence turns per question category.
// CrossValidate does it leave-one-conversation-out, choosing every
// retrieval weight on the other conversations.
package eval

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// Category is a LoCoMo question category.
type Category int

// The LoCoMo categories.
const (
	MultiHop    Category = 1
	Temporal    Category = 2
	OpenDomain  Category = 3
	SingleHop   Category = 4
	Adversarial Category = 5
)

// Categories lists the categories in report order.
var Categories = []Category{SingleHop, MultiHop, Temporal, OpenDomain, Adversarial}

// String returns the category's report name ("single-hop", …).
func (c Category) String() string {
	switch c {
	case MultiHop:
		return "multi-hop"
	case Temporal:
		return "temporal"
	case OpenDomain:
		return "open-domain"
	case SingleHop:
		return "single-hop"
	case Adversarial:
		return "adversarial"
	}
	return "category-" + strconv.Itoa(int(c))
}

// inOverall reports whether questions of c count in the overall figure.
func (c Category) inOverall() bool { return c >= MultiHop && c <= SingleHop }

// DefaultK are the cut-offs reported when Options.K is empty.
var DefaultK = []int{1, 5, 10}

// Options configure a LoCoMo run.
type Options struct {
	K        []int          // recall cut-offs; DefaultK when empty
	Embedder embed.Embedder // DefaultEmbedder's when nil (the built-in sentence encoder)
	// Tuning overrides the store's retrieval parameters when non-nil.
	Tuning *memory.Tuning
	// Progress, when non-nil, is called after each conversation.
	Progress func(done, total int)
	// Trace, when non-nil, is called once per scored question.
	Trace  func(QuestionResult)
	Logger *slog.Logger
	// Whole shows every recalled memory whole in the injected block (no
	// excerpts: memory.RecallContext.Whole), to measure the excerpts
	// against.
	Whole bool
}

// QuestionResult is the outcome of one question, for Options.Trace.
type QuestionResult struct {
	Conversation string
	QA           QA
	Gold         []string // normalised evidence ids
	Retrieved    []string // dialogue ids of the recalled memories, best first
}

// Report is the result of a run. Values are percentages.
type Report struct {
	K          []int
	Overall    map[int]float64              // k → mean recall@k over categories 1–4
	ByCategory map[Category]map[int]float64 // category → k → mean recall@k
	Counts     map[Category]int             // questions scored per category
	Questions  int                          // questions scored, all categories
	Skipped    int                          // questions without usable evidence ids
	// Injected is what a turn's recall would put into the prompt for the
	// scored questions (Run measures it; cross-validation does not).
	Injected *Injected
}

// Injected describes what a turn's recall (memory.RecallContext, the
// code a live turn runs) puts into the prompt, over a set of questions.
type Injected struct {
	Questions    int
	MeanLines    float64 // memory lines per question
	MeanTokens   float64 // their tokens per question
	MeanExcerpts float64 // lines per question shown as an excerpt
	// EvidenceAll is the percentage of questions whose every evidence
	// memory is among the lines.
	EvidenceAll float64
	// Checkable is how many questions have their answer, normalised
	// (case, punctuation), verbatim in an evidence turn; AnswerIn the
	// percentage of them whose lines' text holds it.
	Checkable int
	AnswerIn  float64
}

// injTally accumulates Injected.
type injTally struct {
	questions, lines, tokens, excerpts, evidenceAll, checkable, answerIn int
}

func (t injTally) report() *Injected {
	in := &Injected{Questions: t.questions, Checkable: t.checkable}
	if n := float64(t.questions); n > 0 {
		in.MeanLines, in.MeanTokens, in.MeanExcerpts = float64(t.lines)/n, float64(t.tokens)/n, float64(t.excerpts)/n
		in.EvidenceAll = 100 * float64(t.evidenceAll) / n
	}
	if t.checkable > 0 {
		in.AnswerIn = 100 * float64(t.answerIn) / float64(t.checkable)
	}
	return in
}

// Turn is one dialogue turn of a LoCoMo conversation.
type Turn struct {
	Speaker string `json:"speaker"`
	DiaID   string `json:"dia_id"`
	Text    string `json:"text"`
	// BlipCaption is the dataset's machine caption of a shared image: no
	// channel supplies one, so it is never stored.
	BlipCaption string `json:"blip_caption"`
}

// QA is one LoCoMo question.
type QA struct {
	Question string          `json:"question"`
	Evidence []string        `json:"evidence"`
	Category Category        `json:"category"`
	Answer   json.RawMessage `json:"answer"`
}

// Session is a dated group of turns.
type Session struct {
	Number int
	Date   time.Time
	Turns  []Turn
}

// Conversation is one LoCoMo sample.
type Conversation struct {
	ID       string
	Sessions []Session
	QA       []QA
}

var sessionKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^session_(\d+)$`) })

// ParseLoCoMo decodes a LoCoMo JSON file (an array of samples with
// "sample_id", "conversation" holding "session_N" turn lists and
// "session_N_date_time" strings, and "qa").
func ParseLoCoMo(r io.Reader) ([]Conversation, error) {
	var raw []struct {
		SampleID     string                     `json:"sample_id"`
		Conversation map[string]json.RawMessage `json:"conversation"`
		QA           []QA                       `json:"qa"`
	}
	if err := json.NewDecoder(r).Decode(&raw); err != nil {
		return nil, fmt.Errorf("parse LoCoMo file: %w", err)
	}
	out := make([]Conversation, 0, len(raw))
	for i, s := range raw {
		c := Conversation{ID: s.SampleID, QA: s.QA}
		if c.ID == "" {
			c.ID = "conv-" + strconv.Itoa(i+1)
		}
		for key, body := range s.Conversation {
			m := sessionKey().FindStringSubmatch(key)
			if m == nil {
				continue
			}
			n, _ := strconv.Atoi(m[1])
			var turns []Turn
			if err := json.Unmarshal(body, &turns); err != nil {
				return nil, fmt.Errorf("parse LoCoMo %s %s: %w", c.ID, key, err)
			}
			sess := Session{Number: n, Turns: turns}
			if d, ok := s.Conversation[key+"_date_time"]; ok {
				var ds string
				if err := json.Unmarshal(d, &ds); err == nil {
					sess.Date, _ = parseSessionDate(ds)
				}
			}
			c.Sessions = append(c.Sessions, sess)
		}
		sort.Slice(c.Sessions, func(a, b int) bool { return c.Sessions[a].Number < c.Sessions[b].Number })
		out = append(out, c)
	}
	return out, nil
}

// parseSessionDate reads LoCoMo dates like "1:56 pm on 8 May, 2023".
func parseSessionDate(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{"3:04 pm on 2 January, 2006", "3:04 pm on 2 Jan, 2006", "3:04 PM on 2 January, 2006", "2 January, 2006", "2006-01-02"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("unrecognised session date %q", s)
}

var diaIDRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^D(\d+):(\d+)$`) })

// goldIDs normalises evidence entries: "D8:6; D9:17" is split, "D:11:26"
// becomes "D11:26", anything else unparseable is dropped.
func goldIDs(evidence []string) []string {
	var out []string
	for _, e := range evidence {
		for _, part := range strings.FieldsFunc(e, func(r rune) bool { return r == ';' || r == ',' || r == ' ' }) {
			p := strings.TrimSpace(part)
			p = strings.Replace(p, "D:", "D", 1)
			if diaIDRe().MatchString(p) && !slices.Contains(out, p) {
				out = append(out, p)
			}
		}
	}
	return out
}

// DefaultRoom is the group room a LoCoMo conversation is heard in (each
// conversation gets a fresh store, so one room serves them all).
var DefaultRoom = chat.Address{Channel: "group", Thread: "group:room"}

// GroupRoom returns c as the messages a group-room channel hands the
// assistant when two members talk in a room where it only listens: per
// dialogue turn, the room's address, the speaker's name as the sender's
// display name, the turn's text, the session's date and time as when it was
// received, Overheard set. Nothing else: no image caption, no dataset ids
// (a turn that is only an image has no text and stores nothing). It also
// returns each message's dialogue id, for scoring.
func GroupRoom(c Conversation, room chat.Address) ([]chat.Inbound, []string) {
	var msgs []chat.Inbound
	var dias []string
	for _, s := range c.Sessions {
		for _, t := range s.Turns {
			msgs = append(msgs, chat.Inbound{Address: room, Sender: chat.Sender{ID: t.Speaker, DisplayName: t.Speaker},
				Text: t.Text, Received: s.Date, Overheard: true})
			dias = append(dias, t.DiaID)
		}
	}
	return msgs, dias
}

// Ingest stores c in st the way the assistant stores what it hears in a
// group room: every message of GroupRoom(c, room) through memory.Ingest,
// the function the live channels' messages go through, in the UTC zone and
// with no reply. clk is st's clock: a live room stores a message when it is
// said, so Ingest stands it at each message's time (its session's date)
// before storing it; a message of an undated session is stored where the
// clock stands. It returns the dialogue id of each stored episode.
func Ingest(ctx context.Context, st memory.Store, clk *Clock, c Conversation, room chat.Address) (map[int64]string, error) {
	msgs, dias := GroupRoom(c, room)
	byID := make(map[int64]string, len(msgs))
	for i, m := range msgs {
		if !m.Received.IsZero() {
			clk.Set(m.Received)
		}
		ids, err := memory.Ingest(ctx, st, time.UTC, m, memory.Reply{})
		if err != nil {
			return nil, fmt.Errorf("ingest %s: %w", dias[i], err)
		}
		for _, id := range ids {
			byID[id] = dias[i]
		}
	}
	return byID, nil
}

// AskStep is how long after the latest session's date LoCoMo's questions
// are asked (AskTime).
const AskStep = time.Hour

// AskTime is when c's questions are asked. LoCoMo's questions carry no
// date; they are about the whole conversation, so they come after its
// latest session, and soon after (AskStep), as a member would ask in the
// room: everything said is stored and valid by then (a session's turns all
// carry the session's start time), and the last session is the
// conversation's recent past, not years before. An undated session counts
// at the Unix epoch, where a fresh Clock stands.
func AskTime(c Conversation) time.Time {
	latest := time.Unix(0, 0).UTC()
	for _, s := range c.Sessions {
		if s.Date.After(latest) {
			latest = s.Date
		}
	}
	return latest.Add(AskStep)
}

// cutoffs returns the sorted, distinct, positive k of opts.
func cutoffs(opts Options) ([]int, error) {
	ks := slices.Clone(opts.K)
	if len(ks) == 0 {
		ks = slices.Clone(DefaultK)
	}
	slices.Sort(ks)
	ks = slices.Compact(ks)
	if ks[0] <= 0 {
		return nil, fmt.Errorf("locomo: k must be positive, got %d", ks[0])
	}
	return ks, nil
}

// Run evaluates already parsed conversations.
func Run(ctx context.Context, convs []Conversation, opts Options) (Report, error) {
	ks, err := cutoffs(opts)
	if err != nil {
		return Report{}, err
	}
	emb, done, err := orDefault(ctx, opts.Embedder)
	if err != nil {
		return Report{}, err
	}
	defer done()
	opts.Embedder = emb
	tune := memory.DefaultTuning
	if opts.Tuning != nil {
		tune = *opts.Tuning
	}
	t := newTally(ks)
	t.inj = &injTally{}
	for ci, c := range convs {
		g, err := ingest(ctx, c, opts)
		if err != nil {
			return Report{}, fmt.Errorf("locomo %s: %w", c.ID, err)
		}
		if err := g.serve(opts); err != nil {
			g.close(ctx)
			return Report{}, fmt.Errorf("locomo %s: %w", c.ID, err)
		}
		err = g.score(ctx, tune, t, opts.Trace)
		g.close(ctx)
		if err != nil {
			return Report{}, fmt.Errorf("locomo %s: %w", c.ID, err)
		}
		if opts.Progress != nil {
			opts.Progress(ci+1, len(convs))
		}
	}
	return t.report(), nil
}

// tally accumulates recall@k per category.
type tally struct {
	ks      []int
	sums    map[Category]map[int]float64
	counts  map[Category]int
	skipped int
	inj     *injTally // what recall injects, when measured
}

func newTally(ks []int) *tally {
	return &tally{ks: ks, sums: map[Category]map[int]float64{}, counts: map[Category]int{}}
}

func (t *tally) add(o *tally) {
	for c, m := range o.sums {
		if t.sums[c] == nil {
			t.sums[c] = map[int]float64{}
		}
		for k, v := range m {
			t.sums[c][k] += v
		}
		t.counts[c] += o.counts[c]
	}
	t.skipped += o.skipped
}

func (t *tally) report() Report {
	rep := Report{K: t.ks, Counts: t.counts, Skipped: t.skipped, ByCategory: map[Category]map[int]float64{}, Overall: map[int]float64{}}
	if t.inj != nil {
		rep.Injected = t.inj.report()
	}
	overallCats := 0
	for cat, n := range t.counts {
		m := map[int]float64{}
		for _, k := range t.ks {
			m[k] = 100 * t.sums[cat][k] / float64(n)
		}
		rep.ByCategory[cat] = m
		rep.Questions += n
		if cat.inOverall() && n > 0 {
			overallCats++
		}
	}
	// The overall figure is the mean of the per-category figures of
	// categories 1–4 (each category weighs the same, however many questions
	// it has), as the baseline (plain BM25 ≈ 53) is stated.
	for _, k := range t.ks {
		for cat, m := range rep.ByCategory {
			if cat.inOverall() && overallCats > 0 {
				rep.Overall[k] += m[k] / float64(overallCats)
			}
		}
	}
	return rep
}

// ingested is one conversation stored as episodes in a fresh store.
type ingested struct {
	conv  Conversation
	db    *sql.DB
	store *memory.VectorStore
	byID  map[int64]string  // memory id → dialogue id
	clock *Clock            // the store's clock: at AskTime once ingested
	memo  map[string]*tally // recall@10 per tuning (cross-validation)
	// svc serves the store as the app does, for the turn's recall (serve);
	// dir is its data dir.
	svc   *memory.Service
	dir   string
	whole bool // inject every memory whole (Options.Whole)
}

// serve puts the store behind a memory service, as the app does, so that
// score also measures what a turn's recall would inject.
func (g *ingested) serve(opts Options) error {
	dir, err := os.MkdirTemp("", "reverie-locomo-")
	if err != nil {
		return fmt.Errorf("data dir: %w", err)
	}
	g.dir, g.whole = dir, opts.Whole
	g.svc, err = memory.NewService(memory.ServiceOptions{Store: g.store, DataDir: dir, Now: g.clock.Now, Logger: opts.Logger})
	return err
}

// ingest stores c's turns through Ingest, the live path of a group room,
// into a fresh in-memory store whose clock stands at each session's date
// while it is stored, then at AskTime(c), where the questions are asked.
// opts.Embedder must be set (the entry points resolve it).
func ingest(ctx context.Context, c Conversation, opts Options) (*ingested, error) {
	emb := opts.Embedder
	if emb == nil {
		return nil, fmt.Errorf("locomo %s: no embedding model", c.ID)
	}
	db, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		return nil, err
	}
	clk := &Clock{}
	store, err := memory.OpenVector(ctx, db, emb, clk.Now, opts.Logger, memory.DefaultTuning)
	if err != nil {
		db.Close()
		return nil, err
	}
	g := &ingested{conv: c, db: db, store: store, clock: clk}
	if g.byID, err = Ingest(ctx, store, clk, c, DefaultRoom); err != nil {
		g.close(ctx)
		return nil, err
	}
	clk.Set(AskTime(c))
	return g, nil
}

func (g *ingested) close(ctx context.Context) {
	g.store.Shutdown(context.WithoutCancel(ctx))
	g.db.Close()
	if g.dir != "" {
		os.RemoveAll(g.dir)
	}
}

// score asks every question of the conversation with tuning tune and adds
// the outcome to t.
func (g *ingested) score(ctx context.Context, tune memory.Tuning, t *tally, trace func(QuestionResult)) error {
	g.store.SetTuning(tune)
	ks := t.ks
	maxK := ks[len(ks)-1]
	for _, qa := range g.conv.QA {
		gold := goldIDs(qa.Evidence)
		if len(gold) == 0 || strings.TrimSpace(qa.Question) == "" {
			t.skipped++
			continue
		}
		// Rank is Recall's ranking without reading the rows back
		res, err := g.store.Rank(ctx, memory.Query{Text: qa.Question, Limit: maxK, Peek: true})
		if err != nil {
			return fmt.Errorf("recall %q: %w", qa.Question, err)
		}
		if t.sums[qa.Category] == nil {
			t.sums[qa.Category] = map[int]float64{}
		}
		for _, k := range ks {
			hit := map[string]bool{}
			for _, r := range res[:min(k, len(res))] {
				hit[g.byID[r.ID]] = true
			}
			n := 0
			for _, gd := range gold {
				if hit[gd] {
					n++
				}
			}
			t.sums[qa.Category][k] += float64(n) / float64(len(gold))
		}
		t.counts[qa.Category]++
		if g.svc != nil && t.inj != nil {
			if err := g.inject(ctx, qa, gold, t.inj); err != nil {
				return err
			}
		}
		if trace != nil {
			var got []string
			for _, r := range res {
				got = append(got, g.byID[r.ID])
			}
			trace(QuestionResult{Conversation: g.conv.ID, QA: qa, Gold: gold, Retrieved: got})
		}
	}
	return nil
}

// inject runs the turn's recall for qa as the prompt would show it and
// adds what it put there to t.
func (g *ingested) inject(ctx context.Context, qa QA, gold []string, t *injTally) error {
	rec, err := (&memory.RecallContext{Service: g.svc, Whole: g.whole}).Recall(ctx, qa.Question)
	if err != nil {
		return fmt.Errorf("recall %q: %w", qa.Question, err)
	}
	t.questions++
	t.lines += len(rec.Memories)
	t.tokens += rec.Tokens
	t.excerpts += rec.Excerpts
	shown := map[string]bool{}
	for _, m := range rec.Memories {
		shown[g.byID[m.ID]] = true
	}
	all := true
	for _, gd := range gold {
		all = all && shown[gd]
	}
	if all {
		t.evidenceAll++
	}
	var evid []string
	for _, s := range g.conv.Sessions {
		for _, turn := range s.Turns {
			if slices.Contains(gold, turn.DiaID) {
				evid = append(evid, turn.Text)
			}
		}
	}
	if a := checkableAnswer(answerOf(qa.Answer), evid); a != "" {
		t.checkable++
		if shownHolds(rec, a) {
			t.answerIn++
		}
	}
	return nil
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }

// MarshalJSON writes {"overall":{"recall@1":…},"by_category":{"single-hop":
// {…},…},"questions":N} with keys in report order and values in percent
// rounded to two decimals.
func (r Report) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	writeKs := func(m map[int]float64) {
		b.WriteByte('{')
		for i, k := range r.K {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"recall@%d":%s`, k, strconv.FormatFloat(round2(m[k]), 'f', -1, 64))
		}
		b.WriteByte('}')
	}
	b.WriteString(`{"overall":`)
	writeKs(r.Overall)
	b.WriteString(`,"by_category":{`)
	first := true
	for _, c := range Categories {
		m, ok := r.ByCategory[c]
		if !ok {
			continue
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		fmt.Fprintf(&b, "%q:", c.String())
		writeKs(m)
	}
	fmt.Fprintf(&b, `},"questions":%d`, r.Questions)
	if in := r.Injected; in != nil {
		fmt.Fprintf(&b, `,"injected":{"questions":%d,"mean_lines":%s,"mean_tokens":%s,"mean_excerpts":%s,"evidence_all":%s,"answer_checkable":%d,"answer_in_text":%s}`,
			in.Questions, jsonNum(in.MeanLines), jsonNum(in.MeanTokens), jsonNum(in.MeanExcerpts), jsonNum(in.EvidenceAll), in.Checkable, jsonNum(in.AnswerIn))
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// WriteTable prints the report as an aligned text table.
func (r Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "category\tquestions\t")
	for _, k := range r.K {
		fmt.Fprintf(tw, "R@%d\t", k)
	}
	fmt.Fprintln(tw)
	row := func(name string, n int, m map[int]float64) {
		fmt.Fprintf(tw, "%s\t%d\t", name, n)
		for _, k := range r.K {
			fmt.Fprintf(tw, "%.2f\t", m[k])
		}
		fmt.Fprintln(tw)
	}
	overallN := 0
	for _, c := range Categories {
		if m, ok := r.ByCategory[c]; ok {
			row(c.String(), r.Counts[c], m)
			if c.inOverall() {
				overallN += r.Counts[c]
			}
		}
	}
	row("overall (1-4)", overallN, r.Overall)
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if in := r.Injected; in != nil {
		if _, err := fmt.Fprintf(w, "injected into the prompt: %.2f lines (%.0f tokens) a question; every evidence turn among them %.1f%%\n"+
			"  excerpts: %.2f of the lines; answer in the lines' text: %.1f%% of the %d questions whose answer an evidence turn holds verbatim\n",
			in.MeanLines, in.MeanTokens, in.EvidenceAll, in.MeanExcerpts, in.AnswerIn, in.Checkable); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}
