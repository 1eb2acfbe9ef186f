package subagent

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"
)

// DirName is the agents' directory in the data dir.
const DirName = "agents"

// DefaultStatInterval is how often the Library looks for changed files.
const DefaultStatInterval = time.Second

//go:embed builtin/*.md
var builtinFS embed.FS

// Builtin returns the agents Reverie ships: researcher and builder.
func Builtin() []Spec {
	entries, err := fs.ReadDir(builtinFS, "builtin")
	if err != nil {
		panic(fmt.Sprintf("subagent: built-in agents: %v", err)) // embedded: cannot fail
	}
	var out []Spec
	for _, e := range entries {
		data, err := builtinFS.ReadFile(path.Join("builtin", e.Name()))
		if err != nil {
			panic(fmt.Sprintf("subagent: built-in agent %s: %v", e.Name(), err))
		}
		s, err := Parse(e.Name(), data)
		if err != nil {
			panic(fmt.Sprintf("subagent: built-in agent %s: %v", e.Name(), err))
		}
		s.Source = "built-in"
		out = append(out, s)
	}
	return out
}

// Options configure a Library.
type Options struct {
	// Dir is <data>/agents; "" reads no files.
	Dir string
	// Builtin are the agents offered unless a file overrides them.
	Builtin []Spec
	// StatInterval bounds how often the directory is looked at (default
	// DefaultStatInterval).
	StatInterval time.Duration
	Now          func() time.Time
	Logger       *slog.Logger
}

// Problem is a file in the agents directory that is not an agent.
type Problem struct {
	// Path is data-dir-relative ("agents/x.md").
	Path string
	Err  error
}

// Library is the current set of agents: the built-in ones and the files
// of the agents directory, re-read when they change. Safe for concurrent
// use.
type Library struct {
	o Options

	mu       sync.Mutex
	checked  time.Time
	dirMod   time.Time             // of the directory at the last look
	files    map[string]cachedFile // by file name
	list     []Spec
	problems []Problem
}

type cachedFile struct {
	size int64
	mod  time.Time
	spec Spec
	err  error
}

// NewLibrary returns a Library; it reads nothing until asked.
func NewLibrary(o Options) *Library {
	if o.StatInterval <= 0 {
		o.StatInterval = DefaultStatInterval
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Library{o: o, files: map[string]cachedFile{}}
}

// Agents returns the agents, sorted by name: a file overrides the
// built-in agent of the same name. It stats the directory on every call
// and lists it again when its modification time changed (a file added,
// removed or renamed over), else at most every StatInterval (to catch
// edits in place); it re-reads only files whose size or modification time
// changed.
func (l *Library) Agents() []Spec {
	var dirMod time.Time
	if l.o.Dir != "" {
		if st, err := os.Stat(l.o.Dir); err == nil {
			dirMod = st.ModTime()
		}
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.o.Now()
	if l.list == nil || !dirMod.Equal(l.dirMod) || now.Sub(l.checked) >= l.o.StatInterval || now.Before(l.checked) {
		l.checked, l.dirMod = now, dirMod
		l.refreshLocked()
	}
	return slices.Clone(l.list)
}

// Get returns the agent called name.
func (l *Library) Get(name string) (Spec, bool) {
	for _, s := range l.Agents() {
		if s.Name == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Problems returns the files of the last look that are not agents.
func (l *Library) Problems() []Problem {
	l.Agents()
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.problems)
}

func (l *Library) refreshLocked() {
	byName := map[string]Spec{}
	for _, s := range l.o.Builtin {
		byName[s.Name] = s
	}
	var problems []Problem
	seen := map[string]bool{}
	if l.o.Dir != "" {
		entries, err := os.ReadDir(l.o.Dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			problems = append(problems, Problem{Path: DirName, Err: err})
		}
		for _, e := range entries {
			name := e.Name()
			if !strings.HasSuffix(name, ".md") || strings.HasPrefix(name, ".") || !e.Type().IsRegular() {
				continue
			}
			seen[name] = true
			c, err := l.file(name)
			rel := DirName + "/" + name
			if err == nil {
				err = c.err
			}
			if err != nil {
				problems = append(problems, Problem{Path: rel, Err: err})
				continue
			}
			if prev, ok := byName[c.spec.Name]; ok && prev.Source != "built-in" {
				problems = append(problems, Problem{Path: rel, Err: fmt.Errorf("%w: the name %q is taken by %s", ErrInvalid, c.spec.Name, prev.Source)})
				continue
			}
			byName[c.spec.Name] = c.spec
		}
	}
	for name := range l.files {
		if !seen[name] {
			delete(l.files, name)
		}
	}
	list := make([]Spec, 0, len(byName))
	for _, s := range byName {
		list = append(list, s)
	}
	slices.SortFunc(list, func(a, b Spec) int { return strings.Compare(a.Name, b.Name) })
	if !slices.EqualFunc(problems, l.problems, func(a, b Problem) bool { return a.Path == b.Path && a.Err.Error() == b.Err.Error() }) {
		for _, p := range problems {
			l.o.Logger.Warn("an agent file is left out", "path", p.Path, "err", p.Err)
		}
	}
	l.list, l.problems = list, problems
}

// file returns name's parsed content, read again only when its size or
// modification time changed.
func (l *Library) file(name string) (cachedFile, error) {
	p := filepath.Join(l.o.Dir, name)
	st, err := os.Stat(p)
	if err != nil {
		return cachedFile{}, err
	}
	if c, ok := l.files[name]; ok && c.size == st.Size() && c.mod.Equal(st.ModTime()) {
		return c, nil
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return cachedFile{}, err
	}
	c := cachedFile{size: st.Size(), mod: st.ModTime()}
	c.spec, c.err = Parse(name, data)
	c.spec.Source = DirName + "/" + name
	l.files[name] = c
	return c, nil
}
