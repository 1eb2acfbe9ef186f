package subagent

import (
	"errors"
	"slices"
	"testing"
)

func TestParse(t *testing.T) {
	cases := []struct {
		name, file, in string
		want           Spec
		err            error
	}{
		{"claude code format", "reviewer.md", "---\nname: code-reviewer\ndescription: Reviews code.\ntools: Read, Bash, WebFetch\nmodel: sonnet\n---\nYou review code.\n",
			Spec{Name: "code-reviewer", Description: "Reviews code.", Prompt: "You review code.", Role: "sonnet", Tools: []string{"read_file", "execute_shell", "fetch_url"}}, nil},
		{"list of tools and categories", "x.md", "---\ndescription: |\n  Finds\n  things.\ntools: [search_web, \"@files\"]\nmodel: inherit\n---\nFind.",
			Spec{Name: "x", Description: "Finds things.", Prompt: "Find.", Role: "main", Tools: []string{"search_web", "@files"}}, nil},
		{"no tools: every tool, default role", "helper.md", "---\ndescription: Helps.\n---\nHelp.",
			Spec{Name: "helper", Description: "Helps.", Prompt: "Help.", Role: DefaultRole}, nil},
		{"empty tools: none", "quiet.md", "---\ndescription: Thinks.\ntools: \"\"\n---\nThink.",
			Spec{Name: "quiet", Description: "Thinks.", Prompt: "Think.", Role: DefaultRole, Tools: []string{}}, nil},
		{"no description", "x.md", "---\nname: x\n---\nBody", Spec{}, ErrInvalid},
		{"no prompt", "x.md", "---\ndescription: D.\n---\n \n", Spec{}, ErrInvalid},
		{"bad name", "x.md", "---\nname: Code Reviewer\ndescription: D.\n---\nB", Spec{}, ErrInvalid},
		{"an agent among the tools", "x.md", "---\ndescription: D.\ntools: agent_researcher\n---\nB", Spec{}, ErrInvalid},
		{"unclosed front matter", "x.md", "---\ndescription: D.\nB", Spec{}, ErrInvalid},
		{"bad yaml", "x.md", "---\ndescription: [D.\n---\nB", Spec{}, ErrInvalid},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Parse(c.file, []byte(c.in))
			if !errors.Is(err, c.err) {
				t.Fatalf("err = %v, want %v", err, c.err)
			}
			if err != nil {
				return
			}
			if got.Name != c.want.Name || got.Description != c.want.Description || got.Prompt != c.want.Prompt ||
				got.Role != c.want.Role || (got.Tools == nil) != (c.want.Tools == nil) || !slices.Equal(got.Tools, c.want.Tools) {
				t.Errorf("Parse = %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestBuiltin(t *testing.T) {
	specs := Builtin()
	var names []string
	for _, s := range specs {
		names = append(names, s.Name)
		if s.Source != "built-in" || s.Description == "" || s.Prompt == "" || s.Tools == nil {
			t.Errorf("built-in %+v", s)
		}
	}
	if !slices.Equal(names, []string{"builder", "researcher"}) {
		t.Errorf("built-in agents %v", names)
	}
}
