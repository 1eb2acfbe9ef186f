package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/fulldisk"
)

// childEnv is the environment of a reverie child process: the test binary
// acting as main, a fresh HOME, no model settings from the outside.
func childEnv(t *testing.T, extra ...string) []string {
	t.Helper()
	return append([]string{
		envAsMain + "=1",
		"HOME=" + t.TempDir(),
		"PATH=" + os.Getenv("PATH"),
		"OLLAMA_HOST=127.0.0.1:1", // nothing answers: no model, quickly
		// A race-enabled child otherwise lingers 1 s after exiting.
		"GORACE=" + strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"),
	}, extra...)
}

// runReverie runs the reverie program in a child process and returns its
// exit code and output.
func runReverie(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = env
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &ee) && ee.Exited():
		code = ee.ExitCode()
	default:
		t.Fatalf("run reverie %v: %v\n%s", args, err, errb.String())
	}
	return code, out.String(), errb.String()
}

// freeAddr returns a loopback address with a port free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// Every start-up failure that restarting would not fix has its own exit
// code, which the supervisor does not retry, and says what is wrong.
func TestStartUpExitCodes(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, dir string) []string // extra environment
		want    int
		says    []string
	}{
		{
			name: "bad config",
			prepare: func(t *testing.T, dir string) []string {
				writeFile(t, filepath.Join(dir, "config.yaml"), "log:\n  level: loud\n")
				return nil
			},
			want: ExitConfig, says: []string{"config.yaml:2", "loud"},
		},
		{
			name: "bad prompt template",
			prepare: func(t *testing.T, dir string) []string {
				writeFile(t, filepath.Join(dir, "prompts", "COMPACTION_PROMPT.txt"), "Summarise {histroy}")
				return nil
			},
			want: ExitConfig, says: []string{"COMPACTION_PROMPT.txt", "histroy"},
		},
		{
			name: "web settings that cannot work",
			prepare: func(t *testing.T, dir string) []string {
				return []string{"REVERIE_WEB__LISTEN=localhost"}
			},
			want: ExitConfig, says: []string{"web.listen", "localhost"},
		},
		{
			name: "another agent on the data dir",
			prepare: func(t *testing.T, dir string) []string {
				release, err := datadir.Lock(dir)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { release() })
				return nil
			},
			want: ExitLocked, says: []string{"another Reverie agent", fmt.Sprintf("pid %d", os.Getpid())},
		},
		{
			name: "unreadable world_state.json",
			prepare: func(t *testing.T, dir string) []string {
				p := filepath.Join(dir, "world_state.json")
				if err := os.Remove(p); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(p, 0o700); err != nil { // unreadable even for root
					t.Fatal(err)
				}
				return nil
			},
			want: ExitDataDir, says: []string{"world_state.json", "is a directory"},
		},
		{
			name: "port in use",
			prepare: func(t *testing.T, dir string) []string {
				ln, err := net.Listen("tcp", "127.0.0.1:0")
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { ln.Close() })
				return []string{"REVERIE_WEB__LISTEN=" + ln.Addr().String()}
			},
			// Not retried: restarting does not free the port.
			want: ExitEnvironment, says: []string{`extension "web"`, "another program", "REVERIE_WEB__LISTEN"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if _, err := datadir.Bootstrap(dir, nil); err != nil {
				t.Fatal(err)
			}
			extra := tt.prepare(t, dir)
			code, _, stderr := runReverie(t, childEnv(t, append([]string{"REVERIE_WEB__LISTEN=127.0.0.1:0"}, extra...)...), "agent", "--data", dir)
			if code != tt.want {
				t.Fatalf("exit code %d, want %d\n%s", code, tt.want, stderr)
			}
			for _, s := range tt.says {
				if !strings.Contains(stderr, s) {
					t.Errorf("stderr does not say %q:\n%s", s, stderr)
				}
			}
			if strings.Contains(stderr, "agent ready") {
				t.Errorf("the agent said it was ready:\n%s", stderr)
			}
		})
	}
}

// A disk that is full when the agent starts: a clear message and the data
// dir's exit code, on a real full file system (a tmpfs; root only).
func TestStartOnFullDiskExitCode(t *testing.T) {
	fs, err := fulldisk.Mount(t, 8<<20)
	if err != nil {
		t.Skipf("cannot fill a disk here: %v", err)
	}
	dir := filepath.Join(fs, "data")
	// A first start creates the database; then the disk fills up.
	code, _, stderr := runReverie(t, childEnv(t, "REVERIE_WEB__LISTEN=localhost"), "agent", "--data", dir)
	if code != ExitConfig {
		t.Fatalf("first start: exit %d\n%s", code, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "config.yaml")); err != nil {
		t.Fatal(err)
	}
	fulldisk.Fill(t, fs)
	code, _, stderr = runReverie(t, childEnv(t, "REVERIE_WEB__LISTEN=127.0.0.1:0"), "agent", "--data", dir)
	if code != ExitDataDir || !strings.Contains(stderr, "is full") {
		t.Fatalf("start on a full disk: exit %d, want %d with a message saying the disk is full\n%s", code, ExitDataDir, stderr)
	}
}

// The supervisor passes the agent's exit code on when it does not retry:
// another agent on the data dir, and a port another program holds (one
// start, exit 5, instead of restarting into the same conflict).
func TestSupervisorExitCodes(t *testing.T) {
	t.Run("not retried", func(t *testing.T) {
		dir := filepath.Join(t.TempDir(), "data")
		if _, err := datadir.Bootstrap(dir, nil); err != nil {
			t.Fatal(err)
		}
		release, err := datadir.Lock(dir)
		if err != nil {
			t.Fatal(err)
		}
		defer release()
		code, _, stderr := runReverie(t, childEnv(t, "REVERIE_WEB__LISTEN="+freeAddr(t)), "run", "--data", dir)
		if code != ExitLocked || strings.Count(stderr, "agent started") != 1 || !strings.Contains(stderr, "stop the other agent") {
			t.Fatalf("run on a locked data dir: exit %d, want %d after one start\n%s", code, ExitLocked, stderr)
		}
	})
	t.Run("port in use is not retried", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		defer ln.Close()
		dir := filepath.Join(t.TempDir(), "data")
		code, _, stderr := runReverie(t, childEnv(t, "REVERIE_WEB__LISTEN="+ln.Addr().String(),
			"REVERIE_SUPERVISOR__RESTART_BACKOFF_MIN=10ms", "REVERIE_SUPERVISOR__CRASH_LOOP_LIMIT=3"), "run", "--data", dir)
		if code != ExitEnvironment || strings.Count(stderr, "agent started") != 1 || strings.Contains(stderr, "crash-looping") ||
			!strings.Contains(stderr, "another program") {
			t.Fatalf("run with the port taken: exit %d, want %d after 1 start\n%s", code, ExitEnvironment, stderr)
		}
	})
}

// `reverie run` probes its own child: the agent echoes the per-start
// instance id the supervisor gave it, and the supervisor says it is healthy.
func TestSupervisorProbesItsOwnChild(t *testing.T) {
	addr := freeAddr(t)
	dir := filepath.Join(t.TempDir(), "data")
	startChild(t, childEnv(t, "REVERIE_WEB__LISTEN="+addr, "REVERIE_SUPERVISOR__HEALTH_INTERVAL=50ms"), "agent is healthy", "run", "--data", dir)
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	resp.Body.Close()
	if !strings.Contains(body.String(), `"instance":"`) {
		t.Errorf("/healthz = %s, want the instance id", body.String())
	}
}

// `reverie send`, `memory` and `chat` work in a home without
// ~/.local/share: the default data dir and its parents are created (a
// named one that does not exist is refused: TestMissingDataDirIsNotCreated).
func TestCommandsCreateDataDirParents(t *testing.T) {
	for _, args := range [][]string{{"memory", "list"}, {"send", "/help"}, {"chat"}} {
		t.Run(args[0], func(t *testing.T) {
			home := t.TempDir()
			env := []string{"HOME=" + home, "OLLAMA_HOST=127.0.0.1:1"}
			code, out, errs := runCLI(t, env, args...)
			if code != ExitOK {
				t.Fatalf("%v in an empty home: exit %d\n%s%s", args, code, out, errs)
			}
			if _, err := os.Stat(filepath.Join(home, ".local", "share", "reverie", "reverie.db")); err != nil {
				t.Errorf("data dir not created: %v", err)
			}
		})
	}
}

func writeFile(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
}

// doctor checks every extension's settings the way the start does, so that
// what would stop the agent (exit 2) is a doctor failure too.
func TestDoctorChecksExtensionSettings(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	env := []string{"HOME=" + t.TempDir(), "OLLAMA_HOST=127.0.0.1:1"}
	if code, out, errs := runCLI(t, env, "init", "--data", dir); code != ExitOK {
		t.Fatalf("init: %d %s%s", code, out, errs)
	}
	code, out, _ := runCLI(t, env, "doctor", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "[ok  ] kv           settings valid") || !strings.Contains(out, "[ok  ] web          settings valid") ||
		!strings.Contains(out, "[ok  ] mcp          settings valid; no MCP servers configured") {
		t.Fatalf("doctor on a fresh data dir: %d\n%s", code, out)
	}
	for _, bad := range []string{"REVERIE_WEB__LISTEN=localhost", "REVERIE_KV__MAX_KEYS=0"} {
		code, out, _ := runCLI(t, append(env, bad), "doctor", "--data", dir)
		name, _, _ := strings.Cut(strings.TrimPrefix(bad, "REVERIE_"), "__")
		if code != ExitFailure || !strings.Contains(out, "FAIL") || !strings.Contains(out, "[FAIL] "+strings.ToLower(name)) {
			t.Errorf("doctor with %s: exit %d\n%s", bad, code, out)
		}
		code, _, errs := runCLI(t, append(env, bad, "REVERIE_LOG__FILE=false"), "agent", "--data", dir)
		if code != ExitConfig {
			t.Errorf("agent with %s: exit %d, want %d\n%s", bad, code, ExitConfig, errs)
		}
	}
}
