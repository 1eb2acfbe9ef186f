package atomicfile

import (
	"os"
	"path/filepath"
	"testing"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "f.txt")
	for _, c := range []struct {
		data string
		perm os.FileMode
	}{{"first", 0o600}, {"second, longer", 0o644}} {
		if err := Write(p, []byte(c.data), c.perm); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(p)
		if err != nil || string(got) != c.data {
			t.Fatalf("read %q, %v; want %q", got, err, c.data)
		}
		if fi, _ := os.Stat(p); fi.Mode().Perm() != c.perm {
			t.Errorf("mode %v, want %v", fi.Mode().Perm(), c.perm)
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(p))
	if len(entries) != 1 {
		t.Errorf("temp files left: %v", entries)
	}
	// A failed write (the target is a directory) leaves nothing behind.
	if err := Write(dir, []byte("x"), 0o600); err == nil {
		t.Error("replacing a directory succeeded")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temp files left after a failure: %v", entries)
	}
}
