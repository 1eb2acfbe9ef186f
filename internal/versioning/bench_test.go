package versioning

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkCommitOneSmallFile measures Commit of one changed small file in
// a data dir with the usual tracked and untracked files.
func BenchmarkCommitOneSmallFile(b *testing.B) {
	dir := dataDir(b)
	r := open(b, dir)
	ctx := b.Context()
	if _, err := r.CommitAll(ctx, "initial"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		write(b, dir, "MEMORIES.txt", "likes tea\nfact "+strconv.Itoa(i)+"\n")
		rev, err := r.Commit(ctx, "memory: append", "MEMORIES.txt")
		if err != nil || rev.IsZero() {
			b.Fatalf("commit %d = %+v, %v", i, rev, err)
		}
	}
}

// BenchmarkCommitNoChange measures the common no-op: a hook fires but the
// file is unchanged.
func BenchmarkCommitNoChange(b *testing.B) {
	dir := dataDir(b)
	r := open(b, dir)
	ctx := b.Context()
	if _, err := r.CommitAll(ctx, "initial"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.Commit(ctx, "memory: append", "MEMORIES.txt"); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkOpenAndCommitAllNoChange measures what every agent start pays:
// opening the repository and finding that nothing changed.
func BenchmarkOpenAndCommitAllNoChange(b *testing.B) {
	dir := dataDir(b)
	if _, err := open(b, dir).CommitAll(b.Context(), "initial"); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := Open(dir, Options{})
		if err != nil {
			b.Fatal(err)
		}
		if rev, err := r.CommitAll(b.Context(), "external edits"); err != nil || !rev.IsZero() {
			b.Fatalf("CommitAll = %+v, %v", rev, err)
		}
	}
}

// historyOf returns a repository with n commits, each changing MEMORIES.txt
// and every tenth a skill.
func historyOf(b *testing.B, n int) *Repo {
	dir := dataDir(b)
	r := open(b, dir)
	ctx := b.Context()
	if _, err := r.CommitAll(ctx, "initial"); err != nil {
		b.Fatal(err)
	}
	for i := range n - 1 {
		write(b, dir, "MEMORIES.txt", strings.Repeat("a memory line\n", 50)+"fact "+strconv.Itoa(i)+"\n")
		paths := []string{"MEMORIES.txt"}
		if i%10 == 0 {
			write(b, dir, "skills/s"+strconv.Itoa(i)+".md", "skill\n")
			paths = append(paths, "skills")
		}
		if _, err := r.Commit(ctx, "change "+strconv.Itoa(i), paths...); err != nil {
			b.Fatal(err)
		}
	}
	return r
}

// BenchmarkHistory200 measures listing a 200-commit history filtered by a
// path (what `reverie memory history --path skills` and the web panel do).
func BenchmarkHistory200(b *testing.B) {
	r := historyOf(b, 200)
	b.ReportAllocs()
	for b.Loop() {
		h, err := r.History(b.Context(), "skills", 0)
		if err != nil || len(h) != 21 {
			b.Fatalf("history = %d, %v", len(h), err)
		}
	}
}

// BenchmarkShow measures one commit with its patch, found by short hash in
// a 200-commit history.
func BenchmarkShow(b *testing.B) {
	r := historyOf(b, 200)
	h, err := r.History(b.Context(), "", 100)
	if err != nil {
		b.Fatal(err)
	}
	short := h[99].Short
	b.ReportAllocs()
	for b.Loop() {
		d, err := r.Show(b.Context(), short)
		if err != nil || !strings.Contains(d.Patch, "+fact") {
			b.Fatalf("show = %v\n%s", err, d.Patch)
		}
	}
}
