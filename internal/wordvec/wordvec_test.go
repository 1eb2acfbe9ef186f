package wordvec

import (
	"math"
	"testing"
)

func TestLookup(t *testing.T) {
	cases := []struct {
		name string
		word string
		ok   bool
	}{
		{"the most frequent word", "the", true},
		{"a common noun", "photography", true},
		{"a rarer noun", "dermatologist", true},
		{"upper case is not a token", "Paris", false},
		{"punctuation is not a token", ",", false},
		{"digits are not kept", "2014", false},
		{"unknown", "zzyzxq", false},
		{"empty", "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, ok := Lookup(c.word)
			if ok != c.ok || w.OK() != c.ok {
				t.Fatalf("Lookup(%q) = %v, %v; want ok %v", c.word, w, ok, c.ok)
			}
			if ok && w.Text() != c.word {
				t.Errorf("Lookup(%q).Text() = %q", c.word, w.Text())
			}
			if ok && ByRank(w.Rank()) != w {
				t.Errorf("ByRank(%d) = %v, want %v", w.Rank(), ByRank(w.Rank()), w)
			}
		})
	}
}

func TestEveryWordIsFoundByItsText(t *testing.T) {
	if n := Len(); n < 10000 {
		t.Fatalf("Len() = %d", n)
	}
	for r := range Len() {
		w := ByRank(r)
		got, ok := Lookup(w.Text())
		if !ok || got != w {
			t.Fatalf("rank %d %q: Lookup gives %v, %v", r, w.Text(), got, ok)
		}
	}
	if ByRank(0).Text() != "the" {
		t.Errorf("ByRank(0) = %q, want the", ByRank(0).Text())
	}
	if ByRank(-1).OK() || ByRank(Len()).OK() {
		t.Error("ByRank out of range gives a word")
	}
}

// TestMeaning checks that words of like meaning have nearer vectors than
// unrelated ones: what the table is for.
func TestMeaning(t *testing.T) {
	cases := []struct {
		name            string
		word, near, far string
	}{
		{"photography", "photography", "photographer", "surgeon"},
		{"doctors", "doctors", "physicians", "guitars"},
		{"instruments", "instruments", "guitars", "physicians"},
		{"wedding", "wedding", "marriage", "laptop"},
		{"camera", "camera", "lens", "recipe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, near, far := must(t, c.word), must(t, c.near), must(t, c.far)
			if cn, cf := Cosine(w, near), Cosine(w, far); cn <= cf+0.2 {
				t.Errorf("cos(%s, %s) = %.2f, cos(%s, %s) = %.2f", c.word, c.near, cn, c.word, c.far, cf)
			}
		})
	}
}

func TestVectorIsTheTable(t *testing.T) {
	w := must(t, "music")
	v := w.Vector()
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	// GloVe's vectors of frequent words have norms of about 4–7
	if n = math.Sqrt(n); n < 2 || n > 10 {
		t.Errorf("|music| = %.2f", n)
	}
	if c := Cosine(w, w); math.Abs(float64(c)-1) > 1e-6 {
		t.Errorf("Cosine(music, music) = %v", c)
	}
	var sum [Dims]float32
	w.AddTo(sum[:], 2)
	for i := range sum {
		if math.Abs(float64(sum[i]-2*v[i])) > 1e-5 {
			t.Fatalf("AddTo(…, 2)[%d] = %v, want %v", i, sum[i], 2*v[i])
		}
	}
	var zero Word
	zero.AddTo(sum[:], 1) // adds nothing
	if Cosine(zero, w) != 0 || zero.Text() != "" {
		t.Error("the zero Word has a vector or a text")
	}
}

func must(t *testing.T, s string) Word {
	t.Helper()
	w, ok := Lookup(s)
	if !ok {
		t.Fatalf("Lookup(%q) found nothing", s)
	}
	return w
}
