package lexicon

import (
	"slices"
	"testing"

	"github.com/reverie-ai/reverie/internal/embed"
)

func TestLookup(t *testing.T) {
	cases := []struct {
		name   string
		phrase string
		rel    Relation
		want   []string // among the words
		absent []string // not among them
	}{
		{"two-word noun, plural", "musical instruments", Kinds, []string{"guitar", "drum", "piano", "violin"}, []string{"musical", "hammer"}},
		{"synonyms and kinds", "doctor", Kinds, []string{"physician", "dermatologist", "specialist", "surgeon"}, []string{"doctor"}},
		{"regular plural", "doctors", Kinds, []string{"dermatologist"}, nil},
		{"ies plural", "cities", Kinds, []string{"paris", "tokyo"}, nil},
		{"irregular plural from noun.exc", "children", Kinds, []string{"boy", "girl", "infant"}, nil},
		{"hyphenated lemma as tokens", "t shirt", Kinds, []string{"jersey"}, nil},
		{"kinds of furniture", "furniture", Kinds, []string{"bookcase", "table", "couch"}, nil},
		{"derived from a noun", "photography", Derived, []string{"photograph", "photographer", "photographic"}, []string{"photography", "camera"}},
		{"derived from a verb's past", "married", Derived, []string{"marriage"}, nil},
		{"derived from a verb's gerund", "cooking", Derived, []string{"cook"}, nil},
		{"derived from an irregular verb form (verb.exc)", "bought", Derived, []string{"buyer"}, nil},
		{"derived from an adjective", "musical", Derived, []string{"music"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, ok := Lookup(c.phrase)
			if !ok {
				t.Fatalf("Lookup(%q) found nothing", c.phrase)
			}
			got := words(k, c.rel)
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
		{"unknown word", "zzyzxq"},
		{"empty", ""},
		{"a key's prefix", "musical instr"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if k, ok := Lookup(c.phrase); ok {
				t.Errorf("Lookup(%q) = %q, want nothing", c.phrase, words(k, Kinds))
			}
		})
	}
}

func TestLookupHasNoKinds(t *testing.T) {
	cases := []struct{ name, phrase string }{
		{"not a noun", "quickly"},
		{"too general: every sense's closure is over the bound", "entity"},
		{"too general: person", "person"},
		{"a verb's form is not the noun's (play's kinds)", "played"},
		{"an irregular verb form is not a noun's (verb.exc)", "ran"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			k, _ := Lookup(c.phrase)
			if got := words(k, Kinds); len(got) > 0 || k.Has(Kinds) {
				t.Errorf("Lookup(%q) has kinds %q, want none", c.phrase, got)
			}
		})
	}
}

func TestAllStopsWhenAsked(t *testing.T) {
	k, ok := Lookup("furniture")
	if n := len(words(k, Kinds)); !ok || n < 3 {
		t.Fatalf("furniture: %d words", n)
	}
	n := 0
	for range k.Stems(Kinds) {
		n++
		if n == 2 {
			break
		}
	}
	if n != 2 {
		t.Errorf("iterated %d words after break at 2", n)
	}
}

func TestBaseForms(t *testing.T) {
	cases := []struct {
		name, in string
		want     []string
	}{
		{"plain s", "doctors", []string{"doctors", "doctor"}},
		{"ies", "cities", []string{"cities", "citie", "city"}},
		{"men", "firemen", []string{"firemen", "fireman"}},
		{"ches", "benches", []string{"benches", "bench", "benche"}},
		{"last word of a phrase", "musical instruments", []string{"musical instruments", "musical instrument"}},
		{"no ending", "furniture", []string{"furniture"}},
		{"a lone s is not a word", "s", []string{"s"}},
		{"a verb's past, as a noun's and a verb's", "married", []string{"married", "marrie", "marri"}},
		{"a verb's gerund", "baking", []string{"baking", "bake", "bak"}},
		{"an adjective's comparative", "larger", []string{"larger", "large", "larg"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, f := range baseForms(c.in) {
				got = append(got, f.s)
			}
			for _, w := range c.want {
				if !slices.Contains(got, w) {
					t.Errorf("baseForms(%q) = %q, lacks %q", c.in, got, w)
				}
			}
			if got[0] != c.in {
				t.Errorf("baseForms(%q) starts with %q", c.in, got[0])
			}
		})
	}
}

// words returns the words of relation r of e.
func words(e Entry, r Relation) []string {
	var out []string
	for w := range e.Stems(r) {
		out = append(out, string(w))
	}
	return out
}

// TestStemsAreTheStemmers checks every word's stored stem against
// internal/embed's Stem, which stems the full-text index's terms: a
// change to the stemmer fails here (run go generate ./internal/lexicon),
// not silently in recall.
func TestStemsAreTheStemmers(t *testing.T) {
	rd := wordReader{t: parsed()}
	n := rd.t.words.n
	if n < 10000 {
		t.Fatalf("the table has %d words", n)
	}
	changed := 0
	for id := range n {
		w, s := rd.read(id)
		if want := embed.Stem(string(w)); string(s) != want {
			t.Fatalf("word %d %q: stored stem %q, Stem gives %q: run go generate ./internal/lexicon", id, w, s, want)
		}
		if string(s) != string(w) {
			changed++
		}
	}
	if changed < n/4 {
		t.Errorf("only %d of %d stems differ from their word", changed, n)
	}
}

// TestWordReaderOrder checks that a reader reading words in any order
// gives what a new reader gives for each word (read from its bucket's
// first record): it reads on from the word before only when that is
// right.
func TestWordReaderOrder(t *testing.T) {
	n := parsed().words.n
	type ws struct{ w, s string }
	want := make([]ws, n)
	every := make([]int, n)
	for id := range n {
		rd := wordReader{t: parsed()}
		w, s := rd.read(id)
		want[id], every[id] = ws{string(w), string(s)}, id
	}
	cases := []struct {
		name string
		ids  []int
	}{
		{"every word in order", every},
		{"backwards", []int{40, 39, 17, 16, 15, 1, 0}},
		{"same twice", []int{5, 5, 5, 31, 31}},
		{"across buckets", []int{14, 15, 16, 17, 47, 48, 49, n - 1}},
		{"skipping", []int{0, 3, 9, 10, 200, 201, 60, 61}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rd := wordReader{t: parsed()}
			for _, id := range c.ids {
				w, s := rd.read(id)
				if got := (ws{string(w), string(s)}); got != want[id] {
					t.Errorf("word %d = %v, want %v", id, got, want[id])
				}
			}
		})
	}
}
