package main

import (
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/supervisor"
)

// The supervisor's exit codes are the same whichever program supervises:
// cmd/reverie's exitCode and the lean supervisor's supervisor.ExitCode.
func TestSupervisorExitCodesAgree(t *testing.T) {
	for _, err := range []error{supervisor.ErrConfigInvalid, supervisor.ErrLocked, supervisor.ErrDataDir, supervisor.ErrEnvironment,
		supervisor.ErrCrashLoop, supervisor.ErrKilled, errors.New("start agent: no such file")} {
		if got, want := exitCode(err), supervisor.ExitCode(err); got != want {
			t.Errorf("%v: reverie exits %d, reverie-supervisor %d", err, got, want)
		}
	}
}

// `reverie run` built next to reverie-supervisor hands over to it (same
// pid), which runs `reverie agent`, restarts it on request and stops it on
// SIGTERM; REVERIE_SUPERVISOR=builtin keeps the supervisor in reverie.
func TestLeanSupervisor(t *testing.T) {
	if testing.Short() {
		t.Skip("builds both executables")
	}
	bin := t.TempDir()
	// No deadline of its own: building both executables took more than 5
	// minutes (and was killed) in a run at load 20 beside the other
	// packages' tests; go test's -timeout bounds it.
	ctx := t.Context()
	build := exec.CommandContext(ctx, "go", "build", "-o", bin+string(filepath.Separator), ".", "../reverie-supervisor")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	reverie := filepath.Join(bin, "reverie")
	tests := []struct {
		name    string
		env     []string
		wantExe string
	}{
		{name: "lean", wantExe: filepath.Join(bin, leanSupervisorName)},
		{name: "builtin", env: []string{SupervisorEnv + "=" + SupervisorBuiltin}, wantExe: reverie},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			addr := freeAddr(t)
			env := append([]string{
				"HOME=" + t.TempDir(),
				"PATH=" + os.Getenv("PATH"),
				"OLLAMA_HOST=127.0.0.1:1",
				"REVERIE_WEB__LISTEN=" + addr,
			}, tc.env...)
			init := exec.CommandContext(ctx, reverie, "init", "--data", dir)
			init.Env = env
			if out, err := init.CombinedOutput(); err != nil {
				t.Fatalf("reverie init: %v\n%s", err, out)
			}
			logs, err := os.Create(filepath.Join(t.TempDir(), "stderr"))
			if err != nil {
				t.Fatal(err)
			}
			defer logs.Close()
			cmd := exec.CommandContext(ctx, reverie, "run", "--data", dir)
			cmd.Env = env
			cmd.Stderr = logs
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			pid := cmd.Process.Pid
			exited := false
			defer func() {
				if !exited {
					_ = cmd.Process.Kill()
					_ = cmd.Wait()
				}
			}()
			failf := func(format string, args ...any) {
				t.Helper()
				out, _ := os.ReadFile(logs.Name())
				t.Fatalf(format+"\nstderr of reverie run:\n%s", append(args, out)...)
			}

			var agent int
			poll(t, 60*time.Second, "the agent answers /healthz", func() bool {
				children := childrenOf(pid)
				if len(children) != 1 || !healthy(addr) {
					return false
				}
				agent = children[0]
				return true
			})
			if exe, _ := os.Readlink("/proc/" + strconv.Itoa(pid) + "/exe"); exe != tc.wantExe {
				failf("the process of reverie run is %s, want %s", exe, tc.wantExe)
			}
			if exe, _ := os.Readlink("/proc/" + strconv.Itoa(agent) + "/exe"); exe != reverie {
				failf("the agent is %s, want %s", exe, reverie)
			}
			if argv := cmdline(agent); len(argv) < 2 || argv[1] != "agent" {
				failf("the agent's command line is %q, want reverie agent", argv)
			}
			if fd := secretsFD(cmdline(pid)); fd != "" {
				for _, p := range []int{pid, agent} {
					if target, _ := os.Readlink("/proc/" + strconv.Itoa(p) + "/fd/" + fd); strings.HasPrefix(target, "pipe:") {
						failf("process %d still holds the secrets pipe (descriptor %s)", p, fd)
					}
				}
			}

			if err := os.WriteFile(filepath.Join(dir, datadir.RestartFile), []byte("test\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			var restarted int
			poll(t, 60*time.Second, "a new agent answers /healthz after the restart request", func() bool {
				children := childrenOf(pid)
				if len(children) != 1 || children[0] == agent || !healthy(addr) {
					return false
				}
				restarted = children[0]
				return true
			})

			if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			err = cmd.Wait()
			exited = true
			if err != nil {
				failf("reverie run after SIGTERM: %v, want exit 0", err)
			}
			for _, p := range []int{agent, restarted} {
				if err := syscall.Kill(p, 0); !errors.Is(err, syscall.ESRCH) {
					failf("agent %d is left after the supervisor exited (kill -0: %v)", p, err)
				}
			}
		})
	}
}

// poll calls ok every few milliseconds until it returns true, failing the
// test after timeout.
func poll(t *testing.T, timeout time.Duration, what string, ok func() bool) {
	t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for !ok() {
		select {
		case <-deadline.C:
			t.Fatalf("waited %s for: %s", timeout, what)
		case <-tick.C:
		}
	}
}

// healthy reports whether the agent at addr answers /healthz with 200.
func healthy(addr string) bool {
	resp, err := http.Get("http://" + addr + "/healthz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// childrenOf returns the pids of the processes whose parent is pid, sorted.
func childrenOf(pid int) []int {
	entries, _ := os.ReadDir("/proc")
	var children []int
	for _, e := range entries {
		p, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces and parentheses.
		i := strings.LastIndexByte(string(stat), ')')
		if i < 0 {
			continue
		}
		fields := strings.Fields(string(stat[i+1:]))
		if len(fields) > 1 && fields[1] == strconv.Itoa(pid) && fields[0] != "Z" {
			children = append(children, p)
		}
	}
	slices.Sort(children)
	return children
}

// cmdline returns the argv of process pid.
func cmdline(pid int) []string {
	b, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	return strings.Split(strings.TrimSuffix(string(b), "\x00"), "\x00")
}

// secretsFD returns the value of -secrets-fd in a lean supervisor's argv.
func secretsFD(argv []string) string {
	for _, a := range argv {
		if v, ok := strings.CutPrefix(a, "-secrets-fd="); ok && v != "0" {
			return v
		}
	}
	return ""
}
