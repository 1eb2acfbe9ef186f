package telegram

import (
	"html"
	"regexp"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
)

// MaxMessageLen is Telegram's limit on a message's text, in UTF-16 code
// units after entity parsing.
const MaxMessageLen = 4096

// toHTML converts the markdown a model writes into Telegram's HTML subset
// (b, i, s, code, pre, a, blockquote), escaping everything else. The output
// is always well-formed: unmatched markers stay literal text.
func toHTML(md string) string {
	var b strings.Builder
	lines := strings.Split(strings.ReplaceAll(md, "\r\n", "\n"), "\n")
	var quote []string
	flushQuote := func() {
		if quote == nil {
			return
		}
		b.WriteString("<blockquote>")
		for i, q := range quote {
			if i > 0 {
				b.WriteByte('\n')
			}
			b.WriteString(inline(q))
		}
		b.WriteString("</blockquote>")
		quote = nil
	}
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		if q, ok := strings.CutPrefix(trimmed, ">"); ok {
			quote = append(quote, strings.TrimPrefix(q, " "))
			if i == len(lines)-1 {
				flushQuote()
			}
			continue
		}
		if quote != nil {
			flushQuote()
			b.WriteByte('\n')
		}
		if fence, ok := strings.CutPrefix(trimmed, "```"); ok {
			lang := strings.TrimSpace(fence)
			var code []string
			j := i + 1
			for ; j < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[j]), "```"); j++ {
				code = append(code, lines[j])
			}
			if validLang().MatchString(lang) {
				b.WriteString(`<pre><code class="language-` + lang + `">`)
			} else {
				b.WriteString("<pre><code>")
			}
			b.WriteString(html.EscapeString(strings.Join(code, "\n")))
			b.WriteString("</code></pre>")
			i = j // the closing fence (or the end)
			if i < len(lines)-1 {
				b.WriteByte('\n')
			}
			continue
		}
		switch {
		case heading().MatchString(line):
			b.WriteString("<b>" + inline(heading().ReplaceAllString(line, "")) + "</b>")
		case bullet().MatchString(line):
			m := bullet().FindStringSubmatch(line)
			b.WriteString(m[1] + "• " + inline(line[len(m[0]):]))
		case rule().MatchString(trimmed):
			b.WriteString("──────────")
		default:
			b.WriteString(inline(line))
		}
		if i < len(lines)-1 {
			b.WriteByte('\n')
		}
	}
	flushQuote()
	return b.String()
}

var (
	validLang = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_+#.-]{1,32}$`) })
	heading   = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s{0,3}#{1,6}\s+`) })
	bullet    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(\s*)[-*+]\s+`) })
	rule      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^(?:-{3,}|\*{3,}|_{3,})$`) })
)

// inline converts one line's inline markdown.
func inline(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\' && i+1 < len(s) && strings.IndexByte("\\`*_~[]()#>-!|", s[i+1]) >= 0:
			b.WriteString(html.EscapeString(s[i+1 : i+2]))
			i += 2
			continue
		case c == '`':
			if j := strings.IndexByte(s[i+1:], '`'); j > 0 {
				b.WriteString("<code>" + html.EscapeString(s[i+1:i+1+j]) + "</code>")
				i += j + 2
				continue
			}
		case c == '[':
			if text, href, n, ok := link(s[i:]); ok {
				b.WriteString(`<a href="` + html.EscapeString(href) + `">` + inline(text) + "</a>")
				i += n
				continue
			}
		case c == '*' || c == '_' || c == '~':
			if tag, inner, n, ok := emphasis(s, i); ok {
				b.WriteString("<" + tag + ">" + inline(inner) + "</" + tag + ">")
				i += n
				continue
			}
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b.WriteString("\uFFFD")
		} else {
			b.WriteString(html.EscapeString(s[i : i+size]))
		}
		i += size
	}
	return b.String()
}

// link parses "[text](url)" at the start of s; only http(s), mailto and tg
// links become links.
func link(s string) (text, href string, n int, ok bool) {
	close := strings.Index(s, "](")
	if close < 1 || strings.IndexByte(s[1:close], '[') >= 0 {
		return "", "", 0, false
	}
	end := strings.IndexByte(s[close+2:], ')')
	if end < 0 {
		return "", "", 0, false
	}
	text, href = s[1:close], strings.TrimSpace(s[close+2:close+2+end])
	lower := strings.ToLower(href)
	if !(strings.HasPrefix(lower, "https://") || strings.HasPrefix(lower, "http://") ||
		strings.HasPrefix(lower, "mailto:") || strings.HasPrefix(lower, "tg://")) || strings.ContainsAny(href, " \n") {
		return "", "", 0, false
	}
	return text, href, close + 3 + end, true
}

// emphasis parses **bold**, __bold__, *italic*, _italic_ or ~~strike~~
// starting at s[i].
func emphasis(s string, i int) (tag, inner string, n int, ok bool) {
	rest := s[i:]
	var marker string
	switch {
	case strings.HasPrefix(rest, "**"):
		marker, tag = "**", "b"
	case strings.HasPrefix(rest, "__"):
		marker, tag = "__", "b"
	case strings.HasPrefix(rest, "~~"):
		marker, tag = "~~", "s"
	case rest[0] == '*':
		marker, tag = "*", "i"
	case rest[0] == '_':
		marker, tag = "_", "i"
	default:
		return "", "", 0, false
	}
	// An underscore inside a word (snake_case) is not emphasis.
	if marker[0] == '_' && i > 0 && isWordByte(s[i-1]) {
		return "", "", 0, false
	}
	body := rest[len(marker):]
	if body == "" || body[0] == ' ' {
		return "", "", 0, false
	}
	for from := 0; ; {
		j := strings.Index(body[from:], marker)
		if j < 0 {
			return "", "", 0, false
		}
		j += from
		after := len(marker) + j + len(marker)
		closesWord := marker[0] != '_' || after >= len(rest) || !isWordByte(rest[after])
		if j > 0 && body[j-1] != ' ' && closesWord && !(len(marker) == 1 && strings.HasPrefix(body[j:], marker+marker)) {
			return tag, body[:j], after, true
		}
		from = j + len(marker)
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80
}

// plainFallback is the text sent when Telegram cannot parse the HTML: the
// markdown as it is, with control characters other than line breaks and
// tabs removed.
func plainFallback(md string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) && r != '\n' && r != '\t' {
			return -1
		}
		return r
	}, md)
}
