package prompt

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
)

func TestEncodingFor(t *testing.T) {
	tests := []struct{ model, want string }{
		{"gpt-4o", EncodingO200k},
		{"gpt-4o-mini-2024-07-18", EncodingO200k},
		{"openai/gpt-4.1-mini", EncodingO200k},
		{"gpt-5", EncodingO200k},
		{"o3-mini", EncodingO200k},
		{"o1", EncodingO200k},
		{"gpt-oss-20b", EncodingO200k},
		{"GPT-4-turbo", EncodingCl100k},
		{"gpt-3.5-turbo", EncodingCl100k},
		{"text-embedding-3-small", EncodingCl100k},
		{"claude-sonnet-4-5", EncodingEstimate},
		{"llama3.1:8b", EncodingEstimate},
		{"qwen2.5-coder", EncodingEstimate},
		{"", EncodingEstimate},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			if got := EncodingFor(tc.model); got != tc.want {
				t.Errorf("EncodingFor(%q) = %q, want %q", tc.model, got, tc.want)
			}
		})
	}
}

func TestCounterKnownStrings(t *testing.T) {
	cl, err := NewEncodingCounter(EncodingCl100k)
	if err != nil {
		t.Fatal(err)
	}
	o200, err := NewEncodingCounter(EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		counter Counter
		text    string
		want    int
	}{
		{"cl100k hello world", cl, "hello world", 2},
		{"cl100k empty", cl, "", 0},
		{"cl100k special token text is ordinary", cl, "<|endoftext|>", 7},
		{"o200k hello world", o200, "hello world", 2},
		{"gpt-4 model", NewCounter("gpt-4"), "hello world", 2},
		{"gpt-4o model", NewCounter("gpt-4o"), "hello world", 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.counter.Count(tc.text); got != tc.want {
				t.Errorf("Count(%q) = %d, want %d", tc.text, got, tc.want)
			}
		})
	}
	if _, err := NewEncodingCounter("p50k_base"); err == nil {
		t.Error("unknown encoding accepted")
	}
}

// The estimate must stay near cl100k_base on every kind of text it sees.
func TestEstimatorCalibration(t *testing.T) {
	cl, err := NewEncodingCounter(EncodingCl100k)
	if err != nil {
		t.Fatal(err)
	}
	est := Estimator{Factor: 1}
	for name, text := range calibrationSamples {
		t.Run(name, func(t *testing.T) {
			exact, guess := cl.Count(text), est.Count(text)
			ratio := float64(guess) / float64(exact)
			t.Logf("cl100k=%d estimate=%d ratio=%.2f", exact, guess, ratio)
			if math.Abs(ratio-1) > 0.2 {
				t.Errorf("estimate %d is off cl100k %d by %.0f%%", guess, exact, 100*(ratio-1))
			}
		})
	}
	// The factor scales, and non-OpenAI models use it.
	text := calibrationSamples["english"]
	if got, base := NewCounter("claude-sonnet-4-5").Count(text), est.Count(text); got <= base {
		t.Errorf("non-OpenAI estimate %d should exceed the unscaled %d", got, base)
	}
	if got := est.Count(""); got != 0 {
		t.Errorf("empty estimate = %d", got)
	}
	if got := est.Count("a"); got != 1 {
		t.Errorf("one letter estimate = %d", got)
	}
}

func TestCounterConcurrent(t *testing.T) {
	c := NewCounter("gpt-4o-mini")
	var wg sync.WaitGroup
	results := make([]int, 8)
	for i := range results {
		wg.Go(func() { results[i] = c.Count("The quick brown fox jumps over the lazy dog.") })
	}
	wg.Wait()
	for i, r := range results {
		if r != results[0] || r == 0 {
			t.Fatalf("result %d = %d, first = %d", i, r, results[0])
		}
	}
}

func BenchmarkCount(b *testing.B) {
	text := strings.Repeat(calibrationSamples["english"]+"\n", 10) // ~4.5k chars
	for _, bc := range []struct {
		name string
		c    Counter
	}{
		{"cl100k", NewCounter("gpt-4")},
		{"o200k", NewCounter("gpt-4o")},
		{"estimate", NewCounter("claude-sonnet-4-5")},
	} {
		b.Run(bc.name, func(b *testing.B) {
			bc.c.Count("warm up")
			b.SetBytes(int64(len(text)))
			b.ReportAllocs()
			for b.Loop() {
				_ = bc.c.Count(text)
			}
		})
	}
}

// NewEncodingCounter returns an exact counter for a named encoding
// (EncodingO200k or EncodingCl100k), or an error for another name.
func NewEncodingCounter(encoding string) (Counter, error) {
	t, ok := tables[encoding]
	if !ok {
		return nil, fmt.Errorf("unknown token encoding %q", encoding)
	}
	return &bpeCounter{table: t}, nil
}
