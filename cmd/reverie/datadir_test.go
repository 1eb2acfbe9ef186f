package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/datadir"
)

// A command that works on a data dir without starting Reverie refuses a
// named data dir (--data, $REVERIE_HOME) that does not exist, with one
// sentence that names it and how to create it, and creates nothing there
// (nor its parent): a mistyped path must not become a second, empty
// assistant. doctor and health say what is wrong without creating it
// either.
func TestMissingDataDirIsNotCreated(t *testing.T) {
	for _, tc := range []struct {
		name string
		args []string
		// byEnv names the data dir with $REVERIE_HOME instead of --data.
		byEnv bool
		// code is the exit code; refused: the error is noDataDirError's.
		code    int
		refused bool
	}{
		{name: "memory list", args: []string{"memory", "list"}, code: ExitDataDir, refused: true},
		{name: "memory search", args: []string{"memory", "search", "tea"}, code: ExitDataDir, refused: true},
		{name: "memory add", args: []string{"memory", "add", "Likes green tea."}, code: ExitDataDir, refused: true},
		{name: "memory edit", args: []string{"memory", "edit", "1", "Likes black tea."}, code: ExitDataDir, refused: true},
		{name: "memory forget", args: []string{"memory", "forget", "1"}, code: ExitDataDir, refused: true},
		{name: "memory history", args: []string{"memory", "history"}, code: ExitDataDir, refused: true},
		{name: "memory restore", args: []string{"memory", "restore", "HEAD~1"}, code: ExitDataDir, refused: true},
		{name: "memory import", args: []string{"memory", "import", "--from-mcp", "openmemory"}, code: ExitDataDir, refused: true},
		{name: "dream", args: []string{"dream"}, code: ExitDataDir, refused: true},
		{name: "dream list", args: []string{"dream", "list"}, code: ExitDataDir, refused: true},
		{name: "dream revert", args: []string{"dream", "revert", "1"}, code: ExitDataDir, refused: true},
		{name: "send", args: []string{"send", "hello"}, code: ExitDataDir, refused: true},
		{name: "send command", args: []string{"send", "/status"}, code: ExitDataDir, refused: true},
		{name: "chat", args: []string{"chat"}, code: ExitDataDir, refused: true},
		{name: "mcp", args: []string{"mcp"}, code: ExitDataDir, refused: true},
		{name: "telegram approve", args: []string{"telegram", "approve", "123456"}, code: ExitDataDir, refused: true},
		{name: "telegram pending", args: []string{"telegram", "pending"}, code: ExitDataDir, refused: true},
		{name: "telegram clear", args: []string{"telegram", "clear"}, code: ExitDataDir, refused: true},
		{name: "memory list by REVERIE_HOME", args: []string{"memory", "list"}, byEnv: true, code: ExitDataDir, refused: true},
		{name: "send by REVERIE_HOME", args: []string{"send", "hello"}, byEnv: true, code: ExitDataDir, refused: true},
		{name: "doctor", args: []string{"doctor"}, code: ExitFailure},
		{name: "health", args: []string{"health"}, code: ExitFailure},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parent := filepath.Join(t.TempDir(), "home")
			dir := filepath.Join(parent, "reverei data") // a typo, and a space to quote
			env := []string{"HOME=" + t.TempDir(), "OLLAMA_HOST=127.0.0.1:1"}
			args := tc.args
			if tc.byEnv {
				env = append(env, "REVERIE_HOME="+dir)
			} else {
				args = append(args, "--data", dir)
			}
			if tc.name == "health" {
				// Nothing listens there: health must not create the
				// data dir to read its configuration either.
				args = append(args, "--url", "http://127.0.0.1:1/healthz")
			}
			code, out, errs := runCLI(t, env, args...)
			if code != tc.code {
				t.Errorf("exit %d, want %d\n%s%s", code, tc.code, out, errs)
			}
			sentence := "there is no data dir at " + dir + " (reverie init --data '" + dir + "' creates one)"
			if tc.refused {
				if want := "reverie: " + sentence + "\n"; errs != want || out != "" {
					t.Errorf("stdout %q, stderr %q; want only the refusal %q", out, errs, want)
				}
			}
			if tc.name == "doctor" && !strings.Contains(out, "[FAIL] data dir     "+sentence+"\n") {
				t.Errorf("doctor says:\n%s\nwant the same sentence", out)
			}
			if _, err := os.Stat(parent); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("%s was created (%v)", parent, err)
			}
		})
	}
}

// What the refusal is: exit code 4's ErrUnusable and fs.ErrNotExist; a
// path that is a file is refused too; a path that needs no quotes is
// printed as it is.
func TestCheckDataDir(t *testing.T) {
	tmp := t.TempDir()
	file := filepath.Join(tmp, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(tmp, "missing")
	mkdir := func(name string, files ...string) string {
		d := filepath.Join(tmp, name)
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			if err := os.WriteFile(filepath.Join(d, f), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return d
	}
	other := mkdir("home", ".bashrc", "notes.txt")
	for _, tc := range []struct {
		name    string
		dir     string
		wantErr string
		notExit bool
	}{
		{name: "empty", dir: mkdir("empty")},
		{name: "config", dir: mkdir("config", "config.yaml", "notes.txt")},
		{name: "database only", dir: mkdir("db", "reverie.db")},
		{name: "memories only", dir: mkdir("memories", "MEMORIES.txt")},
		{name: "other files", dir: other, wantErr: other + " is not a Reverie data dir: it holds other files and no config.yaml or reverie.db (reverie init --data " + other + " makes it one)"},
		{name: "missing", dir: missing, wantErr: "there is no data dir at " + missing + " (reverie init --data " + missing + " creates one)", notExit: true},
		{name: "a file", dir: file, wantErr: "the data dir " + file + " is not a directory"},
		{name: "quote", dir: "/tmp/it's gone", wantErr: `there is no data dir at /tmp/it's gone (reverie init --data '/tmp/it'\''s gone' creates one)`, notExit: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := checkDataDir(tc.dir)
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("checkDataDir: %v", err)
				}
				return
			}
			if err == nil || err.Error() != tc.wantErr {
				t.Fatalf("checkDataDir = %v, want %q", err, tc.wantErr)
			}
			if !errors.Is(err, datadir.ErrUnusable) || exitCode(err) != ExitDataDir {
				t.Errorf("%v: exit code %d, want %d (ErrUnusable)", err, exitCode(err), ExitDataDir)
			}
			if errors.Is(err, fs.ErrNotExist) != tc.notExit {
				t.Errorf("%v: errors.Is(fs.ErrNotExist) = %v", err, !tc.notExit)
			}
		})
	}
}

// The default data dir (no --data, no $REVERIE_HOME) is still created on
// first use by the commands that refuse a named one: see
// TestCommandsCreateDataDirParents; so is the default named by its path
// (the README's MCP client configuration passes --data
// ~/.local/share/reverie).
func TestDefaultDataDirNamedIsCreated(t *testing.T) {
	home := t.TempDir()
	dir := filepath.Join(home, ".local", "share", "reverie")
	for _, env := range [][]string{{"HOME=" + home}, {"HOME=" + home, "REVERIE_HOME=" + dir}} {
		code, out, errs := runCLI(t, env, "memory", "list", "--data", dir)
		if code != ExitOK || out != "no memories\n" {
			t.Fatalf("memory list --data <the default> (%v): exit %d\n%s%s", env, code, out, errs)
		}
		if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err != nil {
			t.Fatalf("the default data dir was not created: %v", err)
		}
		if err := os.RemoveAll(filepath.Join(home, ".local")); err != nil {
			t.Fatal(err)
		}
	}
}

// init's closing line names a command that can be pasted into a shell,
// the data dir quoted when it needs it.
func TestInitQuotesTheDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my data")
	code, out, errs := runCLI(t, []string{"HOME=" + t.TempDir()}, "init", "--data", dir)
	want := "\nEdit " + filepath.Join(dir, "config.yaml") + ", then start Reverie with: reverie --data '" + dir + "'\n"
	if code != ExitOK || !strings.HasSuffix(out, want) {
		t.Fatalf("init: exit %d\n%s%s\nwant it to end with %q", code, out, errs, want)
	}
}

// A named data dir that exists but is empty (a directory made by hand) is
// used and filled.
func TestEmptyNamedDataDirIsUsed(t *testing.T) {
	dir := t.TempDir()
	code, out, errs := runCLI(t, []string{"HOME=" + t.TempDir()}, "memory", "add", "Likes green tea.", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "remembered as #1") {
		t.Fatalf("memory add in an empty directory: exit %d\n%s%s", code, out, errs)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err != nil {
		t.Errorf("the data dir was not prepared: %v", err)
	}
}

// A named data dir that exists and holds other files but nothing of a data
// dir (the home directory, a project) is refused by every command but
// init, those that start Reverie too (run, agent, and reverie alone), and
// nothing is written into it.
func TestOtherDirIsNotFilled(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "my home")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("mine"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"memory", "list"}, {"memory", "add", "Likes green tea."}, {"send", "hello"}, {"dream", "list"},
		{"run"}, {"agent"}, {}} {
		code, out, errs := runCLI(t, []string{"HOME=" + t.TempDir(), "OLLAMA_HOST=127.0.0.1:1"}, append(args, "--data", dir)...)
		want := "reverie: " + dir + " is not a Reverie data dir: it holds other files and no config.yaml or reverie.db (reverie init --data '" + dir + "' makes it one)\n"
		if code != ExitDataDir || out != "" || errs != want {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d and %q", args, code, out, errs, ExitDataDir, want)
		}
		entries, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		if len(entries) != 1 {
			t.Errorf("%v wrote into %s: %v", args, dir, entries)
		}
	}
}

// The commands that start Reverie still make a data dir of a named
// directory that is empty (made by hand for it) or does not exist yet.
func TestStartFillsEmptyOrNewDataDir(t *testing.T) {
	for _, tc := range []struct {
		name, ready string
		args        []string
		empty       bool // the directory exists, empty; else it does not exist
	}{
		{name: "agent, empty directory", ready: "agent ready", args: []string{"agent"}, empty: true},
		{name: "run, empty directory", ready: "agent is healthy", args: []string{"run"}, empty: true},
		{name: "agent, new directory", ready: "agent ready", args: []string{"agent"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if tc.empty {
				if err := os.Mkdir(dir, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			startChild(t, childEnv(t, "REVERIE_WEB__LISTEN="+freeAddr(t), "REVERIE_SUPERVISOR__HEALTH_INTERVAL=50ms"), tc.ready, append(tc.args, "--data", dir)...)
			if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err != nil {
				t.Errorf("the data dir was not prepared: %v", err)
			}
		})
	}
}
