package matrix

import (
	"bytes"
	"regexp"
	"strings"
	"sync"

	"github.com/yuin/goldmark"
	"github.com/yuin/goldmark/ast"
	gmext "github.com/yuin/goldmark/extension"
	"github.com/yuin/goldmark/renderer"
	gmhtml "github.com/yuin/goldmark/renderer/html"
	"github.com/yuin/goldmark/util"
	"golang.org/x/net/html"
	"maunium.net/go/mautrix/event"
)

// markdown renders the model's markdown to HTML safely: goldmark without
// its unsafe mode escapes raw HTML and drops javascript:, vbscript:, file:
// and data: links. It is built on first use: a process that never sends to
// Matrix does not pay for it.
var markdown = sync.OnceValue(func() goldmark.Markdown {
	return goldmark.New(
		goldmark.WithExtensions(gmext.Strikethrough, gmext.Table, gmext.Linkify),
		goldmark.WithRendererOptions(gmhtml.WithHardWraps(),
			renderer.WithNodeRenderers(util.Prioritized(escapeRawHTML{}, 100))),
	)
})

// escapeRawHTML shows HTML written in the markdown as text (goldmark would
// drop it: "<ok>" must not vanish from a reply).
type escapeRawHTML struct{}

func (escapeRawHTML) RegisterFuncs(r renderer.NodeRendererFuncRegisterer) {
	r.Register(ast.KindRawHTML, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if entering {
			segs := n.(*ast.RawHTML).Segments
			for i := 0; i < segs.Len(); i++ {
				seg := segs.At(i)
				_, _ = w.WriteString(html.EscapeString(string(seg.Value(src))))
			}
		}
		return ast.WalkSkipChildren, nil
	})
	r.Register(ast.KindHTMLBlock, func(w util.BufWriter, src []byte, n ast.Node, entering bool) (ast.WalkStatus, error) {
		if !entering {
			return ast.WalkContinue, nil
		}
		b := n.(*ast.HTMLBlock)
		_, _ = w.WriteString("<p>")
		lines := b.Lines()
		for i := 0; i < lines.Len(); i++ {
			seg := lines.At(i)
			_, _ = w.WriteString(strings.ReplaceAll(html.EscapeString(strings.TrimRight(string(seg.Value(src)), "\n")), "\n", "<br>"))
			if i < lines.Len()-1 {
				_, _ = w.WriteString("<br>\n")
			}
		}
		if b.HasClosure() {
			_, _ = w.WriteString("<br>\n" + html.EscapeString(strings.TrimRight(string(b.ClosureLine.Value(src)), "\n")))
		}
		_, _ = w.WriteString("</p>\n")
		return ast.WalkSkipChildren, nil
	})
}

var singleParagraph = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^<p>([^<]*(?:<(?:strong|em|code|del|a)[ >][^<]*</(?:strong|em|code|del|a)>[^<]*|<br>\n?[^<]*)*)</p>$`)
})

// render turns the model's markdown into a message: sanitised HTML in
// formatted_body (omitted when there is no formatting) and the plain text
// in body.
func render(md string) event.MessageEventContent {
	c := event.MessageEventContent{MsgType: event.MsgText, Body: md, Mentions: &event.Mentions{}}
	var buf bytes.Buffer
	if err := markdown().Convert([]byte(md), &buf); err != nil {
		return c
	}
	out := strings.TrimSpace(buf.String())
	if m := singleParagraph().FindStringSubmatch(out); m != nil {
		out = m[1]
	}
	text := htmlText(out)
	if html.EscapeString(text) == out || text == md && !strings.ContainsAny(out, "<&") {
		return c // nothing to format
	}
	c.Format, c.FormattedBody, c.Body = event.FormatHTML, out, text
	return c
}

// htmlText is the plain text of a rendered message: block elements end
// lines, list items get bullets, links show their address when it differs
// from their text.
func htmlText(s string) string {
	doc, err := html.Parse(strings.NewReader("<body>" + s + "</body>"))
	if err != nil {
		return s
	}
	var b strings.Builder
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.TextNode {
			if strings.TrimSpace(n.Data) == "" && n.Parent != nil {
				switch n.Parent.Data {
				case "ul", "ol", "table", "thead", "tbody", "tr", "blockquote", "body":
					return // layout whitespace between blocks
				}
			}
			b.WriteString(n.Data)
			return
		}
		if n.Type == html.ElementNode {
			switch n.Data {
			case "br":
				b.WriteString("\n")
			case "li":
				b.WriteString("• ")
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
		if n.Type != html.ElementNode {
			return
		}
		switch n.Data {
		case "a":
			for _, a := range n.Attr {
				if a.Key == "href" && a.Val != "" && !strings.Contains(b.String(), a.Val) {
					b.WriteString(" (" + a.Val + ")")
				}
			}
		case "p", "li", "pre", "blockquote", "h1", "h2", "h3", "h4", "h5", "h6", "tr", "ul", "ol", "table":
			if !strings.HasSuffix(b.String(), "\n") {
				b.WriteString("\n")
			}
		case "td", "th":
			b.WriteString("\t")
		}
	}
	walk(doc)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	out := lines[:0]
	for i, l := range lines {
		if strings.TrimSpace(l) == "" && i > 0 && strings.TrimSpace(lines[i-1]) == "" {
			continue
		}
		out = append(out, strings.TrimRight(l, " \t"))
	}
	return strings.Join(out, "\n")
}
