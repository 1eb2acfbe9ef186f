package embed

import (
	"slices"
	"strings"
)

// This file implements the Porter2 ("Snowball English") stemmer as
// described at snowballstem.org, for lower-case ASCII words.

// Stem reduces an English word (lower-case) to its Porter2 stem, so that
// inflected and derived forms share one term: "paintings", "painted",
// "painting" → "paint"; "volunteers", "volunteering" → "volunte". Words of
// one or two letters and words holding anything but the letters a–z (digits,
// accents, other scripts) are returned unchanged.
func Stem(w string) string {
	if len(w) <= 2 {
		return w
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return w
		}
	}
	if len(w) <= 6 { // the longest exception
		if s, ok := stemExceptions[w]; ok {
			return s
		}
	}
	var buf [48]byte
	b := append(buf[:0], w...)
	if b[0] == 'y' {
		b[0] = 'Y'
	}
	for i := 1; i < len(b); i++ {
		if b[i] == 'y' && isVowel(b[i-1]) {
			b[i] = 'Y'
		}
	}
	r1, r2 := stemRegions(b)
	b = step1a(b)
	if len(b) <= 7 && stemInvariant1a[string(b)] {
		return w
	}
	b = step1b(b, r1)
	b = step1c(b)
	b = step2(b, r1)
	b = step3(b, r1, r2)
	b = step4(b, r2)
	b = step5(b, r1, r2)
	return lowerY(b, w)
}

// stemExceptions are whole words with an irregular stem (or none).
var stemExceptions = map[string]string{
	"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie",
	"idly": "idl", "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl",
	"sky": "sky", "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias", "andes": "andes",
}

// stemInvariant1a are left alone once step 1a has run.
var stemInvariant1a = map[string]bool{
	"inning": true, "outing": true, "canning": true, "herring": true,
	"earring": true, "proceed": true, "exceed": true, "succeed": true,
}

func isVowel(c byte) bool {
	switch c {
	case 'a', 'e', 'i', 'o', 'u', 'y':
		return true
	}
	return false
}

// lowerY turns the marked Y back to y and returns the stem, w itself when
// nothing changed (no allocation).
func lowerY(b []byte, w string) string {
	for i, c := range b {
		if c == 'Y' {
			b[i] = 'y'
		}
	}
	if string(b) == w {
		return w
	}
	if len(b) <= len(w) && string(b) == w[:len(b)] {
		return w[:len(b)]
	}
	return string(b)
}

func hasSuffix(b []byte, s string) bool {
	return len(b) >= len(s) && string(b[len(b)-len(s):]) == s
}

// stemRegions returns the starts of R1 (after the first non-vowel that
// follows a vowel) and R2 (the same rule applied within R1).
func stemRegions(b []byte) (int, int) {
	after := func(from int) int {
		for i := from + 1; i < len(b); i++ {
			if !isVowel(b[i]) && isVowel(b[i-1]) {
				return i + 1
			}
		}
		return len(b)
	}
	r1 := -1
	for _, p := range [...]string{"gener", "commun", "arsen"} {
		if len(b) >= len(p) && string(b[:len(p)]) == p {
			r1 = len(p)
		}
	}
	if r1 < 0 {
		r1 = after(0)
	}
	r2 := len(b)
	if r1 < len(b) {
		r2 = after(r1)
	}
	return r1, r2
}

// endsShortSyllable reports whether b ends in a short syllable: a vowel
// followed by a non-vowel other than w, x or Y and preceded by a non-vowel,
// or a vowel followed by a non-vowel at the start of the word.
func endsShortSyllable(b []byte) bool {
	n := len(b)
	switch {
	case n == 2:
		return isVowel(b[0]) && !isVowel(b[1])
	case n >= 3:
		c := b[n-1]
		return !isVowel(b[n-3]) && isVowel(b[n-2]) && !isVowel(c) && c != 'w' && c != 'x' && c != 'Y'
	}
	return false
}

func isShort(b []byte, r1 int) bool { return r1 >= len(b) && endsShortSyllable(b) }

// ruleTable holds suffix rules grouped by their last letter, longest
// first, so the longest matching suffix is the first match in one group.
type ruleTable [26][]stemRule

func newRuleTable(rules []stemRule) *ruleTable {
	var t ruleTable
	for _, r := range rules {
		c := r.suf[len(r.suf)-1] - 'a'
		t[c] = append(t[c], r)
	}
	for i := range t {
		slices.SortStableFunc(t[i], func(a, b stemRule) int { return len(b.suf) - len(a.suf) })
	}
	return &t
}

// longest returns the rule with the longest suffix b ends with.
func (t *ruleTable) longest(b []byte) (stemRule, bool) {
	if len(b) == 0 {
		return stemRule{}, false
	}
	c := b[len(b)-1]
	if c < 'a' || c > 'z' {
		return stemRule{}, false
	}
	for _, r := range t[c-'a'] {
		if hasSuffix(b, r.suf) {
			return r, true
		}
	}
	return stemRule{}, false
}

func step1a(b []byte) []byte {
	n := len(b)
	switch {
	case hasSuffix(b, "sses"):
		return b[:n-2]
	case hasSuffix(b, "ied"), hasSuffix(b, "ies"):
		if n > 4 {
			return b[:n-2]
		}
		return b[:n-1]
	case hasSuffix(b, "us"), hasSuffix(b, "ss"):
		return b
	case hasSuffix(b, "s"):
		for i := 0; i < n-2; i++ {
			if isVowel(b[i]) {
				return b[:n-1]
			}
		}
	}
	return b
}

var step1bRules = newRuleTable([]stemRule{{"eedly", "ee"}, {"ingly", ""}, {"edly", ""}, {"eed", "ee"}, {"ing", ""}, {"ed", ""}})

func step1b(b []byte, r1 int) []byte {
	r, ok := step1bRules.longest(b)
	if !ok {
		return b
	}
	suf := r.suf
	n := len(b)
	if suf == "eed" || suf == "eedly" {
		if n-len(suf) >= r1 {
			return append(b[:n-len(suf)], "ee"...)
		}
		return b
	}
	stem := b[:n-len(suf)]
	vowel := false
	for _, c := range stem {
		if isVowel(c) {
			vowel = true
			break
		}
	}
	if !vowel {
		return b
	}
	switch {
	case hasSuffix(stem, "at"), hasSuffix(stem, "bl"), hasSuffix(stem, "iz"):
		return append(stem, 'e')
	case endsDouble(stem):
		return stem[:len(stem)-1]
	case isShort(stem, r1):
		return append(stem, 'e')
	}
	return stem
}

// endsDouble reports whether b ends in one of the doubles bb, dd, ff, gg,
// mm, nn, pp, rr, tt.
func endsDouble(b []byte) bool {
	n := len(b)
	if n < 2 || b[n-1] != b[n-2] {
		return false
	}
	switch b[n-1] {
	case 'b', 'd', 'f', 'g', 'm', 'n', 'p', 'r', 't':
		return true
	}
	return false
}

func step1c(b []byte) []byte {
	n := len(b)
	if n > 2 && (b[n-1] == 'y' || b[n-1] == 'Y') && !isVowel(b[n-2]) {
		b[n-1] = 'i'
	}
	return b
}

type stemRule struct{ suf, rep string }

var step2Rules = newRuleTable([]stemRule{
	{"tional", "tion"}, {"enci", "ence"}, {"anci", "ance"}, {"abli", "able"}, {"entli", "ent"},
	{"izer", "ize"}, {"ization", "ize"}, {"ational", "ate"}, {"ation", "ate"}, {"ator", "ate"},
	{"alism", "al"}, {"aliti", "al"}, {"alli", "al"}, {"fulness", "ful"}, {"ousli", "ous"},
	{"ousness", "ous"}, {"iveness", "ive"}, {"iviti", "ive"}, {"biliti", "ble"}, {"bli", "ble"},
	{"ogi", "og"}, {"fulli", "ful"}, {"lessli", "less"}, {"li", ""},
})

var step3Rules = newRuleTable([]stemRule{
	{"tional", "tion"}, {"ational", "ate"}, {"alize", "al"}, {"icate", "ic"}, {"iciti", "ic"},
	{"ical", "ic"}, {"ful", ""}, {"ness", ""}, {"ative", ""},
})

var step4Rules = func() *ruleTable {
	var rules []stemRule
	for _, suf := range strings.Fields("al ance ence er ic able ible ant ement ment ent ism ate iti ous ive ize ion") {
		rules = append(rules, stemRule{suf, ""})
	}
	return newRuleTable(rules)
}()

func step2(b []byte, r1 int) []byte {
	r, ok := step2Rules.longest(b)
	if !ok {
		return b
	}
	stem := b[:len(b)-len(r.suf)]
	if len(stem) < r1 {
		return b
	}
	switch r.suf {
	case "ogi":
		if !hasSuffix(stem, "l") {
			return b
		}
	case "li":
		if len(stem) == 0 {
			return b
		}
		switch stem[len(stem)-1] {
		case 'c', 'd', 'e', 'g', 'h', 'k', 'm', 'n', 'r', 't':
		default:
			return b
		}
	}
	return append(stem, r.rep...)
}

func step3(b []byte, r1, r2 int) []byte {
	r, ok := step3Rules.longest(b)
	if !ok {
		return b
	}
	stem := b[:len(b)-len(r.suf)]
	if len(stem) < r1 || (r.suf == "ative" && len(stem) < r2) {
		return b
	}
	return append(stem, r.rep...)
}

func step4(b []byte, r2 int) []byte {
	r, ok := step4Rules.longest(b)
	if !ok {
		return b
	}
	suf := r.suf
	stem := b[:len(b)-len(suf)]
	if len(stem) < r2 {
		return b
	}
	if suf == "ion" && !hasSuffix(stem, "s") && !hasSuffix(stem, "t") {
		return b
	}
	return stem
}

func step5(b []byte, r1, r2 int) []byte {
	n := len(b)
	switch {
	case hasSuffix(b, "e"):
		if n-1 >= r2 || (n-1 >= r1 && !endsShortSyllable(b[:n-1])) {
			return b[:n-1]
		}
	case hasSuffix(b, "l"):
		if n-1 >= r2 && hasSuffix(b[:n-1], "l") {
			return b[:n-1]
		}
	}
	return b
}
