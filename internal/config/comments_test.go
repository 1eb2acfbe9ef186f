package config

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// TestBlankCommentLines: blanking comment lines changes no value and no
// error position, for the shipped config.yaml, the test configurations and
// the cases where "#" is not a comment.
func TestBlankCommentLines(t *testing.T) {
	inputs := map[string]string{
		"block scalar":          "a: |\n  # kept\n  text\n# comment\nb: >-\n    # kept too\n\n    more\nc: 1\n",
		"block in a list":       "l:\n  - |\n    # text\n  # comment\n  - x\n",
		"multi-line quotes":     "a: \"one\n  # not a comment\n  two\"\nb: 'it''s\n  # text\n  here'\n",
		"apostrophe in a value": "a: it's\n# comment\nb: 2\n",
		"hash in a value":       "a: b#c\nb: \"x # y\"\n  # comment\nc: 'z' # trailing\n",
		"crlf":                  "# comment\r\na: 1\r\n  # indented comment\r\nb: 2\r\n",
		"error after comments":  "# one\n# two\na: [1, 2\nb: 3\n",
		"duplicate key":         "# c\na: 1\n# c\na: 2\n",
	}
	shipped, err := os.ReadFile("default.yaml")
	if err != nil {
		t.Fatal(err)
	}
	inputs["default.yaml"] = string(shipped)
	files, _ := filepath.Glob(filepath.Join("testdata", "*.yaml"))
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		inputs[f] = string(b)
	}
	for name, in := range inputs {
		t.Run(name, func(t *testing.T) {
			out := blankCommentLines([]byte(in))
			if strings.Count(string(out), "\n") != strings.Count(in, "\n") {
				t.Fatalf("lines changed:\n%s\n---\n%s", in, out)
			}
			var want, got any
			werr := yaml.Unmarshal([]byte(in), &want)
			gerr := yaml.Unmarshal(out, &got)
			// The same error at the same position (the source excerpt
			// goccy/go-yaml adds, which Load does not show, lacks the comments).
			if (werr == nil) != (gerr == nil) || (werr != nil && firstLine(werr) != firstLine(gerr)) {
				t.Fatalf("error %v, want %v", gerr, werr)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("value %#v, want %#v", got, want)
			}
		})
	}
	if got := string(blankCommentLines([]byte("# c\na: 1 # d\n  # e\nb:\n  # f\n  c: 2\n"))); got != "\na: 1 # d\n\nb:\n\n  c: 2\n" {
		t.Fatalf("comment lines not blanked: %q", got)
	}
}

func firstLine(err error) string {
	first, _, _ := strings.Cut(err.Error(), "\n")
	return first
}

// FuzzBlankCommentLines: a document that parses parses to the same value
// once its comment lines are blanked. (Some invalid documents stop failing:
// goccy/go-yaml rejects a few malformed ones, such as "0\n-\n#\n-", only
// because of where a comment is.)
func FuzzBlankCommentLines(f *testing.F) {
	f.Add("a: |\n  # kept\n# c\nb: 1\n")
	f.Add("a: x\n  # c\n  y\n")
	f.Add("l:\n- a\n# c\n- 'b\n  # t\n  c'\n")
	f.Fuzz(func(t *testing.T, in string) {
		var want, got any
		werr := yaml.Unmarshal([]byte(in), &want)
		gerr := yaml.Unmarshal(blankCommentLines([]byte(in)), &got)
		if werr != nil {
			return
		}
		if gerr != nil {
			t.Fatalf("%q: error %v once comments are blanked", in, gerr)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q: value %#v, want %#v", in, got, want)
		}
	})
}
