package main

import (
	"encoding/json"
	"os"
	"path/filepath"
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
		{"unknown revision", []string{"memory", "restore", "deadbeef"}, "unknown revision"},
		{"short revision", []string{"memory", "history", "ab"}, "too short"},
		{"untracked path", []string{"memory", "history", "--path", "config.yaml"}, "not versioned"},
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
