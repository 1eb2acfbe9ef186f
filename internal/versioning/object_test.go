package versioning

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1" //nolint:gosec // git's checksums
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// TestHashObject checks ids against the ones git gives the same content.
func TestHashObject(t *testing.T) {
	tests := []struct {
		name string
		t    objType
		data string
		want string
	}{
		{"empty blob", objBlob, "", "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"},
		{"hello blob", objBlob, "hello\n", "ce013625030ba8dba906f756967f9e9ca394464a"},
		{"empty tree", objTree, "", "4b825dc642cb6eb9a060e54bf8d69288fbee4904"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := hashObject(tc.t, []byte(tc.data)).String(); got != tc.want {
				t.Errorf("id = %s, want %s", got, tc.want)
			}
		})
	}
}

func TestTreeOrderAndRoundTrip(t *testing.T) {
	id := hashObject(objBlob, []byte("x"))
	in := []treeEntry{
		{modeRegular, "b", id},
		{modeTree, "a", id},
		{modeRegular, "a0", id},
		{modeExec, "a.b", id},
		{modeRegular, "a-b", id},
	}
	got, err := parseTree(encodeTree(in))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range got {
		names = append(names, e.name)
	}
	// git compares a directory's name as if it ended in "/" (0x2f): after
	// "a-b" (0x2d) and "a.b" (0x2e), before "a0" (0x30).
	if want := []string{"a-b", "a.b", "a", "a0", "b"}; !reflect.DeepEqual(names, want) {
		t.Errorf("order = %v, want %v", names, want)
	}
	if got[1].mode != modeExec || got[2].mode != modeTree {
		t.Errorf("modes = %o, %o", got[1].mode, got[2].mode)
	}
	if enc := string(encodeTree(in)); !strings.HasPrefix(enc, "100644 a-b\x00") || !strings.Contains(enc, "40000 a\x00") {
		t.Errorf("encoding = %q", enc)
	}
}

func TestParseTreeRejects(t *testing.T) {
	id := hashObject(objBlob, nil)
	tests := []struct {
		name string
		data string
	}{
		{"no mode", " x\x00" + string(id[:])},
		{"bad mode", "10064x x\x00" + string(id[:])},
		{"truncated id", "100644 x\x00" + string(id[:10])},
		{"dot dot", "40000 ..\x00" + string(id[:])},
		{"slash", "100644 a/b\x00" + string(id[:])},
		{"empty name", "100644 \x00" + string(id[:])},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseTree([]byte(tc.data)); err == nil {
				t.Error("parsed")
			}
		})
	}
}

func TestSignature(t *testing.T) {
	tests := []struct {
		name    string
		sig     signature
		encoded string
		offset  int
	}{
		{"utc", signature{"Reverie", "reverie@localhost", time.Unix(1700000000, 0).UTC()},
			"Reverie <reverie@localhost> 1700000000 +0000", 0},
		{"india", signature{"A", "a@b", time.Unix(1700000000, 0).In(time.FixedZone("", 5*3600+1800))},
			"A <a@b> 1700000000 +0530", 5*3600 + 1800},
		{"newfoundland", signature{"A", "a@b", time.Unix(1700000000, 0).In(time.FixedZone("", -(3*3600 + 1800)))},
			"A <a@b> 1700000000 -0330", -(3*3600 + 1800)},
		{"forbidden characters dropped", signature{" Eve <x>\n", "<e@v>", time.Unix(5, 0).UTC()},
			"Eve x <e@v> 5 +0000", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			enc := tc.sig.encode()
			if enc != tc.encoded {
				t.Fatalf("encode = %q, want %q", enc, tc.encoded)
			}
			back := parseSignature(enc)
			if _, off := back.when.Zone(); off != tc.offset || !back.when.Equal(tc.sig.when) {
				t.Errorf("parsed time %v (offset %d), want %v (offset %d)", back.when, off, tc.sig.when, tc.offset)
			}
		})
	}
	if s := parseSignature("no email at all"); s.name != "no email at all" || !s.when.IsZero() {
		t.Errorf("malformed signature = %+v", s)
	}
}

func TestCommitRoundTripAndForeignHeaders(t *testing.T) {
	tree := hashObject(objTree, nil)
	parent := hashObject(objBlob, []byte("p"))
	sig := signature{"A", "a@b", time.Unix(1700000000, 0).UTC()}
	data := encodeCommit(tree, []oid{parent}, sig, sig, "subject\n\nbody")
	if !strings.HasSuffix(string(data), "\n\nsubject\n\nbody\n") {
		t.Errorf("encoding = %q", data)
	}
	c, err := parseCommit(nil, hashObject(objCommit, data), data)
	if err != nil || c.tree != tree || !reflect.DeepEqual(c.parents, []oid{parent}) || c.message != "subject\n\nbody\n" {
		t.Fatalf("parse = %+v, %v", c, err)
	}
	// What git may add: an encoding, a signature with continuation lines.
	signed := "tree " + tree.String() + "\n" +
		"author A <a@b> 1700000000 +0100\ncommitter A <a@b> 1700000001 +0100\n" +
		"encoding ISO-8859-1\ngpgsig -----BEGIN PGP SIGNATURE-----\n \n abc\n -----END PGP SIGNATURE-----\n\nsigned\n"
	c, err = parseCommit(nil, oid{}, []byte(signed))
	if err != nil || c.message != "signed\n" || c.committer.when.Unix() != 1700000001 || len(c.parents) != 0 {
		t.Errorf("signed commit = %+v, %v", c, err)
	}
	for name, bad := range map[string]string{
		"no tree":        "author A <a@b> 1 +0000\n\nx\n",
		"bad parent":     "tree " + tree.String() + "\nparent xyz\n\nx\n",
		"headers no end": "tree " + tree.String(),
	} {
		if _, err := parseCommit(nil, oid{}, []byte(bad)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}

func TestIndexRoundTrip(t *testing.T) {
	id := hashObject(objBlob, []byte("x"))
	in := []indexEntry{
		{name: "skills/" + strings.Repeat("n", 5000) + ".md", id: id, mode: modeRegular},
		{name: "MEMORIES.txt", id: id, mode: modeExec, stat: statData{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{name: "a", id: id, mode: modeRegular},
		{name: "abcdefgh", id: id, mode: modeRegular}, // 62+8 bytes: padded by 2 to 72
		{name: "abcdefghij", id: id, mode: modeRegular, stage: 2},
	}
	data := encodeIndex(in)
	got, err := parseIndex(data)
	if err != nil {
		t.Fatal(err)
	}
	want := []indexEntry{in[1], in[2], in[3], in[4], in[0]}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", got, want)
	}
	bad := bytes.Clone(data)
	bad[20] ^= 1
	// A version 3 entry announcing extended flags and ending right there.
	ext := append([]byte("DIRC\x00\x00\x00\x03\x00\x00\x00\x01"), make([]byte, 60)...)
	ext = append(ext, 0x40, 0x01)
	sum := sha1.Sum(ext) //nolint:gosec // index checksum
	ext = append(ext, sum[:]...)
	tests := []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"garbage", []byte("not an index at all, but long enough")},
		{"checksum", bad},
		{"truncated", data[:len(data)/2]},
		{"extended flags past the end", ext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseIndex(tc.data); err == nil {
				t.Error("parsed")
			}
		})
	}
}

// delta builds a git delta from instructions.
func delta(srcSize, dstSize int, ops ...[]byte) []byte {
	size := func(n int) []byte {
		var b []byte
		for {
			c := byte(n & 0x7f)
			n >>= 7
			if n == 0 {
				return append(b, c)
			}
			b = append(b, c|0x80)
		}
	}
	out := append(size(srcSize), size(dstSize)...)
	for _, op := range ops {
		out = append(out, op...)
	}
	return out
}

func TestApplyDelta(t *testing.T) {
	base := []byte("0123456789abcdef")
	tests := []struct {
		name    string
		delta   []byte
		want    string
		wantErr bool
	}{
		{"copy and insert", delta(16, 9, []byte{0x91, 10, 3}, []byte{3, 'x', 'y', 'z'}, []byte{0x90, 3}), "abcxyz012", false},
		{"copy whole base with offset 0", delta(16, 16, []byte{0x90, 16}), "0123456789abcdef", false},
		{"wrong base size", delta(15, 1, []byte{1, 'x'}), "", true},
		{"copy past the base", delta(16, 4, []byte{0x91, 14, 4}), "", true},
		{"result longer than announced", delta(16, 2, []byte{3, 'a', 'b', 'c'}), "", true},
		{"result shorter than announced", delta(16, 5, []byte{1, 'a'}), "", true},
		{"reserved instruction", delta(16, 1, []byte{0}), "", true},
		{"truncated insert", delta(16, 3, []byte{3, 'a'}), "", true},
		{"truncated copy", delta(16, 3, []byte{0x91}), "", true},
		{"truncated header", []byte{0x80}, "", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := applyDelta(base, tc.delta)
			if (err != nil) != tc.wantErr || string(got) != tc.want {
				t.Errorf("applyDelta = %q, %v; want %q (error %v)", got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// TestLooseObjects writes objects, reads them back, and refuses corrupt ones
// with an error.
func TestLooseObjects(t *testing.T) {
	s := newStore(t.TempDir())
	id, err := s.write(objBlob, []byte("hello\n"))
	if err != nil || id.String() != "ce013625030ba8dba906f756967f9e9ca394464a" {
		t.Fatalf("write = %s, %v", id, err)
	}
	if again, err := s.write(objBlob, []byte("hello\n")); err != nil || again != id {
		t.Errorf("second write = %s, %v", again, err)
	}
	if _, err := os.Stat(s.loosePath(id)); !os.IsNotExist(err) {
		t.Errorf("a staged object is visible before flush: %v", err)
	}
	if err := s.flush(); err != nil {
		t.Fatal(err)
	}
	if again, err := s.write(objBlob, []byte("hello\n")); err != nil || again != id || len(s.pending) != 0 {
		t.Errorf("write of a stored object = %s, %v, %d staged", again, err, len(s.pending))
	}
	dropped, err := s.write(objBlob, []byte("dropped\n"))
	if err != nil {
		t.Fatal(err)
	}
	s.discard()
	if tmps, _ := filepath.Glob(filepath.Join(s.dir, "*", "tmp_obj_*")); len(tmps) != 0 {
		t.Errorf("discard left %v", tmps)
	}
	if ok, _ := s.has(dropped); ok {
		t.Error("a discarded object is stored")
	}
	if fi, err := os.Stat(s.loosePath(id)); err != nil || fi.Mode().Perm() != 0o444 {
		t.Errorf("object file: %v, %v", fi, err)
	}
	if data, err := s.readAs(id, objBlob); err != nil || string(data) != "hello\n" {
		t.Errorf("read = %q, %v", data, err)
	}
	if _, err := s.readAs(id, objTree); err == nil {
		t.Error("a blob read as a tree")
	}
	if _, _, err := s.read(hashObject(objBlob, []byte("absent"))); !errors.Is(err, os.ErrNotExist) && !errors.Is(err, errObjectMissing) {
		t.Errorf("missing object = %v", err)
	}
	if ok, err := s.has(hashObject(objBlob, []byte("absent"))); ok || err != nil {
		t.Errorf("has(absent) = %v, %v", ok, err)
	}

	deflate := func(s string) []byte {
		var b bytes.Buffer
		w := zlib.NewWriter(&b)
		w.Write([]byte(s))
		w.Close()
		return b.Bytes()
	}
	tests := []struct {
		name string
		file []byte
	}{
		{"not zlib", []byte("garbage")},
		{"unknown type", deflate("thing 1\x00x")},
		{"short content", deflate("blob 10\x00abc")},
		{"huge size", deflate("blob 99999999999\x00abc")},
		{"no header end", deflate("blob 3")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			id := hashObject(objBlob, []byte(tc.name))
			p := s.loosePath(id)
			if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, tc.file, 0o600); err != nil {
				t.Fatal(err)
			}
			if _, _, err := s.read(id); err == nil {
				t.Error("read a corrupt object")
			}
		})
	}
}

func TestValidRefName(t *testing.T) {
	for name, want := range map[string]bool{
		"HEAD": true, "refs/heads/main": true, "refs/tags/v1.0": true,
		"refs/heads/../../../etc/passwd": false, "../config": false, "refs/heads/x.lock": false,
		"refs/heads/.hidden": false, "refs//x": false, "refs/heads/a b": false, "refs/heads/a\x01": false,
		"main": false, "refs/heads/a~1": false,
	} {
		if got := validRefName(name); got != want {
			t.Errorf("validRefName(%q) = %v, want %v", name, got, want)
		}
	}
}

// TestHeadOutsideTheRepositoryIsRefused: a HEAD naming a path outside
// .git is a corrupt repository, moved aside, never followed.
func TestHeadOutsideTheRepositoryIsRefused(t *testing.T) {
	dir := dataDir(t)
	if _, err := open(t, dir).CommitAll(t.Context(), "initial"); err != nil {
		t.Fatal(err)
	}
	write(t, dir, ".git/HEAD", "ref: refs/../../MEMORIES.txt\n")
	if _, err := Open(dir, Options{ReadOnly: true}); !errors.Is(err, ErrNoHistory) {
		t.Errorf("read-only Open = %v, want ErrNoHistory", err)
	}
	if r := open(t, dir); !r.Created() {
		t.Error("a HEAD naming a file outside the repository was followed")
	}
}

// TestPackedRefs reads a branch git moved to packed-refs.
func TestPackedRefs(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	rev, err := r.CommitAll(t.Context(), "initial")
	if err != nil {
		t.Fatal(err)
	}
	ref := filepath.Join(dir, GitDir, "refs", "heads", Branch)
	if err := os.Remove(ref); err != nil {
		t.Fatal(err)
	}
	write(t, dir, ".git/packed-refs", "# pack-refs with: peeled fully-peeled sorted \n"+
		strings.Repeat("0", 40)+" refs/heads/other\n"+rev.Hash+" refs/heads/"+Branch+"\n"+
		rev.Hash+" refs/tags/v1\n^"+strings.Repeat("1", 40)+"\n")
	r2 := open(t, dir)
	if h, err := r2.Head(t.Context()); err != nil || h.Hash != rev.Hash {
		t.Fatalf("head = %+v, %v", h, err)
	}
	write(t, dir, "MEMORIES.txt", "new\n")
	next, err := r2.Commit(t.Context(), "memory", "MEMORIES.txt")
	if err != nil {
		t.Fatal(err)
	}
	if data, err := os.ReadFile(ref); err != nil || string(data) != next.Hash+"\n" {
		t.Errorf("loose ref = %q, %v", data, err)
	}
	if h := mustHistory(t, r2); len(h) != 2 || h[1].Hash != rev.Hash {
		t.Errorf("history = %v", hashes(h))
	}
}

// TestCorruptPackIsUnusable: a pack git would not read either makes the
// repository unusable (kept aside), with a clear error for read-only use.
func TestCorruptPackIsUnusable(t *testing.T) {
	dir := dataDir(t)
	if _, err := open(t, dir).CommitAll(t.Context(), "initial"); err != nil {
		t.Fatal(err)
	}
	// Move every object into a "pack" that is not one.
	objects := filepath.Join(dir, GitDir, "objects")
	loose, _ := filepath.Glob(filepath.Join(objects, "??"))
	for _, d := range loose {
		if err := os.RemoveAll(d); err != nil {
			t.Fatal(err)
		}
	}
	write(t, dir, ".git/objects/pack/pack-1.idx", "\xfftOc\x00\x00\x00\x02short")
	write(t, dir, ".git/objects/pack/pack-1.pack", "PACK")
	_, err := Open(dir, Options{ReadOnly: true})
	if !errors.Is(err, ErrNoHistory) || !strings.Contains(err.Error(), "pack index pack-1.idx is truncated") {
		t.Errorf("read-only Open = %v", err)
	}
}

func FuzzParseIndex(f *testing.F) {
	id := hashObject(objBlob, nil)
	f.Add(encodeIndex([]indexEntry{{name: "a", id: id, mode: modeRegular}, {name: "b/c", id: id, mode: modeExec}}))
	f.Add([]byte("DIRC"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parseIndex(data)
	})
}

func FuzzParseTree(f *testing.F) {
	f.Add(encodeTree([]treeEntry{{modeRegular, "a", oid{}}, {modeTree, "d", oid{1}}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		if entries, err := parseTree(data); err == nil {
			if _, err := parseTree(encodeTree(entries)); err != nil {
				t.Errorf("re-encoded tree does not parse: %v", err)
			}
		}
	})
}

func FuzzParseCommit(f *testing.F) {
	sig := signature{"A", "a@b", time.Unix(1, 0).UTC()}
	f.Add(encodeCommit(oid{}, []oid{{1}}, sig, sig, "m"))
	f.Fuzz(func(t *testing.T, data []byte) {
		parseCommit(nil, oid{}, data)
	})
}

func FuzzApplyDelta(f *testing.F) {
	f.Add([]byte("0123456789abcdef"), delta(16, 9, []byte{0x91, 10, 3}, []byte{3, 'x', 'y', 'z'}, []byte{0x90, 3}))
	f.Fuzz(func(t *testing.T, base, d []byte) {
		applyDelta(base, d)
	})
}

// TestFileBecomesDirectory commits only the new file inside a directory
// that replaced a file of the same name: the stale file entry goes, so the
// tree never holds both (git fsck: duplicateEntries).
func TestFileBecomesDirectory(t *testing.T) {
	dir := dataDir(t)
	r := open(t, dir)
	ctx := t.Context()
	write(t, dir, "skills/tea", "a file first\n")
	if _, err := r.CommitAll(ctx, "initial"); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "skills", "tea")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "skills/tea/green.md", "now a directory\n")
	rev, err := r.Commit(ctx, "tea is a directory", "skills/tea/green.md")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"skills/tea", "skills/tea/green.md"}; !reflect.DeepEqual(rev.Files, want) {
		t.Errorf("files = %v, want %v", rev.Files, want)
	}
	// And back: the directory's files go when the file is committed.
	if err := os.RemoveAll(filepath.Join(dir, "skills", "tea")); err != nil {
		t.Fatal(err)
	}
	write(t, dir, "skills/tea", "a file again\n")
	if _, err := r.Commit(ctx, "tea is a file", "skills/tea"); err != nil {
		t.Fatal(err)
	}
	want := []string{"BASE_PROMPT.txt", "MEMORIES.txt", "prompts/SEED_en.txt", "skills/brew.md", "skills/tea", "world_state.json"}
	if got := headFiles(t, r); !reflect.DeepEqual(got, want) {
		t.Errorf("head = %v, want %v", got, want)
	}
	if _, err := exec.LookPath("git"); err == nil {
		newGitCLI(t, dir).checkClean()
	}
}
