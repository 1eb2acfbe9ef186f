package shell

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/tools/workspace"
)

// helperDialEnv makes the test binary, copied into a workspace and run from
// a command, dial the address it names and report the result.
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

func newShell(t *testing.T, cfg Config) *Shell {
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
	return s
}

// modes returns the sandbox modes to test on this machine.
func modes(t *testing.T) []Mode {
	if _, err := probe(t.Context(), ""); err != nil {
		t.Logf("bubblewrap unavailable (%v): testing unsandboxed only", err)
		return []Mode{ModeOff}
	}
	return []Mode{ModeOff, ModeRequired}
}

func TestRun(t *testing.T) {
	for _, mode := range modes(t) {
		t.Run(string(mode), func(t *testing.T) {
			s := newShell(t, Config{Mode: mode, DefaultTimeout: 30 * time.Second, MaxOutput: 64})
			// quick shares the workspace but kills commands after one second: the
			// tool's real timeout behaviour, exercised with a short timeout.
			quick := newShell(t, Config{Workspace: s.cfg.Workspace, Mode: mode, DefaultTimeout: time.Second})
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
				{name: "workdir", args: Args{Command: "pwd", Workdir: "sub"}, wantOutput: filepath.Join(s.cfg.Workspace.Dir(), "sub") + "\n"},
				{name: "default workdir is the workspace", args: Args{Command: "pwd"}, wantOutput: s.cfg.Workspace.Dir() + "\n"},
				{name: "environment is minimal", args: Args{Command: "echo ${OPENAI_API_KEY:-unset} $HOME"}, wantOutput: "unset " + s.cfg.Workspace.Dir() + "\n"},
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
					wantSandbox := SandboxNone
					if mode == ModeRequired {
						wantSandbox = SandboxBubblewrap
					}
					if res.Sandbox != wantSandbox {
						t.Errorf("sandbox = %q; want %q", res.Sandbox, wantSandbox)
					}
					if hasWarning := strings.Contains(res.Note, "no sandbox is active"); hasWarning != (wantSandbox == SandboxNone) {
						t.Errorf("note %q: warning present %v, want %v", res.Note, hasWarning, wantSandbox == SandboxNone)
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

func TestNewModes(t *testing.T) {
	ws, err := workspace.Open(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		cfg         Config
		wantSandbox string
		wantErr     error
		anyErr      bool
	}{
		{name: "required without bwrap fails", cfg: Config{Workspace: ws, Mode: ModeRequired, Bwrap: "/nonexistent/bwrap"}, wantErr: ErrSandboxUnavailable},
		{name: "auto without bwrap runs unsandboxed", cfg: Config{Workspace: ws, Mode: ModeAuto, Bwrap: "/nonexistent/bwrap"}, wantSandbox: SandboxNone},
		{name: "bwrap failing its self-test", cfg: Config{Workspace: ws, Mode: ModeRequired, Bwrap: "/bin/false"}, wantErr: ErrSandboxUnavailable},
		{name: "off", cfg: Config{Workspace: ws, Mode: ModeOff}, wantSandbox: SandboxNone},
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
			if s.Sandbox() != tc.wantSandbox {
				t.Fatalf("Sandbox() = %q; want %q", s.Sandbox(), tc.wantSandbox)
			}
			if !strings.HasPrefix(s.Status(), "none: ") {
				t.Fatalf("Status() = %q; want it to explain the missing sandbox", s.Status())
			}
		})
	}
}

// sandboxed returns a bubblewrap Shell, or skips when bubblewrap is absent.
func sandboxed(t *testing.T, network bool) *Shell {
	t.Helper()
	if _, err := probe(t.Context(), ""); err != nil {
		t.Skipf("bubblewrap is not usable here (%v); install the bubblewrap package to run the sandbox tests", err)
	}
	return newShell(t, Config{Mode: ModeRequired, Network: network, DefaultTimeout: 30 * time.Second})
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
	tests := []struct {
		name     string
		network  bool
		wantExit int
		wantOut  string
	}{
		{name: "network off by default", network: false, wantExit: 3, wantOut: "dial failed"},
		{name: "network re-shared by configuration", network: true, wantExit: 0, wantOut: "dial ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := sandboxed(t, tc.network)
			copyTestBinary(t, s)
			res, err := s.Run(t.Context(), Args{Command: helperDialEnv + "=" + ln.Addr().String() + " ./probe"})
			if err != nil {
				t.Fatal(err)
			}
			if res.ExitCode != tc.wantExit || !strings.Contains(res.Output, tc.wantOut) {
				t.Fatalf("exit %d output %q; want exit %d and %q", res.ExitCode, res.Output, tc.wantExit, tc.wantOut)
			}
		})
	}
}

func TestSandboxFilesystem(t *testing.T) {
	s := sandboxed(t, false)
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		command  string
		wantFail bool   // non-zero exit expected
		mustNot  string // host path that must not exist afterwards
	}{
		{name: "write to a system directory", command: "echo x > /etc/reverie-sandbox-test", wantFail: true, mustNot: "/etc/reverie-sandbox-test"},
		{name: "write under /usr", command: "echo x > /usr/reverie-sandbox-test", wantFail: true, mustNot: "/usr/reverie-sandbox-test"},
		{name: "read a host file outside the workspace", command: "cat " + secret, wantFail: true},
		{name: "write to a host directory outside the workspace", command: "mkdir -p " + outside + " && echo x > " + filepath.Join(outside, "pwned.txt"), mustNot: filepath.Join(outside, "pwned.txt")},
		{name: "write in the workspace works", command: "echo kept > kept.txt && cat kept.txt"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := s.Run(t.Context(), Args{Command: tc.command})
			if err != nil {
				t.Fatal(err)
			}
			if (res.ExitCode != 0) != tc.wantFail {
				t.Fatalf("exit %d (output %q); want failure %v", res.ExitCode, res.Output, tc.wantFail)
			}
			if tc.mustNot != "" {
				if _, err := os.Stat(tc.mustNot); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("%s exists on the host after a sandboxed write (stat: %v)", tc.mustNot, err)
				}
			}
		})
	}
	if b, err := os.ReadFile(filepath.Join(s.cfg.Workspace.Dir(), "kept.txt")); err != nil || string(b) != "kept\n" {
		t.Fatalf("workspace file = %q, %v; want the sandboxed write to persist", b, err)
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

func BenchmarkRunEcho(b *testing.B) {
	ws, err := workspace.Open(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	for _, mode := range []Mode{ModeOff, ModeRequired} {
		s, err := New(b.Context(), Config{Workspace: ws, Mode: mode}, nil)
		if err != nil {
			continue
		}
		b.Run(string(mode), func(b *testing.B) {
			for b.Loop() {
				if _, err := s.Run(b.Context(), Args{Command: "echo hi"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
