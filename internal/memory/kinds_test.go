package memory

import (
	"context"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/lexicon"
)

// kindsOnly weighs the kinds of nouns w and every other relation 0.
func kindsOnly(w float32) relWeights {
	var r relWeights
	r[lexicon.Kinds] = w
	return r
}

func TestKindTerms(t *testing.T) {
	ti := newTextIndex()
	docs := []string{"a guitar lesson", "my violin teacher", "hammer and nails", "the dermatologist and the surgeon", "my doctor called", "we married in June"}
	for i, d := range docs {
		ti.put(int64(i+1), d)
	}
	term := func(w string) uint32 { return ti.terms[w] }
	cases := []struct {
		name  string
		query string
		w     relWeights
		want  []qterm // in any order
		nouns [][]string
	}{
		{"a two-word noun's kinds, as one group", "how many musical instruments do I own?", kindsOnly(0.5),
			[]qterm{{term("guitar"), 0.5, 1}, {term("violin"), 0.5, 1}}, [][]string{{"music", "instrument"}}},
		{"two nouns, two groups", "which doctors and which musical instruments", kindsOnly(0.5),
			[]qterm{{term("dermatologist"), 0.5, 1}, {term("surgeon"), 0.5, 1}, {term("guitar"), 0.5, 2}, {term("violin"), 0.5, 2}},
			[][]string{{"doctor"}, {"music", "instrument"}}},
		{"a kind already in the query is not added again", "did the doctor see my dermatologist", kindsOnly(0.5),
			[]qterm{{term("surgeon"), 0.5, 1}}, [][]string{{"doctor"}}},
		{"skipped words are not looked up", "Dr. Doctors", kindsOnly(0.5), nil, nil},
		{"no noun with kinds", "what did I say yesterday", kindsOnly(0.5), nil, nil},
		{"derived words at their relation's weight", "when was my marriage", relWeights{0.5, 0.3},
			[]qterm{{term("marri"), 0.3, 1}}, [][]string{{"marriag"}}},
		{"derived words off (marriage's kinds are in no memory)", "when was my marriage", kindsOnly(0.5), nil, [][]string{{"marriag"}}},
		{"a word both a kind and derived weighs the larger", "which doctors", relWeights{0.5, 0.7},
			[]qterm{{term("dermatologist"), 0.5, 1}, {term("surgeon"), 0.5, 1}}, [][]string{{"doctor"}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			skip := map[string]bool{}
			if c.name == "skipped words are not looked up" {
				skip["doctors"] = true
			}
			have := ti.queryTerms(c.query, skip)
			got, nouns := ti.kindTerms(c.query, skip, have, c.w)
			if !slices.EqualFunc(nouns, c.nouns, slices.Equal) {
				t.Errorf("kindTerms(%q) nouns = %q, want %q", c.query, nouns, c.nouns)
			}
			cmp := func(a, b qterm) int { return int(a.tid) - int(b.tid) }
			slices.SortFunc(got, cmp)
			want := slices.Clone(c.want)
			slices.SortFunc(want, cmp)
			if !slices.Equal(got, want) {
				t.Errorf("kindTerms(%q) = %v, want %v", c.query, got, want)
			}
		})
	}
}

// TestRecallFindsKinds: a question naming a class ("doctors") recalls
// what was told about its members (a dermatologist, an ENT specialist),
// which share no word with it, only with KindWeight on.
func TestRecallFindsKinds(t *testing.T) {
	s, _, _ := newStore(t)
	ids := seed(t, s,
		Memory{Text: "Dr. Lee, my dermatologist, checked the mole on my back", Kind: KindEpisode},
		Memory{Text: "The ENT specialist said my sinusitis is chronic", Kind: KindEpisode},
		Memory{Text: "I visited the new bakery on Main Street", Kind: KindEpisode},
		Memory{Text: "My neighbour came for a short visit", Kind: KindEpisode},
		Memory{Text: "The garden needs more sun this year", Kind: KindEpisode},
	)
	q := Query{Text: "How many different doctors did I visit?", Peek: true, Limit: 5}
	foundOnlyWhenOn(t, s, q, ids[:2], func(tu *Tuning, w float64) { tu.KindWeight = w })
}

// foundOnlyWhenOn recalls q with a relation's weight off (0) and on (0.2),
// set by set, and checks that each of want is among the full-text matches
// only when it is on.
func foundOnlyWhenOn(t *testing.T, s *VectorStore, q Query, want []int64, set func(*Tuning, float64)) {
	t.Helper()
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		weight float64
		found  bool
	}{
		{"off", 0, false},
		{"on", 0.2, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			tune := DefaultTuning
			set(&tune, c.weight)
			s.SetTuning(tune)
			got, err := s.Recall(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			for _, id := range want {
				found := slices.ContainsFunc(got, func(r Scored) bool { return r.ID == id && r.TextRank > 0 })
				if found != c.found {
					t.Errorf("weight %g: full-text matches %q, want memory %d found: %v", c.weight, texts(got), id, c.found)
				}
			}
		})
	}
}

// TestRecallFindsDerived: a question naming a thing in one part of
// speech ("my marriage") recalls what was told in another ("we married"),
// by full text only with DerivedWeight on.
func TestRecallFindsDerived(t *testing.T) {
	s, _, _ := newStore(t)
	ids := seed(t, s,
		Memory{Text: "Sam and I married at the town hall", Kind: KindEpisode},
		Memory{Text: "I visited the new bakery on Main Street", Kind: KindEpisode},
		Memory{Text: "The garden needs more sun this year", Kind: KindEpisode},
	)
	q := Query{Text: "Where was our marriage?", Peek: true, Limit: 3}
	foundOnlyWhenOn(t, s, q, ids[:1], func(tu *Tuning, w float64) { tu.DerivedWeight = w })
}

// TestScoreTermsGroupTakesBest: the terms of a group are alternatives: a
// memory naming three kinds of doctor scores as its best one alone, not
// their sum.
func TestScoreTermsGroupTakesBest(t *testing.T) {
	ti := newTextIndex()
	for i, d := range []string{"the dermatologist, the surgeon and the cardiologist", "my dermatologist", "a quiet day", "the garden"} {
		ti.put(int64(i+1), d)
	}
	all := func(int64) bool { return true }
	score := func(qs []qterm) map[int64]float32 {
		out := map[int64]float32{}
		for _, h := range ti.scoreTerms(qs, defaultBM25, 10, all) {
			out[h.id] = h.score
		}
		return out
	}
	var group []qterm
	var best float32
	for _, w := range []string{"dermatologist", "surgeon", "cardiologist"} {
		q := qterm{tid: ti.terms[w], w: 0.5, group: 1}
		group = append(group, q)
		best = max(best, score([]qterm{q})[1])
	}
	got := score(group)
	if got[1] != best {
		t.Errorf("the memory naming three kinds scores %g, want its best kind's %g", got[1], best)
	}
	for i := range group {
		group[i].group = 0
	}
	if sum := score(group); sum[1] <= best {
		t.Errorf("summed (no group) %g, want more than %g", sum[1], best)
	}
}

// TestCoverageCountsKinds: a memory naming a kind of a noun of the query
// holds that noun's share of the query's word weight (so the relevance
// gate lets it through), counted once when it names the noun too.
func TestCoverageCountsKinds(t *testing.T) {
	ti := newTextIndex()
	for i, d := range []string{"my dermatologist was kind", "my doctor, a dermatologist", "a quiet day in the garden", "the garden gate"} {
		ti.put(int64(i+1), d)
	}
	const q = "which doctors did I see in the garden"
	ids := []int64{1, 2, 3}
	plain := ti.coverage(q, nil, ids, nil, nil)
	kinds, nouns := ti.kindTerms(q, nil, ti.queryTerms(q, nil), kindsOnly(0.2))
	with := ti.coverage(q, nil, ids, kinds, nouns)
	if plain[0] != 0 || with[0] <= 0 {
		t.Errorf("the dermatologist memory covers %g plainly and %g with kinds; want 0 and more", plain[0], with[0])
	}
	if with[0] != plain[1] {
		t.Errorf("a kind of doctor covers %g, the word doctor %g: want equal", with[0], plain[1])
	}
	if with[1] != plain[1] {
		t.Errorf("naming the doctor and a kind of it covers %g, want %g (the noun counted once)", with[1], plain[1])
	}
	if with[2] != plain[2] {
		t.Errorf("a memory with no kind covers %g with kinds, %g without", with[2], plain[2])
	}
}

// TestRecallContextShowsKinds: on the turn's path, a question naming a
// class brings the memories about its members into the prompt (the gate
// counts a kind as the noun it stands for), and not an unrelated one.
func TestRecallContextShowsKinds(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t, false)
	for _, s := range []string{
		"Saw my dermatologist, Dr. Lee, about the mole on my back.",
		"The ENT specialist says my sinusitis is chronic.",
		"The bakery on Main Street sells rye bread on Fridays.",
	} {
		if _, err := svc.Remember(ctx, Memory{Text: s, Kind: KindFact, Source: SourceAgent}, false); err != nil {
			t.Fatal(err)
		}
	}
	rec, err := (&RecallContext{Service: svc}).Recall(ctx, "Which doctors did I see this year?")
	if err != nil {
		t.Fatal(err)
	}
	got := texts(rec.Memories)
	for _, want := range []string{"dermatologist", "ENT specialist"} {
		if !slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, want) }) {
			t.Errorf("recall shows %q, lacks the %s", got, want)
		}
	}
	if slices.ContainsFunc(got, func(s string) bool { return strings.Contains(s, "bakery") }) {
		t.Errorf("recall shows %q, with the bakery", got)
	}
}

// BenchmarkKindTerms measures the lexicon's part of a query: looking up
// its words and phrases and reading the related words' stems (what
// kindTerms costs each recall), on benchmark queries and a chat message.
func BenchmarkKindTerms(b *testing.B) {
	ti := newTextIndex()
	r := rand.New(rand.NewPCG(1, 2))
	for i := range 2000 {
		ti.put(int64(i+1), benchText(r, i))
	}
	qs := []string{"remind me what we said about the plan for week 12, and add that Anna prefers the quiet option."}
	for range 63 {
		qs = append(qs, benchQuery(r))
	}
	w := DefaultTuning.relWeights()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		q := qs[i%len(qs)]
		ti.kindTerms(q, nil, nil, w)
	}
}
