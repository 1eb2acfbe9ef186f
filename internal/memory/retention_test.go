package memory

import (
	"context"
	"testing"
	"time"
)

// Ebbinghaus decay in recall: a memory recalled (shown in turns' prompts)
// outranks an equal one never recalled, and the advantage fades as the
// recalls recede; age alone never counts against a memory.
func TestRecallStrengthensWhatIsUsed(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := newStore(t)
	// Only the full-text ranking, with a fusion constant at which adjacent
	// ranks differ by less than the boost: the two memories match the
	// query equally (the same words, the same length), so the tie-break
	// of their ranks is all that separates them.
	tune := DefaultTuning
	tune.VectorWeight, tune.RRFK = 0, 60
	s.SetTuning(tune)
	seed(t, s, Memory{Text: "Ada takes oat milk", Kind: KindFact}, Memory{Text: "Bob takes oat milk", Kind: KindFact})
	clk.advance(30 * 24 * time.Hour)
	order := func() []string {
		t.Helper()
		got, err := s.Recall(ctx, Query{Text: "who takes oat milk", Limit: 2, Peek: true})
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 {
			t.Fatalf("recalled %v", texts(got))
		}
		return texts(got)
	}
	before := order()
	second, err := s.Recall(ctx, Query{Text: before[1], Limit: 1, Peek: true})
	if err != nil || len(second) != 1 || second[0].Text != before[1] {
		t.Fatalf("find %q: %v %v", before[1], texts(second), err)
	}
	for range 3 { // shown in three turns' prompts
		if err := s.RecordAccess(ctx, []int64{second[0].ID}, clk.now()); err != nil {
			t.Fatal(err)
		}
	}
	if got := order(); got[0] != before[1] {
		t.Errorf("after three recalls of %q the order is %v; want it first", before[1], got)
	}
	clk.advance(90 * 24 * time.Hour) // unused since: the strength fades
	if got := order(); got[0] != before[0] {
		t.Errorf("90 days after its last recall the order is %v; want %v again", got, before)
	}
}

func TestRecallGain(t *testing.T) {
	day := int64(24 * time.Hour)
	now := 1000 * day
	for _, tc := range []struct {
		name string
		m    slotMeta
		want func(g float64) bool
	}{
		{"never recalled, new", slotMeta{createdAt: now}, func(g float64) bool { return g == 0 }},
		{"never recalled, a year old", slotMeta{createdAt: now - 365*day}, func(g float64) bool { return g == 0 }},
		{"recalled just now, a month old", slotMeta{createdAt: now - 30*day, lastAccess: now, accessCount: 3},
			func(g float64) bool { return g > 0.95 && g < 1 }},
		{"recalled a month ago, two months old", slotMeta{createdAt: now - 60*day, lastAccess: now - 30*day, accessCount: 3},
			func(g float64) bool { return g > 0 && g < 0.3 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if g := recallGain(&tc.m, now, 7); !tc.want(g) {
				t.Errorf("recallGain = %f", g)
			}
		})
	}
	// More recalls, more stability: the gain lasts longer.
	few := slotMeta{createdAt: now - 60*day, lastAccess: now - 14*day, accessCount: 1}
	many := few
	many.accessCount = 20
	if g1, g20 := recallGain(&few, now, 7), recallGain(&many, now, 7); !(g1 < g20) {
		t.Errorf("gain after 1 recall %f, after 20 %f; want more for more recalls", g1, g20)
	}
}

// With DefaultTuning a memory's age alone does not move its score: of two
// memories never recalled, equal but for when they were made, neither
// outranks the other (recency is off, and retention counts only what
// recall added).
func TestAgeAloneDoesNotCount(t *testing.T) {
	day := int64(24 * time.Hour)
	now := 1000 * day
	fresh := slotMeta{createdAt: now - day}
	old := slotMeta{createdAt: now - 400*day}
	tu := DefaultTuning
	if a, b := tu.finalScore(0.1, &fresh, intent{}, false, period{}, 1, now), tu.finalScore(0.1, &old, intent{}, false, period{}, 1, now); a != b {
		t.Errorf("a day old %f, 400 days old %f; want equal", a, b)
	}
	// Recalled, the older one outranks the fresh one.
	old.lastAccess, old.accessCount = now-day, 2
	if a, b := tu.finalScore(0.1, &fresh, intent{}, false, period{}, 1, now), tu.finalScore(0.1, &old, intent{}, false, period{}, 1, now); !(b > a) {
		t.Errorf("a day old, never recalled %f; 400 days old, recalled yesterday %f; want the recalled one higher", a, b)
	}
}
