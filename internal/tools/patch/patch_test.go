package patch

import (
	"errors"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		patch   string
		want    []Op // compared on Kind, Path, MoveTo, Content and hunk count
		wantErr string
	}{
		{
			name: "all operations",
			patch: `*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Delete File: old.txt
*** Update File: main.go
*** Move to: cmd/main.go
@@ func main() {
-	println("a")
+	println("b")
*** End Patch`,
			want: []Op{
				{Kind: Add, Path: "docs/new.md", Content: "# Title\n\nbody\n"},
				{Kind: Delete, Path: "old.txt"},
				{Kind: Update, Path: "main.go", MoveTo: "cmd/main.go", Hunks: make([]Hunk, 1)},
			},
		},
		{
			name:  "surrounding whitespace and CRLF tolerated",
			patch: "\n  *** Begin Patch\r\n*** Delete File: a\r\n*** End Patch\r\n\n",
			want:  []Op{{Kind: Delete, Path: "a"}},
		},
		{
			name: "first hunk without @@ and blank separator lines",
			patch: `*** Begin Patch
*** Update File: a.txt
 one
-two
+deux

*** Delete File: b.txt

*** End Patch`,
			want: []Op{{Kind: Update, Path: "a.txt", Hunks: make([]Hunk, 1)}, {Kind: Delete, Path: "b.txt"}},
		},
		{name: "missing begin", patch: "*** Update File: a\n-x\n*** End Patch", wantErr: "must start with"},
		{name: "missing end", patch: "*** Begin Patch\n*** Delete File: a", wantErr: "must end with"},
		{name: "empty patch", patch: "*** Begin Patch\n*** End Patch", wantErr: "no file operations"},
		{name: "unknown header", patch: "*** Begin Patch\n*** Rename File: a\n*** End Patch", wantErr: "patch line 2: expected"},
		{name: "add line without plus", patch: "*** Begin Patch\n*** Add File: a\nhello\n*** End Patch", wantErr: "patch line 3: every line of an added file"},
		{name: "bad hunk marker", patch: "*** Begin Patch\n*** Update File: a\n@@\n*x\n*** End Patch", wantErr: "patch line 4: hunk lines must start"},
		{name: "hunk changing nothing", patch: "*** Begin Patch\n*** Update File: a\n@@\n same\n*** End Patch", wantErr: "changes nothing"},
		{name: "update without hunks", patch: "*** Begin Patch\n*** Update File: a\n*** End Patch", wantErr: "has no hunks"},
		{name: "missing path", patch: "*** Begin Patch\n*** Delete File: \n*** End Patch", wantErr: "patch line 2: missing file path"},
		{name: "same file twice", patch: "*** Begin Patch\n*** Delete File: a\n*** Add File: a\n+x\n*** End Patch", wantErr: "already changed"},
		{name: "delete with content", patch: "*** Begin Patch\n*** Delete File: a\n-x\n*** End Patch", wantErr: "takes no content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse(tc.patch)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("Parse error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if len(got.Ops) != len(tc.want) {
				t.Fatalf("got %d ops; want %d: %+v", len(got.Ops), len(tc.want), got.Ops)
			}
			for i, w := range tc.want {
				g := got.Ops[i]
				if g.Kind != w.Kind || g.Path != w.Path || g.MoveTo != w.MoveTo || g.Content != w.Content || len(g.Hunks) != len(w.Hunks) {
					t.Errorf("op %d = %+v; want %+v", i, g, w)
				}
			}
		})
	}
}

func TestApply(t *testing.T) {
	const source = "package main\n\nfunc a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	tests := []struct {
		name     string
		original string
		hunks    string // the body of one Update File operation
		want     string
		wantErr  error
	}{
		{
			name:     "anchor picks the second of two identical bodies",
			original: source,
			hunks:    "@@ func b() {\n-\treturn 1\n+\treturn 2\n",
			want:     "package main\n\nfunc a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 2\n}\n",
		},
		{
			name:     "without anchor the first match is changed",
			original: source,
			hunks:    "@@\n-\treturn 1\n+\treturn 0\n",
			want:     "package main\n\nfunc a() {\n\treturn 0\n}\n\nfunc b() {\n\treturn 1\n}\n",
		},
		{
			name:     "two hunks in order",
			original: "a\nb\nc\nd\ne\n",
			hunks:    "@@\n a\n-b\n+B\n@@\n d\n-e\n+E\n",
			want:     "a\nB\nc\nd\nE\n",
		},
		{
			name:     "pure insertion after anchor",
			original: "import (\n\t\"fmt\"\n)\n",
			hunks:    "@@ import (\n+\t\"errors\"\n",
			want:     "import (\n\t\"errors\"\n\t\"fmt\"\n)\n",
		},
		{
			name:     "pure insertion at end",
			original: "one\n",
			hunks:    "@@\n+two\n",
			want:     "one\ntwo\n",
		},
		{
			name:     "end of file anchors to the last occurrence",
			original: "x\nend\nx\nend\n",
			hunks:    "@@\n x\n-end\n+END\n*** End of File\n",
			want:     "x\nend\nx\nEND\n",
		},
		{
			name:     "whitespace-insensitive fallback",
			original: "  indented   \nnext\n",
			hunks:    "@@\n-indented\n+fixed\n",
			want:     "fixed\nnext\n",
		},
		{
			name:     "CRLF preserved and missing final newline added",
			original: "one\r\ntwo",
			hunks:    "@@\n-two\n+2\n",
			want:     "one\r\n2\r\n",
		},
		{
			name:     "delete everything",
			original: "only\n",
			hunks:    "@@\n-only\n",
			want:     "",
		},
		{
			name:     "context not found",
			original: source,
			hunks:    "@@\n-\treturn 42\n+\treturn 0\n",
			wantErr:  ErrNoMatch,
		},
		{
			name:     "anchor not found",
			original: source,
			hunks:    "@@ func c() {\n-\treturn 1\n+\treturn 3\n",
			wantErr:  ErrNoMatch,
		},
		{
			name:     "hunks out of order",
			original: "a\nb\nc\n",
			hunks:    "@@\n-c\n+C\n@@\n-a\n+A\n",
			wantErr:  ErrNoMatch,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, err := Parse("*** Begin Patch\n*** Update File: f\n" + tc.hunks + "*** End Patch")
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			got, err := Apply(tc.original, p.Ops[0].Hunks)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("Apply error = %v; want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Apply: %v", err)
			}
			if got != tc.want {
				t.Fatalf("Apply =\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

func TestApplyErrorShowsExpectedLines(t *testing.T) {
	p, err := Parse("*** Begin Patch\n*** Update File: f\n@@\n keep me\n-missing line\n+x\n*** End Patch")
	if err != nil {
		t.Fatal(err)
	}
	_, err = Apply("something else\n", p.Ops[0].Hunks)
	if err == nil {
		t.Fatal("want an error")
	}
	for _, want := range []string{"hunk 1", "patch line 3", "| keep me", "| missing line"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
}
