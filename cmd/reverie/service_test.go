package main

import (
	"bytes"
	"context"
	"flag"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/internal/supervisor"
)

var updateUnit = flag.Bool("update-unit", false, "rewrite testdata/reverie.service")

// The unit is the golden file, and restarts on failure except on every
// exit code the supervisor never retries.
func TestServiceUnitGolden(t *testing.T) {
	got := serviceUnit{Binary: "/usr/local/bin/reverie", DataDir: "/home/ann/.local/share/reverie"}.render()
	golden := filepath.Join("testdata", "reverie.service")
	if *updateUnit {
		if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("unit differs from %s (go test ./cmd/reverie -run TestServiceUnitGolden -args -update-unit rewrites it):\n%s", golden, got)
	}
	codes := make([]string, len(supervisor.NoRestartExitCodes))
	for i, c := range supervisor.NoRestartExitCodes {
		codes[i] = strconv.Itoa(c)
	}
	if !strings.Contains(got, "\nRestartPreventExitStatus="+strings.Join(codes, " ")+"\n") || !strings.Contains(got, "\nRestart=on-failure\n") {
		t.Errorf("the unit does not prevent restarts on %v:\n%s", codes, got)
	}
}

func TestUnitQuote(t *testing.T) {
	for _, c := range []struct{ name, in, want string }{
		{"plain", "/usr/bin/reverie", "/usr/bin/reverie"},
		{"space", "/home/ann/my data", `"/home/ann/my data"`},
		{"percent", "/data/100%", "/data/100%%"},
		{"quote and backslash", `/a "b"\c`, `"/a \"b\"\\c"`},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := unitQuote(c.in); got != c.want {
				t.Errorf("unitQuote(%q) = %q, want %q", c.in, got, c.want)
			}
		})
	}
}

// systemd-analyze verify accepts the unit, with an awkward data dir path
// (spaces, a percent sign). Skipped only where systemd-analyze is absent
// and CI is not set (.ci/run installs it).
func TestServiceUnitVerifies(t *testing.T) {
	tool, err := exec.LookPath("systemd-analyze")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("CI=true but systemd-analyze is missing (.ci/run installs systemd)")
		}
		t.Skip("systemd-analyze is not installed (apt-get install systemd)")
	}
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "my data 100%")
	unit := filepath.Join(t.TempDir(), serviceName)
	if err := os.WriteFile(unit, []byte(serviceUnit{Binary: bin, DataDir: data}.render()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(t.Context(), tool, "verify", unit).CombinedOutput()
	if err != nil || bytes.Contains(out, []byte(unit)) {
		t.Fatalf("systemd-analyze verify: %v\n%s", err, out)
	}
}

// fakeSystemctl records the calls install, uninstall and status make.
type fakeSystemctl struct {
	mu    sync.Mutex
	calls []string
}

func (f *fakeSystemctl) run(_ context.Context, args ...string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, strings.Join(args, " "))
	switch args[0] {
	case "is-enabled":
		return "enabled", nil
	case "is-active":
		return "active", nil
	}
	return "", nil
}

func serviceCmd(t *testing.T, env []string, ctl systemctl, args ...string) string {
	t.Helper()
	g := &globalFlags{}
	cmd := newServiceCmdWith(g, env, ctl)
	cmd.PersistentFlags().StringVar(&g.data, "data", "", "")
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	if err := cmd.ExecuteContext(t.Context()); err != nil {
		t.Fatalf("service %v: %v\n%s", args, err, out.String())
	}
	return out.String()
}

// install writes the unit where systemd looks for the user's units and
// enables it; status reads it back; uninstall disables and removes it;
// --print writes nothing.
func TestServiceInstallStatusUninstall(t *testing.T) {
	cfg := t.TempDir()
	data := t.TempDir()
	env := []string{"XDG_CONFIG_HOME=" + cfg, "HOME=" + t.TempDir()}
	path := filepath.Join(cfg, "systemd", "user", serviceName)
	ctl := &fakeSystemctl{}

	printed := serviceCmd(t, env, ctl.run, "install", "--print", "--data", data)
	if !strings.Contains(printed, "ExecStart=") || !strings.Contains(printed, " run --data "+data) {
		t.Errorf("--print:\n%s", printed)
	}
	if _, err := os.Stat(path); err == nil || len(ctl.calls) != 0 {
		t.Fatalf("--print wrote the unit or called systemctl (%v)", ctl.calls)
	}

	if out := serviceCmd(t, env, ctl.run, "status", "--data", data); !strings.Contains(out, "not installed") {
		t.Errorf("status before install:\n%s", out)
	}
	out := serviceCmd(t, env, ctl.run, "install", "--data", data)
	written, err := os.ReadFile(path)
	if err != nil || string(written) != printed {
		t.Fatalf("the unit at %s (%v) is not what --print shows:\n%s", path, err, written)
	}
	if strings.Join(ctl.calls, "; ") != "daemon-reload; enable --now reverie.service" || !strings.Contains(out, "Enabled and started") {
		t.Errorf("install: calls %v, output:\n%s", ctl.calls, out)
	}
	if out := serviceCmd(t, env, ctl.run, "status", "--data", data); !strings.Contains(out, "(up to date)") ||
		!strings.Contains(out, "enabled: enabled") || !strings.Contains(out, "active:  active") {
		t.Errorf("status:\n%s", out)
	}
	if out := serviceCmd(t, env, ctl.run, "status", "--data", filepath.Join(data, "other")); !strings.Contains(out, "differs") {
		t.Errorf("status for another data dir:\n%s", out)
	}
	ctl.calls = nil
	if out := serviceCmd(t, env, ctl.run, "uninstall", "--data", data); !strings.Contains(out, "Removed") {
		t.Errorf("uninstall:\n%s", out)
	}
	if _, err := os.Stat(path); err == nil {
		t.Error("the unit is still there")
	}
	if strings.Join(ctl.calls, "; ") != "disable --now reverie.service; daemon-reload" {
		t.Errorf("uninstall calls %v", ctl.calls)
	}
	if _, err := os.Stat(data); err != nil {
		t.Errorf("the data dir went: %v", err)
	}
}

// reverie health: exit 0 on a 200 from /healthz, non-zero otherwise.
func TestHealthCommand(t *testing.T) {
	ok := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/healthz" {
			http.NotFound(w, r)
			return
		}
		_, _ = io.WriteString(w, `{"status":"ok"}`)
	}))
	defer ok.Close()
	for _, c := range []struct {
		name, url string
		code      int
	}{
		{"healthy", ok.URL + "/healthz", ExitOK},
		{"not found", ok.URL + "/nothing", ExitFailure},
		{"nobody listening", "http://127.0.0.1:1/healthz", ExitFailure},
	} {
		t.Run(c.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if got := run(t.Context(), []string{"health", "--url", c.url}, strings.NewReader(""), &out, &errOut, nil); got != c.code {
				t.Errorf("exit %d, want %d\n%s%s", got, c.code, out.String(), errOut.String())
			}
		})
	}
}
