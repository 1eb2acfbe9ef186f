package skills

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/reverie-ai/reverie/tool"
)

// Tool names (BASE_PROMPT.txt has a section conditional on add_skill).
const (
	AddToolName  = "add_skill"
	ReadToolName = "read_skill"
)

// AddArgs are add_skill's arguments: name, and either body or summary and
// content.
type AddArgs struct {
	Name    string `json:"name" jsonschema:"short lower-case name, e.g. deploy-blog (letters, digits, - and _); an existing skill of that name is replaced"`
	Body    string `json:"body,omitempty" jsonschema:"the whole skill in Markdown: first line a one-line summary, then the steps"`
	Summary string `json:"summary,omitempty" jsonschema:"instead of body: the one-line summary shown in the table of contents"`
	Content string `json:"content,omitempty" jsonschema:"instead of body: the steps, below the summary"`
}

// AddResult is add_skill's result.
type AddResult struct {
	OK       bool   `json:"ok"`
	Name     string `json:"name"`
	Summary  string `json:"summary"`
	Chars    int    `json:"chars"`
	Replaced bool   `json:"replaced"`
	Note     string `json:"note"`
}

// AddTool is the add_skill tool: create or replace a skill.
func AddTool(s *Store) tool.Tool {
	return tool.New(AddToolName,
		"Save a reusable procedure you have worked out as a skill (skills/NAME.md), so you can follow it next time. "+
			"Give either body (Markdown whose first line is a one-line summary, then short, specific steps) or summary and content. "+
			"Saving under an existing name replaces that skill: to improve a skill, read it first and save the whole new version. "+
			fmt.Sprintf("At most %d characters.", s.MaxBodyChars()),
		func(ctx context.Context, a AddArgs) (any, error) {
			body := a.Body
			switch {
			case a.Body != "" && (a.Summary != "" || a.Content != ""):
				return nil, errors.New("give either body, or summary and content, not both")
			case a.Body == "" && a.Summary == "" && a.Content == "":
				return nil, errors.New("the skill is empty: give body (first line = summary), or summary and content")
			case a.Body == "":
				b, err := Compose(a.Summary, a.Content)
				if err != nil {
					return nil, err
				}
				body = b
			}
			saved, err := s.Save(ctx, a.Name, body)
			if err != nil {
				return nil, err
			}
			res := AddResult{OK: true, Name: saved.Skill.Name, Summary: saved.Skill.Summary, Chars: saved.Skill.Chars, Replaced: saved.Replaced}
			switch {
			case saved.Unchanged:
				res.Note = "skill " + res.Name + " already had exactly this text; nothing changed"
			case saved.Replaced:
				res.Note = "replaced the existing skill " + res.Name
			default:
				res.Note = "created skill " + res.Name
			}
			return res, nil
		}, tool.WithCategories("memory"))
}

// ReadArgs are read_skill's arguments.
type ReadArgs struct {
	Name string `json:"name" jsonschema:"the skill's name as the table of contents lists it"`
	Path string `json:"path,omitempty" jsonschema:"for a skill that is a folder: a file of it that its text names, relative to the folder (e.g. reference.md or scripts/fill.py); omit to read the skill itself"`
}

// ReadResult is read_skill's result.
type ReadResult struct {
	OK      bool   `json:"ok"`
	Name    string `json:"name"`
	Summary string `json:"summary"`
	Body    string `json:"body"`
	// Folder is the skill's folder, for a skill in the shared format.
	Folder string `json:"folder,omitempty"`
}

// FileResult is read_skill's result for a file of a folder skill.
type FileResult struct {
	OK        bool   `json:"ok"`
	Name      string `json:"name"`
	Path      string `json:"path"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
}

// ReadTool is the read_skill tool: a skill's full text, for skills the
// prompt lists only by name and summary. A read in a turn (tool.CallFrom)
// is recorded as a LoadRead of the turn's thread.
func ReadTool(s *Store) tool.Tool {
	return tool.New(ReadToolName,
		"Read the full text of one of your skills (learned procedures). When your instructions list skills only by name and summary, read the matching skill before following it. "+
			"A skill that is a folder (skills/NAME/SKILL.md) may name other files of it (references, scripts): read one with path.",
		func(ctx context.Context, a ReadArgs) (any, error) {
			if strings.TrimSpace(a.Path) != "" {
				text, p, cut, err := s.ReadFile(ctx, a.Name, a.Path)
				if err != nil {
					return nil, err
				}
				return FileResult{OK: true, Name: a.Name, Path: p, Content: text, Truncated: cut}, nil
			}
			sk, err := s.Get(ctx, a.Name)
			if errors.Is(err, ErrNotFound) || errors.Is(err, ErrInvalidName) {
				names, lerr := s.Names(ctx)
				if lerr != nil {
					return nil, err
				}
				if len(names) == 0 {
					return nil, fmt.Errorf("%w; there are no skills yet", err)
				}
				return nil, fmt.Errorf("%w; the skills are: %s", err, strings.Join(names, ", "))
			}
			if err != nil {
				return nil, err
			}
			if c, ok := tool.CallFrom(ctx); ok && c.Thread != "" {
				if err := s.RecordLoads(ctx, c.Thread, []string{sk.Name}, LoadRead); err != nil {
					s.log.Warn("could not record a skill read", "skill", sk.Name, "thread", c.Thread, "err", err)
				}
			}
			res := ReadResult{OK: true, Name: sk.Name, Summary: sk.Summary, Body: sk.Body}
			if sk.Folder {
				res.Folder = filepath.Join(s.dir, sk.Name)
			}
			return res, nil
		}, tool.ReadOnly(), tool.ReadsPrivateData(), tool.WithCategories("memory"))
}
