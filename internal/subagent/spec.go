package subagent

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/reverie-ai/reverie/internal/frontmatter"
	"github.com/reverie-ai/reverie/internal/modelrouter"
)

// ToolPrefix starts the name of every agent's tool: agent_NAME.
const ToolPrefix = "agent_"

// DefaultRole is the model role of an agent whose definition names none.
const DefaultRole = modelrouter.RoleSubSessions

// Spec is one agent.
type Spec struct {
	// Name is lower-case letters, digits, '-' and '_' (at most 58, so
	// that agent_NAME is a valid tool name).
	Name string
	// Description is what the main agent reads to choose the agent.
	Description string
	// Prompt is the agent's system prompt.
	Prompt string
	// Role is the model role the agent runs on.
	Role string
	// Tools are the agent's allowlist (tool names and "@category"); nil
	// means every tool but the agents.
	Tools []string
	// Source says where the agent comes from: "built-in", the
	// data-dir-relative path of its file, or "extension:ID".
	Source string
}

// ToolName is the name of s's tool.
func (s Spec) ToolName() string { return ToolPrefix + s.Name }

// ErrInvalid marks a definition that cannot be an agent.
var ErrInvalid = errors.New("invalid agent definition")

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,57}$`) })

// CheckName reports whether name can name an agent.
func CheckName(name string) error {
	if !nameRe().MatchString(name) {
		return fmt.Errorf("%w: name %q: use 1-58 lower-case letters, digits, '-' and '_', starting with a letter or digit", ErrInvalid, name)
	}
	return nil
}

// claudeTools are Claude Code's tool names, read as Reverie's.
var claudeTools = map[string]string{
	"Read": "read_file", "Write": "write_file", "Edit": "apply_patch", "MultiEdit": "apply_patch",
	"Bash": "execute_shell", "WebFetch": "fetch_url", "WebSearch": "search_web",
}

// toolList decodes tools: a YAML list, or a comma-separated string
// (Claude Code's form).
type toolList []string

func (l *toolList) UnmarshalYAML(unmarshal func(any) error) error {
	var list []string
	if err := unmarshal(&list); err == nil {
		*l = list
		return nil
	}
	var s string
	if err := unmarshal(&s); err != nil {
		return errors.New("tools: want a list of tool names or a comma-separated string")
	}
	*l = []string{}
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			*l = append(*l, f)
		}
	}
	return nil
}

type frontMatter struct {
	Name        string    `yaml:"name"`
	Description string    `yaml:"description"`
	Tools       *toolList `yaml:"tools"`
	Model       string    `yaml:"model"`
}

// Parse reads an agent definition: front matter (name, description, tools,
// model) and the prompt as the body. fileName (without ".md") names the
// agent when the front matter does not.
func Parse(fileName string, data []byte) (Spec, error) {
	var fm frontMatter
	body, err := frontmatter.Parse(data, &fm)
	if err != nil {
		return Spec{}, fmt.Errorf("%w: %w", ErrInvalid, err)
	}
	s := Spec{
		Name:        strings.TrimSpace(fm.Name),
		Description: strings.Join(strings.Fields(fm.Description), " "),
		Prompt:      strings.TrimSpace(body),
		Role:        strings.TrimSpace(fm.Model),
	}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(fileName, ".md")
	}
	if err := CheckName(s.Name); err != nil {
		return Spec{}, err
	}
	switch s.Role {
	case "":
		s.Role = DefaultRole
	case "inherit":
		s.Role = modelrouter.RoleMain
	}
	if fm.Tools != nil {
		s.Tools = []string{}
		for _, t := range *fm.Tools {
			if alias, ok := claudeTools[t]; ok {
				t = alias
			}
			if !strings.HasPrefix(t, "@") && strings.HasPrefix(t, ToolPrefix) {
				return Spec{}, fmt.Errorf("%w: tools: %q is an agent; agents cannot call agents", ErrInvalid, t)
			}
			s.Tools = append(s.Tools, t)
		}
	}
	switch {
	case s.Description == "":
		return Spec{}, fmt.Errorf("%w: %s: description is empty (the main agent chooses agents by it)", ErrInvalid, s.Name)
	case s.Prompt == "":
		return Spec{}, fmt.Errorf("%w: %s: the prompt (the text after the front matter) is empty", ErrInvalid, s.Name)
	}
	return s, nil
}
