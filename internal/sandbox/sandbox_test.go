package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"
)

// helperDialEnv makes this test binary, run as a command inside the
// sandbox, dial the address it names and report the result. (Run with
// Subcommand as its first argument, the binary is the launcher itself:
// init serves it before tests would start.)
const helperDialEnv = "REVERIE_SANDBOX_HELPER_DIAL"

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

func TestSpecArgsRoundTrip(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		argv []string
		want []string
	}{
		{name: "landlock, no network", spec: Spec{ReadWrite: []string{"/ws", "/tmp/x"}, Landlock: true},
			argv: []string{"/bin/sh", "-c", "echo hi"},
			want: []string{Subcommand, "--rw", "/ws", "--rw", "/tmp/x", "--", "/bin/sh", "-c", "echo hi"}},
		{name: "read-only and network", spec: Spec{ReadWrite: []string{"/ws"}, ReadOnly: []string{"/srv"}, Network: true, Landlock: true},
			argv: []string{"true"},
			want: []string{Subcommand, "--rw", "/ws", "--ro", "/srv", "--net", "--", "true"}},
		{name: "no landlock", spec: Spec{ReadWrite: []string{"/ws"}},
			argv: []string{"/bin/sh", "-c", "--rw"},
			want: []string{Subcommand, "--rw", "/ws", "--no-landlock", "--", "/bin/sh", "-c", "--rw"}},
		{name: "status descriptor", spec: Spec{Landlock: true, StatusFD: 3},
			argv: []string{"true"},
			want: []string{Subcommand, "--status-fd", "3", "--", "true"}},
		{name: "limits and cgroups", spec: Spec{Landlock: true, CgroupFDs: []int{4, 5},
			Limits: Limits{Processes: 256, AddressSpace: 1 << 30, FileSize: 1 << 20, CPUSeconds: 60}},
			argv: []string{"true"},
			want: []string{Subcommand, "--cgroup-fd", "4", "--cgroup-fd", "5", "--nproc", "256", "--as", "1073741824",
				"--fsize", "1048576", "--cpu", "60", "--", "true"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.spec.Args(tc.argv...)
			if !slices.Equal(got, tc.want) {
				t.Fatalf("Args = %q; want %q", got, tc.want)
			}
			spec, argv, err := parse(got[1:])
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if !slices.Equal(argv, tc.argv) || !slices.Equal(spec.ReadWrite, tc.spec.ReadWrite) ||
				!slices.Equal(spec.ReadOnly, tc.spec.ReadOnly) || spec.Network != tc.spec.Network || spec.Landlock != tc.spec.Landlock ||
				spec.Limits != tc.spec.Limits || !slices.Equal(spec.CgroupFDs, tc.spec.CgroupFDs) {
				t.Fatalf("parse = %+v %q; want %+v %q", spec, argv, tc.spec, tc.argv)
			}
		})
	}
}

// TestMainRefuses calls Main in this process: only with arguments it
// refuses, since a success would replace the test binary.
func TestMainRefuses(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantMsg  string
	}{
		{name: "no separator", args: []string{"--rw", "/tmp", "/bin/true"}, wantCode: 2, wantMsg: `"--" must separate`},
		{name: "no command", args: []string{"--rw", "/tmp", "--"}, wantCode: 2, wantMsg: "no command"},
		{name: "relative path", args: []string{"--rw", "ws", "--", "/bin/true"}, wantCode: 2, wantMsg: "not absolute"},
		{name: "unknown option", args: []string{"--rx", "/tmp", "--", "/bin/true"}, wantCode: 2, wantMsg: "rx"},
		{name: "status on stderr", args: []string{"--status-fd", "2", "--", "/bin/true"}, wantCode: 2, wantMsg: "want 3 or more"},
		{name: "status descriptor not open", args: []string{"--status-fd", "987", "--", "/bin/true"}, wantCode: ExitFailed, wantMsg: "status descriptor 987"},
		{name: "command not found", args: []string{"--", "/nonexistent/cmd"}, wantCode: ExitFailed, wantMsg: "find /nonexistent/cmd"},
		{name: "missing writable path", args: []string{"--rw", "/nonexistent/ws", "--", "/bin/true"}, wantCode: ExitFailed, wantMsg: "writable path"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.wantMsg == "writable path" {
				if _, err := ABI(); err != nil {
					t.Skipf("Landlock unavailable (%v): the launcher does not look at paths without it", err)
				}
			}
			var stderr bytes.Buffer
			code := Main(tc.args, &stderr)
			if code != tc.wantCode || !strings.HasPrefix(stderr.String(), FailurePrefix) || !strings.Contains(stderr.String(), tc.wantMsg) {
				t.Fatalf("Main = %d, stderr %q; want %d and %q", code, stderr.String(), tc.wantCode, tc.wantMsg)
			}
		})
	}
}

// launch runs argv through this test binary acting as the launcher.
func launch(t *testing.T, spec Spec, dir string, env []string, argv ...string) (string, int) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), exe, spec.Args(argv...)...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=/usr/bin:/bin", "HOME=" + dir, "LANG=C.UTF-8"}, env...)
	out, err := cmd.CombinedOutput()
	var exitErr *exec.ExitError
	switch {
	case err == nil:
		return string(out), 0
	case errors.As(err, &exitErr):
		return string(out), exitErr.ExitCode()
	default:
		t.Fatalf("run launcher: %v", err)
		return "", 0
	}
}

func requireLandlock(t *testing.T) {
	t.Helper()
	if _, err := ABI(); err != nil {
		t.Skipf("Landlock is not available on this kernel (%v): skipping the enforcement tests; the launcher path is still tested by TestLaunchWithoutLandlock", err)
	}
}

func TestLaunchFilesystem(t *testing.T) {
	requireLandlock(t)
	ws := t.TempDir()
	priv := t.TempDir()
	outside := t.TempDir()
	secret := filepath.Join(outside, "secret.txt")
	if err := os.WriteFile(secret, []byte("secret"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(ws, "a"), 0o755); err != nil {
		t.Fatal(err)
	}
	home, err := os.UserHomeDir()
	if err != nil {
		t.Fatal(err)
	}
	spec := Spec{ReadWrite: []string{ws, priv}, Landlock: true}
	tests := []struct {
		name     string
		command  string
		wantFail bool
		wantOut  string // substring
		mustNot  string // host path that must not exist afterwards
	}{
		{name: "write in the workspace", command: "echo kept > kept.txt && cat kept.txt", wantOut: "kept"},
		{name: "rename between directories in the workspace", command: "mkdir -p b && echo x > a/f && mv a/f b/f && cat b/f", wantOut: "x"},
		{name: "write in the private tmp", command: "echo t > " + priv + "/t && cat " + priv + "/t", wantOut: "t"},
		{name: "read /etc/hostname", command: "cat /etc/hostname"},
		{name: "run system commands", command: "ls /usr/bin >/dev/null && echo listed", wantOut: "listed"},
		{name: "write /dev/null", command: "echo x > /dev/null && echo ok", wantOut: "ok"},
		{name: "write outside the workspace", command: "echo x > " + filepath.Join(outside, "pwned.txt"), wantFail: true, mustNot: filepath.Join(outside, "pwned.txt")},
		{name: "write to /tmp", command: "echo x > /tmp/reverie-landlock-test-" + filepath.Base(ws), wantFail: true, mustNot: "/tmp/reverie-landlock-test-" + filepath.Base(ws)},
		{name: "write to the home directory", command: "echo x > " + filepath.Join(home, "reverie-landlock-test-"+filepath.Base(ws)), wantFail: true, mustNot: filepath.Join(home, "reverie-landlock-test-"+filepath.Base(ws))},
		{name: "read a file outside the workspace", command: "cat " + secret, wantFail: true},
		{name: "read /etc/shadow", command: "cat /etc/shadow", wantFail: true},
		{name: "no_new_privs", command: "grep NoNewPrivs /proc/self/status", wantOut: "1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, code := launch(t, spec, ws, nil, "/bin/sh", "-c", tc.command)
			if (code != 0) != tc.wantFail || !strings.Contains(out, tc.wantOut) {
				t.Fatalf("exit %d output %q; want failure %v and %q", code, out, tc.wantFail, tc.wantOut)
			}
			if strings.HasPrefix(out, FailurePrefix) {
				t.Fatalf("the launcher failed: %s", out)
			}
			if tc.mustNot != "" {
				if _, err := os.Stat(tc.mustNot); !errors.Is(err, os.ErrNotExist) {
					os.Remove(tc.mustNot)
					t.Fatalf("%s was written through the sandbox (stat: %v)", tc.mustNot, err)
				}
			}
		})
	}
}

func TestLaunchNetwork(t *testing.T) {
	requireLandlock(t)
	if abi, _ := ABI(); abi < 4 {
		t.Skipf("Landlock ABI %d cannot restrict TCP (needs 4)", abi)
	}
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
		{name: "TCP refused without --net", network: false, wantExit: 3, wantOut: "dial failed"},
		{name: "TCP allowed with --net", network: true, wantExit: 0, wantOut: "dial ok"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ws := t.TempDir()
			copyTestBinary(t, filepath.Join(ws, "probe"))
			out, code := launch(t, Spec{ReadWrite: []string{ws}, Network: tc.network, Landlock: true}, ws,
				[]string{helperDialEnv + "=" + ln.Addr().String()}, "./probe")
			if code != tc.wantExit || !strings.Contains(out, tc.wantOut) {
				t.Fatalf("exit %d output %q; want %d and %q", code, out, tc.wantExit, tc.wantOut)
			}
		})
	}
}

// TestStatusDescriptor checks that only the launcher can report a failure on
// the status pipe: the command never sees the descriptor.
func TestStatusDescriptor(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ws := t.TempDir()
	tests := []struct {
		name       string
		argv       []string
		wantExit   int
		wantStatus string // prefix; "" wants none
		wantOut    string
	}{
		{name: "launcher failure", argv: []string{"/nonexistent/cmd"}, wantExit: ExitFailed, wantStatus: FailurePrefix + "find /nonexistent/cmd"},
		{name: "command imitating the launcher", argv: []string{"/bin/sh", "-c", "echo " + FailurePrefix + "fake >&2; echo fake >&3; exit 125"},
			wantExit: ExitFailed, wantOut: "Bad file descriptor"},
		{name: "descriptor closed for the command", argv: []string{"/bin/sh", "-c", "ls /proc/self/fd/3 || echo closed"}, wantOut: "closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			cmd := exec.CommandContext(t.Context(), exe, Spec{ReadWrite: []string{ws}, StatusFD: 3}.Args(tc.argv...)...)
			cmd.ExtraFiles = []*os.File{w}
			var out bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &out
			err = cmd.Start()
			w.Close()
			if err != nil {
				t.Fatal(err)
			}
			code := 0
			if err := cmd.Wait(); err != nil {
				var exitErr *exec.ExitError
				if !errors.As(err, &exitErr) {
					t.Fatal(err)
				}
				code = exitErr.ExitCode()
			}
			status, err := io.ReadAll(r)
			if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantExit || !strings.Contains(out.String(), tc.wantOut) {
				t.Fatalf("exit %d output %q; want %d and %q", code, out.String(), tc.wantExit, tc.wantOut)
			}
			if (tc.wantStatus == "") != (len(status) == 0) || !strings.HasPrefix(string(status), tc.wantStatus) {
				t.Fatalf("status %q; want %q", status, tc.wantStatus)
			}
		})
	}
}

// TestLaunchWithoutLandlock exercises the launcher on any kernel: it only
// sets no_new_privs and executes the command.
func TestLaunchWithoutLandlock(t *testing.T) {
	ws := t.TempDir()
	outside := t.TempDir()
	out, code := launch(t, Spec{ReadWrite: []string{ws}}, ws, nil, "/bin/sh", "-c",
		"echo x > "+filepath.Join(outside, "f")+" && grep NoNewPrivs /proc/self/status && exit 7")
	if code != 7 || !strings.Contains(out, "NoNewPrivs:\t1") {
		t.Fatalf("exit %d output %q; want 7 and no_new_privs set", code, out)
	}
	if _, err := os.Stat(filepath.Join(outside, "f")); err != nil {
		t.Fatalf("without Landlock the write outside should have happened: %v", err)
	}
}

func copyTestBinary(t *testing.T, dst string) {
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
	f, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(f, src); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func BenchmarkLaunch(b *testing.B) {
	exe, err := os.Executable()
	if err != nil {
		b.Fatal(err)
	}
	ws := b.TempDir()
	for _, bc := range []struct {
		name string
		cmd  func() *exec.Cmd
	}{
		{name: "direct", cmd: func() *exec.Cmd { return exec.Command("/bin/sh", "-c", "true") }},
		{name: "launcher no-landlock", cmd: func() *exec.Cmd {
			return exec.Command(exe, Spec{ReadWrite: []string{ws}}.Args("/bin/sh", "-c", "true")...)
		}},
		{name: "launcher landlock", cmd: func() *exec.Cmd {
			return exec.Command(exe, Spec{ReadWrite: []string{ws}, Landlock: true}.Args("/bin/sh", "-c", "true")...)
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			for b.Loop() {
				if out, err := bc.cmd().CombinedOutput(); err != nil {
					b.Fatalf("%v: %s", err, out)
				}
			}
		})
	}
}

// TestLaunchLimits checks that the command inherits the resource limits
// and that the CPU hard limit is a second above the soft one.
func TestLaunchLimits(t *testing.T) {
	ws := t.TempDir()
	spec := Spec{ReadWrite: []string{ws}, Limits: Limits{Processes: 77, AddressSpace: 512 << 20, FileSize: 1 << 20, CPUSeconds: 9}}
	out, code := launch(t, spec, ws, nil, "/bin/sh", "-c", "cat /proc/self/limits")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, want := range []string{
		`Max processes\s+77\s+77\s`,
		`Max address space\s+536870912\s+536870912\s`,
		`Max file size\s+1048576\s+1048576\s`,
		`Max cpu time\s+9\s+10\s`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("limits lack %s:\n%s", want, out)
		}
	}
	// A write beyond the file size limit stops the writer.
	out, code = launch(t, spec, ws, nil, "/bin/sh", "-c", "exec head -c 2000000 /dev/zero > big")
	if info, err := os.Stat(filepath.Join(ws, "big")); err != nil || info.Size() != 1<<20 || code == 0 {
		t.Fatalf("exit %d (%s), big %v; want the write stopped at 1 MiB", code, out, err)
	}
}

func TestBadDescriptorRefused(t *testing.T) {
	if _, _, err := parse([]string{"--cgroup-fd", "2", "--", "true"}); err == nil {
		t.Fatal("parse accepted descriptor 2 for a cgroup")
	}
}

// TestLaunchDropsCapabilities: the command has no capability, even when
// the launcher runs as root (it then cannot raise its limits either).
func TestLaunchDropsCapabilities(t *testing.T) {
	ws := t.TempDir()
	spec := Spec{ReadWrite: []string{ws}, Limits: Limits{FileSize: 1 << 20}}
	out, code := launch(t, spec, ws, nil, "/bin/sh", "-c", "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb):' /proc/self/status; ulimit -f unlimited 2>/dev/null && echo raised")
	if code != 0 && !strings.Contains(out, "Cap") {
		t.Fatalf("exit %d: %s", code, out)
	}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.HasPrefix(line, "Cap") && !strings.HasSuffix(line, "0000000000000000") {
			t.Errorf("capabilities left: %s", line)
		}
	}
	if strings.Contains(out, "raised") {
		t.Errorf("the command raised its file size limit:\n%s", out)
	}
}
