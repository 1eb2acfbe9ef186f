package dreaming

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/memory"
)

// The chain's three facts: each is at ≈ 0.86 to the next (above the dedup
// threshold), the ends at ≈ 0.79.
var chain = []string{"My niece lives in Porto.", "My nephew lives in Porto.", "My nephew lives in Lisbon."}

// chainReply answers the dedup prompt with dedup and the contradiction
// prompt with contra, counting the entries of each dedup call.
func chainReply(dedup, contra string, sizes *[]int) func(string) string {
	return func(p string) string {
		switch {
		case strings.Contains(p, "are worded alike"):
			_, entries, _ := strings.Cut(p, "Entries:")
			*sizes = append(*sizes, strings.Count(entries, "\n- "))
			return dedup
		case strings.Contains(p, "may contradict each other"):
			return contra
		case strings.Contains(p, "reviewing the pulse"):
			return `{"actions":[]}`
		}
		return ""
	}
}

// rememberChain stores the chain of similar facts, then the unrelated
// fillers, and returns the chain's ids.
func (f *fixture) rememberChain(t *testing.T) []int64 {
	t.Helper()
	var ids []int64
	for _, s := range chain {
		ids = append(ids, f.remember(t, s, memory.SourceAgent, false))
	}
	for _, s := range fillers {
		f.remember(t, s, memory.SourceAgent, false)
	}
	return ids
}

func TestDedupChainIsNotOneCluster(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	var sizes []int
	// A model that merges whatever it is given: the clusters must be tight.
	f.reply = chainReply(`{"decision":"merge","merged":"The user's niece and nephew live in Porto.","reason":"alike"}`,
		`{"decision":"keep_both","merged":"","reason":"different people"}`, &sizes)
	ids := f.rememberChain(t)
	before := f.current(t)
	rep, err := f.d.Dream(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	if mc := component(rep, "memories"); mc.Status != StatusOK {
		t.Fatalf("memories: %+v", mc)
	}
	if !slices.Equal(sizes, []int{2}) {
		t.Errorf("dedup calls with %v entries, want one call with the two closest", sizes)
	}
	if f.isCurrent(t, ids[0]) || f.isCurrent(t, ids[1]) || !f.isCurrent(t, ids[2]) {
		t.Errorf("after the dream: %v", f.current(t))
	}
	if _, err := f.d.Revert(ctx, rep.ID); err != nil {
		t.Fatal(err)
	}
	if got := f.current(t); !slices.Equal(got, before) {
		t.Errorf("after revert:\n got %v\nwant %v", got, before)
	}
}

func TestDedupDistinctLeavesThemOpen(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	var sizes []int
	f.reply = chainReply(`{"decision":"distinct","merged":"","reason":"different relatives"}`,
		`{"decision":"keep_both","merged":"","reason":"different people"}`, &sizes)
	ids := f.rememberChain(t)
	before := f.current(t)
	var lines []string
	calls := 0
	// Each pair is judged once: the verdicts are kept, so later dreams
	// stop asking (and the contradiction budget goes to other pairs).
	for night := range 5 {
		rep, err := f.d.Dream(ctx, "test")
		if err != nil {
			t.Fatal(err)
		}
		mc := component(rep, "memories")
		if mc.Status != StatusOK {
			t.Fatalf("night %d: %+v", night, mc)
		}
		lines = append(lines, mc.Lines...)
		if night == 0 && (!strings.Contains(mc.Detail, "0 merged cluster(s)") || !strings.Contains(mc.Detail, "kept apart as different facts")) {
			t.Errorf("night 1: %q", mc.Detail)
		}
		calls += rep.ModelCalls
		if night == 4 && rep.ModelCalls != 0 {
			t.Errorf("night 5 still made %d model call(s)", rep.ModelCalls)
		}
	}
	for _, id := range ids {
		if !f.isCurrent(t, id) {
			t.Errorf("#%d closed", id)
		}
	}
	if got := f.current(t); !slices.Equal(got, before) {
		t.Errorf("memories changed:\n got %v\nwant %v", got, before)
	}
	text := strings.Join(lines, "\n")
	if !strings.Contains(text, "apart: not the same fact (different relatives)") || !strings.Contains(text, "kept both") {
		t.Errorf("report lines:\n%s", text)
	}
	// Three pairs, each asked at most twice (once as a cluster, once as a
	// pair).
	if calls > 6 {
		t.Errorf("%d model calls over five dreams", calls)
	}
}

func TestDedupAnswers(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		merged       bool
	}{
		{"json merge", `{"decision":"merge","merged":"User drinks black coffee every morning.","reason":"same"}`, true},
		{"fenced json", "```json\n{\"decision\":\"merge\",\"merged\":\"User drinks black coffee every morning.\",\"reason\":\"same\"}\n```", true},
		// A data dir keeps its prompt files: one written before the
		// decision asks for the merged text only.
		{"plain text of an older prompt", "User drinks black coffee every morning.", true},
		{"json distinct", `{"decision":"distinct","merged":"","reason":"no"}`, false},
		{"sentinel", "DISTINCT", false},
		{"unknown decision", `{"decision":"fuse","merged":"x","reason":""}`, false},
		{"empty merge", `{"decision":"merge","merged":"","reason":""}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, false)
			var sizes []int
			f.reply = chainReply(tc.answer, `{"decision":"keep_both","merged":"","reason":""}`, &sizes)
			a := f.remember(t, "User drinks coffee every morning.", memory.SourceAgent, false)
			b := f.remember(t, "The user has coffee each morning.", memory.SourceAgent, false)
			for _, s := range fillers {
				f.remember(t, s, memory.SourceAgent, false)
			}
			rep, err := f.d.Dream(context.Background(), "test")
			if err != nil {
				t.Fatal(err)
			}
			if mc := component(rep, "memories"); mc.Status != StatusOK {
				t.Fatalf("memories: %+v", mc)
			}
			open := f.isCurrent(t, a) || f.isCurrent(t, b)
			if open == tc.merged {
				t.Errorf("merged = %v, want %v: %v", !open, tc.merged, component(rep, "memories").Lines)
			}
			if got := slices.Contains(f.current(t), "User drinks black coffee every morning."); got != tc.merged {
				t.Errorf("merged entry stored = %v, want %v", got, tc.merged)
			}
		})
	}
}

// Clusters are complete-linkage and capped: a chain is cut, a group of
// near-copies larger than the cap is split.
func TestFindSimilarTight(t *testing.T) {
	unit := func(xs ...float32) []float32 {
		v := make([]float32, 8)
		copy(v, xs)
		embed.Normalize(v)
		return v
	}
	// a~b 0.89, b~c 0.89, a~c 0.6: single linkage would fuse all three.
	chainItems := []item{{1, unit(1, 0)}, {2, unit(0.9, 0.45)}, {3, unit(0.6, 0.8)}}
	s := findSimilar(chainItems, 0.5, 0.85, 10, nil)
	for _, cl := range s.clusters {
		if len(cl) > 2 {
			t.Errorf("chain fused: %v", s.clusters)
		}
	}
	var copies []item
	for i := range 2*maxClusterSize + 1 {
		copies = append(copies, item{int64(i), unit(1, float32(i)*0.001)})
	}
	s = findSimilar(copies, 0.5, 0.85, 10, nil)
	n := 0
	for _, cl := range s.clusters {
		if len(cl) > maxClusterSize {
			t.Errorf("cluster of %d, cap %d", len(cl), maxClusterSize)
		}
		n += len(cl)
	}
	if len(s.clusters) < 2 || n < 2*maxClusterSize {
		t.Errorf("clusters %v", s.clusters)
	}
	// A pair judged apart is neither linked nor suspicious; one judged
	// not the same is suspicious only.
	for _, tc := range []struct {
		name     string
		v        verdict
		clusters int
		pairs    int
	}{{"unjudged", unjudged, 1, 0}, {"not the same", notSame, 0, 1}, {"apart", apart, 0, 0}} {
		s = findSimilar(copies[:2], 0.5, 0.85, 10, func(i, j int) verdict { return tc.v })
		if len(s.clusters) != tc.clusters || len(s.pairs) != tc.pairs {
			t.Errorf("%s: %d cluster(s), %d pair(s)", tc.name, len(s.clusters), len(s.pairs))
		}
	}
}
