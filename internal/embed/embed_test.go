package embed

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/reverie-ai/reverie/internal/sqlite"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     []string
	}{
		{"basic", "Hello, World!", []string{"hello", "world"}},
		{"possessive", "Caroline's dog", []string{"caroline", "dog"}},
		{"clitic", "I don't know", []string{"i", "dont", "know"}},
		{"curly apostrophe", "Mel’s art", []string{"mel", "art"}},
		{"digits", "in 2023 at 5pm", []string{"in", "2023", "at", "5pm"}},
		{"unicode", "Café crème", []string{"café", "crème"}},
		{"empty", "  ...  ", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Words(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("Words(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestStemConflatesForms(t *testing.T) {
	for _, group := range [][]string{
		{"paint", "paints", "painted", "painting", "paintings"},
		{"run", "running", "runs"},
		{"bake", "baking", "baked", "bakes"},
		{"family", "families"},
		{"game", "games"},
		{"box", "boxes"},
	} {
		want := Stem(group[0])
		for _, w := range group[1:] {
			if got := Stem(w); got != want {
				t.Errorf("Stem(%q) = %q, want %q (as %q)", w, got, want, group[0])
			}
		}
	}
	for _, w := range []string{"bus", "glass", "is", "art"} {
		if Stem(w) != w && len(Stem(w)) < 3 {
			t.Errorf("Stem(%q) = %q: too aggressive", w, Stem(w))
		}
	}
}

func norm(v []float32) float64 {
	var s float64
	for _, x := range v {
		s += float64(x) * float64(x)
	}
	return math.Sqrt(s)
}

func TestOfflineProperties(t *testing.T) {
	ctx := context.Background()
	e := NewOffline(0)
	if e.Dimensions() != DefaultDimensions {
		t.Fatalf("dims = %d", e.Dimensions())
	}
	texts := []string{
		"I adopted a puppy from the animal shelter last week",
		"We adopted a little dog from the shelter",
		"The quarterly tax report is due on Friday",
		"",
	}
	a, err := e.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := e.Embed(ctx, texts)
	for i := range a {
		if !slices.Equal(a[i], b[i]) {
			t.Fatalf("vector %d not deterministic", i)
		}
		if len(a[i]) != DefaultDimensions {
			t.Fatalf("vector %d has %d dims", i, len(a[i]))
		}
	}
	for i := 0; i < 3; i++ {
		if n := norm(a[i]); math.Abs(n-1) > 1e-5 {
			t.Errorf("vector %d norm %f", i, n)
		}
	}
	if n := norm(a[3]); n != 0 {
		t.Errorf("empty text norm %f, want 0", n)
	}
	related, unrelated := Dot(a[0], a[1]), Dot(a[0], a[2])
	if related <= unrelated+0.1 {
		t.Errorf("related cosine %.3f not clearly above unrelated %.3f", related, unrelated)
	}
	if NewOffline(128).ID() == e.ID() {
		t.Error("ID must change with dimensions")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := e.Embed(cctx, texts); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled embed: %v", err)
	}
}

func TestEncodeDecode(t *testing.T) {
	v := []float32{0, 1.5, -2.25, float32(math.Inf(1))}
	got, err := Decode(Encode(v))
	if err != nil || !slices.Equal(got, v) {
		t.Fatalf("round trip = %v, %v", got, err)
	}
	if _, err := Decode([]byte{1, 2, 3}); !errors.Is(err, ErrDimensions) {
		t.Errorf("odd blob: %v", err)
	}
}

// DecodeInto reuses the buffer it is given when it is large enough.
func TestDecodeInto(t *testing.T) {
	v := []float32{0, 1.5, -2.25}
	tests := []struct {
		name  string
		dst   []float32
		reuse bool
	}{
		{name: "nil buffer", dst: nil},
		{name: "small buffer", dst: make([]float32, 1)},
		{name: "large buffer", dst: make([]float32, 8), reuse: true},
		{name: "same size", dst: make([]float32, 3), reuse: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := DecodeInto(tc.dst, Encode(v))
			if err != nil || !slices.Equal(got, v) {
				t.Fatalf("DecodeInto = %v, %v; want %v", got, err, v)
			}
			if reused := cap(tc.dst) > 0 && &got[0] == &tc.dst[:1][0]; reused != tc.reuse {
				t.Errorf("buffer reused = %v, want %v", reused, tc.reuse)
			}
		})
	}
	if _, err := DecodeInto(make([]float32, 4), []byte{1, 2, 3}); !errors.Is(err, ErrDimensions) {
		t.Errorf("odd blob: %v", err)
	}
}

type countingEmbedder struct {
	inner Embedder
	calls atomic.Int32
	texts atomic.Int32
}

func (c *countingEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	c.calls.Add(1)
	c.texts.Add(int32(len(texts)))
	return c.inner.Embed(ctx, texts)
}
func (c *countingEmbedder) Dimensions() int { return c.inner.Dimensions() }
func (c *countingEmbedder) ID() string      { return c.inner.ID() }

func TestCached(t *testing.T) {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "c.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	inner := &countingEmbedder{inner: NewOffline(64)}
	c, err := NewCached(ctx, inner, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	want, _ := NewOffline(64).Embed(ctx, []string{"alpha", "beta", "alpha"})
	got, err := c.Embed(ctx, []string{"alpha", "beta", "alpha"})
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if !slices.Equal(got[i], want[i]) {
			t.Fatalf("vector %d differs from the inner embedder's", i)
		}
	}
	if inner.calls.Load() != 1 || inner.texts.Load() != 2 {
		t.Fatalf("first call: %d calls, %d texts; want 1 call with the 2 distinct texts", inner.calls.Load(), inner.texts.Load())
	}
	// a second instance over the same database hits the cache, batching only the miss
	c2, err := NewCached(ctx, inner, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Embed(ctx, []string{"beta", "gamma", "alpha"}); err != nil {
		t.Fatal(err)
	}
	if inner.calls.Load() != 2 || inner.texts.Load() != 3 {
		t.Fatalf("second call: %d calls, %d texts; want only gamma embedded", inner.calls.Load(), inner.texts.Load())
	}
	// another model does not see these entries, and Prune removes them
	other, err := NewCached(ctx, NewOffline(32), db, nil)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := other.Prune(ctx); err != nil || n != 3 {
		t.Fatalf("prune = %d, %v; want 3", n, err)
	}
}

type fakeProvider struct{ dims int }

func (f fakeProvider) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i := range texts {
		out[i] = make([]float32, f.dims)
		out[i][0] = 3
		out[i][1] = 4
	}
	return out, nil
}

func TestWrap(t *testing.T) {
	ctx := context.Background()
	a := Wrap(fakeProvider{dims: 8}, 8, "fake/model")
	v, err := a.Embed(ctx, []string{"x"})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(float64(v[0][0])-0.6) > 1e-6 || math.Abs(float64(v[0][1])-0.8) > 1e-6 {
		t.Errorf("not normalised: %v", v[0][:2])
	}
	if a.ID() != "fake/model/8" || a.Dimensions() != 8 {
		t.Errorf("identity %q/%d", a.ID(), a.Dimensions())
	}
	bad := Wrap(fakeProvider{dims: 4}, 8, "fake/model")
	if _, err := bad.Embed(ctx, []string{"x"}); !errors.Is(err, ErrDimensions) {
		t.Errorf("wrong dims: %v", err)
	}
}

// referenceEmbed is embedOne as first written (each character n-gram a new
// string of its runes): the features, and so the vectors, must not change.
func referenceEmbed(o *Offline, text string) []float32 {
	words := Words(text)
	uni := map[string]float64{}
	bi := map[string]float64{}
	chars := map[string]float64{}
	prev := ""
	for _, w := range words {
		if IsStopWord(w) {
			uni[w] += o.w.StopWord
			continue
		}
		s := Stem(w)
		uni[s]++
		if prev != "" {
			bi[prev+" "+s]++
		}
		prev = s
		rs := []rune("<" + w + ">")
		for n := 3; n <= 5; n++ {
			for i := 0; i+n <= len(rs); i++ {
				chars[string(rs[i:i+n])]++
			}
		}
	}
	acc := make([]float64, o.dims)
	o.addFamily(acc, uni, nsWord, o.w.Words)
	o.addFamily(acc, bi, nsBigram, o.w.Bigrams)
	o.addFamily(acc, chars, nsChar, o.w.Chars)
	v := make([]float32, o.dims)
	var s float64
	for _, x := range acc {
		s += x * x
	}
	if s == 0 {
		return v
	}
	inv := 1 / math.Sqrt(s)
	for i, x := range acc {
		v[i] = float32(x * inv)
	}
	return v
}

// The offline vectors are those of the reference: same features, same
// hashes (up to the order in which a dimension's features are summed).
func TestOfflineMatchesReference(t *testing.T) {
	o := NewOffline(0)
	for _, text := range []string{
		"I adopted a puppy from the animal shelter last week",
		"Message 7 from client 3: remind me what we said about the plan for week 8, and add that Anna prefers the quiet option.",
		"Chloé et Dmitri sont allés à Québec — naïve café, 東京 и Москва",
		"emoji 🎉🎉 party and a tab\tand e\u0301 combining",
		"invalid \xff\xfe bytes in a w\xc3rd",
		"a",
		"",
	} {
		got, want := o.embedOne(text), referenceEmbed(o, text)
		for i := range want {
			if math.Abs(float64(got[i]-want[i])) > 1e-6 {
				t.Fatalf("%q: dimension %d = %g, reference %g", text, i, got[i], want[i])
			}
		}
	}
}

// BenchmarkOfflineEmbed embeds a chat message, as a turn does for its
// recall and its episodes.
func BenchmarkOfflineEmbed(b *testing.B) {
	o := NewOffline(0)
	text := "Message 7 from client 3: remind me what we said about the plan for week 8, and add that Anna prefers the quiet option."
	b.ReportAllocs()
	for b.Loop() {
		o.embedOne(text)
	}
}
