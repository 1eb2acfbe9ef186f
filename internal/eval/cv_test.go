package eval

import (
	"testing"

	"github.com/reverie-ai/reverie/internal/memory"
)

// The search reaches an optimum on a ridge: two knobs that pay only when
// both move (spreading that helps only with another fusion constant),
// which one knob at a time, from NeutralTuning, never leaves.
func TestSearchMovesInteractingKnobsTogether(t *testing.T) {
	neutral := NeutralTuning()
	cases := []struct {
		name      string
		obj       func(memory.Tuning) float64
		wantRRFK  float64
		wantSprd  float64
		wantScore float64
	}{
		{"ridge", func(tu memory.Tuning) float64 {
			rrf, sp := tu.RRFK != neutral.RRFK, tu.Spread != neutral.Spread
			switch {
			case tu.RRFK == 5 && tu.Spread == 0.7:
				return 3
			case rrf != sp: // one of them alone costs
				return 1
			}
			return 2
		}, 5, 0.7, 3},
		{"no gain stays neutral", func(memory.Tuning) float64 { return 1 }, neutral.RRFK, neutral.Spread, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			calls := 0
			got, score, err := search(func(tu memory.Tuning) (float64, error) { calls++; return c.obj(tu), nil })
			if err != nil {
				t.Fatal(err)
			}
			if got.RRFK != c.wantRRFK || got.Spread != c.wantSprd || score != c.wantScore {
				t.Errorf("search chose rrf_k %v, spread %v (objective %v), want %v, %v (%v)", got.RRFK, got.Spread, score, c.wantRRFK, c.wantSprd, c.wantScore)
			}
			// everything else is left where it started
			got.RRFK, got.Spread = neutral.RRFK, neutral.Spread
			if got != neutral {
				t.Errorf("search moved other knobs: %+v", got)
			}
			if calls == 0 {
				t.Error("objective never read")
			}
		})
	}
}
