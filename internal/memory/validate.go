package memory

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/textcheck"
)

// normalise returns the canonical text used to detect duplicates: trimmed,
// inner white space collapsed, lower-cased, trailing punctuation removed.
func normalise(text string) string {
	s := strings.ToLower(strings.Join(strings.Fields(text), " "))
	return strings.TrimRight(s, ".!;, ")
}

// clean trims and validates memory text, returning ErrEmpty, ErrTooLong or
// ErrSecret.
func clean(text string) (string, error) {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	t := strings.TrimSpace(text)
	if t == "" {
		return "", fmt.Errorf("memory %w", ErrEmpty)
	}
	if n := utf8.RuneCountInString(t); n > MaxTextLen {
		return "", fmt.Errorf("memory %w: %d characters, at most %d", ErrTooLong, n, MaxTextLen)
	}
	if what := textcheck.LooksSecret(t); what != "" {
		return "", fmt.Errorf("memory %w (%s)", ErrSecret, what)
	}
	return t, nil
}

// LooksSecret is textcheck.LooksSecret, kept for the callers that still
// name it here.
//
// Deprecated: use textcheck.LooksSecret.
func LooksSecret(text string) string { return textcheck.LooksSecret(text) }
