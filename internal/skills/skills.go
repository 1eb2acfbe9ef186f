package skills

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/frontmatter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/textcheck"
)

// Component is the name under which the skill_loads schema is versioned.
const Component = "skills"

// Limits and file naming.
const (
	// DefaultMaxBodyChars caps one skill's text, in characters (runes): the
	// seeds' richer 20,000-character limit (the app passes the configured
	// limits.skills_chars).
	DefaultMaxBodyChars = 20000
	// MaxSummaryChars caps the first line, which the table of contents
	// shows for every skill.
	MaxSummaryChars = 300
	// MaxNameLen caps a skill name.
	MaxNameLen = 64
	// Ext is the skill files' extension.
	Ext = ".md"
	// DirName is the skills directory inside the data dir (the same as
	// datadir.SkillsDir).
	DirName = "skills"
	// FolderFile is the instructions file of a skill in the shared
	// format: skills/NAME/SKILL.md.
	FolderFile = "SKILL.md"
)

// Errors. Each is wrapped with detail; test with errors.Is.
var (
	// ErrInvalidName: the name is empty, has path characters or is not
	// lower-case letters, digits, '-' and '_'.
	ErrInvalidName = errors.New("invalid skill name")
	// ErrEmpty: the skill text is empty.
	ErrEmpty = textcheck.ErrEmpty
	// ErrTooLong: the skill text or its summary line is over its limit.
	ErrTooLong = textcheck.ErrTooLong
	// ErrSecret: the text looks like it contains a credential; it is never
	// written.
	ErrSecret = textcheck.ErrSecret
	// ErrNotFound: no skill has that name. Errors read `skill "x" not
	// found`.
	ErrNotFound = errors.New("not found")
	// ErrFolder: the skill is a folder (skills/NAME/SKILL.md), which the
	// store reads but never writes or deletes.
	ErrFolder = errors.New("the skill is a folder")
)

// Skill is one learned procedure.
type Skill struct {
	Name string `json:"name"`
	// Summary is the first non-empty line of Body, without Markdown heading
	// marks.
	Summary string `json:"summary"`
	// Body is the whole file (trimmed), summary line included.
	Body string `json:"body"`
	// Chars is Body's length in characters (runes).
	Chars    int       `json:"chars"`
	Modified time.Time `json:"modified"`
	// Folder is set for a skill in the shared format, skills/NAME/SKILL.md:
	// Summary is its front matter's description, Body the text after the
	// front matter, and its other files are read with ReadFile.
	Folder bool `json:"folder,omitempty"`
}

// Path is the skill's data-dir-relative path, slash-separated
// ("skills/NAME.md", or "skills/NAME/SKILL.md" for a folder).
func (s Skill) Path() string {
	if s.Folder {
		return DirName + "/" + s.Name + "/" + FolderFile
	}
	return RelPath(s.Name)
}

// RelPath is the data-dir-relative path of skill name.
func RelPath(name string) string { return DirName + "/" + name + Ext }

// Options configure a Store.
type Options struct {
	// DataDir holds the skills directory (required).
	DataDir string
	// DB, when set, stores skill load records (RecordLoads, Loads).
	DB *sql.DB
	// MaxBodyChars caps a skill's text (0: DefaultMaxBodyChars).
	MaxBodyChars int
	// Changed, when set, is called after every write or delete that changed
	// a file, with a commit message and the data-dir-relative paths.
	Changed func(ctx context.Context, message string, paths ...string)
	// StatInterval is how often files are checked for in-place edits when
	// the directory itself did not change (0: DefaultStatInterval; negative:
	// on every call).
	StatInterval time.Duration
	// Now is the clock; nil means time.Now.
	Now    func() time.Time
	Logger *slog.Logger
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// DefaultStatInterval bounds how long an in-place edit of a skill file
// (which leaves the directory's modification time alone) can go unseen.
const DefaultStatInterval = time.Second

// Store is the skills directory with a cache of its files.
type Store struct {
	dir     string // absolute skills directory
	db      *sql.DB
	maxBody int
	changed func(ctx context.Context, message string, paths ...string)
	now     func() time.Time
	log     *slog.Logger
	statGap time.Duration

	writeMu sync.Mutex // serialises Save and Delete

	mu       sync.Mutex // guards the cache
	dirKnown bool
	dirMod   time.Time
	checked  time.Time          // when the files were last stat'ed
	files    map[string]*cached // by skill name
	list     []Skill            // sorted by name; rebuilt when files change
	prompt   []prompt.Skill     // the non-empty skills of list
	reads    int                // files read so far (tests)

	loadsMu  sync.Mutex
	loadsDay string
	loaded   map[loadKey]bool // recorded today
}

type cached struct {
	skill Skill
	size  int64
	mod   time.Time
	// folder: skills/NAME/SKILL.md; absent: a folder without SKILL.md
	// (yet: a copy in progress), looked at again at every pass.
	folder, absent bool
}

// file is the path of the file holding skill name.
func (s *Store) file(name string, folder bool) string {
	if folder {
		return filepath.Join(s.dir, name, FolderFile)
	}
	return filepath.Join(s.dir, name+Ext)
}

//go:embed migrations/*.sql
var migrations embed.FS

// Open returns a store over <DataDir>/skills, migrating the skill_loads
// schema when a database is given. The directory need not exist yet.
func Open(ctx context.Context, o Options) (*Store, error) {
	if o.DataDir == "" {
		return nil, errors.New("open skills: no data dir")
	}
	if o.DB != nil {
		if err := o.Migrations.Migrate(ctx, o.DB, Component, migrations, "migrations"); err != nil {
			return nil, err
		}
	}
	if o.MaxBodyChars <= 0 {
		o.MaxBodyChars = DefaultMaxBodyChars
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.StatInterval == 0 {
		o.StatInterval = DefaultStatInterval
	}
	dir, err := filepath.Abs(filepath.Join(o.DataDir, DirName))
	if err != nil {
		return nil, fmt.Errorf("open skills: %w", err)
	}
	return &Store{
		dir: dir, db: o.DB, maxBody: o.MaxBodyChars, changed: o.Changed, now: o.Now, log: o.Logger, statGap: o.StatInterval,
		files: map[string]*cached{}, loaded: map[loadKey]bool{},
	}, nil
}

// Dir is the absolute skills directory.
func (s *Store) Dir() string { return s.dir }

// MaxBodyChars is the configured limit on one skill's text.
func (s *Store) MaxBodyChars() int { return s.maxBody }

var nameRe = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z0-9][a-z0-9_-]{0,63}$`) })

// CleanName trims name, drops a trailing ".md" and checks it: 1–64
// lower-case letters, digits, '-' and '_', starting with a letter or digit.
// Otherwise the error (ErrInvalidName) says why and suggests a valid name.
func CleanName(name string) (string, error) {
	n := strings.TrimSuffix(strings.TrimSpace(name), Ext)
	switch {
	case n == "":
		return "", fmt.Errorf("%w: the name is empty", ErrInvalidName)
	case strings.ContainsAny(n, `/\`) || strings.Contains(n, ".."):
		return "", fmt.Errorf("%w %q: a name cannot contain path characters (/, \\, ..); use a plain name like %q", ErrInvalidName, name, suggest(n))
	case !nameRe().MatchString(n):
		return "", fmt.Errorf("%w %q: use 1-%d lower-case letters, digits, '-' and '_', starting with a letter or digit, e.g. %q", ErrInvalidName, name, MaxNameLen, suggest(n))
	}
	return n, nil
}

var nonName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-z0-9_-]+`) })

// suggest turns s into a valid name.
func suggest(s string) string {
	s = nonName().ReplaceAllString(strings.ToLower(s), "-")
	s = strings.Trim(s, "-_")
	if len(s) > MaxNameLen {
		s = strings.Trim(s[:MaxNameLen], "-_")
	}
	if s == "" {
		return "my-skill"
	}
	return s
}

// Summarize returns body's summary: its first non-empty line without
// Markdown heading marks, white space collapsed.
func Summarize(body string) string {
	for line := range strings.Lines(body) {
		if line = strings.TrimSpace(line); line != "" {
			line = strings.TrimSpace(strings.TrimLeft(line, "#"))
			return strings.Join(strings.Fields(line), " ")
		}
	}
	return ""
}

// normalizeBody makes text valid UTF-8 with "\n" line endings, trimmed.
func normalizeBody(text string) string {
	if !utf8.ValidString(text) {
		text = strings.ToValidUTF8(text, "\uFFFD")
	}
	text = strings.ReplaceAll(text, "\r\n", "\n")
	text = strings.ReplaceAll(text, "\r", "\n")
	return strings.TrimSpace(text)
}

func parse(name string, data []byte, mod time.Time) Skill {
	body := normalizeBody(string(data))
	return Skill{Name: name, Summary: Summarize(body), Body: body, Chars: utf8.RuneCountInString(body), Modified: mod.UTC()}
}

// parseFolder reads a SKILL.md: front matter (name, description; other
// keys are ignored), then the instructions. The table of contents shows
// the description. Front matter that does not parse leaves the whole text
// as the body, summarised by its first line.
func parseFolder(name string, data []byte, mod time.Time) Skill {
	var fm struct {
		Description string `yaml:"description"`
	}
	text, err := frontmatter.Parse(data, &fm)
	if err != nil {
		sk := parse(name, data, mod)
		sk.Folder = true
		return sk
	}
	body := normalizeBody(text)
	sum := strings.Join(strings.Fields(fm.Description), " ")
	if sum == "" {
		sum = Summarize(body)
	}
	return Skill{Name: name, Summary: sum, Body: body, Chars: utf8.RuneCountInString(body), Modified: mod.UTC(), Folder: true}
}

// List returns every skill, sorted by name (empty files included, with an
// empty body). It reads only what changed since the last call; see the
// package documentation.
func (s *Store) List(ctx context.Context) ([]Skill, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	return slices.Clone(s.list), nil
}

// Prompt returns the non-empty skills for the system prompt, by name.
func (s *Store) Prompt(ctx context.Context) ([]prompt.Skill, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return nil, err
	}
	return slices.Clone(s.prompt), nil
}

// TotalChars is the size of every skill's text, in characters.
func (s *Store) TotalChars(ctx context.Context) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return 0, err
	}
	n := 0
	for _, sk := range s.list {
		n += sk.Chars
	}
	return n, nil
}

// Get returns the skill called name: a file listed under exactly that name,
// else the file of the cleaned name (so "Research.md " finds research).
// An unknown name is ErrNotFound; an invalid one ErrInvalidName.
func (s *Store) Get(ctx context.Context, name string) (Skill, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.refresh(); err != nil {
		return Skill{}, err
	}
	if c, ok := s.files[name]; ok {
		return c.skill, nil
	}
	clean, err := CleanName(name)
	if err != nil {
		return Skill{}, fmt.Errorf("get skill: %w", err)
	}
	if c, ok := s.files[clean]; ok {
		return c.skill, nil
	}
	return Skill{}, fmt.Errorf("skill %q %w", clean, ErrNotFound)
}

// Names returns the skill names, sorted.
func (s *Store) Names(ctx context.Context) ([]string, error) {
	list, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(list))
	for i, sk := range list {
		out[i] = sk.Name
	}
	return out, nil
}

// refresh brings the cache up to date with the directory. s.mu is held.
func (s *Store) refresh() error {
	di, err := os.Stat(s.dir)
	if errors.Is(err, fs.ErrNotExist) {
		if len(s.files) > 0 || !s.dirKnown {
			clear(s.files)
			s.rebuild()
		}
		s.dirKnown, s.dirMod = true, time.Time{}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read skills: %w", err)
	}
	now := s.now()
	dirChanged := !s.dirKnown || !di.ModTime().Equal(s.dirMod)
	if !dirChanged && s.list != nil && s.statGap > 0 && now.Sub(s.checked) < s.statGap && !now.Before(s.checked) {
		return nil
	}
	s.checked = now
	dirty := false
	if dirChanged {
		names, err := s.listDir()
		if err != nil {
			return err
		}
		for name, c := range s.files {
			if folder, ok := names[name]; !ok || folder != c.folder {
				delete(s.files, name)
				dirty = true
			}
		}
		for name, folder := range names {
			if _, ok := s.files[name]; !ok {
				s.files[name] = &cached{folder: folder, absent: true} // read below
			}
		}
		s.dirKnown, s.dirMod = true, di.ModTime()
	}
	for name, c := range s.files {
		path := s.file(name, c.folder)
		fi, err := os.Stat(path)
		if c.folder && errors.Is(err, fs.ErrNotExist) {
			// A folder without SKILL.md (yet): looked at again next time.
			if !c.absent {
				c.absent, dirty = true, true
			}
			continue
		}
		if err != nil || !fi.Mode().IsRegular() {
			// Gone since the listing, or not a file: drop it; a
			// re-created file changes the directory and is listed again.
			delete(s.files, name)
			dirty = true
			continue
		}
		if !c.absent && c.size == fi.Size() && c.mod.Equal(fi.ModTime()) {
			continue
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return fmt.Errorf("read skill %s: %w", name, err)
		}
		s.reads++
		sk := parse(name, data, fi.ModTime())
		if c.folder {
			sk = parseFolder(name, data, fi.ModTime())
		}
		s.files[name] = &cached{skill: sk, size: fi.Size(), mod: fi.ModTime(), folder: c.folder}
		dirty = true
	}
	if dirty || s.list == nil {
		s.rebuild()
	}
	return nil
}

// invalidate makes the next call re-list the directory and re-check every
// file (after the store's own writes, which must be seen at once even where
// the file system's timestamps are coarse).
func (s *Store) invalidate() {
	s.mu.Lock()
	s.dirKnown, s.checked = false, time.Time{}
	s.mu.Unlock()
}

// listDir returns the skill names in the directory, each with whether it
// is a folder: "*.md" files and folders that are not hidden. A file and a
// folder of the same name: the file is the skill.
func (s *Store) listDir() (map[string]bool, error) {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return nil, fmt.Errorf("read skills: %w", err)
	}
	names := make(map[string]bool, len(entries))
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if e.IsDir() {
			if _, taken := names[e.Name()]; !taken {
				names[e.Name()] = true
			}
			continue
		}
		if name, ok := strings.CutSuffix(e.Name(), Ext); ok && name != "" {
			names[name] = false
		}
	}
	return names, nil
}

// rebuild recomputes the sorted list and the prompt skills. s.mu is held.
func (s *Store) rebuild() {
	s.list = make([]Skill, 0, len(s.files))
	for _, c := range s.files {
		if !c.absent {
			s.list = append(s.list, c.skill)
		}
	}
	slices.SortFunc(s.list, func(a, b Skill) int { return strings.Compare(a.Name, b.Name) })
	s.prompt = make([]prompt.Skill, 0, len(s.list))
	for _, sk := range s.list {
		switch {
		case sk.Body == "":
		case sk.Folder:
			s.prompt = append(s.prompt, prompt.Skill{Name: sk.Name, Summary: sk.Summary,
				Body: sk.Summary + "\n\n" + sk.Body + "\n\n" + s.folderNote(sk.Name)})
		default:
			s.prompt = append(s.prompt, prompt.Skill{Name: sk.Name, Summary: sk.Summary, Body: sk.Body})
		}
	}
}
