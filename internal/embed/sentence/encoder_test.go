package sentence

import (
	"bufio"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

type vectorGolden struct {
	Text string  `json:"text"`
	IDs  []int32 `json:"ids"`
	Vec  string  `json:"vec"`
}

func readVectorGolden(t testing.TB) ([]string, [][]int32, [][]float32) {
	t.Helper()
	f, err := os.Open("testdata/vectors.golden.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var texts []string
	var ids [][]int32
	var vecs [][]float32
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var g vectorGolden
		if err := json.Unmarshal(sc.Bytes(), &g); err != nil {
			t.Fatal(err)
		}
		raw, err := base64.StdEncoding.DecodeString(g.Vec)
		if err != nil || len(raw) != 4*Dimensions {
			t.Fatalf("%q: bad vector (%d bytes): %v", g.Text, len(raw), err)
		}
		v := make([]float32, Dimensions)
		for k := range v {
			v[k] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*k:]))
		}
		texts, ids, vecs = append(texts, g.Text), append(ids, g.IDs), append(vecs, v)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return texts, ids, vecs
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for k := range a {
		ab += float64(a[k]) * float64(b[k])
		aa += float64(a[k]) * float64(a[k])
		bb += float64(b[k]) * float64(b[k])
	}
	return ab / math.Sqrt(aa*bb)
}

// firstWindow returns the vector of text's first maxPieces pieces: what the
// graph computes for it (it clips a text there), and Embed's vector for a
// text no longer.
func firstWindow(t testing.TB, enc *Encoder, text string) []float32 {
	t.Helper()
	tok, err := enc.tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	if isBlank(text) {
		text = " "
	}
	v := make([]float32, Dimensions)
	enc.forward(newScratch(), tok.encode(text, maxPieces), v)
	return v
}

// goldenCosines embeds the golden texts' first windows with enc (the
// reference clips a text at maxPieces pieces) and returns the cosine of
// each to the reference vector.
func goldenCosines(t *testing.T, enc *Encoder) []float64 {
	texts, ids, want := readVectorGolden(t)
	tok, err := enc.tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	cos := make([]float64, len(texts))
	got := make([][]float32, len(texts))
	for i := range texts {
		got[i] = firstWindow(t, enc, texts[i])
		tx := texts[i]
		if isBlank(tx) {
			tx = " "
		}
		if g := tok.encode(tx, maxPieces); !slices.Equal(g, ids[i]) {
			t.Errorf("%q: ids %v, want %v", texts[i], g, ids[i])
		}
		var norm float64
		for _, x := range got[i] {
			norm += float64(x) * float64(x)
		}
		if math.Abs(norm-1) > 1e-5 {
			t.Errorf("%q: norm² %v", texts[i], norm)
		}
		cos[i] = cosine(got[i], want[i])
	}
	return cos
}

func isBlank(s string) bool {
	for _, r := range s {
		if !isJSSpace(r) {
			return false
		}
	}
	return true
}

// minCosine is the least cosine an embedding of the int8 encoder may have
// to the reference (TF.js, float32 weights). Measured: min 0.99906, median
// 0.99973 over the golden texts (with float32 weights, -f32: min 1−4e-12; -int8x2: see TestGoldenVectorsPrecise).
const minCosine = 0.998

// TestGoldenVectors checks the embeddings of ~40 texts against the TF.js
// reference (bench/embed/golden.js).
func TestGoldenVectors(t *testing.T) {
	enc, err := New()
	if err != nil {
		t.Fatal(err)
	}
	cos := goldenCosines(t, enc)
	s := slices.Clone(cos)
	slices.Sort(s)
	t.Logf("cosine to the reference over %d texts: min %.6f, median %.6f", len(s), s[0], s[len(s)/2])
	texts, _, _ := readVectorGolden(t)
	for i, c := range cos {
		if c < minCosine {
			t.Errorf("%q: cosine %.6f to the reference, want ≥ %v", texts[i], c, minCosine)
		}
	}
}

// TestGoldenVectorsPrecise checks the forward pass with precise weights,
// when a blob of them is given (go run ./internal/gen -f32 -o FILE, or
// -int8x2), against the reference: the port must then match it to float32
// rounding.
func TestGoldenVectorsPrecise(t *testing.T) {
	path := os.Getenv("USE_LITE_BLOB")
	if path == "" {
		t.Skip("USE_LITE_BLOB names no -f32 or -int8x2 blob")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := newEncoder(string(raw), vocabText)
	if err != nil {
		t.Fatal(err)
	}
	cos := goldenCosines(t, enc)
	s := slices.Clone(cos)
	slices.Sort(s)
	t.Logf("%s: cosine to the reference over %d texts: min 1−%.3g, median 1−%.3g", path, len(s), 1-s[0], 1-s[len(s)/2])
	if s[0] < 0.99999 {
		t.Errorf("min cosine %.8f", s[0])
	}
}

// TestSimilarity is a sanity check, not tuning: two paraphrases are closer
// than unrelated sentences.
func TestSimilarity(t *testing.T) {
	enc, err := New()
	if err != nil {
		t.Fatal(err)
	}
	v, err := enc.Embed(context.Background(), []string{
		"How old is your dog?",
		"What is the age of your puppy?",
		"The stock market fell sharply today.",
	})
	if err != nil {
		t.Fatal(err)
	}
	close, far := cosine(v[0], v[1]), cosine(v[0], v[2])
	if close <= far {
		t.Fatalf("paraphrases %.3f ≤ unrelated %.3f", close, far)
	}
}

func TestEmbedHonoursContext(t *testing.T) {
	enc, err := New()
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := enc.Embed(ctx, []string{"a"}); err == nil {
		t.Fatal("no error from a cancelled context")
	}
}

// TestEmbedConcurrent runs Embed from several goroutines at once (with
// -race): each gets the vectors a lone call gets.
func TestEmbedConcurrent(t *testing.T) {
	enc, err := New()
	if err != nil {
		t.Fatal(err)
	}
	texts := []string{"How old is your dog?", "", "The meeting has been moved to Thursday afternoon.", "🎉"}
	want, err := enc.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for g := 0; g < 4; g++ {
		wg.Go(func() {
			for range 3 {
				got, err := enc.Embed(context.Background(), texts)
				if err != nil {
					errs <- err
					return
				}
				for i := range got {
					if !slices.Equal(got[i], want[i]) {
						errs <- fmt.Errorf("%q: vector differs from a lone call's", texts[i])
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

// FuzzEmbed checks that any text gets a finite unit vector.
func FuzzEmbed(f *testing.F) {
	enc, err := New()
	if err != nil {
		f.Fatal(err)
	}
	for _, s := range []string{"", " ", "a", "Hello, world!", "\xff", "🇫🇷", strings.Repeat("ab ", 200)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := enc.Embed(context.Background(), []string{s})
		if err != nil {
			t.Fatal(err)
		}
		var norm float64
		for _, x := range v[0] {
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				t.Fatalf("%q: non-finite value", s)
			}
			norm += float64(x) * float64(x)
		}
		if math.Abs(norm-1) > 1e-4 {
			t.Fatalf("%q: norm² %v", s, norm)
		}
	})
}

func TestExpNeg(t *testing.T) {
	for x := float32(-90); x <= 0; x += 0.001 {
		want := math.Exp(float64(x))
		got := float64(expNeg(x))
		if math.Abs(got-want) > 4e-7*want+2e-38 { // 0 below −87
			t.Fatalf("expNeg(%v) = %v, want %v", x, got, want)
		}
	}
}

func TestWindows(t *testing.T) {
	for _, tc := range []struct {
		name string
		n    int
		want []int
	}{
		{"one piece over", maxPieces + 1, []int{0, 1}},
		{"one stride over", maxPieces + windowStride, []int{0, windowStride}},
		{"just past a stride", maxPieces + windowStride + 1, []int{0, windowStride, windowStride + 1}},
		{"300 pieces", 300, []int{0, 96, 172}},
		{"the most read", maxTextPieces, []int{0, 96, 192, 288, 384, 480, 576, 672}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := windows(tc.n)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("windows(%d) = %v, want %v", tc.n, got, tc.want)
			}
			if len(got) > maxWindows {
				t.Errorf("%d windows, at most %d", len(got), maxWindows)
			}
			for k, a := range got {
				if k > 0 && (a <= got[k-1] || a-got[k-1] > windowStride) {
					t.Errorf("window %d starts at %d after %d", k, a, got[k-1])
				}
			}
			if last := got[len(got)-1] + maxPieces; last != tc.n {
				t.Errorf("the last window ends at %d, want %d", last, tc.n)
			}
		})
	}
}

// TestEmbedWindows checks the windowed reading: a text of at most
// maxPieces pieces gets the graph's vector bit for bit (the vector of
// builtin/use-lite@512/512), a longer one the normalised weighted sum of
// its windows' vectors (firstWeight on the first, the graph's vector for
// the text, the rest shared by the others).
func TestEmbedWindows(t *testing.T) {
	enc, tok := newTestEncoder(t)
	golden, _, _ := readVectorGolden(t)
	sentenceA := "We went hiking in the mountains last weekend and the weather was lovely. "
	sentenceB := "My sister Ana moved to Porto in March and started teaching piano there. "
	var past strings.Builder // past maxTextPieces
	for i := range 90 {
		fmt.Fprintf(&past, "Note %d: the %s by the river needs %d new stakes before %s. ", i,
			[]string{"allotment", "orchard", "greenhouse", "hedge", "pond"}[i%5], i%9, time.Weekday(i%7))
	}
	long := []string{strings.Repeat(sentenceA, 12) + strings.Repeat(sentenceB, 6), past.String()}
	for _, g := range golden {
		if len(tok.encode(g, maxPieces+1)) > maxPieces {
			long = append(long, g)
		}
	}
	clipped, err := NewClipped()
	if err != nil {
		t.Fatal(err)
	}
	if enc.ID() == clipped.ID() {
		t.Fatalf("the windowed and the clipped encoder have one ID, %s", enc.ID())
	}
	for _, text := range append(golden, long...) {
		got, err := enc.Embed(context.Background(), []string{text})
		if err != nil {
			t.Fatal(err)
		}
		first := firstWindow(t, enc, text)
		if c, err := clipped.Embed(context.Background(), []string{text}); err != nil || !slices.Equal(c[0], first) {
			t.Errorf("%q: the clipped encoder's vector is not the graph's (%v)", cut(text), err)
		}
		ids := tok.encode(text, maxTextPieces)
		if isBlank(text) {
			ids = tok.encode(" ", maxTextPieces)
		}
		if len(ids) <= maxPieces {
			if !slices.Equal(got[0], first) {
				t.Errorf("%q (%d pieces): not the graph's vector", cut(text), len(ids))
			}
			continue
		}
		if !slices.Equal(ids[:maxPieces], tok.encode(text, maxPieces)) {
			t.Errorf("%q: the first window's pieces are not the clipped text's", cut(text))
		}
		want := make([]float64, Dimensions)
		s := newScratch()
		at := windows(len(ids))
		for k, a := range at {
			v := make([]float32, Dimensions)
			enc.forward(s, ids[a:a+maxPieces], v)
			if k == 0 && !slices.Equal(v, first) {
				t.Errorf("%q: the first window's vector is not the graph's", cut(text))
			}
			w := (1 - 2.0/3) / float64(len(at)-1)
			if k == 0 {
				w = 2.0 / 3
			}
			for d, x := range v {
				want[d] += w * float64(x)
			}
		}
		var norm float64
		for _, x := range want {
			norm += x * x
		}
		for d := range want {
			if diff := math.Abs(want[d]/math.Sqrt(norm) - float64(got[0][d])); diff > 1e-6 {
				t.Fatalf("%q: dimension %d is %v, the windows' weighted sum %v", cut(text), d, got[0][d], want[d]/math.Sqrt(norm))
			}
		}
		if c := cosine(got[0], first); c > 0.9999 {
			t.Errorf("%q: cosine %v to the first window's vector: the rest was not read", cut(text), c)
		}
	}
}

func cut(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}

// newTestEncoder returns the built-in encoder and its tokenizer, failing
// the test if either cannot be loaded.
func newTestEncoder(t testing.TB) (*Encoder, *tokenizer) {
	t.Helper()
	enc, err := New()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := enc.tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	return enc, tok
}
