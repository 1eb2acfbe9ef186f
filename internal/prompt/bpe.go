package prompt

import (
	"fmt"
	"math"
	"sync"
	"unicode"
	"unicode/utf8"
)

// bpeTable is one BPE vocabulary (token bytes → rank), loaded once per
// process from the tables embedded in bpe_tables.go, and counted with
// a hand-written pre-tokeniser equivalent to tiktoken's regular
// expressions. tiktoken-go's own encoder runs those expressions through a
// backtracking regexp engine at about 6 MB/s; this does the same split
// without one, and the tests check that both give the same count.
type bpeTable struct {
	name  string
	o200k bool
	once  sync.Once
	ranks map[string]int
	err   error
}

func (t *bpeTable) load() (map[string]int, error) {
	t.once.Do(func() {
		t.ranks, t.err = loadBPE(t.name)
		if t.err == nil && len(t.ranks) == 0 {
			t.err = fmt.Errorf("empty table")
		}
		if t.err != nil {
			t.err = fmt.Errorf("load %s token table: %w", t.name, t.err)
		}
	})
	return t.ranks, t.err
}

// count returns the number of tokens of s (special-token text counts as
// ordinary text). Invalid UTF-8 is treated as tiktoken-go treats it: each
// bad byte becomes U+FFFD.
func (t *bpeTable) count(ranks map[string]int, s string) int {
	if !utf8.ValidString(s) {
		s = string([]rune(s))
	}
	var buf [64][2]int
	n := 0
	for i := 0; i < len(s); {
		var end int
		if t.o200k {
			end = pieceO200k(s, i)
		} else {
			end = pieceCl100k(s, i)
		}
		piece := s[i:end]
		if _, ok := ranks[piece]; ok {
			n++
		} else {
			n += mergeCount(piece, ranks, buf[:0])
		}
		i = end
	}
	return n
}

// mergeCount runs tiktoken's byte-pair merge on piece and returns how many
// tokens remain.
func mergeCount(piece string, ranks map[string]int, parts [][2]int) int {
	if len(piece) <= 1 {
		return len(piece)
	}
	for i := 0; i <= len(piece); i++ {
		parts = append(parts, [2]int{i, math.MaxInt})
	}
	rank := func(i, skip int) int {
		if i+skip+2 < len(parts) {
			if r, ok := ranks[piece[parts[i][0]:parts[i+skip+2][0]]]; ok {
				return r
			}
		}
		return math.MaxInt
	}
	for i := 0; i < len(parts)-2; i++ {
		parts[i][1] = rank(i, 0)
	}
	for len(parts) > 1 {
		minRank, minIdx := math.MaxInt, -1
		for i := 0; i < len(parts)-1; i++ {
			if parts[i][1] < minRank {
				minRank, minIdx = parts[i][1], i
			}
		}
		if minIdx < 0 {
			break
		}
		i := minIdx
		parts[i][1] = rank(i, 1)
		if i > 0 {
			parts[i-1][1] = rank(i-1, 1)
		}
		parts = append(parts[:i+1], parts[i+2:]...)
	}
	return len(parts) - 1
}

func runeAt(s string, i int) (rune, int) {
	if i >= len(s) {
		return -1, 0
	}
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1
	}
	return utf8.DecodeRuneInString(s[i:])
}

func isLetter(r rune) bool {
	if r < utf8.RuneSelf {
		return r|0x20 >= 'a' && r|0x20 <= 'z'
	}
	return unicode.IsLetter(r)
}

func isNumber(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= '0' && r <= '9'
	}
	return unicode.IsNumber(r)
}

func isSpace(r rune) bool {
	if r < utf8.RuneSelf {
		return r == ' ' || r >= '\t' && r <= '\r'
	}
	return r >= 0 && unicode.IsSpace(r)
}

func isNewline(r rune) bool { return r == '\n' || r == '\r' }

// isOther is [^\s\p{L}\p{N}].
func isOther(r rune) bool { return r >= 0 && !isSpace(r) && !isLetter(r) && !isNumber(r) }

// isPrefix is [^\r\n\p{L}\p{N}].
func isPrefix(r rune) bool { return r >= 0 && !isNewline(r) && !isLetter(r) && !isNumber(r) }

// contraction matches (?i:'s|'t|'re|'ve|'m|'ll|'d) at i and returns its end.
func contraction(s string, i int) (int, bool) {
	if i >= len(s) || s[i] != '\'' || i+1 >= len(s) {
		return i, false
	}
	switch s[i+1] | 0x20 {
	case 's', 't', 'm', 'd':
		return i + 2, true
	}
	if i+2 < len(s) {
		a, b := s[i+1]|0x20, s[i+2]|0x20
		if (a == 'r' || a == 'v') && b == 'e' || a == 'l' && b == 'l' {
			return i + 3, true
		}
	}
	return i, false
}

// whitespace matches \s*[\r\n]+ | \s+(?!\S) | \s+ at i (s[i] is a space).
func whitespace(s string, i int) int {
	end, lastNL := i, -1
	runes := 0
	lastStart := i
	for end < len(s) {
		r, n := runeAt(s, end)
		if !isSpace(r) {
			break
		}
		if isNewline(r) {
			lastNL = end
		}
		lastStart = end
		end += n
		runes++
	}
	switch {
	case lastNL >= 0:
		return lastNL + 1
	case end == len(s) || runes == 1:
		return end
	default:
		return lastStart // leave the last space to the next word
	}
}

// numbers matches \p{N}{1,3} at i.
func numbers(s string, i int) int {
	for k := 0; k < 3; k++ {
		r, n := runeAt(s, i)
		if !isNumber(r) {
			break
		}
		i += n
	}
	return i
}

// punctuation matches ` ?[^\s\p{L}\p{N}]+` then the given trailing class;
// it returns i when there is no match.
func punctuation(s string, i int, trail func(rune) bool) int {
	j := i
	if j < len(s) && s[j] == ' ' {
		j++
	}
	start := j
	for {
		r, n := runeAt(s, j)
		if !isOther(r) {
			break
		}
		j += n
	}
	if j == start {
		return i
	}
	for {
		r, n := runeAt(s, j)
		if r < 0 || !trail(r) {
			return j
		}
		j += n
	}
}

// pieceCl100k returns the end of the pre-token starting at i, per
// (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
func pieceCl100k(s string, i int) int {
	if end, ok := contraction(s, i); ok {
		return end
	}
	r0, n0 := runeAt(s, i)
	if isPrefix(r0) {
		if r1, _ := runeAt(s, i+n0); isLetter(r1) {
			return letters(s, i+n0)
		}
	} else if isLetter(r0) {
		return letters(s, i)
	}
	if isNumber(r0) {
		return numbers(s, i)
	}
	if end := punctuation(s, i, isNewline); end > i {
		return end
	}
	if isSpace(r0) {
		return whitespace(s, i)
	}
	return i + n0 // unreachable: every rune is a letter, number, space or other
}

func letters(s string, i int) int {
	for {
		r, n := runeAt(s, i)
		if !isLetter(r) {
			return i
		}
		i += n
	}
}

// Letter classes of o200k: upper = [\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}],
// lower = [\p{Ll}\p{Lm}\p{Lo}\p{M}].
func isUpperish(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'A' && r <= 'Z'
	}
	return r >= 0 && (unicode.In(r, unicode.Lu, unicode.Lt, unicode.Lm, unicode.Lo, unicode.M))
}

func isLowerish(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z'
	}
	return r >= 0 && (unicode.In(r, unicode.Ll, unicode.Lm, unicode.Lo, unicode.M))
}

// wordLower matches upper* lower+ contraction? at i (with the backtracking
// of the regular expression); it returns i when there is no match.
func wordLower(s string, i int) int {
	j, lastBoth := i, -1
	for {
		r, n := runeAt(s, j)
		if !isUpperish(r) {
			break
		}
		if isLowerish(r) {
			lastBoth = j
		}
		j += n
	}
	k := j
	if r, _ := runeAt(s, j); !isLowerish(r) {
		if lastBoth < 0 {
			return i
		}
		k = lastBoth
	}
	for {
		r, n := runeAt(s, k)
		if !isLowerish(r) {
			break
		}
		k += n
	}
	if end, ok := contraction(s, k); ok {
		return end
	}
	return k
}

// wordUpper matches upper+ lower* contraction? at i; i when no match.
func wordUpper(s string, i int) int {
	j := i
	for {
		r, n := runeAt(s, j)
		if !isUpperish(r) {
			break
		}
		j += n
	}
	if j == i {
		return i
	}
	for {
		r, n := runeAt(s, j)
		if !isLowerish(r) {
			break
		}
		j += n
	}
	if end, ok := contraction(s, j); ok {
		return end
	}
	return j
}

// pieceO200k returns the end of the pre-token starting at i, per
// [^\r\n\p{L}\p{N}]?upper*lower+(?i:'s|…)?|[^\r\n\p{L}\p{N}]?upper+lower*(?i:'s|…)?|
// \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
func pieceO200k(s string, i int) int {
	r0, n0 := runeAt(s, i)
	prefix := isPrefix(r0)
	for _, word := range [...]func(string, int) int{wordLower, wordUpper} {
		if prefix {
			if end := word(s, i+n0); end > i+n0 {
				return end
			}
		}
		if end := word(s, i); end > i {
			return end
		}
	}
	if isNumber(r0) {
		return numbers(s, i)
	}
	if end := punctuation(s, i, func(r rune) bool { return isNewline(r) || r == '/' }); end > i {
		return end
	}
	if isSpace(r0) {
		return whitespace(s, i)
	}
	return i + n0
}
