package memory

import "testing"

func TestGatePass(t *testing.T) {
	g := Gate{MinMatch: 0.3, MinCosine: 0.6, Ratio: 0.3, MaxLines: 10}
	best := &Scored{Score: 1, Match: 0.8}
	for _, tc := range []struct {
		name     string
		s        Scored
		best     *Scored
		measured bool
		want     bool
	}{
		{"first, enough of the words", Scored{Score: 0.1, Match: 0.3}, nil, true, true},
		{"first, too few of the words", Scored{Score: 5, Match: 0.29}, nil, true, false},
		{"close in meaning without the words", Scored{Score: 5, Cosine: 0.6}, nil, true, true},
		{"not measured (external store)", Scored{Score: 0.5}, best, false, true},
		{"far below the best", Scored{Score: 0.29, Match: 0.9}, best, true, false},
		{"not measured, far below the best", Scored{Score: 0.2}, best, false, false},
		{"near the best", Scored{Score: 0.3, Match: 0.5}, best, true, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := g.pass(&tc.s, tc.best, tc.measured); got != tc.want {
				t.Errorf("pass(%+v) = %v, want %v", tc.s, got, tc.want)
			}
		})
	}
	if !(&SplitStore{episodes: &VectorStore{}}).measuresMatch(Memory{Kind: KindEpisode}) ||
		(&SplitStore{episodes: &VectorStore{}}).measuresMatch(Memory{Kind: KindFact}) {
		t.Error("a split store measures Match for its local episodes only")
	}
}
