package versioning

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/internal/datadir"
)

// Sentinel errors, wrapped with the detail (errors.Is them).
var (
	// ErrUnknownRevision: the revision names no commit of the history.
	ErrUnknownRevision = errors.New("unknown revision")
	// ErrAmbiguousRevision: a short hash matches more than one commit.
	ErrAmbiguousRevision = errors.New("ambiguous revision")
	// ErrNotTracked: a path handed to Commit or History is outside the
	// versioned files (see IsTracked).
	ErrNotTracked = errors.New("path is not versioned")
	// ErrNoHistory: a read-only Open found no usable repository.
	ErrNoHistory = errors.New("the data dir has no history yet")
	// ErrReadOnly: Commit or Restore on a Repo opened read-only.
	ErrReadOnly = errors.New("the data dir history was opened read-only")
)

// Names in the data dir.
const (
	// GitDir is the repository inside the data dir.
	GitDir = ".git"
	// GitignoreFile documents the tracking rule for people using git.
	GitignoreFile = ".gitignore"
	// Branch is the branch a new repository commits to.
	Branch = "main"
)

// Default commit author.
const (
	DefaultAuthorName  = "Reverie"
	DefaultAuthorEmail = "reverie@localhost"
)

// shortLen is the length of Revision.Short; minShort the shortest prefix
// accepted as a revision.
const (
	shortLen = 7
	minShort = 4
)

// The versioned top-level entries of the data dir.
var (
	trackedFiles = []string{"BASE_PROMPT.txt", "MEMORIES.txt", "world_state.json"}
	trackedDirs  = []string{"prompts", "skills"}
)

// Tracked returns the versioned top-level files and directories, relative to
// the data dir, sorted.
func Tracked() []string {
	out := append(slices.Clone(trackedFiles), trackedDirs...)
	slices.Sort(out)
	return out
}

// IsTracked reports whether the file at rel (slash-separated, relative to
// the data dir) is versioned: one of the top-level tracked files, or a file
// inside a tracked directory whose path has no hidden component and whose
// name is no temp or editor backup file.
func IsTracked(rel string) bool {
	rel, ok := cleanRel(rel)
	if !ok {
		return false
	}
	if slices.Contains(trackedFiles, rel) {
		return true
	}
	top, rest, found := strings.Cut(rel, "/")
	if !found || !slices.Contains(trackedDirs, top) {
		return false
	}
	for _, part := range strings.Split(rest, "/") {
		if strings.HasPrefix(part, ".") {
			return false
		}
	}
	base := path.Base(rel)
	return !strings.HasSuffix(base, ".tmp") && !strings.HasSuffix(base, "~") && !strings.HasSuffix(base, ".swp")
}

// trackedPath reports whether rel may be given to Commit or History: a
// tracked root, a tracked file, or a directory inside a tracked directory.
func trackedPath(rel string) bool {
	if slices.Contains(trackedDirs, rel) || IsTracked(rel) {
		return true
	}
	top, rest, found := strings.Cut(rel, "/")
	if !found || !slices.Contains(trackedDirs, top) {
		return false
	}
	for _, part := range strings.Split(rest, "/") {
		if strings.HasPrefix(part, ".") {
			return false
		}
	}
	return true
}

// cleanRel cleans a slash-separated relative path; ok is false for absolute
// paths and paths leaving the data dir.
func cleanRel(rel string) (string, bool) {
	if rel == "" || strings.HasPrefix(rel, "/") || strings.Contains(rel, "\\") {
		return "", false
	}
	c := path.Clean(rel)
	if c == "." || c == ".." || strings.HasPrefix(c, "../") {
		return "", false
	}
	return c, true
}

// under reports whether name is p or inside directory p.
func under(name, p string) bool {
	return name == p || strings.HasPrefix(name, p+"/")
}

// gitignore mirrors IsTracked for people who run git in the data dir.
const gitignore = `# Reverie versions only the files people and the assistant edit as text.
# The database, logs, secrets, the workspace, archive/ and config.yaml (it may
# hold secrets) stay out. Reverie decides what it commits in code; this file
# only keeps "git status" quiet for people who use git by hand.
/*
!/BASE_PROMPT.txt
!/MEMORIES.txt
!/world_state.json
!/prompts/
!/skills/
.*
*.tmp
*~
*.swp
`

// Author signs the commits.
type Author struct {
	Name  string
	Email string
}

// Options configure Open.
type Options struct {
	// Now is the clock for commit times (nil: time.Now).
	Now func() time.Time
	// Logger receives warnings about repairs (nil: discarded).
	Logger *slog.Logger
	// Author signs commits (zero: DefaultAuthorName <DefaultAuthorEmail>).
	Author Author
	// ReadOnly opens an existing repository for History, Head and Show
	// only, changing nothing on disk (no initialisation, repair or index
	// rebuild): for reading while an agent may be writing. A missing or
	// unusable repository is ErrNoHistory; Commit and Restore fail with
	// ErrReadOnly.
	ReadOnly bool
}

// Revision is one commit of the history.
type Revision struct {
	// Hash is the full commit hash; "" for the zero Revision (nothing was
	// committed).
	Hash string `json:"hash"`
	// Short is the abbreviated hash shown to people.
	Short string `json:"short"`
	// Time is the commit time.
	Time time.Time `json:"time"`
	// Message is the full commit message.
	Message string `json:"message"`
	// Files are the paths the commit added, changed or removed, sorted.
	Files []string `json:"files"`
}

// IsZero reports whether r is the zero Revision (nothing was committed).
func (r Revision) IsZero() bool { return r.Hash == "" }

// Subject is the first line of the message.
func (r Revision) Subject() string {
	s, _, _ := strings.Cut(r.Message, "\n")
	return strings.TrimSpace(s)
}

// Diff is one commit with its patch.
type Diff struct {
	Revision
	// Patch is the unified diff against the commit's parent (against
	// nothing for the first commit).
	Patch string `json:"patch"`
}

// Repo is the versioned data dir. It is safe for concurrent use.
type Repo struct {
	dir     string
	now     func() time.Time
	log     *slog.Logger
	author  Author
	created bool
	ro      bool
	// readFile reads a tracked file's content (os.ReadFile; tests count
	// the reads).
	readFile func(string) ([]byte, error)

	mu  sync.Mutex
	git *gitRepo
}

// Open opens the repository in dir (the data dir, which must exist),
// initialising it when there is none and replacing an unusable one after
// moving it aside (see the package documentation). The index is brought in
// line with the head commit. Open commits nothing: call CommitAll to record
// edits made while no agent was running.
func Open(dir string, opts Options) (*Repo, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Author.Name == "" {
		opts.Author.Name = DefaultAuthorName
	}
	if opts.Author.Email == "" {
		opts.Author.Email = DefaultAuthorEmail
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open data dir history: %w", err)
	}
	if fi, err := os.Stat(abs); err != nil {
		return nil, fmt.Errorf("open data dir history: %w", err)
	} else if !fi.IsDir() {
		return nil, fmt.Errorf("open data dir history: %s is not a directory", abs)
	}
	r := &Repo{dir: abs, now: opts.Now, log: opts.Logger, author: opts.Author, ro: opts.ReadOnly, readFile: os.ReadFile}
	gitPath := filepath.Join(abs, GitDir)
	if opts.ReadOnly {
		if _, err := os.Lstat(gitPath); err != nil {
			return nil, fmt.Errorf("%w (%s)", ErrNoHistory, abs)
		}
		if err := r.open(); err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrNoHistory, gitPath, err)
		}
		r.git.objects.release()
		return r, nil
	}
	if _, err := os.Lstat(gitPath); errors.Is(err, os.ErrNotExist) {
		if err := r.init(); err != nil {
			return nil, err
		}
	} else if err != nil {
		return nil, fmt.Errorf("open data dir history: %w", err)
	} else if oerr := r.open(); oerr != nil {
		aside, err := moveAside(gitPath, opts.Now())
		if err != nil {
			return nil, fmt.Errorf("data dir history is unusable (%v) and could not be moved aside: %w", oerr, err)
		}
		r.log.Warn("data dir history was unusable; kept it aside and started a new one",
			"err", oerr, "kept", aside)
		if err := r.init(); err != nil {
			return nil, err
		}
	}
	if err := r.writeGitignore(); err != nil {
		return nil, err
	}
	if err := r.syncIndex(); err != nil {
		return nil, err
	}
	r.git.objects.release()
	return r, nil
}

// unlock ends an operation begun by locking r.mu: the object store drops
// what it reuses only within one (release), then r.mu is released.
func (r *Repo) unlock() {
	r.git.objects.release()
	r.mu.Unlock()
}

// Created reports whether Open started a new repository (there was none, or
// the old one was unusable).
func (r *Repo) Created() bool { return r.created }

// Dir is the data dir.
func (r *Repo) Dir() string { return r.dir }

// gitConfig is the config of a new repository: what git init writes.
const gitConfig = `[core]
	repositoryformatversion = 0
	filemode = true
	bare = false
	logallrefupdates = true
`

// init creates an empty repository whose HEAD names Branch.
func (r *Repo) init() error {
	gitDir := filepath.Join(r.dir, GitDir)
	if err := os.Mkdir(gitDir, 0o700); err != nil {
		return fmt.Errorf("initialise data dir history: %w", err)
	}
	for _, d := range []string{"objects/info", "objects/pack", "refs/heads", "refs/tags"} {
		if err := os.MkdirAll(filepath.Join(gitDir, filepath.FromSlash(d)), 0o700); err != nil {
			return fmt.Errorf("initialise data dir history: %w", err)
		}
	}
	for _, f := range []struct{ name, content string }{
		{"config", gitConfig},
		{"description", "Reverie data dir history\n"},
		{"HEAD", "ref: refs/heads/" + Branch + "\n"},
	} {
		if err := datadir.WriteFile(filepath.Join(gitDir, f.name), []byte(f.content), 0o600); err != nil {
			return fmt.Errorf("initialise data dir history: %w", err)
		}
	}
	r.git, r.created = newGitRepo(gitDir), true
	return nil
}

// open opens an existing repository and checks that its head commit and
// tree can be read and that every blob of that tree is stored.
func (r *Repo) open() error {
	gitDir := filepath.Join(r.dir, GitDir)
	for _, d := range []string{"objects", "refs"} {
		fi, err := os.Stat(filepath.Join(gitDir, d))
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			return fmt.Errorf("%s is not a directory", filepath.Join(gitDir, d))
		}
	}
	g := newGitRepo(gitDir)
	_, id, ok, err := g.readHead()
	if err != nil {
		return err
	}
	if ok {
		c, err := g.objects.readCommit(id)
		if err != nil {
			return fmt.Errorf("read head commit %s: %w", id, err)
		}
		if err := g.objects.walkTree(c.tree, "", map[string]treeFile{}, true); err != nil {
			return fmt.Errorf("read head tree: %w", err)
		}
	}
	r.git = g
	return nil
}

func (r *Repo) writeGitignore() error {
	p := filepath.Join(r.dir, GitignoreFile)
	if _, err := os.Lstat(p); err == nil {
		return nil
	}
	if err := os.WriteFile(p, []byte(gitignore), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", GitignoreFile, err)
	}
	return nil
}

// headCommit returns the head commit, nil when there is none yet.
func (r *Repo) headCommit() (*commit, error) {
	_, id, ok, err := r.git.readHead()
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, nil
	}
	c, err := r.git.objects.readCommit(id)
	if err != nil {
		return nil, fmt.Errorf("read head commit: %w", err)
	}
	return c, nil
}

func (r *Repo) indexPath() string { return filepath.Join(r.git.dir, "index") }

// syncIndex makes the index list exactly the head commit's files, rebuilding
// it when it is unreadable or disagrees: commits are built from the index, so
// a stale one would silently drop or resurrect files.
func (r *Repo) syncIndex() error {
	head, err := r.headCommit()
	if err != nil {
		return err
	}
	want, err := treeFiles(head)
	if err != nil {
		return err
	}
	idx, ierr := readIndex(r.indexPath())
	if ierr == nil && indexMatches(idx, want) {
		return nil
	}
	if ierr != nil && !r.created {
		r.log.Warn("data dir history index was unreadable; rebuilt it from the last commit", "err", ierr)
	} else if ierr == nil && len(idx) > 0 {
		r.log.Info("data dir history index disagreed with the last commit; rebuilt it")
	}
	return r.resetIndex(want)
}

func indexMatches(idx []indexEntry, want map[string]treeFile) bool {
	if len(idx) != len(want) {
		return false
	}
	for _, e := range idx {
		w, ok := want[e.name]
		if !ok || w.id != e.id || w.mode != e.mode || e.stage != 0 {
			return false
		}
	}
	return true
}

// resetIndex writes an index listing files, with the stat data of the
// files on disk that hold exactly the committed content (so git trusts
// them without hashing); the others are left for git to check by content.
func (r *Repo) resetIndex(files map[string]treeFile) error {
	entries := make([]indexEntry, 0, len(files))
	for name, f := range files {
		e := indexEntry{name: name, id: f.id, mode: f.mode}
		e.stat, _ = r.diskStat(name, f)
		entries = append(entries, e)
	}
	if err := r.writeIndex(entries); err != nil {
		return fmt.Errorf("write data dir history index: %w", err)
	}
	return nil
}

// diskStat returns the stat data of the file name when it is a regular file
// holding the blob f with f's mode.
func (r *Repo) diskStat(name string, f treeFile) (statData, bool) {
	full := filepath.Join(r.dir, filepath.FromSlash(name))
	info, err := os.Lstat(full)
	if err != nil || !info.Mode().IsRegular() || info.Size() > MaxFileBytes {
		return statData{}, false
	}
	if (info.Mode()&0o111 != 0) != (f.mode == modeExec) || !isFileMode(f.mode) || f.mode == modeSymlink {
		return statData{}, false
	}
	data, err := os.ReadFile(full)
	if err != nil || hashObject(objBlob, data) != f.id {
		return statData{}, false
	}
	return statOf(info), true
}

// writeIndex replaces the index atomically (temp file, rename). It is not
// synced: the index is a cache of the head commit, and one a crash left
// stale or empty is rebuilt by the next Open (syncIndex). The ref written
// after it is synced.
func (r *Repo) writeIndex(entries []indexEntry) (err error) {
	p := r.indexPath()
	tmp, err := os.CreateTemp(filepath.Dir(p), ".index.*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			os.Remove(tmp.Name())
		}
	}()
	_, err = tmp.Write(encodeIndex(entries))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(tmp.Name(), p)
}

// moveAside renames p to p.corrupt-<UTC timestamp>, never replacing an
// earlier one.
func moveAside(p string, now time.Time) (string, error) {
	base := p + ".corrupt-" + now.UTC().Format("20060102T150405Z")
	target := base
	for i := 1; ; i++ {
		if _, err := os.Lstat(target); errors.Is(err, os.ErrNotExist) {
			break
		}
		target = fmt.Sprintf("%s-%d", base, i)
	}
	if err := os.Rename(p, target); err != nil {
		return "", err
	}
	return target, nil
}
