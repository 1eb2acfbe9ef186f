package versioning

import (
	"strconv"
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
