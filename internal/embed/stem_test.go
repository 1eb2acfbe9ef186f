package embed

import "testing"

func TestStemPorter2(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		// reference outputs of the Snowball English stemmer
		{"consign", "consign"}, {"consigned", "consign"}, {"consignment", "consign"},
		{"consistency", "consist"}, {"consistently", "consist"}, {"consolation", "consol"},
		{"consolatory", "consolatori"}, {"consoled", "consol"}, {"consolidating", "consolid"},
		{"consolingly", "consol"}, {"consonant", "conson"}, {"conspicuously", "conspicu"},
		{"conspiracy", "conspiraci"}, {"conspirators", "conspir"}, {"constables", "constabl"},
		{"constancy", "constanc"}, {"knackeries", "knackeri"}, {"knaves", "knave"},
		{"kneeling", "kneel"}, {"knees", "knee"}, {"knightly", "knight"}, {"knitting", "knit"},
		{"knives", "knive"}, {"knocker", "knocker"}, {"generously", "generous"},
		{"skating", "skate"}, {"hopping", "hop"}, {"aberration", "aberr"}, {"abruptness", "abrupt"},
		{"absolute", "absolut"}, {"abated", "abat"}, {"acclivity", "accliv"},
		{"accumulations", "accumul"}, {"agreement", "agreement"}, {"breed", "breed"},
		{"fluently", "fluentli"}, {"because", "becaus"}, {"ties", "tie"}, {"cries", "cri"},
		// exceptions
		{"skies", "sky"}, {"dying", "die"}, {"news", "news"}, {"early", "earli"}, {"exceed", "exceed"},
		// left alone
		{"is", "is"}, {"2023", "2023"}, {"café", "café"}, {"b2b", "b2b"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			if got := Stem(tc.in); got != tc.want {
				t.Errorf("Stem(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestStemKeepsDistinctWords(t *testing.T) {
	// the previous suffix stripper merged these ("-er" removal)
	for _, tc := range []struct{ name, a, b string }{
		{"career/car", "career", "car"},
		{"care/car", "care", "car"},
		{"flower/flow", "flower", "flow"},
		{"better/bet", "better", "bet"},
		{"mother/moth", "mother", "moth"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if Stem(tc.a) == Stem(tc.b) {
				t.Errorf("Stem(%q) = Stem(%q) = %q", tc.a, tc.b, Stem(tc.a))
			}
		})
	}
	for _, group := range [][]string{
		{"volunteer", "volunteers", "volunteering", "volunteered"},
		{"hike", "hikes", "hiking", "hiked"},
		{"study", "studies", "studying", "studied"},
		{"happy", "happiness"},
	} {
		t.Run(group[0], func(t *testing.T) {
			for _, w := range group[1:] {
				if Stem(w) != Stem(group[0]) {
					t.Errorf("Stem(%q) = %q, want %q", w, Stem(w), Stem(group[0]))
				}
			}
		})
	}
}

func TestStemExceptionLengths(t *testing.T) {
	// Stem only looks the tables up for words this short
	for w := range stemExceptions {
		if len(w) > 6 {
			t.Errorf("exception %q longer than 6", w)
		}
	}
	for w := range stemInvariant1a {
		if len(w) > 7 {
			t.Errorf("invariant %q longer than 7", w)
		}
	}
}

func BenchmarkStem(b *testing.B) {
	ws := Words("Hey! I went to the support group yesterday and it was so powerful; painting, volunteering, happily studies")
	b.ReportAllocs()
	for b.Loop() {
		for _, w := range ws {
			Stem(w)
		}
	}
}
