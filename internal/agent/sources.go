package agent

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/prompt"
)

// Sources supply the variable sections of the system prompt. The memory,
// pulse and skills subsystems provide richer implementations; DataDirSources
// reads the data-dir files.
type Sources interface {
	// Memories is MEMORIES.txt (or its working set).
	Memories(ctx context.Context) (string, error)
	// Pulse is the active pulse, formatted for the prompt.
	Pulse(ctx context.Context) (string, error)
	// Skills are the learned procedures, in display order.
	Skills(ctx context.Context) ([]prompt.Skill, error)
}

// How a prompt carried the skills, for SkillLoadRecorder.
const (
	SkillLoadFull = "full" // each skill's whole text
	SkillLoadTOC  = "toc"  // the table of contents (name and summary)
)

// SkillLoadRecorder is implemented by Sources that record which skills went
// into which thread's prompt (the reflection cycle correlates skills with
// failures). The agent calls it once per prompt it assembles, after reading
// the skills, with their names and SkillLoadFull or SkillLoadTOC; an error
// is logged and the turn goes on.
type SkillLoadRecorder interface {
	RecordSkillLoads(ctx context.Context, thread chat.ThreadID, names []string, mode string) error
}

// ComponentSizes are the current sizes of the size-limited prompt
// components, in characters (runes).
type ComponentSizes struct {
	MemoriesChars int
	PulseChars    int
	SkillsChars   int
}

// Sizes reports the current component sizes (checked after every turn).
type Sizes interface {
	ComponentSizes(ctx context.Context) (ComponentSizes, error)
}

// DataDirSources reads MEMORIES.txt and skills/*.md from a data directory.
// It has no pulse (the pulse lives in the database, provided elsewhere), so
// Pulse is empty and its size 0. A missing file or directory is empty, not an
// error.
type DataDirSources struct {
	Dir string
}

// Memories returns MEMORIES.txt.
func (d DataDirSources) Memories(ctx context.Context) (string, error) {
	return readOptional(filepath.Join(d.Dir, datadir.MemoriesFile))
}

// Pulse returns "": the data dir holds no pulse.
func (d DataDirSources) Pulse(ctx context.Context) (string, error) { return "", nil }

// Skills returns skills/*.md sorted by name; the name is the file name
// without ".md".
func (d DataDirSources) Skills(ctx context.Context) ([]prompt.Skill, error) {
	dir := filepath.Join(d.Dir, datadir.SkillsDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read skills: %w", err)
	}
	var out []prompt.Skill
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), ".md")
		if !ok || name == "" || e.IsDir() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("read skill %s: %w", e.Name(), err)
		}
		body := strings.TrimSpace(string(b))
		if body == "" {
			continue
		}
		out = append(out, prompt.Skill{Name: name, Body: body})
	}
	slices.SortFunc(out, func(a, b prompt.Skill) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// ComponentSizes measures MEMORIES.txt and the skill files; pulse is 0.
func (d DataDirSources) ComponentSizes(ctx context.Context) (ComponentSizes, error) {
	mem, err := d.Memories(ctx)
	if err != nil {
		return ComponentSizes{}, err
	}
	skills, err := d.Skills(ctx)
	if err != nil {
		return ComponentSizes{}, err
	}
	return ComponentSizes{MemoriesChars: utf8.RuneCountInString(mem), SkillsChars: skillsChars(skills)}, nil
}

func skillsChars(skills []prompt.Skill) int {
	n := 0
	for _, s := range skills {
		n += utf8.RuneCountInString(s.Body)
	}
	return n
}

// readOptional reads a file; a missing file is "".
func readOptional(path string) (string, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read %s: %w", filepath.Base(path), err)
	}
	return string(b), nil
}

// readTemplate reads a data-dir file (relative, slash-separated), falling back
// to the shipped default when the data dir lacks it.
func readTemplate(dir, rel string) (string, error) {
	s, err := readOptional(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil || s != "" {
		return s, err
	}
	b, err := fs.ReadFile(datadir.Defaults(), rel)
	if err != nil {
		return "", fmt.Errorf("read %s: missing from the data dir and no shipped default: %w", rel, err)
	}
	return string(b), nil
}

// AppWritten reports whether text, a user-role message the user did not
// write, is the application's own: the conversation seed (from the data
// directory dir, in language lang, as a seed turn or before a greeting), a
// supervisor's note, or the turn context (TurnContextPrefix: the time and
// the context providers' blocks, which were in the system prompt before).
// Other system events carry what happened elsewhere (a worker's report, a
// task's answer), which can hold outside content.
func AppWritten(dir, lang, text string) bool {
	if strings.HasPrefix(text, TurnContextPrefix) {
		return true
	}
	body, ok := strings.CutPrefix(text, SystemEventPrefix)
	if !ok {
		return false
	}
	if strings.HasPrefix(body, SupervisorPrefix) {
		return true
	}
	seed, err := seedText(dir, lang)
	if err != nil || strings.TrimSpace(seed) == "" {
		return false
	}
	seed = strings.TrimSpace(seed)
	return body == seed || body == seed+"\n\n"+GreetNote
}

// seedText returns the seed prompt for lang: prompts/SEED_<lang>.txt, else
// the English one (from the data dir, else shipped).
func seedText(dir, lang string) (string, error) {
	if lang != "" && lang != datadir.DefaultLanguage {
		s, err := readOptional(filepath.Join(dir, filepath.FromSlash(datadir.SeedPrompt(lang))))
		if err != nil {
			return "", err
		}
		if strings.TrimSpace(s) != "" {
			return s, nil
		}
	}
	return readTemplate(dir, datadir.SeedPrompt(datadir.DefaultLanguage))
}
