package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/sandbox"
	"github.com/reverie-ai/reverie/internal/tools/workspace"
)

// helperDialEnv makes the test binary, copied into a workspace and run from
// a command, dial the address it names and report the result.
//
// The test binary is also the sandbox launcher: run with
// sandbox.Subcommand as its first argument, package sandbox's init serves
// it before any test starts, exactly as in the reverie binary.
const helperDialEnv = "REVERIE_SHELL_HELPER_DIAL"

func TestMain(m *testing.M) {
	if addr := os.Getenv(helperDialEnv); addr != "" {
		conn, err := net.DialTimeout("tcp", addr, 3*time.Second)
		if err != nil {
			fmt.Println("dial failed:", err)
			os.Exit(3)
		}
		conn.Close()
		fmt.Println("dial ok")
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func newShell(t testing.TB, cfg Config) *Shell {
	t.Helper()
	if cfg.Workspace == nil {
		ws, err := workspace.Open(filepath.Join(t.TempDir(), "ws"))
		if err != nil {
			t.Fatal(err)
		}
		cfg.Workspace = ws
	}
	s, err := New(t.Context(), cfg, nil)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	return s
}

// noLandlock simulates a kernel without Landlock.
func noLandlock() (int, error) { return 0, errors.New("simulated: no landlock") }

// setup is one sandbox configuration under test.
type setup struct {
	name     string
	cfg      Config // without Workspace
	want     string // Result.Sandbox
	wantNote string // in every Result.Note
}

// setups returns the sandbox configurations this machine can run: always
// off; bubblewrap alone and with Landlock when bubblewrap works; Landlock
// alone when the kernel has it.
func setups(t testing.TB, network bool) []setup {
	t.Helper()
	out := []setup{{name: "off", cfg: Config{Mode: ModeOff}, want: SandboxNone, wantNote: "no sandbox is active"}}
	_, bwErr := probe(t.Context(), "")
	_, llErr := sandbox.ABI()
	requireLayers(t, bwErr, llErr)
	if bwErr != nil {
		t.Logf("bubblewrap unavailable (%v): its configurations are not tested", bwErr)
	} else {
		out = append(out, setup{name: "bubblewrap only", cfg: Config{Mode: ModeRequired, Network: network, landlockABI: noLandlock},
			want: SandboxBubblewrap, wantNote: "sandbox: bubblewrap only (landlock unavailable: simulated: no landlock)"})
	}
	if llErr != nil {
		t.Logf("Landlock unavailable on this kernel (%v): its configurations are not tested", llErr)
	} else {
		out = append(out, setup{name: "landlock only", cfg: Config{Mode: ModeRequired, Network: network, Bwrap: "/nonexistent/bwrap"},
			want: SandboxLandlock, wantNote: "sandbox: landlock only (bubblewrap unavailable: bubblewrap not found"})
	}
	if bwErr == nil && llErr == nil {
		out = append(out, setup{name: "bubblewrap+landlock", cfg: Config{Mode: ModeRequired, Network: network}, want: SandboxBoth})
	}
	return out
}

// inCI reports whether the tests run in CI (CI=true), where every sandbox
// layer CI installs must work.
func inCI() bool { return os.Getenv("CI") == "true" }

// requireLayers fails the test in CI when bubblewrap (which .ci/run
// installs) does not work, or when the kernel has Landlock but reports it
// unusable; elsewhere a missing layer is logged and its configurations are
// skipped. (A layer that is detected but broken fails everywhere: its setup
// then reports fewer layers than it wants.)
func requireLayers(t testing.TB, bwErr, llErr error) {
	t.Helper()
	if !inCI() {
		return
	}
	if bwErr != nil {
		t.Fatalf("CI=true but bubblewrap does not work (.ci/run installs it): %v", bwErr)
	}
	if llErr != nil && !errors.Is(llErr, syscall.ENOSYS) && !errors.Is(llErr, syscall.EOPNOTSUPP) {
		t.Fatalf("CI=true and Landlock is unusable for an unexpected reason: %v", llErr)
	}
	if llErr != nil {
		t.Logf("CI: this kernel has no Landlock (%v): only bubblewrap is tested", llErr)
	}
}

// sandboxedSetups are setups without "off".
func sandboxedSetups(t testing.TB, network bool) []setup {
	all := setups(t, network)
	if len(all) == 1 {
		t.Skip("neither bubblewrap nor Landlock works here; install the bubblewrap package to run the sandbox tests")
	}
	return all[1:]
}

func TestRun(t *testing.T) {
	for _, su := range setups(t, false) {
		t.Run(su.name, func(t *testing.T) {
			cfg := su.cfg
			cfg.DefaultTimeout, cfg.MaxOutput = 30*time.Second, 64
			s := newShell(t, cfg)
			if s.Sandbox() != su.want {
				t.Fatalf("Sandbox() = %q (%s); want %q", s.Sandbox(), s.Status(), su.want)
			}
			t.Logf("Status() = %s; note %q", s.Status(), s.note)
			// quick shares the workspace but kills commands after one second: the
			// tool's real timeout behaviour, exercised with a short timeout.
			qcfg := su.cfg
			qcfg.Workspace, qcfg.DefaultTimeout = s.cfg.Workspace, time.Second
			quick := newShell(t, qcfg)
			if err := os.MkdirAll(filepath.Join(s.cfg.Workspace.Dir(), "sub"), 0o755); err != nil {
				t.Fatal(err)
			}
			tests := []struct {
				name       string
				args       Args
				wantExit   int
				wantOutput string // exact, unless wantPrefix
				wantSubstr []string
				timedOut   bool // run on quick and expect the timeout
				wantErr    error
				anyErr     bool
			}{
				{name: "echo", args: Args{Command: "echo hello"}, wantOutput: "hello\n"},
				{name: "stderr merged", args: Args{Command: "echo out; echo err >&2"}, wantOutput: "out\nerr\n"},
				{name: "non-zero exit", args: Args{Command: "echo failing; exit 7"}, wantExit: 7, wantOutput: "failing\n"},
				{name: "exit 125 is the command's", args: Args{Command: "echo reverie sandbox: not really; exit 125"}, wantExit: 125},
				{name: "workdir", args: Args{Command: "pwd", Workdir: "sub"}, wantOutput: filepath.Join(s.cfg.Workspace.Dir(), "sub") + "\n"},
				{name: "default workdir is the workspace", args: Args{Command: "pwd"}, wantOutput: s.cfg.Workspace.Dir() + "\n"},
				{name: "environment is minimal", args: Args{Command: "echo ${OPENAI_API_KEY:-unset} $HOME"}, wantOutput: "unset " + s.cfg.Workspace.Dir() + "\n"},
				{name: "TMPDIR is writable", args: Args{Command: `echo t > "$TMPDIR/t" && cat "$TMPDIR/t"`}, wantOutput: "t\n"},
				{name: "timeout", args: Args{Command: "echo started; sleep 5"}, wantExit: -1, timedOut: true,
					wantSubstr: []string{"started"}},
				{name: "timeout kills the process group", args: Args{Command: "sleep 30 & sleep 30"}, wantExit: -1, timedOut: true},
				{name: "output capped", args: Args{Command: "seq 1 1000"},
					wantSubstr: []string{"1\n2\n3\n", "output truncated", "999\n1000\n"}},
				{name: "workdir escape", args: Args{Command: "pwd", Workdir: "../"}, wantErr: workspace.ErrOutsideWorkspace},
				{name: "absolute workdir escape", args: Args{Command: "pwd", Workdir: "/etc"}, wantErr: workspace.ErrOutsideWorkspace},
				{name: "workdir missing", args: Args{Command: "pwd", Workdir: "nope"}, anyErr: true},
				{name: "empty command", args: Args{Command: "  "}, anyErr: true},
				{name: "negative timeout", args: Args{Command: "true", TimeoutSeconds: -1}, anyErr: true},
			}
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					runner := s
					if tc.timedOut {
						runner = quick
					}
					res, err := runner.Run(t.Context(), tc.args)
					if tc.wantErr != nil || tc.anyErr {
						if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
							t.Fatalf("Run error = %v; want %v", err, tc.wantErr)
						}
						return
					}
					if err != nil {
						t.Fatalf("Run: %v", err)
					}
					if res.ExitCode != tc.wantExit || res.TimedOut != tc.timedOut {
						t.Fatalf("exit %d timed_out %v; want %d %v (output %q)", res.ExitCode, res.TimedOut, tc.wantExit, tc.timedOut, res.Output)
					}
					if tc.wantOutput != "" && res.Output != tc.wantOutput {
						t.Fatalf("output = %q; want %q", res.Output, tc.wantOutput)
					}
					for _, sub := range tc.wantSubstr {
						if !strings.Contains(res.Output, sub) {
							t.Errorf("output %q lacks %q", res.Output, sub)
						}
					}
					if strings.Contains(res.Note, "kept the output open") {
						t.Errorf("a background process survived: %s", res.Note)
					}
					if res.Sandbox != su.want {
						t.Errorf("sandbox = %q; want %q", res.Sandbox, su.want)
					}
					if !strings.Contains(res.Note, su.wantNote) {
						t.Errorf("note %q lacks %q", res.Note, su.wantNote)
					}
					if hasWarning := strings.Contains(res.Note, "no sandbox is active"); hasWarning != (su.want == SandboxNone) {
						t.Errorf("note %q: warning present %v, want %v", res.Note, hasWarning, su.want == SandboxNone)
					}
				})
			}
		})
	}
}

func TestRunTimeoutClamped(t *testing.T) {
	s := newShell(t, Config{Mode: ModeOff, MaxTimeout: time.Second})
	res, err := s.Run(t.Context(), Args{Command: "true", TimeoutSeconds: 3600})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Note, "timeout lowered to the configured maximum of 1s") {
		t.Fatalf("note = %q; want the clamp explained", res.Note)
	}
}

func TestRunCanceled(t *testing.T) {
	s := newShell(t, Config{Mode: ModeOff})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if _, err := s.Run(ctx, Args{Command: "sleep 5"}); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run error = %v; want context.Canceled", err)
	}
}

// fakeLauncher writes a shell script standing in for the launcher: it skips
// the options and runs the command unconfined, or fails like the launcher
// (on the status pipe) when the command mentions launcher-must-fail.
func fakeLauncher(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fake-launcher")
	script := `#!/bin/sh
while [ "$1" != "--" ]; do shift; done
shift
case "$3" in *launcher-must-fail*) echo "` + sandbox.FailurePrefix + `simulated failure" >&3; exit ` + fmt.Sprint(sandbox.ExitFailed) + `;; esac
exec "$@" 3>&-
`
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestNewModes(t *testing.T) {
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	_, bwErr := probe(t.Context(), "")
	_, llErr := sandbox.ABI()
	ifBwrap := func(with, without string) string {
		if bwErr == nil {
			return with
		}
		return without
	}
	withLandlock := func(want string) string {
		if llErr != nil {
			return SandboxNone
		}
		return want
	}
	fake := fakeLauncher(t)
	tests := []struct {
		name        string
		cfg         Config
		wantSandbox string
		wantStatus  string // substring
		wantErr     error
		anyErr      bool
		// wantRefused: New succeeds, but Prepare and every command fail
		// with ErrSandboxUnavailable (a layer present but not working).
		wantRefused bool
	}{
		{name: "required without any layer fails", cfg: Config{Workspace: ws, Mode: ModeRequired, Bwrap: "/nonexistent/bwrap", landlockABI: noLandlock}, wantErr: ErrSandboxUnavailable},
		{name: "bwrap failing its self-test and no landlock", cfg: Config{Workspace: ws, Mode: ModeRequired, Bwrap: "/bin/false", landlockABI: noLandlock}, wantRefused: true},
		{name: "auto without any layer runs unsandboxed", cfg: Config{Workspace: ws, Mode: ModeAuto, Bwrap: "/nonexistent/bwrap", landlockABI: noLandlock},
			wantSandbox: SandboxNone, wantStatus: "none: bubblewrap: bubblewrap not found"},
		{name: "bwrap failing its self-test falls back to landlock", cfg: Config{Workspace: ws, Mode: ModeAuto, Bwrap: "/bin/false"},
			wantSandbox: withLandlock(SandboxLandlock), wantStatus: "bubblewrap self-test failed"},
		{name: "auto without bwrap uses landlock", cfg: Config{Workspace: ws, Mode: ModeAuto, Bwrap: "/nonexistent/bwrap"},
			wantSandbox: withLandlock(SandboxLandlock), wantStatus: "bubblewrap unavailable: bubblewrap not found"},
		{name: "launcher missing", cfg: Config{Workspace: ws, Mode: ModeAuto, launcher: "/nonexistent/reverie"},
			wantSandbox: ifBwrap(SandboxBubblewrap, SandboxNone), wantStatus: "sandbox launcher self-test failed"},
		{name: "launcher not serving the subcommand", cfg: Config{Workspace: ws, Mode: ModeAuto, launcher: "/bin/true"},
			wantSandbox: ifBwrap(SandboxBubblewrap, SandboxNone), wantStatus: `sandbox launcher self-test printed ""`},
		{name: "landlock not enforced is not reported", cfg: Config{Workspace: ws, Mode: ModeAuto, launcher: fake, landlockABI: func() (int, error) { return 7, nil }},
			wantSandbox: ifBwrap(SandboxBubblewrap, SandboxNone), wantStatus: "landlock did not refuse a write outside the workspace"},
		{name: "off", cfg: Config{Workspace: ws, Mode: ModeOff}, wantSandbox: SandboxNone, wantStatus: "none: disabled by configuration"},
		{name: "unknown mode", cfg: Config{Workspace: ws, Mode: "maybe"}, anyErr: true},
		{name: "no workspace", cfg: Config{}, anyErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, err := New(t.Context(), tc.cfg, nil)
			if tc.wantErr != nil || tc.anyErr {
				if err == nil || (tc.wantErr != nil && !errors.Is(err, tc.wantErr)) {
					t.Fatalf("New error = %v; want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if tc.wantRefused {
				if err := s.Prepare(t.Context()); !errors.Is(err, ErrSandboxUnavailable) {
					t.Fatalf("Prepare error = %v; want ErrSandboxUnavailable", err)
				}
				marker := filepath.Join(ws.Dir(), "ran")
				if _, err := s.Run(t.Context(), Args{Command: "touch " + marker}); !errors.Is(err, ErrSandboxUnavailable) {
					t.Fatalf("Run error = %v; want ErrSandboxUnavailable", err)
				}
				if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the refused command ran: %v", err)
				}
				if d := s.Describe(); !strings.Contains(d, "unavailable") {
					t.Fatalf("Describe() = %q; want it to say the tool is unavailable", d)
				}
				return
			}
			if s.Sandbox() != tc.wantSandbox {
				t.Fatalf("Sandbox() = %q (%s); want %q", s.Sandbox(), s.Status(), tc.wantSandbox)
			}
			if tc.wantSandbox != SandboxLandlock && !strings.Contains(s.Status(), tc.wantStatus) {
				t.Fatalf("Status() = %q; want it to contain %q", s.Status(), tc.wantStatus)
			}
		})
	}
}

func TestLauncherFailureIsAnError(t *testing.T) {
	s := newShell(t, Config{Mode: ModeAuto, Bwrap: "/nonexistent/bwrap", launcher: fakeLauncher(t), landlockABI: noLandlock})
	if s.launcher == "" {
		t.Fatalf("the fake launcher was not adopted: %s", s.Status())
	}
	if _, err := s.Run(t.Context(), Args{Command: "echo launcher-must-fail"}); err == nil || !strings.Contains(err.Error(), "command not run: reverie sandbox: simulated failure") {
		t.Fatalf("Run error = %v; want the launcher's failure", err)
	}
	res, err := s.Run(t.Context(), Args{Command: "echo " + sandbox.FailurePrefix + "fake >&2; exit 125"})
	if err != nil || res.ExitCode != 125 {
		t.Fatalf("Run = %+v, %v; want the command's own exit 125", res, err)
	}
}

// copyTestBinary puts this test binary into the workspace as ./probe.
func copyTestBinary(t *testing.T, s *Shell) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(exe)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(filepath.Join(s.cfg.Workspace.Dir(), "probe"), os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestSandboxNetwork(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	// A listener on the host's own non-loopback address: what a command
	// with network must still reach (the way out), when the host has one.
	outside := ""
	if ip := hostAddress(); ip != "" {
		l2, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { l2.Close() })
		outside = l2.Addr().String()
	}
	tests := []struct {
		name     string
		network  bool
		wantExit int
		wantOut  string
	}{
		{name: "network off by default", network: false, wantExit: 3, wantOut: "dial failed"},
		{name: "network on by configuration", network: true, wantExit: 0, wantOut: "dial ok"},
	}
	for _, tc := range tests {
		for _, su := range sandboxedSetups(t, tc.network) {
			t.Run(tc.name+"/"+su.name, func(t *testing.T) {
				s := newShell(t, su.cfg)
				if !tc.network && s.NetworkEnabled() {
					t.Skipf("%s cannot block the network here (%s)", su.name, s.Status())
				}
				if tc.network && s.bwrap != "" && s.slirp == "" && inCI() {
					t.Fatal("CI=true but slirp4netns is missing (.ci/run installs it): a command with network reaches the host's loopback")
				}
				copyTestBinary(t, s)
				dial := func(addr string) Result {
					t.Helper()
					res, err := s.Run(t.Context(), Args{Command: helperDialEnv + "=" + addr + " ./probe"})
					if err != nil {
						t.Fatal(err)
					}
					return res
				}
				if tc.network && s.slirp != "" {
					// Its own network namespace: a way out, but not to the
					// host's loopback (the assistant's API, local services).
					if res := dial(ln.Addr().String()); res.ExitCode != 3 || !strings.Contains(res.Output, "dial failed") {
						t.Fatalf("a command with network reached a loopback listener: exit %d output %q", res.ExitCode, res.Output)
					}
					if outside != "" {
						if res := dial(outside); res.ExitCode != 0 || !strings.Contains(res.Output, "dial ok") {
							t.Fatalf("a command with network could not get out (%s): exit %d output %q", outside, res.ExitCode, res.Output)
						}
					}
					return
				}
				res := dial(ln.Addr().String())
				if res.ExitCode != tc.wantExit || !strings.Contains(res.Output, tc.wantOut) {
					t.Fatalf("exit %d output %q; want exit %d and %q", res.ExitCode, res.Output, tc.wantExit, tc.wantOut)
				}
			})
		}
	}
}

// hostAddress is the host's first global unicast IPv4 address, or "".
func hostAddress() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() && !n.IP.IsLoopback() {
			return n.IP.String()
		}
	}
	return ""
}

func TestSandboxFilesystem(t *testing.T) {
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	unique := filepath.Base(outside)
	type exit int
	const (
		succeeds exit = iota
		fails
		either // the write may succeed inside bubblewrap's own file system
	)
	tests := []struct {
		name    string
		command string
		exit    exit
		mustNot string // host path that must not exist afterwards
	}{
		{name: "write to a system directory", command: "echo x > /etc/reverie-sandbox-test", exit: fails, mustNot: "/etc/reverie-sandbox-test"},
		{name: "write under /usr", command: "echo x > /usr/reverie-sandbox-test", exit: fails, mustNot: "/usr/reverie-sandbox-test"},
		{name: "read a host file outside the workspace", command: "cat " + secret, exit: fails},
		{name: "read /etc/shadow", command: "cat /etc/shadow", exit: fails},
		{name: "read /etc/hostname", command: "cat /etc/hostname", exit: succeeds},
		{name: "write to a host directory outside the workspace", command: "mkdir -p " + outside + " && echo x > " + filepath.Join(outside, "pwned.txt"), exit: either, mustNot: filepath.Join(outside, "pwned.txt")},
		{name: "write to /tmp", command: "echo x > /tmp/reverie-sandbox-test-" + unique, exit: either, mustNot: "/tmp/reverie-sandbox-test-" + unique},
		{name: "write to the user's home directory", command: "echo x > " + filepath.Join(home, "reverie-sandbox-test-"+unique), exit: either, mustNot: filepath.Join(home, "reverie-sandbox-test-"+unique)},
		{name: "write in the workspace works", command: "echo kept > kept.txt && cat kept.txt", exit: succeeds},
		{name: "move between workspace directories", command: "mkdir -p a b && echo m > a/m && mv a/m b/m && cat b/m", exit: succeeds},
	}
	for _, su := range sandboxedSetups(t, false) {
		t.Run(su.name, func(t *testing.T) {
			s := newShell(t, su.cfg)
			for _, tc := range tests {
				t.Run(tc.name, func(t *testing.T) {
					res, err := s.Run(t.Context(), Args{Command: tc.command})
					if err != nil {
						t.Fatal(err)
					}
					if (tc.exit == fails && res.ExitCode == 0) || (tc.exit == succeeds && res.ExitCode != 0) {
						t.Fatalf("exit %d (output %q); want %v", res.ExitCode, res.Output, map[exit]string{fails: "failure", succeeds: "success"}[tc.exit])
					}
					if tc.mustNot != "" {
						if _, err := os.Stat(tc.mustNot); !errors.Is(err, os.ErrNotExist) {
							os.Remove(tc.mustNot)
							t.Fatalf("%s exists on the host after a sandboxed write (stat: %v)", tc.mustNot, err)
						}
					}
				})
			}
			if b, err := os.ReadFile(filepath.Join(s.cfg.Workspace.Dir(), "kept.txt")); err != nil || string(b) != "kept\n" {
				t.Fatalf("workspace file = %q, %v; want the sandboxed write to persist", b, err)
			}
		})
	}
}

// TestLandlockInsideBubblewrap shows the second wall: a path bubblewrap
// leaves writable but the launcher was not given is refused.
func TestLandlockInsideBubblewrap(t *testing.T) {
	var both *setup
	for _, su := range sandboxedSetups(t, false) {
		if su.want == SandboxBoth {
			both = &su
		}
	}
	if both == nil {
		t.Skip("needs bubblewrap and Landlock")
	}
	s := newShell(t, both.cfg)
	dir := t.TempDir()
	ws, err := workspace.Open(filepath.Join(dir, "ws"))
	if err != nil {
		t.Fatal(err)
	}
	// Bubblewrap binds ws; the launcher confines to ws only.
	cmd := s.command(t.Context(), launch{ws: ws.Dir(), workdir: ws.Dir(), launcher: s.launcher, landlock: true, selfTest: true},
		"echo ok > ok.txt && echo x > /tmp/x")
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	failure, err := runLaunched(cmd, nil)
	if failure != "" {
		t.Fatalf("launcher failed: %s", failure)
	}
	if err == nil || !strings.Contains(out.String(), "Permission denied") {
		t.Fatalf("write to bubblewrap's /tmp outside the Landlock rules: err %v output %q; want permission denied", err, out.String())
	}
	if _, err := os.Stat(filepath.Join(ws.Dir(), "ok.txt")); err != nil {
		t.Fatalf("the workspace write did not happen: %v", err)
	}
}

func TestCapped(t *testing.T) {
	tests := []struct {
		name   string
		limit  int
		writes []string
		want   string
	}{
		{name: "under the limit", limit: 10, writes: []string{"abc", "de"}, want: "abcde"},
		{name: "exactly the limit", limit: 4, writes: []string{"ab", "cd"}, want: "abcd"},
		{name: "head and tail kept", limit: 4, writes: []string{"ab", "cdef", "gh"},
			want: "ab\n\n[… output truncated: 4 of 8 bytes omitted …]\n\ngh"},
		{name: "one large write", limit: 6, writes: []string{"0123456789"},
			want: "012\n\n[… output truncated: 4 of 10 bytes omitted …]\n\n789"},
		{name: "many small writes wrap the ring", limit: 4, writes: []string{"a", "b", "c", "d", "e", "f", "g"},
			want: "ab\n\n[… output truncated: 3 of 7 bytes omitted …]\n\nfg"},
		{name: "multi-byte runes not split", limit: 6, writes: []string{"ééééé"},
			want: "é\n\n[… output truncated: 4 of 10 bytes omitted …]\n\né"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCapped(tc.limit)
			for _, w := range tc.writes {
				if n, err := c.Write([]byte(w)); n != len(w) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if got := c.String(); got != tc.want {
				t.Fatalf("String() = %q; want %q", got, tc.want)
			}
		})
	}
}

// BenchmarkRunEcho measures one execute_shell call per sandbox
// configuration; the difference between "bubblewrap only" and
// "bubblewrap+landlock" (or "off" and "landlock only") is the launcher's
// cost per command.
func BenchmarkRunEcho(b *testing.B) {
	for _, su := range setups(b, false) {
		s := newShell(b, su.cfg)
		b.Run(su.name, func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Run(b.Context(), Args{Command: "echo hi"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkLauncherOverhead measures the launcher's added latency per
// command robustly on a loaded machine: each iteration runs the same
// command the old way (no launcher) and through the launcher with Landlock,
// back to back, and the medians of both and of the paired differences are
// reported.
func BenchmarkLauncherOverhead(b *testing.B) {
	_, bwErr := probe(b.Context(), "")
	_, llErr := sandbox.ABI()
	if llErr != nil {
		b.Skipf("Landlock unavailable: %v", llErr)
	}
	// A launcher that does not exist leaves the pre-Landlock code path.
	oldPath := Config{Mode: ModeAuto, launcher: "/nonexistent/launcher", landlockABI: noLandlock}
	pairs := []struct {
		name       string
		base, with Config
		needBwrap  bool
	}{
		{name: "no bubblewrap", base: Config{Mode: ModeOff}, with: Config{Mode: ModeRequired, Bwrap: "/nonexistent/bwrap"}},
		{name: "in bubblewrap", base: oldPath, with: Config{Mode: ModeRequired}, needBwrap: true},
	}
	for _, p := range pairs {
		if p.needBwrap && bwErr != nil {
			continue
		}
		base, with := newShell(b, p.base), newShell(b, p.with)
		if base.launcher != "" || with.abi == 0 {
			b.Fatalf("%s: base %s, with %s", p.name, base.Status(), with.Status())
		}
		b.Run(p.name, func(b *testing.B) {
			var tBase, tWith, diff []time.Duration
			run := func(s *Shell) time.Duration {
				start := time.Now()
				if _, err := s.Run(b.Context(), Args{Command: "echo hi"}); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			for b.Loop() {
				db, dw := run(base), run(with)
				tBase, tWith, diff = append(tBase, db), append(tWith, dw), append(diff, dw-db)
			}
			b.ReportMetric(float64(median(tBase).Microseconds()), "µs-base")
			b.ReportMetric(float64(median(tWith).Microseconds()), "µs-landlock")
			b.ReportMetric(float64(median(diff).Microseconds()), "µs-added")
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := slices.Clone(d)
	slices.Sort(s)
	return s[len(s)/2]
}

// TestPrepareOnce: concurrent first commands share one sandbox self-test,
// and a command waits for it rather than running before the sandbox is known.
func TestPrepareOnce(t *testing.T) {
	ws, err := workspace.Open(filepath.Join(t.TempDir(), "ws"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(t.Context(), Config{Workspace: ws, Mode: ModeAuto}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]Result, 4)
	errs := make([]error, 4)
	for i := range results {
		wg.Go(func() { results[i], errs[i] = s.Run(t.Context(), Args{Command: "echo ok"}) })
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil || strings.TrimSpace(results[i].Output) != "ok" {
			t.Fatalf("Run %d = %+v, %v", i, results[i], errs[i])
		}
		if results[i].Sandbox != s.Sandbox() {
			t.Fatalf("Run %d ran with sandbox %q; the shell reports %q", i, results[i].Sandbox, s.Sandbox())
		}
	}
}

// TestPrepareCancelledIsNotKept: a Prepare whose context is done before the
// self-test starts (an agent stopping at once) starts nothing and leaves no
// verdict behind; the next Prepare tests and finds the same layers as an
// uninterrupted one.
func TestPrepareCancelledIsNotKept(t *testing.T) {
	ws, err := workspace.Open(filepath.Join(t.TempDir(), "ws"))
	if err != nil {
		t.Fatal(err)
	}
	want := newShell(t, Config{Workspace: ws, Mode: ModeAuto}).Sandbox()
	s, err := New(t.Context(), Config{Workspace: ws, Mode: ModeAuto}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := s.Prepare(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Prepare(cancelled) = %v; want context.Canceled", err)
	}
	if err := s.Prepare(t.Context()); err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	if got := s.Sandbox(); got != want {
		t.Fatalf("Sandbox() after a cancelled Prepare = %q (%s); want %q", got, s.Status(), want)
	}
}

// TestDescribeDoesNotWait: execute_shell's description is available before
// the sandbox self-test has run and does not start it (a one-shot turn that
// runs no command pays nothing for it); the first command still waits for
// the test and runs in the tested sandbox, and the description then says
// what was tested, which is the expected one without its proviso when the
// layers present passed their test.
func TestDescribeDoesNotWait(t *testing.T) {
	ws, err := workspace.Open(filepath.Join(t.TempDir(), "ws"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(t.Context(), Config{Workspace: ws, Mode: ModeAuto}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := s.Describe()
	s.prepareMu.Lock()
	started := s.prepared || s.preparing != nil
	s.prepareMu.Unlock()
	if started {
		t.Fatal("Describe started the sandbox self-test")
	}
	if !strings.Contains(before, "tested before the first command") {
		t.Fatalf("Describe() before the test = %q; want it to say the sandbox is tested before the first command", before)
	}
	res, err := s.Run(t.Context(), Args{Command: "echo ok"})
	if err != nil || strings.TrimSpace(res.Output) != "ok" {
		t.Fatalf("Run = %+v, %v", res, err)
	}
	s.prepareMu.Lock()
	prepared := s.prepared
	s.prepareMu.Unlock()
	if !prepared {
		t.Fatal("the first command ran without the sandbox self-test")
	}
	if res.Sandbox != s.Sandbox() {
		t.Fatalf("the first command ran with sandbox %q; the tested sandbox is %q", res.Sandbox, s.Sandbox())
	}
	after := s.Describe()
	if strings.Contains(after, "tested before the first command") {
		t.Fatalf("Describe() after the test = %q; want the tested layers", after)
	}
	_, lookErr := exec.LookPath("bwrap")
	abi, abiErr := sandbox.ABI()
	present := (lookErr == nil) == (s.bwrap != "") && ((abiErr == nil && abi >= 1) == (s.abi > 0))
	if present && !strings.HasPrefix(before, after) {
		t.Fatalf("the layers present passed their test, but the description changed:\nbefore %q\nafter  %q", before, after)
	}
}

// TestSandboxReadOnlyPaths: a Config.ReadOnly path (the skills directory)
// is readable at its own place, and its scripts run, in every sandboxed
// setup; it cannot be written; a missing one is left out.
func TestSandboxReadOnlyPaths(t *testing.T) {
	skills := t.TempDir()
	script := filepath.Join(skills, "pdf", "scripts", "hello.sh")
	if err := os.MkdirAll(filepath.Dir(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(script, []byte("echo hello from the skill\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, su := range sandboxedSetups(t, false) {
		t.Run(su.name, func(t *testing.T) {
			cfg := su.cfg
			cfg.ReadOnly = []string{skills, filepath.Join(skills, "missing")}
			s := newShell(t, cfg)
			res, err := s.Run(t.Context(), Args{Command: "sh " + script})
			if err != nil || res.ExitCode != 0 || !strings.Contains(res.Output, "hello from the skill") {
				t.Fatalf("running the skill's script: %+v, %v", res, err)
			}
			res, err = s.Run(t.Context(), Args{Command: "echo x > " + filepath.Join(skills, "pdf", "pwned")})
			if err != nil || res.ExitCode == 0 {
				t.Fatalf("writing into the read-only path: %+v, %v", res, err)
			}
			if _, err := os.Stat(filepath.Join(skills, "pdf", "pwned")); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("the read-only path was written: %v", err)
			}
		})
	}
}
