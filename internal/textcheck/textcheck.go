// Package textcheck holds what every text the assistant keeps for itself
// (memories, pulse items, skills) is checked against: the sentinel errors
// for empty, too long and credential-like text, and LooksSecret, the
// credential detector. It needs only the standard library, so a package
// that checks its texts does not pull in the memory store.
package textcheck

import (
	"errors"
	"math"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The reasons a text is refused. Each owner wraps them with what the text
// is ("memory", "pulse item", "skill") and the detail; test with errors.Is.
var (
	// ErrEmpty: the text is empty or only white space.
	ErrEmpty = errors.New("text is empty")
	// ErrTooLong: the text is over its owner's limit.
	ErrTooLong = errors.New("text is too long")
	// ErrSecret: the text looks like it contains a credential (API key,
	// token, private key, password); such text is never stored.
	ErrSecret = errors.New("text looks like it contains a secret")
)

type secretPattern struct {
	name string
	// hint is true when the text may match re: a quick test of the
	// literals every match holds, so that most texts are never run through
	// the expression (LooksSecret is called for every stored message).
	hint func(text string) bool
	re   *regexp.Regexp
}

// holds returns a hint: whether text contains one of the literals.
func holds(literals ...string) func(string) bool {
	return func(text string) bool {
		for _, l := range literals {
			if strings.Contains(text, l) {
				return true
			}
		}
		return false
	}
}

// holdsFold is holds for a case-insensitive expression: ASCII text is
// lower-cased and searched for the (lower-case) literals; other text may
// always match (case folding matches a Kelvin sign as a k and a long s as
// an s).
func holdsFold(literals ...string) func(string) bool {
	return func(text string) bool {
		for i := 0; i < len(text); i++ {
			if text[i] >= utf8.RuneSelf {
				return true
			}
		}
		return holds(literals...)(strings.ToLower(text))
	}
}

// secretPatterns are compiled when first used (not in every process's
// start-up).
var secretPatterns = sync.OnceValue(func() []secretPattern {
	return []secretPattern{
		{"private key", holds("PRIVATE KEY-----"), regexp.MustCompile(`-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----`)},
		{"OpenAI-style key", holds("sk-"), regexp.MustCompile(`\bsk-(?:proj-|ant-)?[A-Za-z0-9_\-]{16,}`)},
		{"AWS access key", holds("AKIA", "ASIA"), regexp.MustCompile(`\b(?:AKIA|ASIA)[0-9A-Z]{16}\b`)},
		{"GitHub token", holds("gh", "github_pat_"), regexp.MustCompile(`\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}`)},
		{"Slack token", holds("xox"), regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
		{"Google API key", holds("AIza"), regexp.MustCompile(`\bAIza[0-9A-Za-z_\-]{35}\b`)},
		{"JWT", holds("eyJ"), regexp.MustCompile(`\beyJ[A-Za-z0-9_\-]{10,}\.eyJ[A-Za-z0-9_\-]{10,}\.[A-Za-z0-9_\-]{10,}`)},
		{"password", holdsFold("pass", "pwd", "key", "token"), regexp.MustCompile(`(?i)\b(?:password|passwd|pwd|passphrase|api[_ -]?key|secret[_ -]?key|access[_ -]?token|auth[_ -]?token)\s*(?:[:=]|\bis\b)\s*\S+`)},
		{"credentials in URL", holds("://"), regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://[^/\s:@]+:[^/\s@]+@`)},
	}
})

// LooksSecret returns a short description of the first credential-like
// pattern found in text, or "" when none is found. Recognised: private key
// blocks, sk-… (OpenAI/Anthropic), AKIA…/ASIA… (AWS), ghp_…/github_pat_…
// (GitHub), xox…- (Slack), AIza… (Google), JWTs, "password: …"-style
// assignments, credentials in URLs, and long high-entropy tokens (≥ 32
// characters mixing letters and digits with ≥ 4 bits of entropy per
// character).
func LooksSecret(text string) string {
	for _, p := range secretPatterns() {
		if p.hint(text) && p.re.MatchString(text) {
			return p.name
		}
	}
	for _, tok := range longTokens(text) {
		if highEntropy(tok) {
			return "high-entropy token"
		}
	}
	return ""
}

// longTokens returns the runs of at least 32 token bytes
// ([A-Za-z0-9+/=_-]) of text, the matches of `[A-Za-z0-9+/=_\-]{32,}`,
// without running the expression over every text.
func longTokens(text string) []string {
	var out []string
	start := -1
	for i := 0; i <= len(text); i++ {
		if i < len(text) && isTokenByte(text[i]) {
			if start < 0 {
				start = i
			}
			continue
		}
		if start >= 0 && i-start >= 32 {
			out = append(out, text[start:i])
		}
		start = -1
	}
	return out
}

func isTokenByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '+' || c == '/' || c == '=' || c == '_' || c == '-'
}

func highEntropy(tok string) bool {
	var letters, digits bool
	counts := map[rune]int{}
	for _, r := range tok {
		counts[r]++
		if unicode.IsLetter(r) {
			letters = true
		} else if unicode.IsDigit(r) {
			digits = true
		}
	}
	if !letters || !digits {
		return false
	}
	var h float64
	n := float64(len(tok))
	for _, c := range counts {
		p := float64(c) / n
		h -= p * math.Log2(p)
	}
	return h >= 4.0
}
