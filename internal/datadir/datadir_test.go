package datadir

import (
	"bufio"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/world"
)

// expectedFiles are the files a fresh data dir must have.
var expectedFiles = []string{
	ConfigFile, BasePromptFile, MemoriesFile, WorldStateFile,
	"skills/research-a-topic.md", "skills/reminders-and-schedules.md", "skills/plan-multi-step-work.md",
	DreamMemoriesPrompt, DreamPulsePrompt, DreamDedupPrompt, DreamContradictionPrompt, CompactionPrompt,
	"prompts/SEED_en.txt", "prompts/SEED_de.txt", "prompts/SEED_fr.txt", "prompts/SEED_es.txt",
	"prompts/SEED_it.txt", "prompts/SEED_zh.txt", "prompts/SEED_ja.txt",
}

func TestBootstrapFresh(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "nested", "reverie")
	created, err := Bootstrap(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(dir)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o700 {
		t.Errorf("data dir mode = %o, want 700", perm)
	}
	for _, sub := range Subdirs {
		fi, err := os.Stat(filepath.Join(dir, sub))
		if err != nil || !fi.IsDir() {
			t.Errorf("subdir %s: %v", sub, err)
		}
		if !slices.Contains(created, sub+"/") {
			t.Errorf("created list lacks %s/", sub)
		}
	}
	for _, f := range expectedFiles {
		fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil {
			t.Errorf("missing %s: %v", f, err)
			continue
		}
		if perm := fi.Mode().Perm(); perm != 0o600 {
			t.Errorf("%s mode = %o, want 600", f, perm)
		}
		if !slices.Contains(created, f) {
			t.Errorf("created list lacks %s", f)
		}
	}
	if data, _ := os.ReadFile(filepath.Join(dir, MemoriesFile)); len(data) != 0 {
		t.Errorf("MEMORIES.txt is not empty: %q", data)
	}
	if data, _ := os.ReadFile(filepath.Join(dir, ConfigFile)); string(data) != string(config.DefaultFile()) {
		t.Error("config.yaml differs from config.DefaultFile()")
	}
	if err := world.Check(dir); err != nil {
		t.Errorf("world_state.json: %v", err)
	}
	cfg, err := config.Load(filepath.Join(dir, ConfigFile), nil, []string{"web"})
	if err != nil {
		t.Fatal(err)
	}
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	tmps, _ := filepath.Glob(filepath.Join(dir, "*", ".*.tmp"))
	tmps2, _ := filepath.Glob(filepath.Join(dir, ".*.tmp"))
	if len(tmps)+len(tmps2) > 0 {
		t.Errorf("temp files left behind: %v %v", tmps, tmps2)
	}
}

func TestBootstrapNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	if _, err := Bootstrap(dir, nil); err != nil {
		t.Fatal(err)
	}
	edited := map[string]string{
		BasePromptFile:                  "my own instructions\n",
		MemoriesFile:                    "Likes tea\n",
		ConfigFile:                      "log:\n  level: debug\n",
		"prompts/SEED_en.txt":           "Hi.\n",
		"skills/research-a-topic.md":    "changed\n",
		WorldStateFile:                  "{broken",
		"skills/my-own-skill.md":        "mine\n",
		"prompts/SEED_pt.txt":           "Olá\n",
		"prompts/COMPACTION_PROMPT.txt": "short {history}\n",
	}
	for f, content := range edited {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(f)), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	removed := "skills/plan-multi-step-work.md"
	if err := os.Remove(filepath.Join(dir, filepath.FromSlash(removed))); err != nil {
		t.Fatal(err)
	}
	created, err := Bootstrap(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(created, []string{removed}) {
		t.Errorf("second bootstrap created %q, want only %q", created, removed)
	}
	for f, want := range edited {
		got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil || string(got) != want {
			t.Errorf("%s = %q, %v; want it unchanged %q", f, got, err, want)
		}
	}
	created, err = Bootstrap(dir, nil)
	if err != nil || len(created) != 0 {
		t.Errorf("third bootstrap created %q, %v", created, err)
	}
}

func TestBootstrapFileInTheWay(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "skills"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Bootstrap(dir, nil); err == nil || !strings.Contains(err.Error(), "not a directory") {
		t.Fatalf("Bootstrap = %v, want a not-a-directory error", err)
	}
}

func TestResolve(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		flag    string
		env     []string
		want    string
		wantErr bool
	}{
		{name: "flag wins", flag: "/srv/rev", env: []string{"REVERIE_HOME=/h", "XDG_DATA_HOME=/x", "HOME=/home/u"}, want: "/srv/rev"},
		{name: "relative flag made absolute", flag: "data", env: []string{"HOME=/home/u"}, want: filepath.Join(wd, "data")},
		{name: "tilde flag", flag: "~/rev", env: []string{"HOME=/home/u"}, want: "/home/u/rev"},
		{name: "REVERIE_HOME next", env: []string{"REVERIE_HOME=/h", "XDG_DATA_HOME=/x", "HOME=/home/u"}, want: "/h"},
		{name: "empty REVERIE_HOME ignored", env: []string{"REVERIE_HOME=", "XDG_DATA_HOME=/x"}, want: "/x/reverie"},
		{name: "XDG_DATA_HOME next", env: []string{"XDG_DATA_HOME=/x/", "HOME=/home/u"}, want: "/x/reverie"},
		{name: "relative XDG_DATA_HOME ignored", env: []string{"XDG_DATA_HOME=rel", "HOME=/home/u"}, want: "/home/u/.local/share/reverie"},
		{name: "HOME last", env: []string{"HOME=/home/u"}, want: "/home/u/.local/share/reverie"},
		{name: "later duplicate wins", env: []string{"REVERIE_HOME=/a", "REVERIE_HOME=/b"}, want: "/b"},
		{name: "nothing set", env: nil, wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Resolve(tc.flag, tc.env)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("Resolve = %q, want error", got)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want {
				t.Errorf("Resolve = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCheckWritable(t *testing.T) {
	ok := t.TempDir()
	if err := CheckWritable(ok); err != nil {
		t.Fatalf("writable dir: %v", err)
	}
	if entries, _ := os.ReadDir(ok); len(entries) != 0 {
		t.Errorf("probe file left behind: %v", entries)
	}
	if err := CheckWritable(filepath.Join(ok, "missing")); err == nil {
		t.Error("missing dir reported writable")
	}

	var bad string
	if os.Geteuid() == 0 {
		// Root ignores permission bits; a path below a regular file fails
		// for everyone.
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		bad = filepath.Join(file, "sub")
	} else {
		bad = filepath.Join(t.TempDir(), "ro")
		if err := os.Mkdir(bad, 0o500); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.Chmod(bad, 0o700) })
	}
	err := CheckWritable(bad)
	if err == nil {
		t.Fatal("unwritable dir reported writable")
	}
	if !strings.Contains(err.Error(), bad) {
		t.Errorf("error %q does not name the dir", err)
	}
}

const helperEnv = "REVERIE_DATADIR_LOCK_HELPER"

// TestMain lets the test binary act as a second agent process holding the
// lock: it locks the dir named in the environment, says "locked", and
// holds the lock until its stdin closes.
func TestMain(m *testing.M) {
	if dir := os.Getenv(helperEnv); dir != "" {
		release, err := Lock(dir)
		if err != nil {
			fmt.Println("error:", err)
			os.Exit(3)
		}
		fmt.Println("locked")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n') // until the parent closes stdin
		if err := release(); err != nil {
			os.Exit(4)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// startHolder starts a helper process holding dir's lock.
func startHolder(t *testing.T, dir string) (cmd *exec.Cmd, stop func()) {
	t.Helper()
	cmd = exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "locked\n" {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("helper said %q, %v", line, err)
	}
	var done bool
	stop = func() {
		if done || cmd.ProcessState != nil { // already stopped or waited for
			return
		}
		done = true
		stdin.Close()
		if err := cmd.Wait(); err != nil {
			t.Errorf("helper: %v", err)
		}
	}
	t.Cleanup(stop)
	return cmd, stop
}

func TestLockAcrossProcesses(t *testing.T) {
	dir := t.TempDir()
	cmd, stop := startHolder(t, dir)

	_, err := Lock(dir)
	if !errors.Is(err, ErrLocked) {
		t.Fatalf("Lock while another process holds it = %v, want ErrLocked", err)
	}
	var le *LockedError
	if !errors.As(err, &le) || le.PID != cmd.Process.Pid {
		t.Fatalf("LockedError = %+v, want pid %d", le, cmd.Process.Pid)
	}
	want := fmt.Sprintf("another Reverie agent (pid %d) is running on this data dir", cmd.Process.Pid)
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}

	stop()
	release, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after the holder exited: %v", err)
	}
	data, err := os.ReadFile(filepath.Join(dir, LockFile))
	if err != nil || strings.TrimSpace(string(data)) != strconv.Itoa(os.Getpid()) {
		t.Errorf("lock file = %q, %v; want our pid %d", data, err, os.Getpid())
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	if err := release(); err != nil {
		t.Fatalf("second release: %v", err)
	}
}

func TestLockFreedWhenHolderDies(t *testing.T) {
	dir := t.TempDir()
	cmd, _ := startHolder(t, dir)
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	release, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after the holder was killed: %v", err)
	}
	release()
}

func TestLockInProcess(t *testing.T) {
	dir := t.TempDir()
	release, err := Lock(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Lock(dir); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Lock in the same process = %v, want ErrLocked", err)
	}
	if err := release(); err != nil {
		t.Fatal(err)
	}
	release2, err := Lock(dir)
	if err != nil {
		t.Fatalf("Lock after release: %v", err)
	}
	release2()
}

var placeholderRe = regexp.MustCompile(`\{([a-z_]+)\}`)

// TestShippedTemplatesUseAllowedPlaceholders checks every shipped prompt
// file against Placeholders, and that every template is covered.
func TestShippedTemplatesUseAllowedPlaceholders(t *testing.T) {
	spec := Placeholders()
	err := fs.WalkDir(Defaults(), "prompts", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var allowed []string
		matched := false
		for pattern, names := range spec {
			if ok, _ := path.Match(pattern, p); ok {
				matched = true
				allowed = names
			}
		}
		if !matched {
			t.Errorf("%s is not covered by Placeholders()", p)
			return nil
		}
		data, err := fs.ReadFile(Defaults(), p)
		if err != nil {
			return err
		}
		used := map[string]bool{}
		for _, m := range placeholderRe.FindAllStringSubmatch(string(data), -1) {
			used[m[1]] = true
			if !slices.Contains(allowed, m[1]) {
				t.Errorf("%s uses {%s}; allowed: %v", p, m[1], allowed)
			}
		}
		for _, a := range allowed {
			if !used[a] {
				t.Errorf("%s does not use its placeholder {%s}", p, a)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{BasePromptFile, MemoriesFile} {
		data, err := fs.ReadFile(Defaults(), f)
		if err != nil {
			t.Fatal(err)
		}
		if m := placeholderRe.FindString(string(data)); m != "" {
			t.Errorf("%s contains %s, which would look like a placeholder", f, m)
		}
	}
}

func TestShippedPromptContracts(t *testing.T) {
	read := func(p string) string {
		data, err := fs.ReadFile(Defaults(), p)
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	for _, lang := range SeedLanguages {
		if s := read(SeedPrompt(lang)); !strings.Contains(s, "Reverie") {
			t.Errorf("seed %s does not name the assistant", lang)
		}
	}
	contra := read(DreamContradictionPrompt)
	for _, want := range []string{`"decision"`, `"merged"`, `"reason"`, "keep_first", "keep_second", "merge", "keep_both"} {
		if !strings.Contains(contra, want) {
			t.Errorf("contradiction prompt lacks %s", want)
		}
	}
	dedup := read(DreamDedupPrompt)
	for _, want := range []string{`"decision"`, `"merged"`, `"reason"`, `"merge"`, `"distinct"`} {
		if !strings.Contains(dedup, want) {
			t.Errorf("dedup prompt lacks %s", want)
		}
	}
	if pulse := read(DreamPulsePrompt); !strings.Contains(pulse, `"actions"`) {
		t.Error("pulse prompt does not define the JSON actions")
	}
	if c := read(CompactionPrompt); !strings.Contains(c, "[PRIOR SUMMARY]") || !strings.Contains(c, "[NEW MESSAGES]") {
		t.Error("compaction prompt does not explain the chained summary input")
	}
}

func TestShippedSkills(t *testing.T) {
	entries, err := fs.ReadDir(Defaults(), "skills")
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) < 2 {
		t.Fatalf("only %d starter skills", len(entries))
	}
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".md") {
			t.Errorf("skill %s is not .md", e.Name())
		}
		data, err := fs.ReadFile(Defaults(), "skills/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		first, rest, _ := strings.Cut(string(data), "\n")
		if len(first) < 20 || len(first) > 200 || strings.HasPrefix(first, "#") {
			t.Errorf("skill %s: first line should be a one-line summary, got %q", e.Name(), first)
		}
		if len(strings.TrimSpace(rest)) == 0 {
			t.Errorf("skill %s has no body", e.Name())
		}
	}
}
