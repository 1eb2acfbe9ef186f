package skills

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/extension/extensiontest"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var update = flag.Bool("update", false, "rewrite golden files")

type change struct {
	message string
	paths   []string
}

type env struct {
	dataDir string
	db      *sql.DB
	store   *Store
	clock   *extensiontest.Clock
	mu      sync.Mutex
	changes []change
}

func (e *env) recorded() []change {
	e.mu.Lock()
	defer e.mu.Unlock()
	return slices.Clone(e.changes)
}

func newEnv(t testing.TB, tweak ...func(*Options)) *env {
	t.Helper()
	dir := t.TempDir()
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	e := &env{dataDir: filepath.Join(dir, "data"), db: db, clock: extensiontest.NewClock(time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC))}
	o := Options{DataDir: e.dataDir, DB: db, Now: e.clock.Now, Changed: func(_ context.Context, msg string, paths ...string) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.changes = append(e.changes, change{msg, paths})
	}}
	for _, f := range tweak {
		f(&o)
	}
	if e.store, err = Open(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	return e
}

// writeRaw puts a file into the skills directory behind the store's back.
func (e *env) writeRaw(t testing.TB, name, content string) {
	t.Helper()
	dir := filepath.Join(e.dataDir, "skills")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) files(t testing.TB) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(e.dataDir, "skills"))
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, en := range entries {
		out = append(out, en.Name())
	}
	return out
}

func TestCleanName(t *testing.T) {
	cases := []struct {
		in, want, suggestion string
	}{
		{"deploy-blog", "deploy-blog", ""},
		{"  research_v2.md ", "research_v2", ""},
		{"0day", "0day", ""},
		{strings.Repeat("a", 64), strings.Repeat("a", 64), ""},
		{"", "", "empty"},
		{"   ", "", "empty"},
		{".md", "", "empty"},
		{"../etc/passwd", "", `path characters`},
		{"a/b", "", `"a-b"`},
		{`a\b`, "", "path characters"},
		{"..", "", "path characters"},
		{"x..y", "", "path characters"},
		{"Git Tips", "", `"git-tips"`},
		{"-leading", "", `"leading"`},
		{"_x", "", `"x"`},
		{"über", "", `"ber"`},
		{"a.b", "", `"a-b"`},
		{strings.Repeat("a", 65), "", "1-64"},
		{"!!!", "", `"my-skill"`},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got, err := CleanName(c.in)
			if c.suggestion == "" {
				if err != nil || got != c.want {
					t.Fatalf("CleanName(%q) = %q, %v; want %q", c.in, got, err, c.want)
				}
				return
			}
			if !errors.Is(err, ErrInvalidName) || !strings.Contains(err.Error(), c.suggestion) {
				t.Fatalf("CleanName(%q) error = %v, want ErrInvalidName mentioning %s", c.in, err, c.suggestion)
			}
		})
	}
}

func TestSaveGetListDelete(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	// The directory does not exist yet: empty, not an error.
	if list, err := e.store.List(ctx); err != nil || len(list) != 0 {
		t.Fatalf("empty list = %v, %v", list, err)
	}
	saved, err := e.store.Save(ctx, "deploy-blog", "# Deploy the blog\r\n\r\n1. hugo\r\n2. rsync\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	if saved.Replaced || saved.Unchanged || saved.Skill.Summary != "Deploy the blog" || saved.Skill.Body != "# Deploy the blog\n\n1. hugo\n2. rsync" || saved.Skill.Chars != 35 {
		t.Fatalf("saved = %+v", saved)
	}
	raw, _ := os.ReadFile(filepath.Join(e.dataDir, "skills", "deploy-blog.md"))
	if string(raw) != "# Deploy the blog\n\n1. hugo\n2. rsync\n" {
		t.Fatalf("file = %q", raw)
	}
	again, err := e.store.Save(ctx, "deploy-blog.md", "# Deploy the blog\n\n1. hugo\n2. rsync")
	if err != nil || !again.Unchanged {
		t.Fatalf("identical save = %+v, %v", again, err)
	}
	repl, err := e.store.Save(ctx, "deploy-blog", "Deploy the blog with hugo and rsync\n1. hugo --minify\n2. rsync -a public/ host:/srv")
	if err != nil || !repl.Replaced || repl.Unchanged {
		t.Fatalf("replace = %+v, %v", repl, err)
	}
	if _, err := e.store.Save(ctx, "alpha", "Alpha summary\nsteps"); err != nil {
		t.Fatal(err)
	}
	list, err := e.store.List(ctx)
	if err != nil || len(list) != 2 || list[0].Name != "alpha" || list[1].Summary != "Deploy the blog with hugo and rsync" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	if got, err := e.store.Get(ctx, " alpha.md"); err != nil || got.Name != "alpha" {
		t.Fatalf("get = %+v, %v", got, err)
	}
	if total, _ := e.store.TotalChars(ctx); total != list[0].Chars+list[1].Chars {
		t.Errorf("total = %d", total)
	}
	if err := e.store.Delete(ctx, "alpha"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.Get(ctx, "alpha"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get deleted = %v", err)
	}
	if err := e.store.Delete(ctx, "alpha"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("delete twice = %v", err)
	}
	want := []change{
		{"skills: add deploy-blog", []string{"skills/deploy-blog.md"}},
		{"skills: update deploy-blog", []string{"skills/deploy-blog.md"}},
		{"skills: add alpha", []string{"skills/alpha.md"}},
		{"skills: delete alpha", []string{"skills/alpha.md"}},
	}
	got := e.recorded()
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("hook calls:\n got %v\nwant %v", got, want)
	}
	if f := e.files(t); fmt.Sprint(f) != "[deploy-blog.md]" {
		t.Errorf("files left: %v (temporary files must not remain)", f)
	}
}

func TestBadInputWritesNothing(t *testing.T) {
	e := newEnv(t, func(o *Options) { o.MaxBodyChars = 100 })
	ctx := context.Background()
	if _, err := e.store.Save(ctx, "keep", "Keep me\nsteps"); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name, skill, body string
		want              error
	}{
		{"empty name", "", "x", ErrInvalidName},
		{"path", "../escape", "x", ErrInvalidName},
		{"absolute", "/tmp/x", "x", ErrInvalidName},
		{"capitals", "Keep", "x", ErrInvalidName},
		{"empty body", "new", " \n\t ", ErrEmpty},
		{"over the limit", "new", strings.Repeat("y", 101), ErrTooLong},
		{"long summary line", "new", strings.Repeat("y", 99), nil}, // under both limits
		{"secret", "new2", "Login\nuse key sk-ant-abcdefghijklmnopqrstuvwxyz123456", ErrSecret},
		{"replace with empty", "keep", "", ErrEmpty},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.store.Save(ctx, c.skill, c.body)
			if c.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			// The refusal says what is wrong, not "save skill …: " first.
			if strings.HasPrefix(err.Error(), "save skill") {
				t.Errorf("err = %q, want it to start with what is refused", err)
			}
		})
	}
	long := newEnv(t)
	if _, err := long.store.Save(ctx, "x", strings.Repeat("s", MaxSummaryChars+1)+"\nsteps"); !errors.Is(err, ErrTooLong) || !strings.Contains(err.Error(), "first line") {
		t.Errorf("long first line: %v", err)
	}
	if f := e.files(t); fmt.Sprint(f) != "[keep.md new.md]" {
		t.Errorf("files = %v", f)
	}
	if sk, _ := e.store.Get(ctx, "keep"); sk.Body != "Keep me\nsteps" {
		t.Errorf("keep = %q", sk.Body)
	}
	if n := len(e.recorded()); n != 2 {
		t.Errorf("hook called %d times, want 2", n)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(e.dataDir), "escape.md")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a file escaped the skills directory: %v", err)
	}
}

func TestHandMadeFiles(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	e.writeRaw(t, "Git Tips.md", "## Git tips\nrebase often\n")
	e.writeRaw(t, ".hidden.md", "secret draft")
	e.writeRaw(t, "notes.txt", "not a skill")
	e.writeRaw(t, "empty.md", "  \n")
	e.writeRaw(t, "bad-utf8.md", "caf\xe9 summary\nsteps")
	if err := os.Mkdir(filepath.Join(e.dataDir, "skills", "dir.md"), 0o755); err != nil {
		t.Fatal(err)
	}
	list, err := e.store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, s := range list {
		names = append(names, s.Name)
	}
	if fmt.Sprint(names) != "[Git Tips bad-utf8 empty]" {
		t.Fatalf("names = %v", names)
	}
	if list[0].Summary != "Git tips" || list[1].Summary != "caf\uFFFD summary" {
		t.Errorf("summaries = %q, %q", list[0].Summary, list[1].Summary)
	}
	ps, _ := e.store.Prompt(ctx)
	if len(ps) != 2 || ps[0].Name != "Git Tips" || ps[0].Summary != "Git tips" {
		t.Errorf("prompt skills = %+v (the empty file is left out)", ps)
	}
	if sk, err := e.store.Get(ctx, "Git Tips"); err != nil || sk.Body != "## Git tips\nrebase often" {
		t.Errorf("get hand-made = %+v, %v", sk, err)
	}
	if err := e.store.Delete(ctx, "Git Tips"); err != nil {
		t.Fatalf("delete hand-made: %v", err)
	}
	if _, err := e.store.Get(ctx, ".hidden"); err == nil {
		t.Error("hidden file readable")
	}
}

func TestCacheInvalidation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for i := range 5 {
		e.writeRaw(t, fmt.Sprintf("s%d.md", i), fmt.Sprintf("Skill %d\nsteps", i))
	}
	reads := func() int {
		e.store.mu.Lock()
		defer e.store.mu.Unlock()
		return e.store.reads
	}
	list := func() []Skill {
		t.Helper()
		l, err := e.store.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	if n := len(list()); n != 5 || reads() != 5 {
		t.Fatalf("first list: %d skills, %d reads", n, reads())
	}
	for range 3 {
		list()
		e.store.Prompt(ctx)
	}
	if reads() != 5 {
		t.Fatalf("unchanged directory re-read files: %d reads", reads())
	}

	// An in-place edit (directory unchanged) is seen by its size and time.
	path := filepath.Join(e.dataDir, "skills", "s2.md")
	if err := os.WriteFile(path, []byte("Skill two, edited\nmore steps"), 0o644); err != nil {
		t.Fatal(err)
	}
	future := time.Now().Add(time.Hour)
	os.Chtimes(path, future, future)
	if l := list(); l[2].Summary != "Skill 2" || reads() != 5 {
		t.Fatalf("an in-place edit was seen before the stat interval: %q, %d reads", l[2].Summary, reads())
	}
	e.clock.Advance(DefaultStatInterval)
	if l := list(); l[2].Summary != "Skill two, edited" || reads() != 6 {
		t.Fatalf("after edit: %q, %d reads", l[2].Summary, reads())
	}
	// Same size, new time.
	if err := os.WriteFile(path, []byte("Skill TWO, edited\nmore steps"), 0o644); err != nil {
		t.Fatal(err)
	}
	os.Chtimes(path, future.Add(time.Second), future.Add(time.Second))
	e.clock.Advance(DefaultStatInterval)
	if l := list(); l[2].Summary != "Skill TWO, edited" || reads() != 7 {
		t.Fatalf("after same-size edit: %q, %d reads", l[2].Summary, reads())
	}
	// A new file and a removed file.
	e.writeRaw(t, "s9.md", "Skill nine\nsteps")
	os.Remove(filepath.Join(e.dataDir, "skills", "s0.md"))
	l := list()
	if len(l) != 5 || l[0].Name != "s1" || l[4].Name != "s9" || reads() != 8 {
		t.Fatalf("after add/remove: %v, %d reads", l, reads())
	}
	// The store's own save reads back only the saved file.
	if _, err := e.store.Save(ctx, "s1", "Skill one v2\nsteps"); err != nil {
		t.Fatal(err)
	}
	list()
	if reads() != 9 {
		t.Fatalf("after save: %d reads", reads())
	}
	// The whole directory removed (a restore, say): empty, then back.
	if err := os.RemoveAll(filepath.Join(e.dataDir, "skills")); err != nil {
		t.Fatal(err)
	}
	if l := list(); len(l) != 0 {
		t.Fatalf("after removing the directory: %v", l)
	}
	e.writeRaw(t, "back.md", "Back\nsteps")
	if l := list(); len(l) != 1 || l[0].Name != "back" {
		t.Fatalf("after re-creating: %v", l)
	}
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update)", err)
	}
	if got != string(want) {
		t.Errorf("%s mismatch:\n got:\n%s\nwant:\n%s", name, got, want)
	}
}

func TestCompose(t *testing.T) {
	cases := []struct {
		name, summary, content, want, err string
	}{
		{"plain", "Do X well", "1. a\n2. b", "Do X well\n\n1. a\n2. b", ""},
		{"summary collapsed", "  Do   X  ", "steps", "Do X\n\nsteps", ""},
		{"content repeats summary", "Do X", "Do X\n1. a", "Do X\n1. a", ""},
		{"empty summary", " ", "steps", "", "summary is empty"},
		{"empty content", "Do X", "\n", "", "content"},
		{"multi-line summary", "Do X\nand Y", "steps", "", "one line"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Compose(c.summary, c.content)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err = %v, want %q", err, c.err)
				}
				return
			}
			if err != nil || got != c.want {
				t.Fatalf("got %q, %v; want %q", got, err, c.want)
			}
		})
	}
}

func TestConcurrentWriters(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const writers, each = 6, 10
	var wg sync.WaitGroup
	errs := make(chan error, writers*each*3)
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				// Own skill, a shared one every writer replaces, and reads.
				if _, err := e.store.Save(ctx, fmt.Sprintf("w%d-s%d", w, i), fmt.Sprintf("Writer %d skill %d\nsteps", w, i)); err != nil {
					errs <- err
				}
				if _, err := e.store.Save(ctx, "shared", fmt.Sprintf("Shared by %d at %d\nsteps", w, i)); err != nil {
					errs <- err
				}
				if _, err := e.store.Prompt(ctx); err != nil {
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
	list, err := e.store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != writers*each+1 {
		t.Fatalf("%d skills, want %d", len(list), writers*each+1)
	}
	shared, _ := e.store.Get(ctx, "shared")
	if !strings.HasPrefix(shared.Body, "Shared by ") {
		t.Errorf("shared = %q", shared.Body)
	}
	for _, f := range e.files(t) {
		if strings.HasSuffix(f, ".tmp") {
			t.Errorf("temporary file left: %s", f)
		}
	}
}

func BenchmarkPrompt(b *testing.B) {
	e := newEnv(b)
	ctx := context.Background()
	for i := range 50 {
		e.writeRaw(b, fmt.Sprintf("skill-%02d.md", i), fmt.Sprintf("Skill %d summary line\n%s", i, strings.Repeat("A step of the procedure.\n", 40)))
	}
	b.Run("cached", func(b *testing.B) {
		if _, err := e.store.Prompt(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := e.store.Prompt(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("stat-every-file", func(b *testing.B) {
		s, err := Open(ctx, Options{DataDir: e.dataDir, StatInterval: -1})
		if err != nil {
			b.Fatal(err)
		}
		if _, err := s.Prompt(ctx); err != nil {
			b.Fatal(err)
		}
		for b.Loop() {
			if _, err := s.Prompt(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			s, err := Open(ctx, Options{DataDir: e.dataDir})
			if err != nil {
				b.Fatal(err)
			}
			if _, err := s.Prompt(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
}
