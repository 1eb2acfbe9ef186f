package eval

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// lmeFoldQuestions makes questions of six types in uneven numbers (some
// abstention questions among them), named as LongMemEval names them: a
// hex id, "_abs" for abstention.
func lmeFoldQuestions() []LMEQuestion {
	var qs []LMEQuestion
	for i, n := range []int{7, 13, 26, 3, 40, 11} {
		for j := range n {
			id := fmt.Sprintf("%08x", uint32(i*7919+j*104729+12345)*2654435761)
			if j%9 == 4 {
				id += "_abs"
			}
			qs = append(qs, LMEQuestion{ID: id, Type: LMETypes[i]})
		}
	}
	return qs
}

// canonical relabels a fold assignment by first appearance, so two
// assignments that make the same partition compare equal.
func canonical(folds []int) []int {
	label := map[int]int{}
	out := make([]int, len(folds))
	for i, f := range folds {
		if _, ok := label[f]; !ok {
			label[f] = len(label)
		}
		out[i] = label[f]
	}
	return out
}

func TestLMEFolds(t *testing.T) {
	qs := lmeFoldQuestions()
	cases := []struct {
		name  string
		check func(t *testing.T)
	}{
		{"repeat 0 is lmeFold's partition", func(t *testing.T) {
			for i, f := range lmeFolds(qs, 0) {
				if f != lmeFold(qs[i].ID) {
					t.Fatalf("question %s in fold %d, lmeFold says %d", qs[i].ID, f, lmeFold(qs[i].ID))
				}
			}
		}},
		{"every question in exactly one fold", func(t *testing.T) {
			for r := range 6 {
				folds := lmeFolds(qs, r)
				if len(folds) != len(qs) {
					t.Fatalf("repeat %d: %d assignments for %d questions", r, len(folds), len(qs))
				}
				for i, f := range folds {
					if f < 0 || f >= LMEFolds {
						t.Errorf("repeat %d: question %s in fold %d", r, qs[i].ID, f)
					}
				}
			}
		}},
		{"repeats are different partitions", func(t *testing.T) {
			var seen [][]int
			for r := range 6 {
				p := canonical(lmeFolds(qs, r))
				for s, q := range seen {
					if slices.Equal(p, q) {
						t.Errorf("repeats %d and %d make the same partition", s, r)
					}
				}
				seen = append(seen, p)
			}
		}},
		{"each type's share within one question in every fold", func(t *testing.T) {
			for r := 1; r < 6; r++ {
				folds := lmeFolds(qs, r)
				per := map[string][]int{}
				size := make([]int, LMEFolds)
				for i, q := range qs {
					key := q.Type + fmt.Sprint(q.Abstention())
					if per[key] == nil {
						per[key] = make([]int, LMEFolds)
					}
					per[key][folds[i]]++
					size[folds[i]]++
				}
				for key, n := range per {
					if slices.Max(n)-slices.Min(n) > 1 {
						t.Errorf("repeat %d: %s spread over the folds as %v", r, key, n)
					}
				}
				if slices.Max(size)-slices.Min(size) > 1 {
					t.Errorf("repeat %d: fold sizes %v", r, size)
				}
			}
		}},
		{"the order of the questions does not matter", func(t *testing.T) {
			shuffled := slices.Clone(qs)
			rand.New(rand.NewPCG(1, 2)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
			for r := range 3 {
				want := map[string]int{}
				for i, f := range lmeFolds(qs, r) {
					want[qs[i].ID] = f
				}
				for i, f := range lmeFolds(shuffled, r) {
					if want[shuffled[i].ID] != f {
						t.Fatalf("repeat %d: %s in fold %d shuffled, %d in order", r, shuffled[i].ID, f, want[shuffled[i].ID])
					}
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, c.check)
	}
}

func TestSpreadOf(t *testing.T) {
	cases := []struct {
		name string
		xs   []float64
		want Spread
	}{
		{"one repeat", []float64{83.94}, Spread{Mean: 83.94, SD: 0, Min: 83.94, Max: 83.94}},
		{"equal repeats", []float64{80, 80, 80}, Spread{Mean: 80, SD: 0, Min: 80, Max: 80}},
		{"sample standard deviation", []float64{84, 80, 82}, Spread{Mean: 82, SD: 2, Min: 80, Max: 84}},
		{"five", []float64{1, 2, 3, 4, 5}, Spread{Mean: 3, SD: math.Sqrt(2.5), Min: 1, Max: 5}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := spreadOf(c.xs)
			if math.Abs(got.Mean-c.want.Mean) > 1e-9 || math.Abs(got.SD-c.want.SD) > 1e-9 || got.Min != c.want.Min || got.Max != c.want.Max {
				t.Errorf("spreadOf(%v) = %+v, want %+v", c.xs, got, c.want)
			}
		})
	}
}

// With repeats the report keeps the JSON fields (repeat 0's
// figures) and adds "repeats" and "spread"; with one repeat it is the
// report of the plain cross-validation, byte for byte.
func TestCrossValidateLongMemEvalRepeats(t *testing.T) {
	qs := readLMESyntheticCopies(t)
	ctx := context.Background()
	if _, err := CrossValidateLongMemEval(ctx, qs, LMEOptions{CVRepeats: -1}); err == nil || !strings.Contains(err.Error(), "repeats") {
		t.Errorf("CVRepeats -1: error %v", err)
	}
	plain, err := CrossValidateLongMemEval(ctx, qs, LMEOptions{K: []int{5, 10}})
	if err != nil {
		t.Fatal(err)
	}
	once, err := CrossValidateLongMemEval(ctx, qs, LMEOptions{K: []int{5, 10}, CVRepeats: 1})
	if err != nil {
		t.Fatal(err)
	}
	pj, _ := json.Marshal(plain)
	oj, _ := json.Marshal(once)
	if string(pj) != string(oj) || len(once.Repeats) != 0 || strings.Contains(string(oj), `"repeats"`) {
		t.Errorf("one repeat changed the report:\n%s\n%s", pj, oj)
	}
	rep, err := CrossValidateLongMemEval(ctx, qs, LMEOptions{K: []int{5, 10}, CVRepeats: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Repeats) != 3 || rep.Repeats[0].RoundAll10 != rep.Figure(RoundLevel, true, 10) || rep.Repeats[0].SessionAny5 != rep.Figure(SessionLevel, false, 5) {
		t.Fatalf("repeats %+v, pooled round all@10 %v", rep.Repeats, rep.Figure(RoundLevel, true, 10))
	}
	for i, r := range rep.Repeats {
		n := 0
		for _, f := range r.Folds {
			n += f.Questions
		}
		if n != len(qs) {
			t.Errorf("repeat %d holds out %d questions of %d", i, n, len(qs))
		}
	}
	js, err := json.Marshal(rep)
	if err != nil || !json.Valid(js) {
		t.Fatalf("json %s: %v", js, err)
	}
	if !strings.HasPrefix(string(js), string(pj[:len(pj)-1])) {
		t.Errorf("the repeats changed the plain report's fields:\n%s\n%s", pj, js)
	}
	type figure struct {
		Mean, SD, Min, Max *float64
	}
	var shape struct {
		Round          map[string]float64         `json:"round"`
		Session        map[string]float64         `json:"session"`
		ByType         map[string]json.RawMessage `json:"by_type"`
		Questions      int                        `json:"questions"`
		Abstention     map[string]float64         `json:"abstention"`
		CrossValidated bool                       `json:"cross_validated"`
		Repeats        []struct {
			Repeat  int                `json:"repeat"`
			Round   map[string]float64 `json:"round"`
			Session map[string]float64 `json:"session"`
			Folds   []struct {
				Questions int                `json:"questions"`
				Tuning    map[string]float64 `json:"tuning"`
			} `json:"folds"`
		} `json:"repeats"`
		Spread map[string]map[string]figure `json:"spread"`
	}
	if err := json.Unmarshal(js, &shape); err != nil {
		t.Fatal(err)
	}
	if shape.Questions != 16 || shape.Abstention["questions"] != 8 || shape.Round["recall_all@10"] != 100 || !shape.CrossValidated || len(shape.Repeats) != 3 {
		t.Errorf("json %s", js)
	}
	for i, r := range shape.Repeats {
		if r.Repeat != i || len(r.Round) != 3 || len(r.Session) != 1 || len(r.Folds) == 0 || len(r.Folds[0].Tuning) != len(knobs) {
			t.Errorf("repeat %d: %+v", i, r)
		}
	}
	for _, f := range lmeRepeatFigures {
		s := shape.Spread[f.level][f.name]
		if s.Mean == nil || s.SD == nil || s.Min == nil || s.Max == nil {
			t.Errorf("spread of %s %s: %+v in %s", f.level, f.name, s, js)
		}
	}
}
