package dreaming

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/skills"
	"github.com/reverie-ai/reverie/internal/textclip"
)

// A model-written skill replaces the skills it came from only when it
// passes every check below; otherwise the originals stay and the report
// says why. The checks are derived from what a skill is (a one-line summary,
// then the procedure) and from the instruction the model was given, not
// from a list of known bad answers:
//
//   - it parses as a skill: valid text, not empty, within the size limit
//     (skills.CleanBody: the body limit and the summary-line limit), no
//     secret;
//   - its first line is the summary: for a condensation the original first
//     line, or a line keeping most (two thirds) of its content words (the
//     original line is then kept exactly); for a merge a line keeping most
//     content words of one of the merged skills' first lines;
//   - it is not an answer about the task instead of the skill: no
//     conversational opening ("OK:", "Sure", "Here is", …) or closing ("Let
//     me know…"), and no run of echoRun consecutive words copied from the
//     instruction that none of the original skills holds;
//   - it still has a procedure below the summary when the originals had
//     one;
//   - a condensation is shorter than the original; a merge is not longer
//     than the skills it merges together, and is one skill, not the skills
//     listed side by side under their "## name" headings.

// echoRun is the length of a word run copied from the instruction that
// makes a model answer an echo of the prompt.
const echoRun = 5

// skillCheck validates model-written skill text against one prompt.
type skillCheck struct {
	limit int             // the skill body limit in characters
	echo  map[string]bool // echoRun-word runs of the instruction
}

// newSkillCheck prepares the checks for instruction (the prompt with an
// empty {content}) and a body limit (0: skills.DefaultMaxBodyChars).
func newSkillCheck(instruction string, limit int) skillCheck {
	if limit <= 0 {
		limit = skills.DefaultMaxBodyChars
	}
	c := skillCheck{limit: limit, echo: map[string]bool{}}
	for _, g := range shingles(instruction) {
		c.echo[g] = true
	}
	return c
}

// condensed checks a condensation of orig (named name) and returns the
// text to store, or why it is refused.
func (c skillCheck) condensed(out string, name, orig string) (string, string) {
	body, why := c.common(out, []string{name}, []string{orig})
	if why != "" {
		return "", why
	}
	oldFirst, oldRest, _ := strings.Cut(orig, "\n")
	first, rest, _ := strings.Cut(body, "\n")
	if !keepsSummary(first, oldFirst) {
		return "", fmt.Sprintf("lost the first-line summary (it begins %q instead of %q)", textclip.Line(first, 80), textclip.Line(oldFirst, 80))
	}
	if strings.TrimSpace(oldRest) != "" && strings.TrimSpace(rest) == "" {
		return "", "has no procedure below the summary"
	}
	body = strings.TrimSpace(oldFirst) + "\n" + strings.TrimSpace(rest)
	if n, m := utf8.RuneCountInString(body), utf8.RuneCountInString(orig); n >= m {
		return "", fmt.Sprintf("is not shorter than the original (%d characters, was %d)", n, m)
	}
	return body, ""
}

// merged checks the merge of originals (named names) and returns the text
// to store, or why it is refused.
func (c skillCheck) merged(out string, names, originals []string) (string, string) {
	body, why := c.common(out, names, originals)
	if why != "" {
		return "", why
	}
	first, rest, _ := strings.Cut(body, "\n")
	for line := range strings.Lines(rest) {
		if h, ok := heading(line); ok && containsFold(names, h) {
			return "", fmt.Sprintf("lists the skills side by side (a %q heading) instead of merging them into one", strings.TrimSpace(line))
		}
	}
	kept, hadSteps, total := false, false, 0
	var firsts []string
	for _, o := range originals {
		f, r, _ := strings.Cut(o, "\n")
		kept = kept || keepsSummary(first, f)
		hadSteps = hadSteps || strings.TrimSpace(r) != ""
		firsts = append(firsts, textclip.Line(f, 60))
		total += utf8.RuneCountInString(o)
	}
	if !kept {
		return "", fmt.Sprintf("lost the first-line summary (it begins %q; the skills begin %q)", textclip.Line(first, 80), strings.Join(firsts, `", "`))
	}
	if hadSteps && strings.TrimSpace(rest) == "" {
		return "", "has no procedure below the summary"
	}
	if n := utf8.RuneCountInString(body); n > total {
		return "", fmt.Sprintf("is longer than the skills it merges (%d characters, they have %d together)", n, total)
	}
	return body, ""
}

// common applies the checks shared by merges and condensations: fences and
// an echoed "## name" title line removed, the text parsed as a skill, no
// conversational wrapping, no echo of the instruction.
func (c skillCheck) common(out string, names, originals []string) (string, string) {
	body := strings.TrimSpace(stripFences(out))
	// The skills were shown to the model under "## name" headings; a copy
	// of that heading as the first line is framing, not the summary.
	if first, rest, _ := strings.Cut(body, "\n"); rest != "" {
		if h, ok := heading(first); ok && containsFold(names, h) {
			body = strings.TrimSpace(rest)
		}
	}
	body, err := skills.CleanBody(body, c.limit)
	switch {
	case errors.Is(err, skills.ErrEmpty):
		return "", "was empty"
	case errors.Is(err, skills.ErrTooLong):
		_, detail, _ := strings.Cut(err.Error(), skills.ErrTooLong.Error()+": ")
		return "", "is too long for a skill: " + detail
	case errors.Is(err, skills.ErrSecret):
		return "", "looks like it holds a secret"
	case err != nil:
		return "", "did not parse as a skill: " + err.Error()
	}
	first, _, _ := strings.Cut(body, "\n")
	if skills.Summarize(first) == "" {
		return "", "has no first-line summary"
	}
	if p := chatter(first, openers, true); p != "" {
		return "", fmt.Sprintf("answers the instruction (%q) instead of starting with the skill's summary", p)
	}
	for line := range strings.Lines(body) {
		if p := chatter(line, closers, false); p != "" {
			return "", fmt.Sprintf("holds a remark to the reader (%q), not only the skill", p)
		}
	}
	if run := c.echoed(body, originals); run != "" {
		return "", fmt.Sprintf("repeats the instruction (%q) instead of giving the skill", run)
	}
	return body, ""
}

// echoed returns the first run of echoRun words of body that is copied from
// the instruction and that none of the originals holds, or "".
func (c skillCheck) echoed(body string, originals []string) string {
	var own map[string]bool
	for _, g := range shingles(body) {
		if !c.echo[g] {
			continue
		}
		if own == nil {
			own = map[string]bool{}
			for _, o := range originals {
				for _, og := range shingles(o) {
					own[og] = true
				}
			}
		}
		if !own[g] {
			return g
		}
	}
	return ""
}

// Conversational openings and closings of an answer, lower case. An
// interjection counts only when punctuation follows it ("Sure, here…",
// "OK:"); a phrase when anything but a letter follows it ("Here is…", not
// "Here isn't"). A line that merely mentions them elsewhere is fine.
var (
	interjections = []string{"ok", "okay", "sure", "certainly", "of course", "absolutely", "done", "great"}
	openers       = []string{"here is", "here's", "here are", "below is", "below are", "as requested", "i have", "i've",
		"i will", "i'll", "i merged", "i condensed", "the merged skill", "the condensed skill", "merged skill:",
		"condensed skill:", "skill:", "summary:"}
	closers = []string{"let me know", "hope this helps", "i hope this", "feel free to"}
)

// chatter returns the start of line when it opens with an interjection
// (when withInterjections) or a phrase of list, or "".
func chatter(line string, list []string, withInterjections bool) string {
	l := strings.ToLower(strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#*-_> ")))
	next := func(p string) (rune, bool) {
		rest, ok := strings.CutPrefix(l, p)
		if !ok {
			return 0, false
		}
		r, _ := utf8.DecodeRuneInString(rest)
		return r, true
	}
	if withInterjections {
		for _, p := range interjections {
			if r, ok := next(p); ok && (r == utf8.RuneError || unicode.IsPunct(r)) {
				return textclip.Line(line, 40)
			}
		}
	}
	for _, p := range list {
		if r, ok := next(p); ok && (r == utf8.RuneError || strings.HasSuffix(p, ":") || !unicode.IsLetter(r)) {
			return textclip.Line(line, 40)
		}
	}
	return ""
}

// heading returns the text of a Markdown heading line.
func heading(line string) (string, bool) {
	l := strings.TrimSpace(line)
	if !strings.HasPrefix(l, "#") {
		return "", false
	}
	return strings.TrimSpace(strings.TrimLeft(l, "#")), true
}

func containsFold(list []string, s string) bool {
	for _, x := range list {
		if strings.EqualFold(x, s) {
			return true
		}
	}
	return false
}

// stopWords do not count as words a summary keeps.
var stopWords = map[string]bool{"a": true, "an": true, "the": true, "to": true, "of": true, "and": true, "or": true,
	"for": true, "in": true, "on": true, "at": true, "by": true, "with": true, "how": true, "is": true, "it": true,
	"my": true, "your": true, "this": true, "that": true, "from": true, "into": true}

// keepsSummary reports whether line is the summary orig: the same words,
// or at least two thirds of orig's content words (a word also matches one
// it is a prefix of, from four letters: "deploy" and "deploying").
func keepsSummary(line, orig string) bool {
	want, have := contentWords(orig), words(line)
	if len(want) == 0 {
		return strings.Join(words(line), " ") == strings.Join(words(orig), " ") && len(have) > 0
	}
	n := 0
	for _, w := range want {
		for _, h := range have {
			if sameWord(w, h) {
				n++
				break
			}
		}
	}
	return 3*n >= 2*len(want)
}

func sameWord(a, b string) bool {
	if a == b {
		return true
	}
	if len(a) > len(b) {
		a, b = b, a
	}
	return utf8.RuneCountInString(a) >= 4 && strings.HasPrefix(b, a)
}

// words splits s into lower-case words of letters and digits.
func words(s string) []string {
	return strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

func contentWords(s string) []string {
	var out []string
	for _, w := range words(s) {
		if !stopWords[w] {
			out = append(out, w)
		}
	}
	return out
}

// shingles returns every run of echoRun consecutive words of s.
func shingles(s string) []string {
	w := words(s)
	var out []string
	for i := 0; i+echoRun <= len(w); i++ {
		out = append(out, strings.Join(w[i:i+echoRun], " "))
	}
	return out
}
