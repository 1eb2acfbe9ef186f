package cli

import (
	"context"
	"strings"
	"testing"
)

// BenchmarkQueue is the cost the channel adds per streamed delta (push by
// the router, read by the frontend).
func BenchmarkQueue(b *testing.B) {
	q := NewQueue()
	ctx := context.Background()
	ev := Event{Kind: EventDelta, Thread: "cli:bench", Text: "token "}
	b.ReportAllocs()
	for b.Loop() {
		q.Push(ev)
		if _, err := q.Next(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMarkdownRender renders a 2 KB reply (headings, a list, code, a
// table) at width 100, as the chat does when a reply completes.
func BenchmarkMarkdownRender(b *testing.B) {
	var sb strings.Builder
	for sb.Len() < 2048 {
		sb.WriteString("## Plan\n\nHere is **what** to do, with `code` and a [link](https://example.org).\n\n" +
			"- first item\n- second item\n\n```go\nfmt.Println(\"hi\")\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n")
	}
	text := sb.String()
	for _, style := range []string{"dark", "notty"} {
		b.Run(style, func(b *testing.B) {
			md := markdown{style: style}
			md.render(text, 100) // build the renderer once, as the chat does
			b.ReportAllocs()
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				md.render(text, 100)
			}
		})
	}
}
