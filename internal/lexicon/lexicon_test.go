package lexicon

import (
	"slices"
	"testing"
)

func TestLookup(t *testing.T) {
	cases := []struct {
		name   string
		phrase string
		want   []string // among the kinds
		absent []string // not among them
	}{
		{"two-word noun, plural", "musical instruments", []string{"guitar", "drum", "piano", "violin"}, []string{"musical", "hammer"}},
		{"synonyms and kinds", "doctor", []string{"physician", "dermatologist", "specialist", "surgeon"}, []string{"doctor"}},
		{"regular plural", "doctors", []string{"dermatologist"}, nil},
		{"ies plural", "cities", []string{"paris", "tokyo"}, nil},
		{"irregular plural from noun.exc", "children", []string{"boy", "girl", "infant"}, nil},
		{"hyphenated lemma as tokens", "t shirt", []string{"jersey"}, nil},
		{"kinds of furniture", "furniture", []string{"bookcase", "table", "couch"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, ok := Lookup(c.phrase)
			if !ok {
				t.Fatalf("Lookup(%q) found nothing", c.phrase)
			}
			got := slices.Collect(k.All())
			if !slices.IsSorted(got) {
				t.Errorf("words not sorted: %v", got)
			}
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("Lookup(%q) lacks %q (has %d words)", c.phrase, w, len(got))
				}
			}
			for _, w := range c.absent {
				if slices.Contains(got, w) {
					t.Errorf("Lookup(%q) has %q", c.phrase, w)
				}
			}
		})
	}
}

func TestLookupFindsNothing(t *testing.T) {
	cases := []struct{ name, phrase string }{
		{"not a noun", "quickly"},
		{"unknown word", "zzyzxq"},
		{"too general: every sense's closure is over the bound", "entity"},
		{"too general: person", "person"},
		{"empty", ""},
		{"a key's prefix", "musical"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if k, ok := Lookup(c.phrase); ok {
				t.Errorf("Lookup(%q) = %q, want nothing", c.phrase, slices.Collect(k.All()))
			}
		})
	}
}

func TestAllStopsWhenAsked(t *testing.T) {
	k, ok := Lookup("furniture")
	if n := len(slices.Collect(k.All())); !ok || n < 3 {
		t.Fatalf("furniture: %d words", n)
	}
	n := 0
	for range k.All() {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("iterated %d words after break at 2", n)
	}
}

func TestSingulars(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
	}{
		{"plain s", "doctors", []string{"doctors", "doctor"}},
		{"ies", "cities", []string{"cities", "citie", "city"}},
		{"men", "firemen", []string{"firemen", "fireman"}},
		{"ches", "benches", []string{"benches", "bench", "benche"}},
		{"last word of a phrase", "musical instruments", []string{"musical instruments", "musical instrument"}},
		{"no plural ending", "furniture", []string{"furniture"}},
		{"a lone s is not a word", "s", []string{"s"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := singulars(c.in)
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("singulars(%q) = %q, lacks %q", c.in, got, w)
				}
			}
			if got[0] != c.in {
				t.Errorf("singulars(%q) starts with %q", c.in, got[0])
			}
		})
	}
}
