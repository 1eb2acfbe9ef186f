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
		{"heading and paragraph", "# Title\n\nSome text\non two lines.", "Title\n\nSome text\non two lines."},
		{"command answer keeps its lines", "Commands:\n/help — list the commands\n/new — start over", "Commands:\n/help — list the commands\n/new — start over"},
		{"indentation kept", "Models:\n  main: openai/gpt\n  cheap: ollama/qwen", "Models:\n  main: openai/gpt\n  cheap: ollama/qwen"},
		{"table", "| Name | When |\n|---|:--:|\n| tea | 09:00 |\n| **call Anna** | daily |", "Name      │ When\n──────────┼──────\ntea       │ 09:00\ncall Anna │ daily"},
		{"ragged table", "|a|b|\n|-|-|\n|1|\n|2|3|4|", "a │ b │\n──┼───┼──\n1 │   │\n2 │ 3 │ 4"},
		{"pipe line without a rule is text", "| not a table", "| not a table"},
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
	wide := md.render("| Task | Next run |\n|---|---|\n| water the plants on the balcony | tomorrow 09:00 |", 30)
	if want := "Task: water the plants on the\nbalcony\nNext run: tomorrow 09:00"; wide != want {
		t.Errorf("a table wider than the screen:\n%s\nwant\n%s", wide, want)
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
