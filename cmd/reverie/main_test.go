package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// envAsMain makes the test binary act as the reverie command (TestMain), so
// that tests run the real program in a child process: exit codes, and
// `reverie run` starting `reverie agent` (os.Executable is this binary).
const envAsMain = "REVERIE_TEST_AS_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(envAsMain) == "1" {
		main()
	}
	os.Exit(m.Run())
}

func runCLI(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errb bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(""), &out, &errb, env)
	return code, out.String(), errb.String()
}

func TestCLI(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	env := []string{"HOME=" + t.TempDir()}

	code, out, _ := runCLI(t, env, "version")
	if code != ExitOK || !strings.HasPrefix(out, "reverie ") {
		t.Fatalf("version: %d %q", code, out)
	}
	for _, flag := range []string{"--version", "-v"} {
		if code, got, _ := runCLI(t, env, flag); code != ExitOK || got != out {
			t.Errorf("%s: %d %q, want %q as reverie version prints", flag, code, got, out)
		}
	}

	code, out, errs := runCLI(t, env, "init", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "created config.yaml") {
		t.Fatalf("init: %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI(t, env, "init", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "already initialised") {
		t.Fatalf("second init: %d %q", code, out)
	}

	code, out, _ = runCLI(t, env, "doctor", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "No problems found") {
		t.Fatalf("doctor on a fresh data dir: %d\n%s", code, out)
	}

	// A broken config and a broken template make doctor fail and say why.
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("log:\n  level: loud\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts", "COMPACTION_PROMPT.txt"), []byte("Summarise {histroy}"), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ = runCLI(t, env, "doctor", "--data", dir)
	if code != ExitFailure || !strings.Contains(out, "2 problem(s)") || !strings.Contains(out, "histroy") || !strings.Contains(out, "loud") {
		t.Fatalf("doctor on a broken data dir: %d\n%s", code, out)
	}

	// The agent refuses a bad configuration with exit code 2 (the supervisor does not restart on it).
	code, _, errs = runCLI(t, env, "agent", "--data", dir)
	if code != ExitConfig || !strings.Contains(errs, "config.yaml:2") {
		t.Fatalf("agent with bad config: %d %q", code, errs)
	}

	code, _, errs = runCLI(t, env, "frobnicate")
	if code != ExitFailure || !strings.Contains(errs, "unknown command") {
		t.Fatalf("unknown command: %d %q", code, errs)
	}
}
