package eval

import (
	"context"
	"fmt"
	"hash/fnv"
	"io"
	"runtime"
	"sync"

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
}

// lmeFold assigns a question to a fold by a hash of its id (its type's
// share in each fold is about the same as in the whole).
func lmeFold(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return int(h.Sum32() % LMEFolds)
}

// lmeTrain is the cross-validation's view of one stored question, with
// its results memoised per tuning.
type lmeTrain struct {
	g    *lmeStore
	memo map[memory.Tuning]lmeResult
}

// lmeObjective is the mean of round recall_all@10 and session
// recall_any@5 (the two targets) over the stores ts with tuning t,
// scoring them workers at a time.
func lmeObjective(ctx context.Context, ts []*lmeTrain, t memory.Tuning, workers int) (float64, error) {
	var mu sync.Mutex
	var sum float64
	n := 0
	eg, ctx := errgroup.WithContext(ctx)
	eg.SetLimit(workers)
	for _, tr := range ts {
		if tr.g.q.Abstention() {
			continue
		}
		n++
		eg.Go(func() error {
			r, ok := tr.memo[t]
			if !ok {
				var err error
				r, err = tr.g.score(ctx, lmeObjectiveK, &t, memory.Gate{}, false, false)
				if err != nil {
					return err
				}
				tr.memo[t] = r
			}
			mu.Lock()
			sum += (r.all[RoundLevel][1] + r.any[SessionLevel][0]) / 2
			mu.Unlock()
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return 0, err
	}
	if n == 0 {
		return 0, nil
	}
	return 100 * sum / float64(n), nil
}

// CrossValidateLongMemEval splits the questions into LMEFolds folds; for
// each, the weights (knobs) are chosen by coordinate search from
// NeutralTuning, maximising the mean of round recall_all@10 and session
// recall_any@5 on the other folds, and the fold is scored with them.
// LMEOptions.Tuning is ignored.
func CrossValidateLongMemEval(ctx context.Context, qs []LMEQuestion, opts LMEOptions) (LMECVReport, error) {
	ks, err := opts.cutoffs()
	if err != nil {
		return LMECVReport{}, err
	}
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
	var out LMECVReport
	var pooled []lmeResult
	for f := range LMEFolds {
		var train, held []*lmeTrain
		for _, t := range ts {
			if lmeFold(t.g.q.ID) == f {
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
		var rs []lmeResult
		for _, t := range held {
			r, err := t.g.score(ctx, ks, &tune, opts.Gate, true, opts.Misses)
			if err != nil {
				return LMECVReport{}, err
			}
			rs = append(rs, r)
		}
		pooled = append(pooled, rs...)
		test := lmeReport(ks, rs)
		test.Misses = nil // the pooled report lists them
		out.Folds = append(out.Folds, LMEFold{Questions: len(held), Tuning: tune, Train: score, Test: test})
	}
	out.LMEReport = lmeReport(ks, pooled)
	return out, nil
}

// MarshalJSON writes the pooled report's fields plus "cross_validated":
// true and "folds": [{"questions":N,"train_objective":…,"tuning":{…},
// "test":{…}}, …].
func (r LMECVReport) MarshalJSON() ([]byte, error) {
	base, err := r.LMEReport.MarshalJSON()
	if err != nil {
		return nil, err
	}
	folds := make([]foldJSON, len(r.Folds))
	for i, f := range r.Folds {
		folds[i] = foldJSON{fmt.Sprintf(`"questions":%d,"train_objective":%s`, f.Questions, jsonNum(f.Train)), f.Tuning, f.Test}
	}
	return withFolds(base, folds)
}

// WriteTable prints the pooled tables, then one line per fold.
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
	return nil
}
