package eval

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"strconv"

	"golang.org/x/sync/errgroup"

	"github.com/reverie-ai/reverie/internal/memory"
)

// knob is one tunable weight of memory.Tuning and the values the search
// tries for it.
type knob struct {
	name   string
	values []float64
	get    func(*memory.Tuning) float64
	set    func(*memory.Tuning, float64)
}

// knobs are every retrieval weight the cross-validation chooses. The
// values are coarse grids around the textbook settings; nothing in them
// names a phrase, a person or a date. The vector weight's grid reaches the
// full-text ranking's weight (TextWeight, 1) and past it (1.5): with an
// embedding model the folds chose its top value when it stopped at 0.6,
// and a choice at a grid's edge says the grid is too short, whichever
// embedder is measured.
var knobs = []knob{
	{"vector_weight", []float64{0.05, 0.1, 0.15, 0.25, 0.4, 0.6, 1, 1.5},
		func(t *memory.Tuning) float64 { return t.VectorWeight }, func(t *memory.Tuning, v float64) { t.VectorWeight = v }},
	{"rrf_k", []float64{5, 10, 20, 40, 60},
		func(t *memory.Tuning) float64 { return t.RRFK }, func(t *memory.Tuning, v float64) { t.RRFK = v }},
	{"bm25_b", []float64{0.3, 0.5, 0.75, 0.9},
		func(t *memory.Tuning) float64 { return t.BM25B }, func(t *memory.Tuning, v float64) { t.BM25B = v }},
	{"bm25_k1", []float64{0.8, 1.2, 1.6, 2},
		func(t *memory.Tuning) float64 { return t.BM25K1 }, func(t *memory.Tuning, v float64) { t.BM25K1 = v }},
	{"feedback_weight", []float64{0, 0.15, 0.3, 0.5, 0.8},
		func(t *memory.Tuning) float64 { return t.FeedbackWeight }, func(t *memory.Tuning, v float64) { t.FeedbackWeight = v }},
	{"feedback_terms", []float64{3, 5, 8, 12},
		func(t *memory.Tuning) float64 { return float64(t.FeedbackTerms) }, func(t *memory.Tuning, v float64) { t.FeedbackTerms = int(v) }},
	{"feedback_docs", []float64{4, 8, 16},
		func(t *memory.Tuning) float64 { return float64(t.FeedbackDocs) }, func(t *memory.Tuning, v float64) { t.FeedbackDocs = int(v) }},
	{"speaker_boost", []float64{0, 0.5, 1, 1.5, 3},
		func(t *memory.Tuning) float64 { return t.SpeakerBoost }, func(t *memory.Tuning, v float64) { t.SpeakerBoost = v }},
	{"spread", []float64{0, 0.25, 0.5, 0.7},
		func(t *memory.Tuning) float64 { return t.Spread }, func(t *memory.Tuning, v float64) { t.Spread = v }},
	{"answer_spread", []float64{0, 0.5, 0.7, 0.85, 1},
		func(t *memory.Tuning) float64 { return t.AnswerSpread }, func(t *memory.Tuning, v float64) { t.AnswerSpread = v }},
	{"exchange_spread", []float64{0, 0.25, 0.5, 0.7},
		func(t *memory.Tuning) float64 { return t.ExchangeSpread }, func(t *memory.Tuning, v float64) { t.ExchangeSpread = v }},
	{"spread_reach", []float64{1, 2, 3},
		func(t *memory.Tuning) float64 { return float64(t.SpreadReach) }, func(t *memory.Tuning, v float64) { t.SpreadReach = int(v) }},
	{"date_boost", []float64{0, 1, 3, 6},
		func(t *memory.Tuning) float64 { return t.DateBoost }, func(t *memory.Tuning, v float64) { t.DateBoost = v }},
	{"date_slack_days", []float64{0, 3, 7},
		func(t *memory.Tuning) float64 { return t.DateSlackDays }, func(t *memory.Tuning, v float64) { t.DateSlackDays = v }},
	{"length_prior", []float64{0, 0.1, 0.2, 0.4},
		func(t *memory.Tuning) float64 { return t.LengthPrior }, func(t *memory.Tuning, v float64) { t.LengthPrior = v }},
	{"intent_boost", []float64{0, 0.15, 0.3},
		func(t *memory.Tuning) float64 { return t.IntentBoost }, func(t *memory.Tuning, v float64) { t.IntentBoost = v }},
	// StrengthBoost is no knob: it weighs what recall added to a memory's
	// retention, and the evaluations only peek (record no recall), so it
	// is 0 there at any weight.
	{"recency_boost", []float64{0, 0.05, 0.1, 0.2},
		func(t *memory.Tuning) float64 { return t.RecencyBoost }, func(t *memory.Tuning, v float64) { t.RecencyBoost = v }},
	{"kind_weight", []float64{0, 0.1, 0.2, 0.35, 0.5},
		func(t *memory.Tuning) float64 { return t.KindWeight }, func(t *memory.Tuning, v float64) { t.KindWeight = v }},
	{"derived_weight", []float64{0, 0.1, 0.2, 0.35, 0.5},
		func(t *memory.Tuning) float64 { return t.DerivedWeight }, func(t *memory.Tuning, v float64) { t.DerivedWeight = v }},
	{"passage_weight", []float64{0, 0.25, 0.5, 1},
		func(t *memory.Tuning) float64 { return t.PassageWeight }, func(t *memory.Tuning, v float64) { t.PassageWeight = v }},
}

// NeutralTuning is where the cross-validation's search starts: the
// textbook full-text ranking fused with the vector one, and every boost,
// spread and feedback off. Starting from DefaultTuning instead would carry
// in what was fitted on the held-out conversation.
func NeutralTuning() memory.Tuning {
	t := memory.DefaultTuning
	t.VectorWeight, t.RRFK, t.BM25B, t.BM25K1 = 0.15, 20, 0.75, 1.2
	t.FeedbackWeight, t.FeedbackTerms, t.FeedbackDocs = 0, 5, 8
	t.SpeakerBoost, t.Spread, t.AnswerSpread, t.SpreadReach = 0, 0, 0, 1
	t.RecencyBoost, t.StrengthBoost = 0, 0
	t.ExchangeSpread = 0
	t.DateBoost, t.DateSlackDays, t.LengthPrior, t.IntentBoost = 0, 3, 0, 0
	t.KindWeight, t.DerivedWeight = 0, 0
	t.PassageWeight = 0
	return t
}

// CVSweeps is how many times the coordinate search goes over every knob.
const CVSweeps = 2

// Fold is one round of leave-one-conversation-out.
type Fold struct {
	HeldOut string        // the conversation scored
	Tuning  memory.Tuning // chosen on the other conversations
	Train   float64       // their recall@10 over categories 1–4 with it
	Test    Report        // the held-out conversation's figures
}

// CVReport is a cross-validated run: Report pools the held-out questions
// of every fold (so each question is scored once, by weights chosen
// without it); Folds holds each fold.
type CVReport struct {
	Report
	Folds []Fold
}

// CrossValidate runs leave-one-conversation-out: for each conversation the
// weights (knobs) are chosen by coordinate search from NeutralTuning,
// maximising recall@10 over categories 1–4 on the other conversations, and
// the held-out one is scored with them. Options.Tuning is ignored.
func CrossValidate(ctx context.Context, convs []Conversation, opts Options) (CVReport, error) {
	ks, err := cutoffs(opts)
	if err != nil {
		return CVReport{}, err
	}
	if len(convs) < 2 {
		return CVReport{}, fmt.Errorf("locomo: cross-validation needs at least 2 conversations, got %d", len(convs))
	}
	emb, done, err := orDefault(ctx, opts.Embedder)
	if err != nil {
		return CVReport{}, err
	}
	defer done()
	opts.Embedder = emb
	gs := make([]*ingested, 0, len(convs))
	defer func() {
		for _, g := range gs {
			g.close(ctx)
		}
	}()
	for _, c := range convs {
		g, err := ingest(ctx, c, opts)
		if err != nil {
			return CVReport{}, fmt.Errorf("locomo %s: %w", c.ID, err)
		}
		gs = append(gs, g)
	}
	pooled := newTally(ks)
	var out CVReport
	for i, held := range gs {
		train := make([]*ingested, 0, len(gs)-1)
		for j, g := range gs {
			if j != i {
				train = append(train, g)
			}
		}
		tune, score, err := fit(ctx, train)
		if err != nil {
			return CVReport{}, err
		}
		t := newTally(ks)
		if err := held.score(ctx, tune, t, opts.Trace); err != nil {
			return CVReport{}, fmt.Errorf("locomo %s: %w", held.conv.ID, err)
		}
		pooled.add(t)
		out.Folds = append(out.Folds, Fold{HeldOut: held.conv.ID, Tuning: tune, Train: score, Test: t.report()})
		if opts.Progress != nil {
			opts.Progress(i+1, len(gs))
		}
	}
	out.Report = pooled.report()
	return out, nil
}

// objective is recall@10 over categories 1–4 of the conversations gs with
// tuning t, scoring them GOMAXPROCS at a time (each has its own store).
// Each conversation's tally is kept per tuning (the folds' searches share
// most of their conversations and often their path).
func objective(ctx context.Context, gs []*ingested, t memory.Tuning) (float64, error) {
	key := fmt.Sprintf("%+v", t)
	ones := make([]*tally, len(gs))
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(runtime.GOMAXPROCS(0))
	for i, g := range gs {
		eg.Go(func() error {
			one, ok := g.memo[key]
			if !ok {
				one = newTally([]int{10})
				if err := g.score(ctx, t, one, nil); err != nil {
					return fmt.Errorf("locomo %s: %w", g.conv.ID, err)
				}
				if g.memo == nil {
					g.memo = map[string]*tally{}
				}
				g.memo[key] = one
			}
			ones[i] = one
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return 0, err
	}
	tl := newTally([]int{10})
	for _, one := range ones {
		tl.add(one)
	}
	return tl.report().Overall[10], nil
}

// fit chooses the knobs on gs (see search) for recall@10 over categories
// 1–4.
func fit(ctx context.Context, gs []*ingested) (memory.Tuning, float64, error) {
	return search(func(t memory.Tuning) (float64, error) { return objective(ctx, gs, t) })
}

// knobPairs are the knobs whose best values depend on each other, searched
// together on their grid as well as one at a time: relevance spread along
// a conversation adds to the fused rank scores, so how much of it helps
// depends on the fusion constant and on the vector ranking's weight, and
// the spreading backwards on the spreading to a reply (in a group room's
// chain; an exchange with the assistant has one weight, ExchangeSpread); the length prior
// and BM25's length normalisation both act on a memory's length. One knob
// at a time, the search starting from NeutralTuning cannot turn spreading
// on where it pays only with another fusion constant (a ridge).
var knobPairs = [][2]string{
	{"rrf_k", "spread"},
	{"rrf_k", "answer_spread"},
	{"spread", "answer_spread"},
	{"rrf_k", "exchange_spread"},
	{"vector_weight", "rrf_k"},
	{"length_prior", "bm25_b"},
}

// knobNamed returns the knob called name; it panics on a name not in
// knobs (knobPairs is fixed).
func knobNamed(name string) knob {
	for _, k := range knobs {
		if k.name == name {
			return k
		}
	}
	panic("eval: no knob " + name)
}

// search chooses the knobs by coordinate search from NeutralTuning:
// CVSweeps passes, each trying every value of every knob in turn, then
// every pair of values of each of knobPairs, and keeping the one that
// maximises obj (a tie keeps the current value). It reads only obj, so a
// cross-validation's held-out questions never reach it.
func search(obj func(memory.Tuning) (float64, error)) (memory.Tuning, float64, error) {
	cur := NeutralTuning()
	best, err := obj(cur)
	if err != nil {
		return cur, 0, err
	}
	try := func(t memory.Tuning) (bool, error) {
		s, err := obj(t)
		if err != nil {
			return false, err
		}
		if s > best+1e-9 {
			best, cur = s, t
			return true, nil
		}
		return false, nil
	}
	for range CVSweeps {
		changed := false
		for _, k := range knobs {
			for _, v := range k.values {
				if v == k.get(&cur) {
					continue
				}
				t := cur
				k.set(&t, v)
				ok, err := try(t)
				if err != nil {
					return cur, 0, err
				}
				changed = changed || ok
			}
		}
		for _, p := range knobPairs {
			a, b := knobNamed(p[0]), knobNamed(p[1])
			base := cur
			for _, va := range a.values {
				for _, vb := range b.values {
					if va == a.get(&base) && vb == b.get(&base) {
						continue
					}
					t := base
					a.set(&t, va)
					b.set(&t, vb)
					ok, err := try(t)
					if err != nil {
						return cur, 0, err
					}
					changed = changed || ok
				}
			}
		}
		if !changed {
			break
		}
	}
	return cur, best, nil
}

// FitAll ingests every conversation and fits the knobs on all of them (the
// dev-fitted setting, for DefaultTuning).
func FitAll(ctx context.Context, convs []Conversation, opts Options) (memory.Tuning, float64, error) {
	emb, done, err := orDefault(ctx, opts.Embedder)
	if err != nil {
		return memory.Tuning{}, 0, err
	}
	defer done()
	opts.Embedder = emb
	var gs []*ingested
	defer func() {
		for _, g := range gs {
			g.close(ctx)
		}
	}()
	for _, c := range convs {
		g, err := ingest(ctx, c, opts)
		if err != nil {
			return memory.Tuning{}, 0, fmt.Errorf("locomo %s: %w", c.ID, err)
		}
		gs = append(gs, g)
	}
	return fit(ctx, gs)
}

// Knobs renders the chosen knobs of t as "name=value" pairs.
func Knobs(t memory.Tuning) map[string]float64 {
	out := make(map[string]float64, len(knobs))
	for _, k := range knobs {
		out[k.name] = k.get(&t)
	}
	return out
}

// MarshalJSON writes the pooled report's fields plus "cross_validated":
// true and "folds": [{"held_out":…,"train_recall@10":…,"tuning":{…},
// "overall":{…}}, …].
func (r CVReport) MarshalJSON() ([]byte, error) {
	base, err := r.Report.MarshalJSON()
	if err != nil {
		return nil, err
	}
	folds := make([]foldJSON, len(r.Folds))
	for i, f := range r.Folds {
		folds[i] = foldJSON{fmt.Sprintf(`"held_out":%q,"train_recall@10":%s`, f.HeldOut, strconv.FormatFloat(round2(f.Train), 'f', -1, 64)), f.Tuning, f.Test}
	}
	return withFolds(base, folds)
}

// foldJSON is one fold of a cross-validated report: its leading fields
// (JSON members without braces), the weights chosen and the held-out report.
type foldJSON struct {
	head   string
	tuning memory.Tuning
	test   json.Marshaler
}

// withFolds adds "cross_validated":true and "folds":[{head…,"tuning":{…},
// "test":{…}}, …] to base, the pooled report's JSON object.
func withFolds(base []byte, folds []foldJSON) ([]byte, error) {
	var b bytes.Buffer
	b.Write(base[:len(base)-1])
	b.WriteString(`,"cross_validated":true,"folds":[`)
	for i, f := range folds {
		if i > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(&b, `{%s,"tuning":`, f.head)
		writeTuning(&b, f.tuning)
		tb, err := f.test.MarshalJSON()
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(&b, `,"test":%s}`, tb)
	}
	b.WriteString(`]}`)
	return b.Bytes(), nil
}

// writeTuning writes the knobs of t as {"name":value,…}, in knobs' order.
func writeTuning(b *bytes.Buffer, t memory.Tuning) {
	b.WriteByte('{')
	for j, k := range knobs {
		if j > 0 {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, "%q:%s", k.name, strconv.FormatFloat(k.get(&t), 'f', -1, 64))
	}
	b.WriteByte('}')
}

// WriteTable prints the pooled table, then one line per fold.
func (r CVReport) WriteTable(w io.Writer) error {
	fmt.Fprintln(w, "leave-one-conversation-out (weights chosen on the other conversations):")
	if err := r.Report.WriteTable(w); err != nil {
		return err
	}
	for _, f := range r.Folds {
		if _, err := fmt.Fprintf(w, "fold %s: train R@10 %.2f, held-out R@10 %.2f\n", f.HeldOut, f.Train, f.Test.Overall[10]); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	return nil
}
