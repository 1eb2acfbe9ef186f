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

// goldenCosines embeds the golden texts with enc and returns the cosine of
// each to the reference vector.
func goldenCosines(t *testing.T, enc *Encoder) []float64 {
	texts, ids, want := readVectorGolden(t)
	got, err := enc.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	tok, err := enc.tokenizer()
	if err != nil {
		t.Fatal(err)
	}
	cos := make([]float64, len(texts))
	for i := range texts {
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
