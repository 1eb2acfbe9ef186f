package prompt

import (
	"errors"
	"strings"
	"testing"
)

func TestApplyConditionals(t *testing.T) {
	tests := []struct {
		name  string
		base  string
		tools []string
		want  string
	}{
		{
			name:  "present tool keeps block",
			base:  "A\n<!-- if tool:shell -->\nuse the shell\n<!-- end -->\nB\n",
			tools: []string{"shell"},
			want:  "A\nuse the shell\nB\n",
		},
		{
			name: "absent tool drops block",
			base: "A\n<!-- if tool:shell -->\nuse the shell\n<!-- end -->\nB\n",
			want: "A\nB\n",
		},
		{
			name: "negation kept when tool absent",
			base: "A\n<!-- if !tool:shell -->\nno shell here\n<!-- end -->\nB",
			want: "A\nno shell here\nB",
		},
		{
			name:  "negation dropped when tool present",
			base:  "A\n<!-- if !tool:shell -->\nno shell here\n<!-- end -->\nB",
			tools: []string{"shell"},
			want:  "A\nB",
		},
		{
			name:  "inline markers",
			base:  "Tools: read_file<!-- if tool:shell -->, shell<!-- end -->.",
			tools: nil,
			want:  "Tools: read_file.",
		},
		{
			name:  "inline markers kept",
			base:  "Tools: read_file<!-- if tool:shell -->, shell<!-- end -->.",
			tools: []string{"shell"},
			want:  "Tools: read_file, shell.",
		},
		{
			name: "blank lines around a dropped block collapse",
			base: "Para one.\n\n<!-- if tool:x -->\n## X\ntext\n<!-- end -->\n\nPara two.\n",
			want: "Para one.\n\nPara two.\n",
		},
		{
			name:  "compact spacing and dotted names",
			base:  "<!--if tool:mcp.memory_query-->M<!--end-->|<!--  if  !tool:mcp.memory_query  -->N<!--  end  -->",
			tools: []string{"mcp.memory_query"},
			want:  "M|",
		},
		{
			name: "ordinary comments untouched",
			base: "<!-- a note for editors -->\n<!-- end of notes -->\n<!-- iffy -->\n<!-- unclosed\nText",
			want: "<!-- a note for editors -->\n<!-- end of notes -->\n<!-- iffy -->\n<!-- unclosed\nText",
		},
		{
			name: "no markers",
			base: "plain text",
			want: "plain text",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ApplyConditionals(tc.base, tc.tools)
			if err != nil {
				t.Fatalf("ApplyConditionals: %v", err)
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestApplyConditionalsErrors(t *testing.T) {
	tests := []struct {
		name     string
		base     string
		wantLine int
		wantText string
	}{
		{"if without end", "A\n<!-- if tool:shell -->\nx\n", 2, "if without"},
		{"end without if", "A\nB\n<!-- end -->\n", 3, "end without"},
		{"nested", "<!-- if tool:a -->\n<!-- if tool:b -->\nx\n<!-- end -->\n<!-- end -->", 2, "nested"},
		{"malformed if", "x\n<!-- if shell -->\ny\n<!-- end -->", 2, "malformed"},
		{"endif instead of end", "<!-- if tool:a -->\ny\n<!-- endif -->", 3, "malformed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ApplyConditionals(tc.base, []string{"a", "b", "shell"})
			if !errors.Is(err, ErrMarker) {
				t.Fatalf("err = %v, want ErrMarker", err)
			}
			var me *MarkerError
			if !errors.As(err, &me) || me.Line != tc.wantLine || !strings.Contains(me.Reason, tc.wantText) {
				t.Errorf("err = %#v, want line %d with %q", me, tc.wantLine, tc.wantText)
			}
			// Assembly never loses text: markers go, everything else stays.
			got := Assemble(Input{Mode: ModeBaseOnly, Base: tc.base})
			if strings.Contains(got, "<!-- if tool") || strings.Contains(got, "<!-- end -->") {
				t.Errorf("lenient assembly kept markers:\n%s", got)
			}
			for _, word := range []string{"x", "y"} {
				if strings.Contains(tc.base, "\n"+word+"\n") && !strings.Contains(got, word) {
					t.Errorf("lenient assembly lost %q:\n%s", word, got)
				}
			}
		})
	}
}
