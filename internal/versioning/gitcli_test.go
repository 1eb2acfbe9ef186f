package versioning

import (
	"bytes"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

// These tests run the real git binary against repositories this package
// wrote, and this package against repositories git changed. They are
// skipped, saying so, where git is not installed.

// gitCLI runs git in dir with no user or system configuration.
type gitCLI struct {
	t   testing.TB
	bin string
	dir string
	env []string
}

func newGitCLI(t testing.TB, dir string) *gitCLI {
	t.Helper()
	bin, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed: the git interoperability tests need it (apt-get install git)")
	}
	home := t.TempDir()
	return &gitCLI{t: t, bin: bin, dir: dir, env: append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1", "HOME="+home,
		"GIT_AUTHOR_NAME=Git User", "GIT_AUTHOR_EMAIL=user@example.org",
		"GIT_COMMITTER_NAME=Git User", "GIT_COMMITTER_EMAIL=user@example.org",
		"LC_ALL=C", "TZ=UTC")}
}

// run runs git and returns its standard output; a failure fails the test.
func (g *gitCLI) run(args ...string) string {
	g.t.Helper()
	out, err := g.try(nil, args...)
	if err != nil {
		g.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return out
}

func (g *gitCLI) try(stdin []byte, args ...string) (string, error) {
	cmd := exec.Command(g.bin, append([]string{"-C", g.dir}, args...)...)
	cmd.Env = g.env
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String() + stderr.String(), err
	}
	return stdout.String(), nil
}

// checkClean asserts git finds the repository sound and the tree clean.
func (g *gitCLI) checkClean() {
	g.t.Helper()
	g.run("fsck", "--strict", "--full", "--no-dangling")
	if st := g.run("status", "--porcelain", "--untracked-files=all"); st != "" {
		g.t.Errorf("git status is not clean:\n%s", st)
	}
}

// richHistory builds a history with the cases a patch must get right: edits
// in the middle of long files, additions, deletions, nested directories, an
// executable, no final newline, an empty file, binary content, awkward
// names, a restore.
func richHistory(t *testing.T) (string, *Repo) {
	t.Helper()
	dir := dataDir(t)
	r := open(t, dir)
	ctx := t.Context()
	mustCommit := func(msg string, paths ...string) {
		t.Helper()
		if rev, err := r.Commit(ctx, msg, paths...); err != nil || rev.IsZero() {
			t.Fatalf("commit %q = %+v, %v", msg, rev, err)
		}
	}
	var long strings.Builder
	for i := range 40 {
		long.WriteString("fact " + string(rune('a'+i%26)) + " number " + strings.Repeat("x", i%5) + "\n")
	}
	write(t, dir, "MEMORIES.txt", long.String())
	mustCommit("initial")
	lines := strings.SplitAfter(long.String(), "\n")
	lines[5] = "changed line six\n"
	lines[30] = "changed line thirty-one\n"
	lines = append(lines[:20], append([]string{"inserted\n", "two lines\n"}, lines[20:]...)...)
	write(t, dir, "MEMORIES.txt", strings.Join(lines, ""))
	mustCommit("memory: edits far apart", "MEMORIES.txt")
	write(t, dir, "skills/tea/green.md", "Green tea\nno final newline")
	write(t, dir, "skills/tea/empty.md", "")
	write(t, dir, "skills/with space.md", "spaced\n")
	write(t, dir, "skills/thé.md", "accented\n")
	write(t, dir, "skills/blob.bin", "\x00\x01\x02binary\n")
	if err := os.WriteFile(filepath.Join(dir, "skills", "run.sh"), []byte("#!/bin/sh\necho hi\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	mustCommit("skills: many kinds", "skills")
	write(t, dir, "skills/tea/green.md", "Green tea\nnow with a final newline\n")
	write(t, dir, "skills/blob.bin", "\x00\x01\x03binary\n")
	if err := os.Chmod(filepath.Join(dir, "skills", "run.sh"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "skills", "brew.md")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "world_state.json", "")
	mustCommit("edits, mode change, deletion, emptied file")
	if err := os.Remove(filepath.Join(dir, "skills", "tea", "empty.md")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "world_state.json", "{}\n")
	mustCommit("delete an empty file")
	if _, err := r.Restore(ctx, "HEAD~3"); err != nil {
		t.Fatal(err)
	}
	return dir, r
}

func TestGitCLIReadsOurRepository(t *testing.T) {
	dir, r := richHistory(t)
	g := newGitCLI(t, dir)
	// Before anything refreshes the index: its stat data matches the
	// files, so git trusts it without hashing.
	if df := g.run("diff-files", "--name-only"); df != "" {
		t.Errorf("git diff-files (stat data of the index) lists:\n%s", df)
	}
	g.checkClean()

	hist := mustHistory(t, r)
	if got := strings.Fields(g.run("log", "--format=%H")); !reflect.DeepEqual(got, hashes(hist)) {
		t.Errorf("git log = %v\nours    = %v", got, hashes(hist))
	}
	if got := strings.TrimSpace(g.run("symbolic-ref", "HEAD")); got != "refs/heads/"+Branch {
		t.Errorf("HEAD names %q", got)
	}
	for _, rev := range hist {
		if got := strings.TrimSpace(g.run("log", "-1", "--format=%B", rev.Hash)); got != rev.Message {
			t.Errorf("git's message of %s = %q, ours %q", rev.Short, got, rev.Message)
		}
		if got := strings.TrimSpace(g.run("log", "-1", "--format=%an <%ae> %at %ai", rev.Hash)); got !=
			DefaultAuthorName+" <"+DefaultAuthorEmail+"> "+strconv.FormatInt(rev.Time.Unix(), 10)+" "+rev.Time.Format("2006-01-02 15:04:05 -0700") {
			t.Errorf("git's author of %s = %q (time %v)", rev.Short, got, rev.Time)
		}
		files := strings.Fields(g.run("-c", "core.quotePath=false", "diff-tree", "-r", "--root", "--no-commit-id", "--name-only", "-z", rev.Hash))
		files = strings.Split(strings.TrimRight(strings.Join(files, " "), "\x00"), "\x00")
		if !reflect.DeepEqual(files, rev.Files) {
			t.Errorf("git's files of %s = %q, ours %q", rev.Short, files, rev.Files)
		}
	}
	if lp := g.run("log", "-p"); !strings.Contains(lp, "+changed line six") || !strings.Contains(lp, "restore ") {
		t.Errorf("git log -p:\n%s", lp)
	}
}

// TestShowPatchesApplyWithGit replays every commit's patch (ours) with git
// apply in an empty repository: the files git ends with must be the
// commit's, ids and modes included. The binary file is left out (a patch
// names it without its content, as git diff does without --binary).
func TestShowPatchesApplyWithGit(t *testing.T) {
	dir, r := richHistory(t)
	src := newGitCLI(t, dir)
	g := newGitCLI(t, t.TempDir())
	g.run("init", "-q")
	const binary = "skills/blob.bin"
	hist := mustHistory(t, r)
	for i := len(hist) - 1; i >= 0; i-- {
		d, err := r.Show(t.Context(), hist[i].Hash)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := g.try([]byte(d.Patch), "apply", "--index", "--exclude="+binary, "-"); err != nil {
			t.Fatalf("git apply of %s (%s): %v\n%s\n%s", d.Short, d.Subject(), err, out, d.Patch)
		}
		var want []string
		for _, e := range strings.Split(strings.TrimRight(src.run("ls-tree", "-r", "-z", d.Hash), "\x00"), "\x00") {
			meta, name, _ := strings.Cut(e, "\t")
			f := strings.Fields(meta) // mode type id
			if name != binary {
				want = append(want, f[0]+" "+f[2]+" "+name)
			}
		}
		var got []string
		for _, e := range strings.Split(strings.TrimRight(g.run("ls-files", "-s", "-z"), "\x00"), "\x00") {
			meta, name, _ := strings.Cut(e, "\t")
			f := strings.Fields(meta) // mode id stage
			got = append(got, f[0]+" "+f[1]+" "+name)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("after applying %s (%s):\n%s\nwant\n%s\npatch:\n%s", d.Short, d.Subject(),
				strings.Join(got, "\n"), strings.Join(want, "\n"), d.Patch)
		}
	}
}

// TestShowPatchMatchesGit compares Show's patch with git's own for the
// edits whose diff is unambiguous (no function headings, no heuristics).
func TestShowPatchMatchesGit(t *testing.T) {
	dir, r := richHistory(t)
	g := newGitCLI(t, dir)
	attrs := filepath.Join(t.TempDir(), "attributes")
	if err := os.WriteFile(attrs, []byte("* diff=plain\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, rev := range mustHistory(t, r) {
		d, err := r.Show(t.Context(), rev.Hash)
		if err != nil {
			t.Fatal(err)
		}
		want := g.run("-c", "core.attributesFile="+attrs, "-c", "diff.plain.xfuncname=^NEVER MATCHES$",
			"diff-tree", "-p", "--root", "--no-commit-id", "--no-color", "--no-indent-heuristic", "--no-renames", rev.Hash)
		if d.Patch != want {
			t.Errorf("patch of %s (%s) differs from git's\nours:\n%s\ngit's:\n%s", rev.Short, rev.Subject(), d.Patch, want)
		}
	}
}

// gitPatch is git's patch of a commit against its first parent, without
// function headings or diff heuristics (what Show writes).
func gitPatch(t *testing.T, g *gitCLI, rev string) string {
	t.Helper()
	attrs := filepath.Join(t.TempDir(), "attributes")
	if err := os.WriteFile(attrs, []byte("* diff=plain\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"-c", "core.attributesFile=" + attrs, "-c", "diff.plain.xfuncname=^NEVER MATCHES$",
		"diff-tree", "-p", "--root", "--no-commit-id", "--no-color", "--no-indent-heuristic", "--no-renames"}
	if parents := strings.Fields(g.run("rev-list", "--parents", "-n1", rev)); len(parents) > 2 {
		args = append(args, rev+"^1") // a merge: against its first parent
	}
	return g.run(append(args, rev)...)
}

// TestWeReadGitCLICommits makes commits with the git CLI — a different
// author and time zone, a deletion, a branch merged with a merge commit, an
// annotated tag, a detached HEAD — and reads them back.
func TestWeReadGitCLICommits(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	ctx := t.Context()
	first, err := r.CommitAll(ctx, "initial")
	if err != nil {
		t.Fatal(err)
	}
	g := newGitCLI(t, dir)
	date := 1740960000 // 2025-03-03, after the test clock's commits
	commit := func(msg string) {
		t.Helper()
		date += 60
		d := "@" + strconv.Itoa(date) + " +0530"
		g.env = append(g.env, "GIT_AUTHOR_DATE="+d, "GIT_COMMITTER_DATE="+d)
		g.run("commit", "-q", "-m", msg)
	}
	write(t, dir, "MEMORIES.txt", "likes tea\nedited by hand\n")
	g.run("add", "MEMORIES.txt")
	commit("by hand\n\nwith a body")
	byHand := strings.TrimSpace(g.run("rev-parse", "HEAD"))
	g.run("rm", "-q", "skills/brew.md")
	commit("remove brew")
	g.run("checkout", "-q", "-b", "side")
	write(t, dir, "skills/side.md", "from a branch\n")
	g.run("add", "skills/side.md")
	commit("side skill")
	side := strings.TrimSpace(g.run("rev-parse", "HEAD"))
	g.run("checkout", "-q", Branch)
	write(t, dir, "prompts/extra.txt", "more\n")
	g.run("add", "prompts/extra.txt")
	commit("extra prompt")
	date += 60
	g.env = append(g.env, "GIT_COMMITTER_DATE=@"+strconv.Itoa(date)+" +0530", "GIT_AUTHOR_DATE=@"+strconv.Itoa(date)+" +0530")
	g.run("merge", "-q", "--no-ff", "-m", "merge side", "side")
	g.run("tag", "-a", "-m", "a tag", "v1", byHand)

	var logs bytes.Buffer
	r2 := open(t, dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
	if r2.Created() || logs.Len() > 0 {
		t.Errorf("reopening after git commits: created %v, logs %s", r2.Created(), logs.String())
	}
	hist := mustHistory(t, r2)
	if got := strings.Fields(g.run("log", "--format=%H")); !reflect.DeepEqual(hashes(hist), got) {
		t.Errorf("history = %v\ngit log = %v", hashes(hist), got)
	}
	if hist[len(hist)-1].Hash != first.Hash {
		t.Errorf("oldest = %s, want %s", hist[len(hist)-1].Hash, first.Hash)
	}
	if rev, err := r2.Head(ctx); err != nil || rev.Subject() != "merge side" || !reflect.DeepEqual(rev.Files, []string{"skills/side.md"}) {
		t.Errorf("head = %+v, %v", rev, err)
	}
	d, err := r2.Show(ctx, byHand[:10])
	if err != nil {
		t.Fatal(err)
	}
	if _, off := d.Time.Zone(); off != 5*3600+1800 || d.Time.Unix() != 1740960060 || d.Message != "by hand\n\nwith a body" {
		t.Errorf("git commit read as time %v (offset %d), message %q", d.Time, off, d.Message)
	}
	for _, h := range hist {
		d, err := r2.Show(ctx, h.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if want := gitPatch(t, g, h.Hash); d.Patch != want {
			t.Errorf("patch of %s (%s):\n%s\ngit's:\n%s", h.Short, h.Subject(), d.Patch, want)
		}
	}
	for rev, want := range map[string]string{
		"HEAD^2": side, "side": side, "refs/heads/side": side, "v1": byHand, "v1~1": first.Hash,
		"HEAD^1~2": byHand, "HEAD^^^": byHand, "HEAD~1^0": strings.TrimSpace(g.run("rev-parse", "HEAD~1")),
	} {
		if d, err := r2.Show(ctx, rev); err != nil || d.Hash != want {
			t.Errorf("Show(%q) = %s, %v; want %s", rev, d.Hash, err, want)
		}
	}
	for _, bad := range []string{"HEAD^3", "v2", "side~9", "refs/../HEAD", "HEAD~x"} {
		if _, err := r2.Show(ctx, bad); !errors.Is(err, ErrUnknownRevision) {
			t.Errorf("Show(%q) = %v, want ErrUnknownRevision", bad, err)
		}
	}

	// Restore a commit git made; git sees the result as clean.
	rest, err := r2.Restore(ctx, byHand)
	if err != nil || rest.IsZero() {
		t.Fatalf("restore = %+v, %v", rest, err)
	}
	if got, _ := read(t, dir, "MEMORIES.txt"); got != "likes tea\nedited by hand\n" {
		t.Errorf("MEMORIES.txt = %q", got)
	}
	if _, ok := read(t, dir, "skills/side.md"); ok {
		t.Error("skills/side.md survived the restore")
	}
	if got, _ := read(t, dir, "skills/brew.md"); got != "Brew tea\n\nBoil water.\n" {
		t.Errorf("skills/brew.md = %q", got)
	}
	g.checkClean()

	// A detached HEAD moves with our commits; the branch stays.
	g.run("checkout", "-q", "--detach")
	write(t, dir, "MEMORIES.txt", "detached\n")
	rev, err := r2.Commit(ctx, "on a detached head", "MEMORIES.txt")
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.TrimSpace(g.run("rev-parse", "HEAD")); got != rev.Hash {
		t.Errorf("HEAD = %s, want %s", got, rev.Hash)
	}
	if got := strings.TrimSpace(g.run("rev-parse", Branch)); got != rest.Hash {
		t.Errorf("%s = %s, want %s", Branch, got, rest.Hash)
	}
	g.checkClean()
}

// packTypes counts the object kinds stored in the packs of dir's repository.
func packTypes(t *testing.T, dir string) map[objType]int {
	t.Helper()
	s := newStore(filepath.Join(dir, GitDir, "objects"))
	if err := s.loadPacks(); err != nil {
		t.Fatal(err)
	}
	out := map[objType]int{}
	for _, p := range s.packs {
		f, err := os.Open(p.path)
		if err != nil {
			t.Fatal(err)
		}
		for i := range int(p.fanout[255]) {
			off, _, err := p.offset(i)
			if err != nil {
				t.Fatal(err)
			}
			var b [1]byte
			if _, err := f.ReadAt(b[:], off); err != nil {
				t.Fatal(err)
			}
			out[objType(b[0]>>4&7)]++
		}
		f.Close()
	}
	return out
}

// TestPackedRepository packs a repository we wrote with git gc or git
// repack (refs packed, objects in a pack with deltas, no loose object
// left) and checks that nothing we read changed and that we keep working
// on top of it.
func TestPackedRepository(t *testing.T) {
	tests := []struct {
		name  string
		args  [][]string
		delta objType
	}{
		{"gc aggressive, offset deltas", [][]string{{"gc", "-q", "--aggressive", "--prune=now"}}, objOfsDelta},
		{"repack with ref deltas", [][]string{
			{"-c", "repack.useDeltaBaseOffset=false", "repack", "-q", "-a", "-d", "-f", "--depth=50", "--window=50"},
			{"pack-refs", "--all"}, {"prune", "--expire=now"},
		}, objRefDelta},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir, r := richHistory(t)
			ctx := t.Context()
			// More versions of one file, so the pack has delta chains.
			for i := range 6 {
				write(t, dir, "MEMORIES.txt", strings.Repeat("a stable line of memory text\n", 30)+"version "+strconv.Itoa(i)+"\n")
				if _, err := r.Commit(ctx, "memory v"+strconv.Itoa(i), "MEMORIES.txt"); err != nil {
					t.Fatal(err)
				}
			}
			before := mustHistory(t, r)
			patches := map[string]string{}
			for _, h := range before {
				d, err := r.Show(ctx, h.Hash)
				if err != nil {
					t.Fatal(err)
				}
				patches[h.Hash] = d.Patch
			}
			g := newGitCLI(t, dir)
			for _, args := range tc.args {
				g.run(args...)
			}
			if loose, _ := filepath.Glob(filepath.Join(dir, GitDir, "objects", "??", "*")); len(loose) != 0 {
				t.Fatalf("loose objects left after packing: %v", loose)
			}
			if _, err := os.Stat(filepath.Join(dir, GitDir, "refs", "heads", Branch)); !os.IsNotExist(err) {
				t.Fatalf("the branch is still a loose ref: %v", err)
			}
			if n := packTypes(t, dir)[tc.delta]; n == 0 {
				t.Fatalf("the pack holds no %v objects: %v", tc.delta, packTypes(t, dir))
			}

			var logs bytes.Buffer
			r2 := open(t, dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			if r2.Created() || logs.Len() > 0 {
				t.Fatalf("reopening a packed repository: created %v, logs %s", r2.Created(), logs.String())
			}
			ro, err := Open(dir, Options{ReadOnly: true})
			if err != nil {
				t.Fatal(err)
			}
			for _, repo := range []*Repo{r2, ro} {
				after, err := repo.History(ctx, "", 0)
				if err != nil || !reflect.DeepEqual(after, before) {
					t.Fatalf("history after packing = %v, %v\nwant %v", hashes(after), err, hashes(before))
				}
				for _, h := range after {
					d, err := repo.Show(ctx, h.Short)
					if err != nil || d.Patch != patches[h.Hash] {
						t.Errorf("patch of %s after packing = %v\n%s\nwant\n%s", h.Short, err, d.Patch, patches[h.Hash])
					}
				}
			}
			oldest := before[len(before)-1]
			if _, err := r2.Restore(ctx, oldest.Hash); err != nil {
				t.Fatal(err)
			}
			if got, _ := read(t, dir, "skills/brew.md"); got != "Brew tea\n\nBoil water.\n" {
				t.Errorf("restored skills/brew.md = %q", got)
			}
			write(t, dir, "MEMORIES.txt", "after packing\n")
			rev, err := r2.Commit(ctx, "after packing", "MEMORIES.txt")
			if err != nil || rev.IsZero() {
				t.Fatalf("commit on a packed repository = %+v, %v", rev, err)
			}
			if got := strings.TrimSpace(g.run("rev-parse", Branch)); got != rev.Hash {
				t.Errorf("git sees %s at %s, want %s", Branch, got, rev.Hash)
			}
			g.checkClean()
		})
	}
}

// TestIndexWrittenByGit has git rewrite the index in other versions: 3
// (git writes it when an entry has extended flags, here skip-worktree) is
// read as is, 4 is rebuilt; either way nothing is committed and git stays
// clean.
func TestIndexWrittenByGit(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		version byte
		rebuilt bool
	}{
		{"version 2 with extensions", []string{"update-index", "--index-version", "2"}, 2, false},
		{"version 3", []string{"update-index", "--skip-worktree", "BASE_PROMPT.txt"}, 3, false},
		{"version 4", []string{"update-index", "--index-version", "4"}, 4, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := dataDir(t)
			if _, err := open(t, dir).CommitAll(t.Context(), "initial"); err != nil {
				t.Fatal(err)
			}
			g := newGitCLI(t, dir)
			g.run("write-tree") // adds the TREE extension to the index
			g.run(tc.args...)
			idx, err := os.ReadFile(filepath.Join(dir, GitDir, "index"))
			if err != nil || len(idx) < 8 || idx[7] != tc.version {
				t.Fatalf("git wrote index version %v, want %d (%v)", idx[4:8], tc.version, err)
			}
			var logs bytes.Buffer
			r := open(t, dir, func(o *Options) { o.Logger = slog.New(slog.NewTextHandler(&logs, nil)) })
			if got := strings.Contains(logs.String(), "rebuilt"); got != tc.rebuilt {
				t.Errorf("rebuilt = %v, want %v (logs %s)", got, tc.rebuilt, logs.String())
			}
			// A rebuilt index carries the stat data of the unchanged files.
			if df := g.run("diff-files", "--name-only"); df != "" {
				t.Errorf("git diff-files lists:\n%s", df)
			}
			if rev, err := r.CommitAll(t.Context(), "nothing"); err != nil || !rev.IsZero() {
				t.Errorf("CommitAll = %+v, %v; want zero revision", rev, err)
			}
			write(t, dir, "MEMORIES.txt", "changed\n")
			if rev, err := r.Commit(t.Context(), "memory", "MEMORIES.txt"); err != nil || !reflect.DeepEqual(rev.Files, []string{"MEMORIES.txt"}) {
				t.Errorf("Commit = %+v, %v", rev, err)
			}
			g.checkClean()
		})
	}
}
