package eval

import (
	"encoding/json"
	"strings"
	"unicode"

	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/internal/memory"
)

// answerNorm is s as the answer measure compares texts: lower-case, each
// run of characters other than letters and digits one space, with a space
// at either end, so that one normalised text holds another only as whole
// words ("5" is not found in "15").
func answerNorm(s string) string {
	var b strings.Builder
	b.WriteByte(' ')
	space := true
	for _, r := range s {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			b.WriteRune(unicode.ToLower(r))
			space = false
			continue
		}
		if !space {
			b.WriteByte(' ')
			space = true
		}
	}
	if !space {
		b.WriteByte(' ')
	}
	return b.String()
}

// answerOf returns a dataset's answer (a JSON string or number) as text,
// "" when it is neither or empty.
func answerOf(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return strings.TrimSpace(s)
	}
	var n json.Number
	if json.Unmarshal(raw, &n) == nil {
		return n.String()
	}
	return ""
}

// checkableAnswer returns the normalised answer when it occurs, normalised,
// in one of the evidence texts (only then can the injected text be checked
// for it), and "" otherwise.
func checkableAnswer(answer string, evidence []string) string {
	a := answerNorm(answer)
	if strings.TrimSpace(a) == "" {
		return ""
	}
	for _, e := range evidence {
		if strings.Contains(answerNorm(e), a) {
			return a
		}
	}
	return ""
}

// shownHolds reports whether the memory lines a turn's recall put into the
// prompt hold the normalised answer a: one line's text, or one stretch of
// an excerpt between its gaps, holds it as whole words.
func shownHolds(rec memory.Recalled, a string) bool {
	p, ok := evidence.Decode(rec.Text)
	if !ok {
		return false
	}
	for _, it := range p.Items {
		parts := []string{it.Text}
		if strings.Contains(it.Label, memory.ExcerptLabel) {
			parts = strings.Split(it.Text, memory.ExcerptGap)
		}
		for _, part := range parts {
			if strings.Contains(answerNorm(part), a) {
				return true
			}
		}
	}
	return false
}
