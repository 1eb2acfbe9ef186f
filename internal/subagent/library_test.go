package subagent

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// A file written while the library is in use is offered once the stat
// interval has passed; a change is read again, a removal drops it, a bad
// file is a problem and never hides the others; a file overrides the
// built-in agent of its name.
func TestLibraryReload(t *testing.T) {
	dir := t.TempDir()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	l := NewLibrary(Options{Dir: dir, Builtin: Builtin(), Now: func() time.Time { return now }})
	if got := namesOf(l.Agents()); !slices.Equal(got, []string{"builder", "researcher"}) {
		t.Fatalf("agents = %v", got)
	}
	write := func(name, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("poet.md", "---\ndescription: Writes poems.\n---\nWrite a poem.")
	write("broken.md", "---\ndescription: [\n---\nx")
	write("notes.txt", "not an agent")
	// New files change the directory: seen at once.
	if got := namesOf(l.Agents()); !slices.Equal(got, []string{"builder", "poet", "researcher"}) {
		t.Errorf("after adding files: %v", got)
	}
	if p := l.Problems(); len(p) != 1 || p[0].Path != "agents/broken.md" {
		t.Errorf("problems = %+v", p)
	}
	write("researcher.md", "---\ndescription: My own researcher, with more words.\ntools: fetch_url\n---\nMine.")
	r, ok := l.Get("researcher")
	if !ok || r.Prompt != "Mine." || r.Source != "agents/researcher.md" {
		t.Errorf("override = %+v", r)
	}
	// An edit in place does not change the directory: seen after the
	// interval.
	f, err := os.OpenFile(filepath.Join(dir, "poet.md"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(" Rhyme."); err != nil {
		t.Fatal(err)
	}
	f.Close()
	now = now.Add(DefaultStatInterval)
	if p, _ := l.Get("poet"); p.Prompt != "Write a poem. Rhyme." {
		t.Errorf("edited in place: %q", p.Prompt)
	}
	if err := os.Remove(filepath.Join(dir, "poet.md")); err != nil {
		t.Fatal(err)
	}
	if _, ok := l.Get("poet"); ok {
		t.Error("a removed agent is still offered")
	}
}

func namesOf(specs []Spec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}
