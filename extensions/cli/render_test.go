package cli

import (
	"strings"
	"testing"
)

func TestMarkdownPlain(t *testing.T) {
	md := markdown{style: "notty"}
	cases := []struct {
		name, in, want string
	}{
		{"heading and paragraph", "# Title\n\nSome text\nwrapped together.", "Title\n\nSome text wrapped together."},
		{"emphasis and code", "a **bold** and *it* and `x := 1`", "a bold and it and x := 1"},
		{"link", "see [the docs](https://example.org/d)", "see the docs (https://example.org/d)"},
		{"bare link text", "[https://a.b](https://a.b)", "https://a.b"},
		{"bullets", "- one\n- two\n  - nested", "  • one\n  • two\n    • nested"},
		{"numbers", "1. first\n2. second", "  1. first\n  2. second"},
		{"code block kept", "```go\nif x {\n\treturn\n}\n```\nafter", "  go\n  if x {\n  \treturn\n  }\nafter"},
		{"quote", "> careful", "│ careful"},
		{"rule", "---", strings.Repeat("─", 40)},
		{"snake_case stays", "use my_var_name here", "use my_var_name here"},
		{"escape stripped", "\x1b[31mred\x1b[0m", "[31mred[0m"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := md.render(c.in, 80); got != c.want {
				t.Errorf("got  %q\nwant %q", got, c.want)
			}
		})
	}
	long := md.render(strings.Repeat("word ", 40), 30)
	for _, l := range strings.Split(long, "\n") {
		if len(l) > 30 {
			t.Errorf("line longer than 30: %q", l)
		}
	}
}

func TestMarkdownColor(t *testing.T) {
	md := markdown{style: "dark"}
	out := md.render("# Hi\n\n**b** `c`", 40)
	for _, want := range []string{"\x1b[1;36mHi\x1b[0m", "\x1b[1mb\x1b[0m", "\x1b[38;5;215mc\x1b[0m"} {
		if !strings.Contains(out, want) {
			t.Errorf("%q lacks %q", out, want)
		}
	}
}
