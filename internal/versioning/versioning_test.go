package versioning

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// clock is a deterministic clock that advances a second per call.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(time.Second)
	return c.t
}

func newClock() *clock { return &clock{t: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)} }

func write(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func read(t testing.TB, dir, rel string) (string, bool) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(data), true
}

// dataDir returns a data dir with the usual files, tracked and not.
func dataDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for rel, content := range map[string]string{
		"MEMORIES.txt":            "likes tea\n",
		"BASE_PROMPT.txt":         "You are Reverie.\n",
		"world_state.json":        "{\"version\": 1}\n",
		"skills/brew.md":          "Brew tea\n\nBoil water.\n",
		"prompts/SEED_en.txt":     "Hello.\n",
		"config.yaml":             "log:\n  level: info\n",
		"reverie.db":              "SQLite format 3",
		"reverie.db-wal":          "wal",
		".lock":                   "123\n",
		"logs/reverie.log":        "log line\n",
		"workspace/notes.md":      "scratch\n",
		"archive/old.txt":         "old\n",
		"secrets/token":           "s3cr3t\n",
		"skills/.brew.md.123.tmp": "partial",
		"skills/brew.md~":         "backup",
		"skills/.hidden/x.md":     "hidden",
	} {
		write(t, dir, rel, content)
	}
	return dir
}

func open(t testing.TB, dir string, opts ...func(*Options)) *Repo {
	t.Helper()
	o := Options{Now: newClock().now}
	for _, f := range opts {
		f(&o)
	}
	r, err := Open(dir, o)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// headFiles lists the files of the head commit.
func headFiles(t testing.TB, r *Repo) []string {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.headCommit()
	if err != nil {
		t.Fatal(err)
	}
	files, err := treeFiles(c)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for name := range files {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

var trackedSet = []string{"BASE_PROMPT.txt", "MEMORIES.txt", "prompts/SEED_en.txt", "skills/brew.md", "world_state.json"}

func TestIsTracked(t *testing.T) {
	tests := []struct {
		name string
		rel  string
		want bool
	}{
		{"memories", "MEMORIES.txt", true},
		{"base prompt", "BASE_PROMPT.txt", true},
		{"world state", "world_state.json", true},
		{"skill", "skills/brew.md", true},
		{"nested skill", "skills/tea/green.md", true},
		{"prompt", "prompts/COMPACTION_PROMPT.txt", true},
		{"config", "config.yaml", false},
		{"database", "reverie.db", false},
		{"database wal", "reverie.db-wal", false},
		{"log", "logs/reverie.log", false},
		{"workspace", "workspace/a.md", false},
		{"archive", "archive/MEMORIES.txt", false},
		{"lock", ".lock", false},
		{"git dir", ".git/HEAD", false},
		{"corrupt world kept aside", "world_state.json.corrupt-20250101T000000Z", false},
		{"temp file in skills", "skills/.brew.md.1.tmp", false},
		{"tmp suffix", "skills/brew.tmp", false},
		{"backup", "skills/brew.md~", false},
		{"swap", "prompts/x.swp", false},
		{"hidden dir", "skills/.cache/x.md", false},
		{"skills dir itself", "skills", false},
		{"escape", "skills/../config.yaml", false},
		{"absolute", "/MEMORIES.txt", false},
		{"empty", "", false},
		{"under a file", "MEMORIES.txt/x", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsTracked(tc.rel); got != tc.want {
				t.Errorf("IsTracked(%q) = %v, want %v", tc.rel, got, tc.want)
			}
		})
	}
}

func TestCommitAllTracksOnlyEditableFiles(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	if !r.Created() {
		t.Error("Created = false for a new repository")
	}
	if _, ok := read(t, dir, GitignoreFile); !ok {
		t.Error("no .gitignore written")
	}
	rev, err := r.CommitAll(t.Context(), "initial state")
	if err != nil {
		t.Fatal(err)
	}
	if rev.IsZero() || len(rev.Short) != shortLen || !strings.HasPrefix(rev.Hash, rev.Short) {
		t.Fatalf("revision = %+v", rev)
	}
	if !reflect.DeepEqual(rev.Files, trackedSet) {
		t.Errorf("files = %v, want %v", rev.Files, trackedSet)
	}
	if got := headFiles(t, r); !reflect.DeepEqual(got, trackedSet) {
		t.Errorf("head tree = %v, want %v", got, trackedSet)
	}
	if rev.Message != "initial state" || rev.Subject() != "initial state" {
		t.Errorf("message = %q", rev.Message)
	}
	if want := time.Date(2025, 3, 1, 12, 0, 1, 0, time.UTC); !rev.Time.Equal(want) {
		t.Errorf("time = %v, want %v", rev.Time, want)
	}

	again, err := r.CommitAll(t.Context(), "nothing changed")
	if err != nil || !again.IsZero() {
		t.Errorf("second CommitAll = %+v, %v; want zero revision", again, err)
	}
	// Untracked files changing is no change either.
	write(t, dir, "config.yaml", "log:\n  level: debug\n")
	write(t, dir, "reverie.db", "other")
	if again, err := r.CommitAll(t.Context(), "still nothing"); err != nil || !again.IsZero() {
		t.Errorf("CommitAll after untracked edits = %+v, %v; want zero revision", again, err)
	}

	// A reopened repository is not new and has the same head.
	r2 := open(t, dir)
	if r2.Created() {
		t.Error("Created = true for an existing repository")
	}
	head, err := r2.Head(t.Context())
	if err != nil || head.Hash != rev.Hash {
		t.Errorf("head after reopen = %+v, %v; want %s", head, err, rev.Hash)
	}
}

func TestCommitPaths(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	ctx := t.Context()
	if _, err := r.CommitAll(ctx, "initial"); err != nil {
		t.Fatal(err)
	}

	// Only the named path is committed.
	write(t, dir, "MEMORIES.txt", "likes tea\nlives in Leeds\n")
	write(t, dir, "skills/brew.md", "Brew tea better\n")
	rev, err := r.Commit(ctx, "memory: append", "MEMORIES.txt")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(rev.Files, []string{"MEMORIES.txt"}) {
		t.Errorf("files = %v", rev.Files)
	}
	// Absolute paths inside the data dir and OS separators work.
	rev, err = r.Commit(ctx, "skills: edit", filepath.Join(dir, "skills", "brew.md"))
	if err != nil || !reflect.DeepEqual(rev.Files, []string{"skills/brew.md"}) {
		t.Errorf("absolute path commit = %+v, %v", rev, err)
	}

	// A deletion inside a directory is recorded when the directory is named.
	if err := os.Remove(filepath.Join(dir, "skills", "brew.md")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "skills/tea/green.md", "Green tea\n")
	rev, err = r.Commit(ctx, "skills: reorganise", "skills")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"skills/brew.md", "skills/tea/green.md"}; !reflect.DeepEqual(rev.Files, want) {
		t.Errorf("files = %v, want %v", rev.Files, want)
	}
	// Deleting a named file works too.
	if err := os.Remove(filepath.Join(dir, "world_state.json")); err != nil {
		t.Fatal(err)
	}
	rev, err = r.Commit(ctx, "world: removed", "world_state.json")
	if err != nil || !reflect.DeepEqual(rev.Files, []string{"world_state.json"}) {
		t.Errorf("deletion commit = %+v, %v", rev, err)
	}
	want := []string{"BASE_PROMPT.txt", "MEMORIES.txt", "prompts/SEED_en.txt", "skills/tea/green.md"}
	if got := headFiles(t, r); !reflect.DeepEqual(got, want) {
		t.Errorf("head tree = %v, want %v", got, want)
	}
}

func TestCommitRefusesBadInput(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	ctx := t.Context()
	tests := []struct {
		name    string
		message string
		paths   []string
		want    error
	}{
		{"config", "x", []string{"config.yaml"}, ErrNotTracked},
		{"database", "x", []string{"reverie.db"}, ErrNotTracked},
		{"escape", "x", []string{"../etc/passwd"}, ErrNotTracked},
		{"escape through a tracked dir", "x", []string{"skills/../../x"}, ErrNotTracked},
		{"absolute outside", "x", []string{"/etc/passwd"}, ErrNotTracked},
		{"hidden file in skills", "x", []string{"skills/.x.tmp"}, ErrNotTracked},
		{"one bad among good", "x", []string{"MEMORIES.txt", "logs"}, ErrNotTracked},
		{"empty message", " ", []string{"MEMORIES.txt"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rev, err := r.Commit(ctx, tc.message, tc.paths...)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) {
				t.Fatalf("Commit = %+v, %v; want error %v", rev, err, tc.want)
			}
		})
	}
	if h, _ := r.Head(ctx); !h.IsZero() {
		t.Errorf("something was committed: %+v", h)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := r.CommitAll(cctx, "cancelled"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled commit = %v", err)
	}
}

func TestHistoryAndShow(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	ctx := t.Context()
	first, err := r.CommitAll(ctx, "initial")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "MEMORIES.txt", "likes coffee\n")
	mem, err := r.Commit(ctx, "memory: rewrite", "MEMORIES.txt")
	if err != nil {
		t.Fatal(err)
	}
	write(t, dir, "skills/grind.md", "Grind beans\n")
	sk, err := r.Commit(ctx, "skills: add grind", "skills")
	if err != nil {
		t.Fatal(err)
	}

	hist, err := r.History(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := hashes(hist); !reflect.DeepEqual(got, []string{sk.Hash, mem.Hash, first.Hash}) {
		t.Errorf("history = %v", got)
	}
	tests := []struct {
		name  string
		path  string
		limit int
		want  []string
	}{
		{"memories", "MEMORIES.txt", 0, []string{mem.Hash, first.Hash}},
		{"skills dir", "skills", 0, []string{sk.Hash, first.Hash}},
		{"one skill", "skills/grind.md", 0, []string{sk.Hash}},
		{"untouched since start", "BASE_PROMPT.txt", 0, []string{first.Hash}},
		{"limit", "", 2, []string{sk.Hash, mem.Hash}},
		{"never existed", "skills/none.md", 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h, err := r.History(ctx, tc.path, tc.limit)
			if err != nil {
				t.Fatal(err)
			}
			if got := hashes(h); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("History(%q, %d) = %v, want %v", tc.path, tc.limit, got, tc.want)
			}
		})
	}
	if _, err := r.History(ctx, "config.yaml", 0); !errors.Is(err, ErrNotTracked) {
		t.Errorf("history of config.yaml = %v, want ErrNotTracked", err)
	}

	d, err := r.Show(ctx, mem.Short)
	if err != nil {
		t.Fatal(err)
	}
	if d.Hash != mem.Hash || !strings.Contains(d.Patch, "-likes tea") || !strings.Contains(d.Patch, "+likes coffee") ||
		!strings.Contains(d.Patch, "MEMORIES.txt") {
		t.Errorf("show = %+v\n%s", d.Revision, d.Patch)
	}
	root, err := r.Show(ctx, first.Hash)
	if err != nil || !strings.Contains(root.Patch, "+Boil water.") {
		t.Errorf("show of the first commit = %v\n%s", err, root.Patch)
	}
	prev, err := r.Show(ctx, "HEAD~1")
	if err != nil || prev.Hash != mem.Hash {
		t.Errorf("show HEAD~1 = %+v, %v", prev.Revision, err)
	}
	for _, bad := range []string{"", "zz", "abc", "0000000", "HEAD~9", strings.Repeat("f", 41), "no-such-branch"} {
		if _, err := r.Show(ctx, bad); !errors.Is(err, ErrUnknownRevision) {
			t.Errorf("show %q = %v, want ErrUnknownRevision", bad, err)
		}
	}
}

func hashes(revs []Revision) []string {
	var out []string
	for _, r := range revs {
		out = append(out, r.Hash)
	}
	return out
}

// snapshot reads every tracked file on disk.
func snapshot(t testing.TB, r *Repo) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range Tracked() {
		files, err := r.scan(root)
		if err != nil {
			t.Fatal(err)
		}
		for name, f := range files {
			data, err := os.ReadFile(f.full)
			if err != nil {
				t.Fatal(err)
			}
			out[name] = string(data)
		}
	}
	return out
}

func TestRestoreAndRestoreTheRestore(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	ctx := t.Context()
	v1, err := r.CommitAll(ctx, "v1")
	if err != nil {
		t.Fatal(err)
	}
	state1 := snapshot(t, r)

	write(t, dir, "MEMORIES.txt", "likes coffee\n")
	write(t, dir, "skills/grind.md", "Grind beans\n")
	write(t, dir, "skills/deep/nested.md", "Nested\n")
	if err := os.Remove(filepath.Join(dir, "skills", "brew.md")); err != nil {
		t.Fatal(err)
	}
	v2, err := r.CommitAll(ctx, "v2")
	if err != nil {
		t.Fatal(err)
	}
	state2 := snapshot(t, r)

	// An uncommitted edit is saved before the restore, so it is not lost.
	write(t, dir, "world_state.json", "{\"version\": 1, \"project\": \"x\"}\n")
	state3 := snapshot(t, r)

	rest, err := r.Restore(ctx, v1.Short)
	if err != nil {
		t.Fatal(err)
	}
	if rest.Subject() != "restore "+v1.Short {
		t.Errorf("restore subject = %q", rest.Subject())
	}
	if got := snapshot(t, r); !reflect.DeepEqual(got, state1) {
		t.Errorf("after restore:\n%v\nwant\n%v", got, state1)
	}
	if _, err := os.Stat(filepath.Join(dir, "skills", "deep")); !os.IsNotExist(err) {
		t.Errorf("emptied directory left behind: %v", err)
	}
	// Untracked files are never touched.
	if got, _ := read(t, dir, "config.yaml"); got != "log:\n  level: info\n" {
		t.Errorf("config.yaml changed: %q", got)
	}
	if _, ok := read(t, dir, "skills/brew.md~"); !ok {
		t.Error("an untracked file in skills/ was removed")
	}

	hist, err := r.History(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(hist) != 4 || hist[1].Subject() != "uncommitted changes before restore "+v1.Short || hist[2].Hash != v2.Hash {
		t.Fatalf("history = %+v", hist)
	}
	saved := hist[1]

	// Restoring the saved state (the restore's parent) undoes the restore.
	if _, err := r.Restore(ctx, saved.Hash); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, r); !reflect.DeepEqual(got, state3) {
		t.Errorf("after restoring the restore:\n%v\nwant\n%v", got, state3)
	}
	// And back to v2 exactly.
	if _, err := r.Restore(ctx, v2.Hash); err != nil {
		t.Fatal(err)
	}
	if got := snapshot(t, r); !reflect.DeepEqual(got, state2) {
		t.Errorf("after restoring v2:\n%v\nwant\n%v", got, state2)
	}
	// Restoring what the history already ends with changes nothing.
	noop, err := r.Restore(ctx, "HEAD")
	if err != nil || !noop.IsZero() {
		t.Errorf("restore HEAD = %+v, %v; want zero revision", noop, err)
	}
	if _, err := r.Restore(ctx, "deadbeef"); !errors.Is(err, ErrUnknownRevision) {
		t.Errorf("restore unknown = %v", err)
	}
	if len(hashes(mustHistory(t, r))) != 6 {
		t.Errorf("history after restores = %d commits, want 6", len(mustHistory(t, r)))
	}
}

func mustHistory(t testing.TB, r *Repo) []Revision {
	t.Helper()
	h, err := r.History(t.Context(), "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestOpenRepairsCorruptRepository(t *testing.T) {
	tests := []struct {
		name   string
		break_ func(t *testing.T, dir string)
	}{
		{"git dir is a garbage file", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, GitDir)); err != nil {
				t.Fatal(err)
			}
			write(t, dir, GitDir, "garbage\n")
		}},
		{"HEAD is garbage", func(t *testing.T, dir string) {
			write(t, dir, ".git/HEAD", "\x00\x01 not a ref")
		}},
		{"head commit missing", func(t *testing.T, dir string) {
			if err := os.RemoveAll(filepath.Join(dir, GitDir, "objects")); err != nil {
				t.Fatal(err)
			}
			if err := os.MkdirAll(filepath.Join(dir, GitDir, "objects"), 0o700); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := dataDir(t)
			r := open(t, dir)
			if _, err := r.CommitAll(t.Context(), "initial"); err != nil {
				t.Fatal(err)
			}
			tc.break_(t, dir)

			var logs bytes.Buffer
			r2 := open(t, dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			if !r2.Created() {
				t.Error("Created = false after replacing a corrupt repository")
			}
			kept, _ := filepath.Glob(filepath.Join(dir, GitDir+".corrupt-*"))
			if len(kept) != 1 {
				t.Fatalf("corrupt repository not kept aside: %v", kept)
			}
			if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), kept[0]) {
				t.Errorf("no warning naming the kept copy: %s", logs.String())
			}
			rev, err := r2.CommitAll(t.Context(), "start again")
			if err != nil || !reflect.DeepEqual(rev.Files, trackedSet) {
				t.Errorf("commit after repair = %+v, %v", rev, err)
			}
		})
	}
}

func TestOpenRebuildsIndex(t *testing.T) {
	tests := []struct {
		name  string
		index []byte
	}{
		{"garbage", []byte("not an index")},
		{"empty", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := dataDir(t)
			r := open(t, dir)
			first, err := r.CommitAll(t.Context(), "initial")
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, GitDir, "index"), tc.index, 0o600); err != nil {
				t.Fatal(err)
			}
			r2 := open(t, dir)
			if r2.Created() {
				t.Error("a bad index replaced the whole repository")
			}
			// Nothing changed: a stale index would record deletions here.
			if rev, err := r2.CommitAll(t.Context(), "nothing"); err != nil || !rev.IsZero() {
				t.Errorf("CommitAll = %+v, %v; want zero revision", rev, err)
			}
			write(t, dir, "MEMORIES.txt", "new\n")
			rev, err := r2.Commit(t.Context(), "memory", "MEMORIES.txt")
			if err != nil || !reflect.DeepEqual(rev.Files, []string{"MEMORIES.txt"}) {
				t.Errorf("commit = %+v, %v", rev, err)
			}
			if h := mustHistory(t, r2); len(h) != 2 || h[1].Hash != first.Hash {
				t.Errorf("history = %v", hashes(h))
			}
		})
	}
}

func TestOpenRefusesMissingDir(t *testing.T) {
	if _, err := Open(filepath.Join(t.TempDir(), "absent"), Options{}); err == nil {
		t.Fatal("Open of a missing dir succeeded")
	}
}

func TestConcurrentCommits(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	ctx := t.Context()
	if _, err := r.CommitAll(ctx, "initial"); err != nil {
		t.Fatal(err)
	}
	const writers, each = 6, 8
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*2)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				rel := fmt.Sprintf("skills/w%d-%d.md", w, i)
				write(t, dir, rel, fmt.Sprintf("skill %d %d\n", w, i))
				if _, err := r.Commit(ctx, "skills: add "+rel, rel); err != nil {
					errs <- err
				}
				if _, err := r.History(ctx, "skills", 3); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	files := headFiles(t, r)
	if len(files) != len(trackedSet)+writers*each {
		t.Errorf("head has %d files, want %d", len(files), len(trackedSet)+writers*each)
	}
	if h := mustHistory(t, r); len(h) != 1+writers*each {
		t.Errorf("history has %d commits, want %d", len(h), 1+writers*each)
	}
}

// TestGitInterop checks the repository with the real git binary when there
// is one: the objects are sound, and git sees a clean tree.
func TestGitInterop(t *testing.T) {
	gitBin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("no git binary")
	}
	dir := dataDir(t)
	r := open(t, dir)
	ctx := t.Context()
	if _, err := r.CommitAll(ctx, "initial"); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "skills/new.md", "New\n")
	if _, err := r.Commit(ctx, "skills: new", "skills"); err != nil {
		t.Fatal(err)
	}
	v, err := r.Restore(ctx, "HEAD~1")
	if err != nil || v.IsZero() {
		t.Fatalf("restore = %+v, %v", v, err)
	}
	runGit := func(args ...string) string {
		cmd := exec.CommandContext(ctx, gitBin, append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	runGit("fsck", "--strict")
	if st := runGit("status", "--porcelain", "--untracked-files=all"); st != "" {
		t.Errorf("git status is not clean:\n%s", st)
	}
	if log := runGit("log", "--format=%s"); !strings.HasPrefix(log, "restore ") {
		t.Errorf("git log:\n%s", log)
	}
}

func TestReadOnly(t *testing.T) {
	dir := dataDir(t)
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrNoHistory) {
		t.Fatalf("read-only Open without history = %v, want ErrNoHistory", err)
	}
	for _, name := range []string{GitDir, GitignoreFile} {
		if _, err := os.Lstat(filepath.Join(dir, name)); !os.IsNotExist(err) {
			t.Errorf("read-only Open created %s", name)
		}
	}
	rw := open(t, dir)
	first, err := rw.CommitAll(t.Context(), "initial")
	if err != nil {
		t.Fatal(err)
	}
	ro, err := Open(dir, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if h, err := ro.History(t.Context(), "", 0); err != nil || len(h) != 1 || h[0].Hash != first.Hash {
		t.Errorf("read-only history = %v, %v", hashes(h), err)
	}
	if _, err := ro.Show(t.Context(), first.Short); err != nil {
		t.Errorf("read-only show: %v", err)
	}
	write(t, dir, "MEMORIES.txt", "changed\n")
	if _, err := ro.CommitAll(t.Context(), "x"); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only commit = %v", err)
	}
	if _, err := ro.Restore(t.Context(), first.Short); !errors.Is(err, ErrReadOnly) {
		t.Errorf("read-only restore = %v", err)
	}
	write(t, dir, ".git/HEAD", "garbage")
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrNoHistory) {
		t.Errorf("read-only Open of a corrupt history = %v", err)
	}
	if m, _ := filepath.Glob(filepath.Join(dir, GitDir+".corrupt-*")); len(m) != 0 {
		t.Errorf("read-only Open moved the history aside: %v", m)
	}
}

func TestBigFileLeftOut(t *testing.T) {
	dir := dataDir(t)
	big := make([]byte, MaxFileBytes+1)
	if err := os.WriteFile(filepath.Join(dir, "skills", "huge.md"), big, 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	r := open(t, dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	rev, err := r.CommitAll(t.Context(), "initial")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(rev.Files, "skills/huge.md") || !strings.Contains(logs.String(), "too big") {
		t.Errorf("big file: files %v, logs %s", rev.Files, logs.String())
	}
}

// TestCommitKeepsNoCompressor: the zlib writer that compresses a commit's
// objects is dropped after the commit (an idle agent kept ~800 KB of it),
// and the next commit compresses its objects again.
func TestCommitKeepsNoCompressor(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	for i, content := range []string{"one\n", "two\n"} {
		write(t, dir, "MEMORIES.txt", content)
		if _, err := r.CommitAll(t.Context(), fmt.Sprintf("commit %d", i)); err != nil {
			t.Fatal(err)
		}
		r.mu.Lock()
		zw := r.git.objects.zw
		r.mu.Unlock()
		if zw != nil {
			t.Fatalf("commit %d: the store keeps its zlib writer", i)
		}
	}
	if got := headFiles(t, r); !slices.Contains(got, "MEMORIES.txt") {
		t.Fatalf("head files %v", got)
	}
}

// A commit reads only the files whose stat data does not show them
// unchanged since the index was written, as git does, and still reads a
// racily clean one (modified no earlier than the index).
func TestCommitReadsOnlyChangedFiles(t *testing.T) {
	dir := dataDir(t)
	past := time.Now().Add(-time.Hour)
	for _, rel := range []string{"MEMORIES.txt", "BASE_PROMPT.txt", "world_state.json", "skills/brew.md", "prompts/SEED_en.txt"} {
		if err := os.Chtimes(filepath.Join(dir, rel), past, past); err != nil {
			t.Fatal(err)
		}
	}
	r := open(t, dir)
	ctx := t.Context()
	if _, err := r.CommitAll(ctx, "v1"); err != nil {
		t.Fatal(err)
	}
	var read []string
	r.readFile = func(p string) ([]byte, error) {
		rel, _ := filepath.Rel(dir, p)
		read = append(read, filepath.ToSlash(rel))
		return os.ReadFile(p)
	}
	commit := func(step string, wantRead []string, wantCommit bool) {
		t.Helper()
		read = nil
		rev, err := r.CommitAll(ctx, step)
		if err != nil {
			t.Fatal(err)
		}
		slices.Sort(read)
		if !slices.Equal(read, wantRead) {
			t.Errorf("%s: read %v, want %v", step, read, wantRead)
		}
		if got := !rev.IsZero(); got != wantCommit {
			t.Errorf("%s: committed %v, want %v", step, got, wantCommit)
		}
	}
	commit("nothing changed", nil, false)

	if err := os.WriteFile(filepath.Join(dir, "skills/brew.md"), []byte("Brew tea\n\nBoil water twice.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	commit("an edit", []string{"skills/brew.md"}, true)

	// Rewritten with the same content: read once, not committed, and its
	// new stat data kept so that the next commit does not read it.
	if err := os.WriteFile(filepath.Join(dir, "MEMORIES.txt"), []byte("likes tea\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(filepath.Join(dir, "MEMORIES.txt"), past, past); err != nil {
		t.Fatal(err)
	}
	commit("rewritten unchanged", []string{"MEMORIES.txt"}, false)
	commit("nothing changed again", nil, false)

	// Modified after the index was written (a clock ahead, or an edit in
	// the index's own instant): its stat data cannot be trusted.
	future := time.Now().Add(time.Hour)
	if err := os.Chtimes(filepath.Join(dir, "BASE_PROMPT.txt"), future, future); err != nil {
		t.Fatal(err)
	}
	commit("racily clean", []string{"BASE_PROMPT.txt"}, false)
	commit("still racily clean", []string{"BASE_PROMPT.txt"}, false)
}
