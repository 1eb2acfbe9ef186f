package frontmatter

import (
	"errors"
	"testing"
)

func TestSplit(t *testing.T) {
	cases := []struct {
		name, in, meta, body string
		err                  error
	}{
		{"front matter and body", "---\nname: x\n---\nBody\n", "name: x\n", "Body\n", nil},
		{"crlf and bom", "\uFEFF---\r\nname: x\r\n---\r\nBody\r\n", "name: x\n", "Body\n", nil},
		{"no front matter", "# Title\nBody", "", "# Title\nBody", nil},
		{"empty front matter", "---\n---\nBody", "", "Body", nil},
		{"closing line at the end", "---\nname: x\n---", "name: x\n", "", nil},
		{"unclosed", "---\nname: x\nBody", "", "---\nname: x\nBody", ErrUnclosed},
		{"a rule later is not front matter", "Body\n---\nmore", "", "Body\n---\nmore", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			meta, body, err := Split([]byte(c.in))
			if !errors.Is(err, c.err) || string(meta) != c.meta || body != c.body {
				t.Errorf("Split = %q, %q, %v; want %q, %q, %v", meta, body, err, c.meta, c.body, c.err)
			}
		})
	}
}

func TestParse(t *testing.T) {
	var v struct {
		Name  string   `yaml:"name"`
		Tools []string `yaml:"tools"`
	}
	body, err := Parse([]byte("---\nname: pdf\ntools: [a, b]\nlicense: other key\n---\nSteps"), &v)
	if err != nil || body != "Steps" || v.Name != "pdf" || len(v.Tools) != 2 {
		t.Fatalf("Parse = %q, %+v, %v", body, v, err)
	}
	if _, err := Parse([]byte("---\nname: [unclosed\n---\nx"), &v); err == nil {
		t.Error("bad YAML was accepted")
	}
}
