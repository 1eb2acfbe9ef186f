package skills

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// copyFixture copies testdata/pdf-forms (a skill in the shared format:
// front matter, a reference file, scripts/) into the skills directory as
// a person would, unchanged.
func (e *env) copyFixture(t testing.TB, name string) string {
	t.Helper()
	dst := filepath.Join(e.dataDir, DirName, name)
	err := filepath.WalkDir("testdata/pdf-forms", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel("testdata/pdf-forms", p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// A folder skill is listed beside the flat ones: the table of contents
// shows its description, the prompt its instructions (without the front
// matter) and where its files are.
func TestFolderSkillListed(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.StatInterval = -1 })
	ctx := context.Background()
	e.writeRaw(t, "deploy.md", "Deploy the blog\n\n1. make deploy")
	dir := e.copyFixture(t, "pdf-forms")
	list, err := e.store.List(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("List = %+v, %v", list, err)
	}
	sk := list[1]
	if sk.Name != "pdf-forms" || !sk.Folder || !strings.HasPrefix(sk.Summary, "Fill in the fields of a PDF form") ||
		strings.Contains(sk.Body, "license:") || !strings.HasPrefix(sk.Body, "# Filling PDF forms") || sk.Path() != "skills/pdf-forms/SKILL.md" {
		t.Errorf("folder skill = %+v", sk)
	}
	ps, err := e.store.Prompt(ctx)
	if err != nil || len(ps) != 2 {
		t.Fatalf("Prompt = %+v, %v", ps, err)
	}
	if ps[1].Summary != sk.Summary || !strings.Contains(ps[1].Body, "scripts/fill_form.py") || !strings.Contains(ps[1].Body, "the folder "+dir) ||
		!strings.Contains(ps[1].Body, "execute_shell") {
		t.Errorf("prompt skill = %+v", ps[1])
	}
	if ps[0].Summary != "Deploy the blog" || list[0].Folder {
		t.Errorf("flat skill = %+v", ps[0])
	}
}

// A folder copied file by file is listed once its SKILL.md is there; a
// folder without one (or a hidden one) is not a skill; a flat file of the
// same name wins over a folder.
func TestFolderSkillAppears(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.StatInterval = -1 })
	ctx := context.Background()
	for _, d := range []string{"half-copied", ".git", "twin"} {
		if err := os.MkdirAll(filepath.Join(e.dataDir, DirName, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	e.writeRaw(t, "twin.md", "The flat twin")
	e.writeRaw(t, "twin/SKILL.md", "---\ndescription: the folder twin\n---\nx")
	e.writeRaw(t, ".git/SKILL.md", "---\ndescription: hidden\n---\nx")
	if names, _ := e.store.Names(ctx); strings.Join(names, ",") != "twin" {
		t.Fatalf("names = %v", names)
	}
	if sk, _ := e.store.Get(ctx, "twin"); sk.Folder {
		t.Error("the folder won over the flat file")
	}
	e.writeRaw(t, "half-copied/SKILL.md", "---\nname: half-copied\ndescription: Now complete.\n---\nSteps.")
	if sk, err := e.store.Get(ctx, "half-copied"); err != nil || sk.Summary != "Now complete." {
		t.Errorf("after SKILL.md arrived: %+v, %v", sk, err)
	}
}

// ReadFile reaches the folder's files and nothing outside it.
func TestFolderSkillReadFile(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.StatInterval = -1 })
	ctx := context.Background()
	dir := e.copyFixture(t, "pdf-forms")
	e.writeRaw(t, "flat.md", "A flat skill")
	if err := os.WriteFile(filepath.Join(dir, "scripts", "blob.bin"), []byte{0, 1, 2}, 0o644); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(e.dataDir, "secret.txt")
	if err := os.WriteFile(outside, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(dir, "link.txt")); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, skill, path, want, resolved, err string
	}{
		{"a reference", "pdf-forms", "reference.md", "checkbox", "reference.md", ""},
		{"a script", "pdf-forms", "scripts/fill_form.py", "--list", "scripts/fill_form.py", ""},
		{"another letter case", "pdf-forms", "REFERENCE.md", "checkbox", "reference.md", ""},
		{"backslashes", "pdf-forms", `scripts\fill_form.py`, "--list", "scripts/fill_form.py", ""},
		{"up and out", "pdf-forms", "../flat.md", "", "", "no leading /, no .."},
		{"absolute", "pdf-forms", "/etc/passwd", "", "", "no leading /, no .."},
		{"a symlink out of the folder", "pdf-forms", "link.txt", "", "", "has no file"},
		{"unknown lists the files", "pdf-forms", "forms.md", "", "", "reference.md, scripts/blob.bin, scripts/fill_form.py"},
		{"binary", "pdf-forms", "scripts/blob.bin", "", "", "not text"},
		{"a flat skill has no files", "flat", "x.md", "", "", "single file"},
		{"unknown skill", "nope", "x.md", "", "", `skill "nope" not found`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			text, resolved, _, err := e.store.ReadFile(ctx, c.skill, c.path)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Errorf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || !strings.Contains(text, c.want) || resolved != c.resolved {
				t.Errorf("ReadFile = %q, %q, %v", text, resolved, err)
			}
		})
	}
}

// The store never writes or deletes a folder skill; add_skill says so.
func TestFolderSkillNotWritten(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.StatInterval = -1 })
	ctx := context.Background()
	dir := e.copyFixture(t, "pdf-forms")
	if _, err := e.store.Save(ctx, "pdf-forms", "New text"); !errors.Is(err, ErrFolder) {
		t.Errorf("Save = %v", err)
	}
	if err := e.store.Delete(ctx, "pdf-forms"); !errors.Is(err, ErrFolder) {
		t.Errorf("Delete = %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.dataDir, DirName, "pdf-forms.md")); !errors.Is(err, fs.ErrNotExist) {
		t.Error("a flat file shadows the folder")
	}
	if _, err := os.Stat(filepath.Join(dir, "SKILL.md")); err != nil {
		t.Error(err)
	}
	res, err := ReadTool(e.store).Call(ctx, json.RawMessage(`{"name":"pdf-forms","path":"scripts/fill_form.py"}`))
	if err != nil || !strings.Contains(res.Content, `"path":"scripts/fill_form.py"`) || !strings.Contains(res.Content, "fields of") {
		t.Errorf("read_skill with a path = %s, %v", res.Content, err)
	}
	res, err = ReadTool(e.store).Call(ctx, json.RawMessage(`{"name":"pdf-forms"}`))
	if err != nil || !strings.Contains(res.Content, `"folder":"`+dir+`"`) {
		t.Errorf("read_skill = %s, %v", res.Content, err)
	}
}
