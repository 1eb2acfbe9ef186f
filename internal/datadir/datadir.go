package datadir

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/internal/atomicfile"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/world"
)

// Names inside the data dir.
const (
	ConfigFile     = "config.yaml"
	BasePromptFile = "BASE_PROMPT.txt"
	MemoriesFile   = "MEMORIES.txt"
	WorldStateFile = world.FileName
	LockFile       = ".lock"
	// RestartFile is created (by the request_restart tool) to ask the
	// supervisor to restart the agent.
	RestartFile = "restart.request"

	SkillsDir    = "skills"
	ScriptsDir   = "scripts"
	ArchiveDir   = "archive"
	PromptsDir   = "prompts"
	LogsDir      = "logs"
	WorkspaceDir = "workspace"
)

// Subdirs are created by Bootstrap.
var Subdirs = []string{SkillsDir, ScriptsDir, ArchiveDir, PromptsDir, LogsDir, WorkspaceDir}

// Prompt template files, relative to the data dir.
const (
	DreamMemoriesPrompt      = "prompts/DREAM_MEMORIES_PROMPT.txt"
	DreamPulsePrompt         = "prompts/DREAM_PULSE_PROMPT.txt"
	DreamDedupPrompt         = "prompts/DREAM_DEDUP_PROMPT.txt"
	DreamContradictionPrompt = "prompts/DREAM_CONTRADICTION_PROMPT.txt"
	DreamSkillsPrompt        = "prompts/DREAM_SKILLS_PROMPT.txt"
	DreamEpisodesPrompt      = "prompts/DREAM_EPISODES_PROMPT.txt"
	ReflectionPrompt         = "prompts/REFLECTION_PROMPT.txt"
	CompactionPrompt         = "prompts/COMPACTION_PROMPT.txt"
)

// SeedPrompt returns the conversation seed file for a language code,
// relative to the data dir ("prompts/SEED_en.txt"). The caller falls back to
// DefaultLanguage when the file is missing.
func SeedPrompt(lang string) string { return "prompts/SEED_" + lang + ".txt" }

// DefaultLanguage is the seed language used when the configured one has no
// file.
const DefaultLanguage = "en"

// SeedLanguages are the languages a seed prompt ships for.
var SeedLanguages = []string{"en", "de", "fr", "es", "it", "zh", "ja"}

// Placeholders maps each template (a path.Match pattern relative to the data
// dir, as prompt.ValidateDir takes it) to the placeholder names it may use,
// without braces. All are optional: a template without its placeholder gets
// the value appended. The seed prompts take none.
func Placeholders() map[string][]string {
	return map[string][]string{
		DreamMemoriesPrompt:      {"content"},
		DreamPulsePrompt:         {"content"},
		DreamDedupPrompt:         {"content"},
		DreamContradictionPrompt: {"content"},
		DreamSkillsPrompt:        {"content"},
		DreamEpisodesPrompt:      {"content"},
		ReflectionPrompt:         {"content"},
		CompactionPrompt:         {"history"},
		"prompts/SEED_*.txt":     {},
	}
}

//go:embed defaults
var defaults embed.FS

// Defaults returns the shipped default files (paths relative to the data
// dir, slash-separated) without config.yaml and world_state.json, which are
// generated. Callers use it to fall back to a built-in template when a file
// is missing from the data dir.
func Defaults() fs.FS {
	sub, err := fs.Sub(defaults, "defaults")
	if err != nil {
		panic(err) // the embedded tree always has the directory
	}
	return sub
}

// Resolve returns the data dir as an absolute path: flag if set, else
// $REVERIE_HOME, else $XDG_DATA_HOME/reverie, else
// $HOME/.local/share/reverie. env is os.Environ() format. A leading "~/" is
// expanded with $HOME.
func Resolve(flag string, env []string) (string, error) {
	get := func(name string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
				return v
			}
		}
		return ""
	}
	home := get("HOME")
	expand := func(p string) (string, error) {
		if p == "~" || strings.HasPrefix(p, "~/") {
			if home == "" {
				return "", fmt.Errorf("cannot expand %q: HOME is not set", p)
			}
			p = filepath.Join(home, p[1:])
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return "", fmt.Errorf("resolve data dir %q: %w", p, err)
		}
		return abs, nil
	}
	switch {
	case flag != "":
		return expand(flag)
	case get("REVERIE_HOME") != "":
		return expand(get("REVERIE_HOME"))
	}
	// The XDG spec says relative values are invalid and must be ignored.
	if x := get("XDG_DATA_HOME"); x != "" && filepath.IsAbs(x) {
		return filepath.Join(filepath.Clean(x), "reverie"), nil
	}
	if home == "" {
		return "", errors.New("cannot find a data dir: HOME is not set; use --data DIR or set REVERIE_HOME")
	}
	return expand(filepath.Join(home, ".local", "share", "reverie"))
}

// ErrUnusable is wrapped (see Unusable) by the errors of a data dir that
// cannot be used as it is: a directory that cannot be created or written,
// files that cannot be read, a full disk. Restarting does not help, so the
// agent exits with its own code for it (4) and the supervisor does not
// restart it.
var ErrUnusable = errors.New("the data dir cannot be used")

// unusable marks an error as ErrUnusable without changing its message.
type unusable struct{ err error }

func (u unusable) Error() string   { return u.err.Error() }
func (u unusable) Unwrap() []error { return []error{u.err, ErrUnusable} }

// Unusable returns err marked so that errors.Is(err, ErrUnusable) holds,
// with the same message; nil stays nil.
func Unusable(err error) error {
	if err == nil || errors.Is(err, ErrUnusable) {
		return err
	}
	return unusable{err}
}

// Bootstrap creates dir (mode 0700, and its missing parents) with its
// subdirectories and writes every shipped default file that does not exist
// yet. Existing files are never touched. It returns what it created inside
// dir, relative to dir (directories end in "/"), in creation order. logger
// may be nil. Its errors are ErrUnusable.
func Bootstrap(dir string, logger *slog.Logger) (created []string, err error) {
	defer func() { err = Unusable(err) }()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	mkdir := func(rel string) error {
		p := filepath.Join(dir, filepath.FromSlash(rel))
		if fi, err := os.Stat(p); err == nil {
			if !fi.IsDir() {
				return fmt.Errorf("prepare data dir: %s exists and is not a directory", p)
			}
			return nil
		}
		if err := os.MkdirAll(p, 0o700); err != nil {
			return fmt.Errorf("prepare data dir: %w", err)
		}
		if rel != "." { // the caller knows it asked for dir itself
			created = append(created, rel+"/")
		}
		logger.Debug("created directory", "path", p)
		return nil
	}
	if err := mkdir("."); err != nil {
		return created, err
	}
	for _, sub := range Subdirs {
		if err := mkdir(sub); err != nil {
			return created, err
		}
	}

	write := func(rel string, data []byte) error {
		if err := mkdir(path.Dir(rel)); err != nil {
			return err
		}
		ok, err := createExclusive(filepath.Join(dir, filepath.FromSlash(rel)), data)
		if err != nil {
			return fmt.Errorf("write default %s: %w", rel, err)
		}
		if ok {
			created = append(created, rel)
			logger.Debug("created default file", "path", rel)
		}
		return nil
	}
	if err := write(ConfigFile, config.DefaultFile()); err != nil {
		return created, err
	}
	ws, err := world.Encode(world.Default(time.Now()))
	if err != nil {
		return created, err
	}
	if err := write(WorldStateFile, ws); err != nil {
		return created, err
	}
	err = fs.WalkDir(Defaults(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(Defaults(), p)
		if err != nil {
			return err
		}
		return write(p, data)
	})
	return created, err
}

// WriteFile replaces the file at path atomically: the data goes to a temp
// file in the same directory with mode perm, is synced, renamed over path,
// and the directory is synced, so a crash leaves the old or the new file,
// never a mix. Every editable file of the data dir is written this way.
func WriteFile(path string, data []byte, perm os.FileMode) error {
	return atomicfile.Write(path, data, perm)
}

// createExclusive writes data to path unless path exists. The content is
// written to a temp file and synced first, then linked into place, so the
// file appears complete or not at all and an existing file (even one
// created concurrently) is never replaced. It reports whether it created the
// file.
func createExclusive(path string, data []byte) (bool, error) {
	if _, err := os.Lstat(path); err == nil {
		return false, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return false, err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return false, err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(data)
	if werr == nil {
		werr = tmp.Sync()
	}
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return false, werr
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		// File systems without hard links: fall back to O_EXCL.
		f, ferr := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(ferr, os.ErrExist) {
			return false, nil
		}
		if ferr != nil {
			return false, ferr
		}
		_, werr := f.Write(data)
		if werr == nil {
			werr = f.Sync()
		}
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			os.Remove(path)
			return false, werr
		}
	}
	return true, nil
}

// CheckWritable returns a clear error (ErrUnusable) when files cannot be
// created in dir.
func CheckWritable(dir string) error {
	return Unusable(checkWritable(dir, "data dir "+dir))
}

// CheckCreatable returns a clear error (ErrUnusable) when dir does not exist
// and cannot be created: its nearest existing ancestor must be a writable
// directory. Missing parents are fine (a fresh home without ~/.local/share):
// Bootstrap creates them.
func CheckCreatable(dir string) error {
	p := filepath.Clean(dir)
	for {
		_, err := os.Stat(p)
		if err == nil {
			break
		}
		if !errors.Is(err, fs.ErrNotExist) {
			return Unusable(fmt.Errorf("data dir %s: %w", dir, err))
		}
		parent := filepath.Dir(p)
		if parent == p {
			return Unusable(fmt.Errorf("data dir %s: no existing parent directory", dir))
		}
		p = parent
	}
	if p == filepath.Clean(dir) {
		return nil // it exists; Bootstrap and CheckWritable take it from here
	}
	return Unusable(checkWritable(p, fmt.Sprintf("cannot create the data dir %s: %s", dir, p)))
}

func checkWritable(dir, what string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", what)
	}
	f, err := os.CreateTemp(dir, ".writable-*")
	if err != nil {
		return fmt.Errorf("%s is not writable by this user (uid %d): %w; fix its permissions or choose another with --data",
			what, os.Geteuid(), err)
	}
	name := f.Name()
	cerr := f.Close()
	rerr := os.Remove(name)
	if cerr != nil || rerr != nil {
		return fmt.Errorf("%s is not usable: %w", what, errors.Join(cerr, rerr))
	}
	return nil
}
