package voice

import (
	"regexp"
	"strings"
	"sync"
	"unicode"
)

// Long replies are spoken in parts, not summarised: the parts say exactly
// what the text reply says (a summary would be a second, different answer
// in the conversation, cost a model call on every long reply and could
// drop what the user asked for), each part stays under the speech API's
// input limit, and a listener can stop after any part. Parts are cut at
// paragraph, then sentence, then word ends. What does not fit MaxParts is
// left to the text reply, and the last part says so.

// RestInText ends the last spoken part of a reply too long to speak whole.
const RestInText = "The rest is in the written reply."

var (
	fencedCode = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)```.*?(```|$)") })
	mdLink     = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`) })
	bareURL    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`https?://\S+`) })
	mdMarks    = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile("(?m)^[ \\t]{0,3}(#{1,6}\\s+|[-*+]\\s+|>\\s?|\\d+[.)]\\s+)|[*`~|]+|\\b_+|_+\\b")
	})
	blankRun = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`\n{3,}`) })
)

// Speakable turns a Markdown reply into what is read aloud: code blocks
// become a mention of the written reply, links their text, bare URLs
// "a link", and Markdown marks go.
func Speakable(md string) string {
	s := fencedCode().ReplaceAllString(md, "\n(code in the written reply)\n")
	s = mdLink().ReplaceAllString(s, "$1")
	s = bareURL().ReplaceAllString(s, "a link")
	s = mdMarks().ReplaceAllString(s, "")
	s = blankRun().ReplaceAllString(s, "\n\n")
	return strings.TrimSpace(s)
}

// Parts cuts text into pieces of at most limit characters (runes), at
// paragraph, sentence or word ends, keeping at most max pieces; when text
// did not fit, the last piece ends with RestInText.
func Parts(text string, limit, max int) []string {
	text = strings.TrimSpace(text)
	if text == "" || limit <= 0 || max <= 0 {
		return nil
	}
	var out []string
	rest := []rune(text)
	for len(rest) > 0 && len(out) < max {
		if len(rest) <= limit {
			out = append(out, strings.TrimSpace(string(rest)))
			rest = nil
			break
		}
		cut := cutAt(rest, limit)
		out = append(out, strings.TrimSpace(string(rest[:cut])))
		rest = []rune(strings.TrimLeftFunc(string(rest[cut:]), unicode.IsSpace))
	}
	if len(rest) > 0 {
		last := out[len(out)-1]
		room := limit - len([]rune(RestInText)) - 1
		if r := []rune(last); len(r) > room {
			last = strings.TrimSpace(string(r[:cutAt(r, room)]))
		}
		out[len(out)-1] = last + " " + RestInText
	}
	return out
}

// cutAt is where to end a piece of at most limit runes of r: after the last
// paragraph break in its second half, else the last sentence end, else the
// last space, else at limit.
func cutAt(r []rune, limit int) int {
	if limit >= len(r) {
		return len(r)
	}
	if limit < 1 {
		return 1
	}
	half := limit / 2
	for i := limit; i > half; i-- {
		if r[i-1] == '\n' && i >= 2 && r[i-2] == '\n' {
			return i
		}
	}
	for i := limit; i > half; i-- {
		if (r[i-1] == '.' || r[i-1] == '!' || r[i-1] == '?' || r[i-1] == '\n') && (i == len(r) || unicode.IsSpace(r[i])) {
			return i
		}
	}
	for i := limit; i > 0; i-- {
		if unicode.IsSpace(r[i-1]) {
			return i
		}
	}
	return limit
}
