package workspace

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// setup builds a workspace next to an "outside" directory holding a secret,
// plus symbolic links of every kind.
func setup(t *testing.T) (*Workspace, string) {
	t.Helper()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	must(t, os.MkdirAll(outside, 0o755))
	must(t, os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("secret"), 0o644))
	ws, err := Open(filepath.Join(base, "ws"))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	dir := ws.Dir()
	must(t, os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755))
	must(t, os.WriteFile(filepath.Join(dir, "sub", "file.txt"), []byte("hello"), 0o644))
	must(t, os.Symlink(outside, filepath.Join(dir, "escape_dir")))
	must(t, os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(dir, "escape_file")))
	must(t, os.Symlink(filepath.Join(outside, "missing.txt"), filepath.Join(dir, "dangling_escape")))
	must(t, os.Symlink("../../outside", filepath.Join(dir, "sub", "relative_escape")))
	must(t, os.Symlink("sub", filepath.Join(dir, "inside_link")))
	return ws, base
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func TestRel(t *testing.T) {
	ws, base := setup(t)
	tests := []struct {
		name    string
		path    string
		want    string
		outside bool // want ErrOutsideWorkspace
		anyErr  bool // want some other error
	}{
		{name: "plain file", path: "sub/file.txt", want: "sub/file.txt"},
		{name: "new file in new dir", path: "new/dir/file.txt", want: "new/dir/file.txt"},
		{name: "dot is the root", path: ".", want: "."},
		{name: "inner dotdot stays inside", path: "sub/deeper/../file.txt", want: "sub/file.txt"},
		{name: "absolute inside", path: filepath.Join(ws.Dir(), "sub", "file.txt"), want: "sub/file.txt"},
		{name: "symlink inside the workspace", path: "inside_link/file.txt", want: "inside_link/file.txt"},
		{name: "dotdot escape", path: "../outside/secret.txt", outside: true},
		{name: "dotdot escape after descent", path: "sub/../../outside/secret.txt", outside: true},
		{name: "bare dotdot", path: "..", outside: true},
		{name: "absolute outside", path: filepath.Join(base, "outside", "secret.txt"), outside: true},
		{name: "absolute system file", path: "/etc/passwd", outside: true},
		{name: "symlinked directory escape", path: "escape_dir/secret.txt", outside: true},
		{name: "symlinked file escape", path: "escape_file", outside: true},
		{name: "new file under symlinked directory", path: "escape_dir/new/file.txt", outside: true},
		{name: "dangling symlink escape", path: "dangling_escape", outside: true},
		{name: "relative symlink escape", path: "sub/relative_escape/secret.txt", outside: true},
		{name: "empty path", path: "  ", anyErr: true},
		{name: "NUL byte", path: "a\x00b", anyErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ws.Rel(tc.path)
			switch {
			case tc.outside:
				if !errors.Is(err, ErrOutsideWorkspace) {
					t.Fatalf("Rel(%q) = %q, %v; want ErrOutsideWorkspace", tc.path, got, err)
				}
			case tc.anyErr:
				if err == nil {
					t.Fatalf("Rel(%q) = %q; want an error", tc.path, got)
				}
			default:
				if err != nil {
					t.Fatalf("Rel(%q): %v", tc.path, err)
				}
				if got != tc.want {
					t.Fatalf("Rel(%q) = %q; want %q", tc.path, got, tc.want)
				}
			}
		})
	}
}

func TestOpenThroughSymlinkedWorkspace(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "real")
	must(t, os.MkdirAll(real, 0o755))
	link := filepath.Join(base, "link")
	must(t, os.Symlink(real, link))
	ws, err := Open(link)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	if ws.Dir() != real {
		t.Fatalf("Dir() = %q; want the resolved %q", ws.Dir(), real)
	}
	got, err := ws.Rel(filepath.Join(link, "a.txt"))
	if err != nil || got != "a.txt" {
		t.Fatalf("Rel via configured symlink path = %q, %v; want a.txt", got, err)
	}
}

// TestRootRefusesSwappedSymlink checks the second line of defence: a path
// that passed Rel and is then replaced by an escaping symbolic link is still
// refused by the os.Root-based accessors.
func TestRootRefusesSwappedSymlink(t *testing.T) {
	ws, base := setup(t)
	rel, err := ws.Rel("swapped")
	if err != nil {
		t.Fatalf("Rel: %v", err)
	}
	must(t, os.Symlink(filepath.Join(base, "outside"), ws.Abs("swapped")))
	if _, err := ws.ReadFile(rel + "/secret.txt"); err == nil {
		t.Fatal("ReadFile through a swapped-in escaping symlink succeeded")
	}
	if err := ws.WriteFileAtomic(rel+"/pwned.txt", []byte("x"), 0o644); err == nil {
		t.Fatal("WriteFileAtomic through a swapped-in escaping symlink succeeded")
	}
	if _, err := os.Stat(filepath.Join(base, "outside", "pwned.txt")); !os.IsNotExist(err) {
		t.Fatalf("file written outside the workspace (stat err %v)", err)
	}
}

func TestWriteFileAtomic(t *testing.T) {
	ws, _ := setup(t)
	tests := []struct {
		name     string
		rel      string
		prepare  func(t *testing.T)
		data     string
		wantMode os.FileMode
		wantErr  bool
	}{
		{name: "creates parents", rel: "a/b/c.txt", data: "abc", wantMode: 0o644},
		{name: "replaces and keeps mode", rel: "script.sh", data: "echo new",
			prepare: func(t *testing.T) {
				must(t, os.WriteFile(ws.Abs("script.sh"), []byte("echo old"), 0o755))
			}, wantMode: 0o755},
		{name: "refuses a directory", rel: "sub", data: "x", wantErr: true},
		{name: "refuses the root", rel: ".", data: "x", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.prepare != nil {
				tc.prepare(t)
			}
			err := ws.WriteFileAtomic(tc.rel, []byte(tc.data), 0o644)
			if tc.wantErr {
				if err == nil {
					t.Fatal("want an error")
				}
				return
			}
			if err != nil {
				t.Fatalf("WriteFileAtomic: %v", err)
			}
			got, err := os.ReadFile(ws.Abs(tc.rel))
			must(t, err)
			if string(got) != tc.data {
				t.Fatalf("content = %q; want %q", got, tc.data)
			}
			info, err := os.Stat(ws.Abs(tc.rel))
			must(t, err)
			if info.Mode().Perm() != tc.wantMode {
				t.Fatalf("mode = %v; want %v", info.Mode().Perm(), tc.wantMode)
			}
			entries, err := os.ReadDir(filepath.Dir(ws.Abs(tc.rel)))
			must(t, err)
			for _, e := range entries {
				if filepath.Ext(e.Name()) != "" && e.Name()[0] == '.' {
					t.Fatalf("temporary file left behind: %s", e.Name())
				}
			}
		})
	}
}
