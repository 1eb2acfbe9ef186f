package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/versioning"
)

func TestMemoryHistoryCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	env := []string{"HOME=" + t.TempDir()}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, env, append(args, "--data", dir)...)
	}
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, errs := cli(args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}

	if code, _, errs := cli("memory", "restore", "abcd"); code == ExitOK || !strings.Contains(errs, "no data dir") {
		t.Fatalf("restore without a data dir: %d %q", code, errs)
	}
	mustRun("init")
	if out := mustRun("memory", "history"); !strings.Contains(out, "No history yet") {
		t.Fatalf("history before the first start: %q", out)
	}

	// Any command that runs the agent starts the history.
	mustRun("memory", "list")
	memories := filepath.Join(dir, "MEMORIES.txt")
	original, err := os.ReadFile(memories)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(memories, []byte("Edited by hand.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun("memory", "list") // records the hand edit as "external edits"

	out := mustRun("memory", "history")
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "external edits") || !strings.Contains(lines[0], "MEMORIES.txt") ||
		!strings.Contains(lines[1], "initial state of the data dir") {
		t.Fatalf("history:\n%s", out)
	}
	var revs []versioning.Revision
	if err := json.Unmarshal([]byte(mustRun("memory", "history", "--json", "--path", "MEMORIES.txt")), &revs); err != nil {
		t.Fatal(err)
	}
	if len(revs) != 2 || revs[0].Subject() != "external edits" {
		t.Fatalf("history --path MEMORIES.txt --json = %+v", revs)
	}
	if out := mustRun("memory", "history", "--path", "skills", "--limit", "1"); strings.Count(strings.TrimSpace(out), "\n") != 0 ||
		!strings.Contains(out, "initial state") {
		t.Fatalf("history --path skills --limit 1:\n%s", out)
	}
	if out := mustRun("memory", "history", revs[0].Short); !strings.Contains(out, "+Edited by hand.") || !strings.Contains(out, "commit "+revs[0].Hash) {
		t.Fatalf("history REV:\n%s", out)
	}

	// Restore is refused while an agent holds the data dir.
	release, err := datadir.Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	code, _, errs := cli("memory", "restore", revs[1].Short)
	release()
	if code == ExitOK || !strings.Contains(errs, "stop the running agent first") {
		t.Fatalf("restore while locked: %d %q", code, errs)
	}
	if b, _ := os.ReadFile(memories); string(b) != "Edited by hand.\n" {
		t.Fatalf("a refused restore changed MEMORIES.txt: %q", b)
	}

	out = mustRun("memory", "restore", revs[1].Short)
	if !strings.Contains(out, "Restored "+revs[1].Short) || !strings.Contains(out, "MEMORIES.txt") || !strings.Contains(out, "Undo with: reverie memory restore "+revs[0].Short) {
		t.Fatalf("restore: %q", out)
	}
	if b, _ := os.ReadFile(memories); string(b) != string(original) {
		t.Fatalf("MEMORIES.txt after restore = %q, want %q", b, original)
	}
	if out := mustRun("memory", "restore", revs[1].Short); !strings.Contains(out, "Nothing to restore") {
		t.Fatalf("second restore: %q", out)
	}
	// The restore is itself undone by restoring the change before it.
	mustRun("memory", "restore", revs[0].Short)
	if b, _ := os.ReadFile(memories); string(b) != "Edited by hand.\n" {
		t.Fatalf("MEMORIES.txt after undoing the restore = %q", b)
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"unknown revision", []string{"memory", "restore", "deadbeef"}, "reverie: revision \"deadbeef\" not found\n"},
		{"unknown revision to show", []string{"memory", "history", "deadbeef"}, "reverie: revision \"deadbeef\" not found\n"},
		{"short revision", []string{"memory", "history", "ab"}, "reverie: revision \"ab\" is too short (give at least 4 hex digits)\n"},
		{"untracked path", []string{"memory", "history", "--path", "config.yaml"}, "path is not versioned"},
		{"negative limit", []string{"memory", "history", "--limit", "-1"}, "--limit"},
		{"restore needs a revision", []string{"memory", "restore"}, "accepts 1 arg"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := cli(c.args...)
			if code == ExitOK || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, stderr %q; want failure mentioning %q", code, errs, c.want)
			}
		})
	}
}

// TestMemoryRestoreResyncsStore: add → forget → restore gives the memory
// back to search and list, and an edit undone by a restore reopens the old
// version.
func TestMemoryRestoreResyncsStore(t *testing.T) {
	dir := t.TempDir()
	env := []string{"HOME=" + t.TempDir()}
	cli := func(args ...string) (int, string, string) {
		t.Helper()
		return runCLI(t, env, append(args, "--data", dir)...)
	}
	mustRun := func(args ...string) string {
		t.Helper()
		code, out, errs := cli(args...)
		if code != ExitOK {
			t.Fatalf("%v: exit %d\n%s%s", args, code, out, errs)
		}
		return out
	}
	search := func(query string) []memoryJSON {
		t.Helper()
		var hits []memoryJSON
		if err := json.Unmarshal([]byte(mustRun("memory", "search", "--json", query)), &hits); err != nil {
			t.Fatal(err)
		}
		return hits
	}
	memoryRevs := func() []versioning.Revision {
		t.Helper()
		var revs []versioning.Revision
		if err := json.Unmarshal([]byte(mustRun("memory", "history", "--json", "--path", "MEMORIES.txt")), &revs); err != nil {
			t.Fatal(err)
		}
		return revs
	}

	out := mustRun("memory", "add", "My sister Ana lives in Porto.")
	id := strings.TrimSpace(strings.TrimPrefix(out, "remembered as #"))
	mustRun("memory", "forget", id)
	if out := mustRun("memory", "search", "where does my sister live"); !strings.Contains(out, "no memories") {
		t.Fatalf("search after forget:\n%s", out)
	}
	revs := memoryRevs()
	if len(revs) < 2 || !strings.Contains(revs[0].Subject(), "forget") || !strings.Contains(revs[1].Subject(), "remember") {
		t.Fatalf("history: %+v", revs)
	}
	out = mustRun("memory", "restore", revs[1].Short)
	if !strings.Contains(out, "Restored "+revs[1].Short) || !strings.Contains(out, "Memory store in step with MEMORIES.txt: 1 line(s) are current memories.") {
		t.Fatalf("restore:\n%s", out)
	}
	hits := search("where does my sister live")
	if len(hits) != 1 || hits[0].Text != "My sister Ana lives in Porto." || hits[0].Source != "import" {
		t.Fatalf("search after restore: %+v", hits)
	}
	if out := mustRun("memory", "list"); !strings.Contains(out, "My sister Ana lives in Porto.") {
		t.Fatalf("list after restore:\n%s", out)
	}
	if out := mustRun("memory", "restore", revs[1].Short); !strings.Contains(out, "Nothing to restore") || strings.Contains(out, "Memory store") {
		t.Fatalf("second restore:\n%s", out)
	}

	// An edit supersedes; restoring the file from before it reopens the old
	// version (the file is the top of the store: the new one stays).
	porto := strconv.FormatInt(hits[0].ID, 10)
	out = mustRun("memory", "edit", porto, "My sister Ana lives in Braga.")
	if !strings.HasPrefix(out, "#"+porto+" is now #") {
		t.Fatalf("edit: %q", out)
	}
	braga := strings.TrimPrefix(strings.Fields(out)[3], "#")
	if braga == porto {
		t.Fatalf("edit: %q", out)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "MEMORIES.txt")); string(b) != "My sister Ana lives in Braga.\n" {
		t.Fatalf("MEMORIES.txt after edit = %q", b)
	}
	if out := mustRun("memory", "list", "--superseded"); !strings.Contains(out, "Porto. (superseded by #"+braga+")") {
		t.Fatalf("list --superseded:\n%s", out)
	}
	if out := mustRun("memory", "list"); strings.Contains(out, "Porto") || !strings.Contains(out, "Braga") {
		t.Fatalf("list after edit:\n%s", out)
	}
	hits = search("sister Braga")
	if len(hits) == 0 || hits[0].Text != "My sister Ana lives in Braga." || hits[0].Source != "user_explicit" {
		t.Fatalf("search after edit: %+v", hits)
	}
	revs = memoryRevs()
	if !strings.Contains(revs[0].Subject(), "edit") {
		t.Fatalf("history after edit: %+v", revs)
	}
	mustRun("memory", "restore", revs[1].Short)
	var all []memoryJSON
	if err := json.Unmarshal([]byte(mustRun("memory", "list", "--json")), &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != 2 || all[1].Text != "My sister Ana lives in Porto." || strconv.FormatInt(all[1].ID, 10) != porto || all[1].ValidTo != "" {
		t.Fatalf("list after undoing the edit: %+v", all)
	}

	// A line written by hand while no agent runs is a memory at the next
	// start.
	f, err := os.OpenFile(filepath.Join(dir, "MEMORIES.txt"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString("Has a dog named Rex.\n"); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if hits := search("what is the dog called"); len(hits) == 0 || hits[0].Text != "Has a dog named Rex." || hits[0].Source != "import" {
		t.Fatalf("search after a hand edit: %+v", hits)
	}

	for _, c := range []struct {
		name string
		args []string
		want string
	}{
		{"edit bad id", []string{"memory", "edit", "abc", "x"}, "not a memory id"},
		{"edit unknown id", []string{"memory", "edit", "424242", "x"}, "not found"},
		{"edit without text", []string{"memory", "edit", porto}, "requires at least 2 arg"},
		{"edit to a secret", []string{"memory", "edit", porto, "password: hunter2hunter2"}, "secret"},
		{"edit to a duplicate", []string{"memory", "edit", porto, "my sister ana lives in braga"}, "duplicates"},
		{"edit a bad kind", []string{"memory", "edit", "--kind", "gossip", porto, "x"}, "unknown kind"},
	} {
		t.Run(c.name, func(t *testing.T) {
			code, _, errs := cli(c.args...)
			if code == ExitOK || !strings.Contains(errs, c.want) {
				t.Fatalf("exit %d, stderr %q; want failure mentioning %q", code, errs, c.want)
			}
		})
	}
}
