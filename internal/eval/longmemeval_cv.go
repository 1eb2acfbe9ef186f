package eval

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"golang.org/x/sync/errgroup"

	"github.com/reverie-ai/reverie/internal/memory"
)

// LMEFolds is how many folds CrossValidateLongMemEval splits the questions
// into.
const LMEFolds = 5

// lmeObjectiveK are the cut-offs the cross-validation's objective reads:
// session recall_any@5 and round recall_all@10.
var lmeObjectiveK = []int{5, 10}

// LMEFold is one fold of the cross-validation.
type LMEFold struct {
	Questions int           // held out
	Tuning    memory.Tuning // chosen on the other folds
	Train     float64       // their objective with it
	Test      LMEReport     // the held-out questions' figures
}

// LMECVReport is a cross-validated run: LMEReport pools the held-out
// questions of every fold, so each question is scored once, by weights
// chosen without it.
type LMECVReport struct {
	LMEReport
	Folds []LMEFold
	// Repeats, with more than one repeat (LMEOptions.CVRepeats), is each
	// repeat's cross-validation, repeat 0 first (the one LMEReport and
	// Folds report).
	Repeats []LMERepeat
}

// LMERepeat is one repeat of the cross-validation: its folds (their Test
// at the cut-offs 5 and 10, without the injected block) and the figures
// pooled over its held-out questions, in percent.
type LMERepeat struct {
	Folds                                       []LMEFold
	RoundAll10, RoundAny10, SessionAny5, NDCG10 float64 // NDCG10 at round level
}

// setFigures copies the repeat's figures from rep, its pooled report.
func (r *LMERepeat) setFigures(rep LMEReport) {
	r.RoundAll10 = rep.Figure(RoundLevel, true, 10)
	r.RoundAny10 = rep.Figure(RoundLevel, false, 10)
	r.SessionAny5 = rep.Figure(SessionLevel, false, 5)
	r.NDCG10 = rep.Levels[RoundLevel].NDCG10
}

// Spread summarises one figure over the repeats: its mean, its sample
// standard deviation (0 for one repeat), its least and greatest value.
type Spread struct {
	Mean, SD, Min, Max float64
}

// spreadOf summarises xs (at least one value).
func spreadOf(xs []float64) Spread {
	s := Spread{Min: xs[0], Max: xs[0]}
	for _, x := range xs {
		s.Mean += x
		s.Min, s.Max = min(s.Min, x), max(s.Max, x)
	}
	s.Mean /= float64(len(xs))
	if len(xs) > 1 {
		var ss float64
		for _, x := range xs {
			ss += (x - s.Mean) * (x - s.Mean)
		}
		s.SD = math.Sqrt(ss / float64(len(xs)-1))
	}
	return s
}

// lmeRepeatFigures names the figures a repeat reports, in report order:
// level, measure, and how to read it from a repeat.
var lmeRepeatFigures = []struct {
	level, name string
	get         func(LMERepeat) float64
}{
	{"round", "recall_all@10", func(r LMERepeat) float64 { return r.RoundAll10 }},
	{"round", "recall_any@10", func(r LMERepeat) float64 { return r.RoundAny10 }},
	{"round", "ndcg@10", func(r LMERepeat) float64 { return r.NDCG10 }},
	{"session", "recall_any@5", func(r LMERepeat) float64 { return r.SessionAny5 }},
}

// Spreads summarises each of the repeats' figures (lmeRepeatFigures'
// order) over the repeats; nil without repeats.
func (r LMECVReport) Spreads() []Spread {
	if len(r.Repeats) == 0 {
		return nil
	}
	out := make([]Spread, len(lmeRepeatFigures))
	for i, f := range lmeRepeatFigures {
		xs := make([]float64, len(r.Repeats))
		for j, rep := range r.Repeats {
			xs[j] = f.get(rep)
		}
		out[i] = spreadOf(xs)
	}
	return out
}

// lmeFold assigns a question to a fold by a hash of its id (its type's
// share in each fold is about the same as in the whole).
func lmeFold(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % LMEFolds)
}

// lmeFolds assigns each question of qs to a fold for the cross-validation's
// repeat r. Repeat 0 is lmeFold's partition. Repeat r ≥ 1 orders the
// questions of each question type (abstention questions apart from the
// others) by a hash of their id salted with r and deals them to the folds
// in turn, the count running on from one type to the next: another
// partition for each r (as far as the hashes differ), in which each fold
// holds each type's share to within one question and the folds' sizes
// differ by at most one.
func lmeFolds(qs []LMEQuestion, r int) []int {
	out := make([]int, len(qs))
	if r == 0 {
		for i, q := range qs {
			out[i] = lmeFold(q.ID)
		}
		return out
	}
	salt := []byte("#" + strconv.Itoa(r))
	hash := make([]uint32, len(qs))
	strata := map[string][]int{}
	for i, q := range qs {
		h := fnv.New32a()
		h.Write([]byte(q.ID))
		h.Write(salt)
		hash[i] = h.Sum32()
		key := q.Type
		if q.Abstention() {
			key += "\x00abs"
		}
		strata[key] = append(strata[key], i)
	}
	next := 0
	for _, key := range slices.Sorted(maps.Keys(strata)) {
		idx := strata[key]
		slices.SortFunc(idx, func(a, b int) int {
			if c := cmp.Compare(hash[a], hash[b]); c != 0 {
				return c
			}
			return cmp.Compare(qs[a].ID, qs[b].ID)
		})
		for _, i := range idx {
			out[i] = next
			next = (next + 1) % LMEFolds
		}
	}
	return out
}

// lmeTrain is the cross-validation's view of one stored question, with
// its results memoised per tuning.
type lmeTrain struct {
	g    *lmeStore
	memo map[memory.Tuning]lmeResult
}

// result is the question's ranking with tuning t at lmeObjectiveK (no
// injected block), memoised.
func (tr *lmeTrain) result(ctx context.Context, t memory.Tuning) (lmeResult, error) {
	if r, ok := tr.memo[t]; ok {
		return r, nil
	}
	r, err := tr.g.score(ctx, lmeObjectiveK, &t, memory.Gate{}, false, false)
	if err != nil {
		return r, err
	}
	tr.memo[t] = r
	return r, nil
}

// lmeResults ranks the questions of ts that are not abstention questions
// with tuning t at lmeObjectiveK, workers at a time, and returns their
// results in the order of ts.
func lmeResults(ctx context.Context, ts []*lmeTrain, t memory.Tuning, workers int) ([]lmeResult, error) {
	out := make([]lmeResult, len(ts))
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(workers)
	for i, tr := range ts {
		if tr.g.q.Abstention() {
			continue
		}
		eg.Go(func() error {
			r, err := tr.result(ctx, t)
			out[i] = r
			return err
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	kept := out[:0]
	for i, tr := range ts {
		if !tr.g.q.Abstention() {
			kept = append(kept, out[i])
		}
	}
	return kept, nil
}

// lmeObjective is the mean of round recall_all@10 and session
// recall_any@5 (the two targets) over the stores ts with tuning t,
// scoring them workers at a time.
func lmeObjective(ctx context.Context, ts []*lmeTrain, t memory.Tuning, workers int) (float64, error) {
	rs, err := lmeResults(ctx, ts, t, workers)
	if err != nil || len(rs) == 0 {
		return 0, err
	}
	var sum float64
	for _, r := range rs {
		sum += (r.all[RoundLevel][1] + r.any[SessionLevel][0]) / 2
	}
	return 100 * sum / float64(len(rs)), nil
}

// CrossValidateLongMemEval splits the questions into LMEFolds folds; for
// each, the weights (knobs) are chosen by coordinate search from
// NeutralTuning, maximising the mean of round recall_all@10 and session
// recall_any@5 on the other folds, and the fold is scored with them.
// LMEOptions.Tuning is ignored. With LMEOptions.CVRepeats > 1 it does so
// again over each repeat's partition (lmeFolds) on the same stores; the
// report's pooled figures and folds stay repeat 0's and Repeats holds
// every repeat's figures.
func CrossValidateLongMemEval(ctx context.Context, qs []LMEQuestion, opts LMEOptions) (LMECVReport, error) {
	ks, err := opts.cutoffs()
	if err != nil {
		return LMECVReport{}, err
	}
	if opts.CVRepeats < 0 {
		return LMECVReport{}, fmt.Errorf("longmemeval: cross-validation repeats must be at least 1, got %d", opts.CVRepeats)
	}
	emb, done, err := orDefault(ctx, opts.Embedder)
	if err != nil {
		return LMECVReport{}, err
	}
	defer done()
	opts.Embedder = emb
	repeats := max(opts.CVRepeats, 1)
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	opts.Tuning = nil
	_, gs, err := forQuestions(ctx, qs, opts, true, func(context.Context, *lmeStore) (struct{}, error) { return struct{}{}, nil })
	if err != nil {
		return LMECVReport{}, err
	}
	defer func() {
		for _, g := range gs {
			g.close(ctx)
		}
	}()
	ts := make([]*lmeTrain, len(gs))
	for i, g := range gs {
		ts[i] = &lmeTrain{g: g, memo: map[memory.Tuning]lmeResult{}}
	}
	return crossValidateStored(ctx, ts, ks, opts, repeats, workers)
}

// crossValidateStored is CrossValidateLongMemEval's cross-validation of
// the stored questions ts.
func crossValidateStored(ctx context.Context, ts []*lmeTrain, ks []int, opts LMEOptions, repeats, workers int) (LMECVReport, error) {
	stored := make([]LMEQuestion, len(ts))
	for i, t := range ts {
		stored[i] = t.g.q
	}
	var out LMECVReport
	for r := range repeats {
		fold := lmeFolds(stored, r)
		var rep LMERepeat
		var pooled, figures []lmeResult
		for f := range LMEFolds {
			var train, held []*lmeTrain
			for i, t := range ts {
				if fold[i] == f {
					held = append(held, t)
				} else {
					train = append(train, t)
				}
			}
			if len(held) == 0 {
				continue
			}
			if len(train) == 0 {
				return LMECVReport{}, fmt.Errorf("longmemeval: cross-validation needs questions in at least 2 folds")
			}
			tune, score, err := search(func(t memory.Tuning) (float64, error) { return lmeObjective(ctx, train, t, workers) })
			if err != nil {
				return LMECVReport{}, err
			}
			if repeats > 1 {
				rs, err := lmeResults(ctx, held, tune, workers)
				if err != nil {
					return LMECVReport{}, err
				}
				figures = append(figures, rs...)
				rep.Folds = append(rep.Folds, LMEFold{Questions: len(held), Tuning: tune, Train: score, Test: lmeReport(lmeObjectiveK, rs)})
			}
			if r > 0 {
				continue
			}
			var rs []lmeResult
			for _, t := range held {
				res, err := t.g.score(ctx, ks, &tune, opts.Gate, true, opts.Misses)
				if err != nil {
					return LMECVReport{}, err
				}
				rs = append(rs, res)
			}
			pooled = append(pooled, rs...)
			test := lmeReport(ks, rs)
			test.Misses = nil // the pooled report lists them
			out.Folds = append(out.Folds, LMEFold{Questions: len(held), Tuning: tune, Train: score, Test: test})
		}
		if r == 0 {
			out.LMEReport = lmeReport(ks, pooled)
		}
		if repeats > 1 {
			rep.setFigures(lmeReport(lmeObjectiveK, figures))
			out.Repeats = append(out.Repeats, rep)
		}
	}
	return out, nil
}

// MarshalJSON writes the pooled report's fields plus "cross_validated":
// true and "folds": [{"questions":N,"train_objective":…,"tuning":{…},
// "test":{…}}, …] (repeat 0's); with repeats, then "repeats":
// [{"repeat":0,"round":{"recall_all@10":…,"recall_any@10":…,"ndcg@10":…},
// "session":{"recall_any@5":…},"folds":[{"questions":N,
// "train_objective":…,"tuning":{…}},…]},…] and "spread":{"round":
// {"recall_all@10":{"mean":…,"sd":…,"min":…,"max":…},…},"session":{…}}.
func (r LMECVReport) MarshalJSON() ([]byte, error) {
	base, err := r.LMEReport.MarshalJSON()
	if err != nil {
		return nil, err
	}
	folds := make([]foldJSON, len(r.Folds))
	for i, f := range r.Folds {
		folds[i] = foldJSON{fmt.Sprintf(`"questions":%d,"train_objective":%s`, f.Questions, jsonNum(f.Train)), f.Tuning, f.Test}
	}
	b, err := withFolds(base, folds)
	if err != nil || len(r.Repeats) == 0 {
		return b, err
	}
	var out bytes.Buffer
	out.Write(b[:len(b)-1])
	out.WriteString(`,"repeats":[`)
	for i, rep := range r.Repeats {
		if i > 0 {
			out.WriteByte(',')
		}
		fmt.Fprintf(&out, `{"repeat":%d,`, i)
		writeRepeatFigures(&out, func(j int) { out.WriteString(jsonNum(lmeRepeatFigures[j].get(rep))) })
		out.WriteString(`,"folds":[`)
		for j, f := range rep.Folds {
			if j > 0 {
				out.WriteByte(',')
			}
			fmt.Fprintf(&out, `{"questions":%d,"train_objective":%s,"tuning":`, f.Questions, jsonNum(f.Train))
			writeTuning(&out, f.Tuning)
			out.WriteByte('}')
		}
		out.WriteString(`]}`)
	}
	out.WriteString(`],"spread":{`)
	sp := r.Spreads()
	writeRepeatFigures(&out, func(j int) {
		fmt.Fprintf(&out, `{"mean":%s,"sd":%s,"min":%s,"max":%s}`, jsonNum(sp[j].Mean), jsonNum(sp[j].SD), jsonNum(sp[j].Min), jsonNum(sp[j].Max))
	})
	out.WriteString(`}}`)
	return out.Bytes(), nil
}

// writeRepeatFigures writes "round":{"recall_all@10":…,…},"session":{…}
// in lmeRepeatFigures' order, value(i) writing figure i's value.
func writeRepeatFigures(b *bytes.Buffer, value func(i int)) {
	level := ""
	for i, f := range lmeRepeatFigures {
		if f.level != level {
			if level != "" {
				b.WriteString(`},`)
			}
			fmt.Fprintf(b, `%q:{`, f.level)
			level = f.level
		} else {
			b.WriteByte(',')
		}
		fmt.Fprintf(b, `%q:`, f.name)
		value(i)
	}
	b.WriteByte('}')
}

// WriteTable prints the pooled tables, then one line per fold; with
// repeats, then each repeat's figures and their spread.
func (r LMECVReport) WriteTable(w io.Writer) error {
	fmt.Fprintf(w, "%d folds over the questions (weights chosen on the other folds):\n", LMEFolds)
	if err := r.LMEReport.WriteTable(w); err != nil {
		return err
	}
	for i, f := range r.Folds {
		if _, err := fmt.Fprintf(w, "fold %d: %d questions, train objective %.2f, held-out round all@10 %.1f, session any@5 %.1f\n", i+1, f.Questions, f.Train,
			f.Test.Figure(RoundLevel, true, 10), f.Test.Figure(SessionLevel, false, 5)); err != nil {
			return fmt.Errorf("write report: %w", err)
		}
	}
	if len(r.Repeats) == 0 {
		return nil
	}
	fmt.Fprintf(w, "%d repeats, each over its own partition into folds (the tables above are repeat 0's):\n", len(r.Repeats))
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprint(tw, "repeat\t")
	for _, f := range lmeRepeatFigures {
		fmt.Fprintf(tw, "%s %s\t", f.level, strings.NewReplacer("recall_", "", "ndcg", "NDCG").Replace(f.name))
	}
	fmt.Fprintln(tw)
	row := func(name string, value func(i int) float64) {
		fmt.Fprintf(tw, "%s\t", name)
		for i := range lmeRepeatFigures {
			fmt.Fprintf(tw, "%.2f\t", value(i))
		}
		fmt.Fprintln(tw)
	}
	for i, rep := range r.Repeats {
		row(strconv.Itoa(i), func(j int) float64 { return lmeRepeatFigures[j].get(rep) })
	}
	sp := r.Spreads()
	row("mean", func(j int) float64 { return sp[j].Mean })
	row("sd", func(j int) float64 { return sp[j].SD })
	row("min", func(j int) float64 { return sp[j].Min })
	row("max", func(j int) float64 { return sp[j].Max })
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
