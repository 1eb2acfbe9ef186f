package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/providers"
)

// limitedProvider answers like an OpenAI-compatible server whose model has
// a context of limit characters: a request holding a longer text is
// refused whole with providers.ErrBadRequest. It records each request.
type limitedProvider struct {
	limit int
	fail  error // when set, every request fails with it
	mu    sync.Mutex
	calls [][]string
	ok    []string // every text embedded, in order
}

func (p *limitedProvider) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls = append(p.calls, texts)
	if p.fail != nil {
		return nil, p.fail
	}
	for i, t := range texts {
		if n := utf8.RuneCountInString(t); n > p.limit {
			return nil, providers.BadRequest(nil, "Invalid 'input[%d]': maximum input length is %d tokens (got %d).", i, p.limit, n)
		}
	}
	p.ok = append(p.ok, texts...)
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = textVector(t)
	}
	return out, nil
}

// textVector is a deterministic 8-dimensional vector of t (not normalised).
func textVector(t string) []float32 {
	v := make([]float32, 8)
	for i, r := range t {
		v[(i+int(r))%8] += float32(r%7) + 1
	}
	return v
}

func unit(v []float32) []float32 {
	v = append([]float32(nil), v...)
	Normalize(v)
	return v
}

func near(a, b []float32) bool {
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-5 {
			return false
		}
	}
	return len(a) == len(b)
}

func words(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "w%d", i%10)
	}
	return b.String()
}

// A refused batch is sent again in halves, and a refused long text in
// pieces whose vectors are averaged; every text that fits is embedded as
// it is, and no piece the model sees is longer than it takes.
func TestAdapterSplitsRefusedTexts(t *testing.T) {
	long := words(130) // 389 characters: two pieces at a limit of 300
	longer := words(700)
	accents := strings.Repeat("é", 1000) // no space to cut at
	for _, tc := range []struct {
		name   string
		limit  int
		texts  []string
		pieces map[int]int // index of a split text → how many pieces at least
	}{
		{"all fit", 300, []string{"a", "b c", long[:200]}, nil},
		{"one long in a batch", 300, []string{"first short", long, "last short"}, map[int]int{1: 2}},
		{"several levels", 300, []string{longer, "short"}, map[int]int{0: 8}},
		{"multibyte without spaces", 300, []string{accents}, map[int]int{0: 4}},
		{"only long texts", 300, []string{long, longer, long}, map[int]int{0: 2, 1: 8, 2: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &limitedProvider{limit: tc.limit}
			a := Wrap(p, 8, "fake/limited")
			vecs, err := a.Embed(context.Background(), tc.texts)
			if err != nil {
				t.Fatal(err)
			}
			if len(vecs) != len(tc.texts) {
				t.Fatalf("%d vectors for %d texts", len(vecs), len(tc.texts))
			}
			for _, s := range p.ok {
				if !utf8.ValidString(s) || s == "" || utf8.RuneCountInString(s) > tc.limit {
					t.Errorf("the model was sent a piece of %d characters (valid UTF-8: %v)", utf8.RuneCountInString(s), utf8.ValidString(s))
				}
			}
			for i, text := range tc.texts {
				if n := Dot(vecs[i], vecs[i]); math.Abs(float64(n)-1) > 1e-5 {
					t.Errorf("vector %d has squared norm %v", i, n)
				}
				if tc.pieces[i] == 0 {
					if !near(vecs[i], unit(textVector(text))) {
						t.Errorf("text %d that fits was not embedded as it is", i)
					}
					continue
				}
				var got []string
				for _, s := range p.ok {
					if strings.Contains(text, s) && s != text {
						got = append(got, s)
					}
				}
				if len(got) < tc.pieces[i] {
					t.Errorf("text %d went out in %d pieces, want at least %d", i, len(got), tc.pieces[i])
				}
				if joined := strings.Join(got, ""); strings.Join(strings.Fields(joined), "") != strings.Join(strings.Fields(text), "") && !strings.Contains(tc.name, "only") {
					t.Errorf("the pieces of text %d do not make it up again", i)
				}
			}
		})
	}
}

// One level of splitting averages the halves' unit vectors by length.
func TestAdapterAveragesHalves(t *testing.T) {
	p := &limitedProvider{limit: 300}
	text := words(130)
	vecs, err := Wrap(p, 8, "fake/limited").Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	l, r := halves(text)
	if l+" "+r != text {
		t.Fatalf("halves(%q) = %q, %q", text, l, r)
	}
	want := make([]float32, 8)
	vl, vr := unit(textVector(l)), unit(textVector(r))
	for i := range want {
		want[i] = float32(utf8.RuneCountInString(l))*vl[i] + float32(utf8.RuneCountInString(r))*vr[i]
	}
	if !near(vecs[0], unit(want)) {
		t.Errorf("vector %v, want %v", vecs[0], unit(want))
	}
}

// What is not a refusal of the text is not retried in pieces, and a text
// refused at its shortest is an error naming the provider's reason.
func TestAdapterRefusals(t *testing.T) {
	for _, tc := range []struct {
		name     string
		p        *limitedProvider
		texts    []string
		want     error
		maxCalls int
		says     string
	}{
		{"server down", &limitedProvider{limit: 300, fail: providers.Unavailable(nil, "HTTP 503")}, []string{words(200), "b"}, providers.ErrUnavailable, 1, ""},
		{"short text refused", &limitedProvider{limit: 10}, []string{"a short note the model will not take"}, providers.ErrBadRequest, 1, "refuses a text of 36 characters"},
		{"short text refused in a batch", &limitedProvider{limit: 10}, []string{"ok", "a short note the model will not take", "ok"}, providers.ErrBadRequest, 4, "refuses a text of 36 characters"},
		{"every request refused", &limitedProvider{limit: 300, fail: providers.BadRequest(nil, "unknown parameter")}, []string{words(3000), "b", "c", "d"}, providers.ErrBadRequest, 2*maxSplitDepth + 4, "unknown parameter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Wrap(tc.p, 8, "fake/limited").Embed(context.Background(), tc.texts)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), "fake/limited") {
				t.Errorf("err %q does not say %q and the model", err, tc.says)
			}
			if n := len(tc.p.calls); n > tc.maxCalls {
				t.Errorf("%d calls to the provider, want at most %d", n, tc.maxCalls)
			}
		})
	}
}

func TestHalves(t *testing.T) {
	for _, tc := range []struct{ name, in, l, r string }{
		{"space in the middle", "abc def", "abc", "def"},
		{"nearest space", "abcdefgh ij", "abcdefgh", "ij"},
		{"newlines", "one two\n\nthree four", "one two", "three four"},
		{"no space", "abcdef", "abc", "def"},
		{"multibyte", "ééé", "é", "éé"},
		{"leading spaces only", "    abcdefgh", "    ab", "cdefgh"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if l, r := halves(tc.in); l != tc.l || r != tc.r {
				t.Errorf("halves(%q) = %q, %q; want %q, %q", tc.in, l, r, tc.l, tc.r)
			}
		})
	}
}
