package files

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/tools/patch"
	"github.com/reverie-ai/reverie/internal/tools/workspace"
)

type fixture struct {
	files   *Files
	ws      *workspace.Workspace
	outside string
}

func newFixture(t *testing.T, lim Limits) fixture {
	t.Helper()
	base := t.TempDir()
	outside := filepath.Join(base, "outside")
	if err := os.MkdirAll(outside, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(outside, "secret.txt"), []byte("top secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ws, err := workspace.Open(filepath.Join(base, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(ws.Dir(), "link_out")); err != nil {
		t.Fatal(err)
	}
	return fixture{files: New(ws, lim), ws: ws, outside: outside}
}

func (fx fixture) write(t *testing.T, rel, content string) {
	t.Helper()
	p := filepath.Join(fx.ws.Dir(), rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (fx fixture) read(t *testing.T, rel string) (string, bool) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fx.ws.Dir(), rel))
	if errors.Is(err, os.ErrNotExist) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return string(b), true
}

func numbered(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	return b.String()
}

func TestRead(t *testing.T) {
	fx := newFixture(t, Limits{DefaultLines: 3, MaxLineChars: 10, MaxOutputChars: 60})
	fx.write(t, "ten.txt", numbered(1, 10))
	fx.write(t, "long.txt", strings.Repeat("x", 30)+"\n")
	fx.write(t, "crlf.txt", "a\r\nb")
	fx.write(t, "empty.txt", "")
	fx.write(t, "bin.dat", "PK\x03\x04\x00\x00binary")
	fx.write(t, "latin1.txt", "caf\xe9 au lait\n")
	fx.write(t, "dir/a.txt", "a")
	fx.write(t, "dir/sub/b.txt", "b")
	tests := []struct {
		name    string
		args    ReadArgs
		want    ReadResult
		wantErr string
		errIs   error
	}{
		{name: "default window", args: ReadArgs{Path: "ten.txt"},
			want: ReadResult{Path: "ten.txt", Content: "     1\tline 1\n     2\tline 2\n     3\tline 3\n", StartLine: 1, EndLine: 3, TotalLines: 10, NextOffset: 4}},
		{name: "offset and limit", args: ReadArgs{Path: "ten.txt", Offset: 9, Limit: 5},
			want: ReadResult{Path: "ten.txt", Content: "     9\tline 9\n    10\tline 10\n", StartLine: 9, EndLine: 10, TotalLines: 10}},
		{name: "output cap", args: ReadArgs{Path: "ten.txt", Limit: 10},
			want: ReadResult{Path: "ten.txt", Content: "     1\tline 1\n     2\tline 2\n     3\tline 3\n     4\tline 4\n", StartLine: 1, EndLine: 4, TotalLines: 10, NextOffset: 5, Truncated: true}},
		{name: "long line truncated", args: ReadArgs{Path: "long.txt"},
			want: ReadResult{Path: "long.txt", Content: "     1\txxxxxxxxxx … [line truncated]\n", StartLine: 1, EndLine: 1, TotalLines: 1}},
		{name: "CRLF and no final newline", args: ReadArgs{Path: "crlf.txt"},
			want: ReadResult{Path: "crlf.txt", Content: "     1\ta\n     2\tb\n", StartLine: 1, EndLine: 2, TotalLines: 2}},
		{name: "empty file", args: ReadArgs{Path: "empty.txt"}, want: ReadResult{Path: "empty.txt"}},
		{name: "directory listing", args: ReadArgs{Path: "dir"},
			want: ReadResult{Path: "dir", Content: "a.txt\nsub/\n", TotalLines: 2, IsDir: true}},
		{name: "offset past end", args: ReadArgs{Path: "ten.txt", Offset: 11}, wantErr: "past the end"},
		{name: "binary refused", args: ReadArgs{Path: "bin.dat"}, errIs: ErrBinary},
		{name: "invalid UTF-8 refused", args: ReadArgs{Path: "latin1.txt"}, errIs: ErrBinary},
		{name: "missing file", args: ReadArgs{Path: "nope.txt"}, errIs: os.ErrNotExist},
		{name: "dotdot escape", args: ReadArgs{Path: "../outside/secret.txt"}, errIs: workspace.ErrOutsideWorkspace},
		{name: "absolute escape", args: ReadArgs{Path: "/etc/passwd"}, errIs: workspace.ErrOutsideWorkspace},
		{name: "symlink escape", args: ReadArgs{Path: "link_out/secret.txt"}, errIs: workspace.ErrOutsideWorkspace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fx.files.Read(t.Context(), tc.args)
			if tc.errIs != nil || tc.wantErr != "" {
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Fatalf("Read error = %v; want %v", err, tc.errIs)
				}
				if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("Read error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Read: %v", err)
			}
			if got != tc.want {
				t.Fatalf("Read =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestReadSizeLimit(t *testing.T) {
	fx := newFixture(t, Limits{MaxFileBytes: 16})
	fx.write(t, "big.txt", strings.Repeat("a", 17))
	_, err := fx.files.Read(t.Context(), ReadArgs{Path: "big.txt"})
	if err == nil || !strings.Contains(err.Error(), "over the 16-byte limit") {
		t.Fatalf("Read error = %v; want the size limit", err)
	}
}

func TestWrite(t *testing.T) {
	fx := newFixture(t, Limits{MaxFileBytes: 32})
	fx.write(t, "log.txt", "one\n")
	tests := []struct {
		name     string
		args     WriteArgs
		want     WriteResult
		wantFile string
		errIs    error
		wantErr  string
	}{
		{name: "create with parents", args: WriteArgs{Path: "a/b/new.txt", Content: "hello"},
			want: WriteResult{Path: "a/b/new.txt", Bytes: 5, Created: true}, wantFile: "hello"},
		{name: "replace", args: WriteArgs{Path: "a/b/new.txt", Content: "bye"},
			want: WriteResult{Path: "a/b/new.txt", Bytes: 3}, wantFile: "bye"},
		{name: "append", args: WriteArgs{Path: "log.txt", Content: "two\n", Append: true},
			want: WriteResult{Path: "log.txt", Bytes: 8}, wantFile: "one\ntwo\n"},
		{name: "append creates", args: WriteArgs{Path: "fresh.txt", Content: "x", Append: true},
			want: WriteResult{Path: "fresh.txt", Bytes: 1, Created: true}, wantFile: "x"},
		{name: "content over limit", args: WriteArgs{Path: "big.txt", Content: strings.Repeat("b", 33)}, wantErr: "over the 32-byte limit"},
		{name: "append over limit", args: WriteArgs{Path: "log.txt", Content: strings.Repeat("c", 30), Append: true}, wantErr: "would grow"},
		{name: "directory refused", args: WriteArgs{Path: "a", Content: "x"}, wantErr: "is a directory"},
		{name: "dotdot escape", args: WriteArgs{Path: "../outside/pwned.txt", Content: "x"}, errIs: workspace.ErrOutsideWorkspace},
		{name: "absolute escape", args: WriteArgs{Path: filepath.Join(fx.outside, "pwned.txt"), Content: "x"}, errIs: workspace.ErrOutsideWorkspace},
		{name: "symlink escape", args: WriteArgs{Path: "link_out/pwned.txt", Content: "x"}, errIs: workspace.ErrOutsideWorkspace},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := fx.files.Write(t.Context(), tc.args)
			if tc.errIs != nil || tc.wantErr != "" {
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Fatalf("Write error = %v; want %v", err, tc.errIs)
				}
				if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("Write error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Write: %v", err)
			}
			if got != tc.want {
				t.Fatalf("Write = %+v; want %+v", got, tc.want)
			}
			if content, _ := fx.read(t, got.Path); content != tc.wantFile {
				t.Fatalf("file = %q; want %q", content, tc.wantFile)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(fx.outside, "pwned.txt")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("a file was written outside the workspace (stat: %v)", err)
	}
}

func TestApplyPatch(t *testing.T) {
	const mainGo = "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n"
	tests := []struct {
		name      string
		patch     string
		want      []Change
		wantFiles map[string]string // "" content with absent=true means the file must not exist
		absent    []string
		wantErr   string
		errIs     error
	}{
		{
			name: "add update delete move",
			patch: `*** Begin Patch
*** Add File: docs/readme.md
+# Readme
*** Update File: main.go
@@ func main() {
-	println("hello")
+	println("patched")
*** Delete File: old.txt
*** Update File: notes.txt
*** Move to: archive/notes.txt
@@
-draft
+final
*** End Patch`,
			want: []Change{
				{Path: "docs/readme.md", Action: "added"},
				{Path: "main.go", Action: "updated"},
				{Path: "old.txt", Action: "deleted"},
				{Path: "notes.txt", Action: "moved", MovedTo: "archive/notes.txt"},
			},
			wantFiles: map[string]string{
				"docs/readme.md":    "# Readme\n",
				"main.go":           "package main\n\nfunc main() {\n\tprintln(\"patched\")\n}\n",
				"archive/notes.txt": "final\n",
			},
			absent: []string{"old.txt", "notes.txt"},
		},
		{
			name:    "context mismatch in the second file writes nothing",
			patch:   "*** Begin Patch\n*** Add File: new.txt\n+x\n*** Update File: main.go\n@@\n-\tprintln(\"bye\")\n+\tprintln(\"x\")\n*** End Patch",
			errIs:   patch.ErrNoMatch,
			wantErr: "nothing was changed",
			absent:  []string{"new.txt"},
		},
		{name: "add existing", patch: "*** Begin Patch\n*** Add File: main.go\n+x\n*** End Patch", wantErr: "already exists"},
		{name: "update missing", patch: "*** Begin Patch\n*** Update File: nope.go\n@@\n-a\n+b\n*** End Patch", wantErr: "does not exist"},
		{name: "delete missing", patch: "*** Begin Patch\n*** Delete File: nope.go\n*** End Patch", wantErr: "does not exist"},
		{name: "move onto existing", patch: "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: main.go\n*** End Patch", wantErr: "already exists"},
		{name: "same file through two spellings", patch: "*** Begin Patch\n*** Delete File: old.txt\n*** Update File: ./old.txt\n@@\n-old\n+new\n*** End Patch", wantErr: "already changed"},
		{name: "dotdot escape", patch: "*** Begin Patch\n*** Add File: ../outside/pwned.txt\n+x\n*** End Patch", errIs: workspace.ErrOutsideWorkspace},
		{name: "symlink escape", patch: "*** Begin Patch\n*** Update File: link_out/secret.txt\n@@\n-top secret\n+pwned\n*** End Patch", errIs: workspace.ErrOutsideWorkspace},
		{name: "move escape", patch: "*** Begin Patch\n*** Update File: notes.txt\n*** Move to: /tmp/notes.txt\n*** End Patch", errIs: workspace.ErrOutsideWorkspace},
		{name: "parse error", patch: "*** Begin Patch\n*** Update File: main.go\n*** End", wantErr: "must end with"},
		{
			// Both additions pass the checks; the second fails when written
			// (its path became a directory through the first), so the first
			// must be rolled back along with the update before it.
			name:    "failure while writing rolls back",
			patch:   "*** Begin Patch\n*** Update File: main.go\n@@\n-\tprintln(\"hello\")\n+\tprintln(\"changed\")\n*** Add File: pkg/inner.txt\n+inner\n*** Add File: pkg\n+clash\n*** End Patch",
			wantErr: "rolled back",
			absent:  []string{"pkg/inner.txt"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t, Limits{})
			fx.write(t, "main.go", mainGo)
			fx.write(t, "old.txt", "old\n")
			fx.write(t, "notes.txt", "draft\n")
			got, err := fx.files.ApplyPatch(t.Context(), PatchArgs{Patch: tc.patch})
			if tc.errIs != nil || tc.wantErr != "" {
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Fatalf("ApplyPatch error = %v; want %v", err, tc.errIs)
				}
				if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("ApplyPatch error = %v; want one containing %q", err, tc.wantErr)
				}
				// Nothing changed.
				for rel, want := range map[string]string{"main.go": mainGo, "old.txt": "old\n", "notes.txt": "draft\n"} {
					if content, ok := fx.read(t, rel); !ok || content != want {
						t.Errorf("%s = %q (exists %v) after a failed patch; want %q", rel, content, ok, want)
					}
				}
				if content, _ := os.ReadFile(filepath.Join(fx.outside, "secret.txt")); string(content) != "top secret\n" {
					t.Errorf("outside file changed: %q", content)
				}
			} else {
				if err != nil {
					t.Fatalf("ApplyPatch: %v", err)
				}
				if fmt.Sprint(got.Changes) != fmt.Sprint(tc.want) {
					t.Fatalf("changes = %+v; want %+v", got.Changes, tc.want)
				}
				for rel, want := range tc.wantFiles {
					if content, ok := fx.read(t, rel); !ok || content != want {
						t.Errorf("%s = %q (exists %v); want %q", rel, content, ok, want)
					}
				}
			}
			for _, rel := range tc.absent {
				if _, ok := fx.read(t, rel); ok {
					t.Errorf("%s exists; want it absent", rel)
				}
			}
		})
	}
}

func TestApplyPatchCanceled(t *testing.T) {
	fx := newFixture(t, Limits{})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_, err := fx.files.ApplyPatch(ctx, PatchArgs{Patch: "*** Begin Patch\n*** Add File: a.txt\n+a\n*** End Patch"})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("ApplyPatch error = %v; want context.Canceled", err)
	}
	if _, ok := fx.read(t, "a.txt"); ok {
		t.Fatal("a canceled patch wrote a file")
	}
}
