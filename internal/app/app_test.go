package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/web"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/kernel"
	"github.com/reverie-ai/reverie/tool"
)

func webInfo(t *testing.T) []extension.Info {
	t.Helper()
	info, ok := extension.Lookup("web")
	if !ok {
		t.Fatal("web extension not registered")
	}
	return []extension.Info{info}
}

// startApp builds an app on a fresh data dir with the web listener on a free
// port and runs it; the returned function stops it and returns Run's error.
func startApp(t *testing.T, dir string, env ...string) (*App, string, func() error) {
	t.Helper()
	env = append([]string{"REVERIE_WEB__LISTEN=127.0.0.1:0", "REVERIE_LOG__FILE=false"}, env...)
	ctx, cancel := context.WithCancel(context.Background())
	a, err := New(ctx, Options{DataDir: dir, Env: env, Console: io.Discard, Registry: webInfo(t)})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	ext, ok := a.Kernel.Extension("web")
	if !ok {
		t.Fatal("web extension not loaded")
	}
	addr := ext.(*web.Web).Addr().String()
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	stop := func() error {
		cancel()
		return <-done
	}
	return a, "http://" + addr, stop
}

// waitHealthy waits for the app to be ready and checks that /healthz says so.
func waitHealthy(t *testing.T, a *App, base string) {
	t.Helper()
	select {
	case <-a.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("app not ready after 10s")
	}
	resp, err := http.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body struct{ Status string }
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || body.Status != "ok" {
		t.Fatalf("/healthz = %d %q, want 200 ok", resp.StatusCode, body.Status)
	}
}

func TestStartServeStop(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	a, base, stop := startApp(t, dir)
	waitHealthy(t, a, base)
	if err := a.Bus.Publish(context.Background(), "test.hello", map[string]string{"x": "y"}); err != nil {
		t.Fatal(err)
	}
	// /status runs the extensions' health checks; /api/v1/info shows them.
	if got := a.extensionHealth(context.Background()); len(got) == 0 || got[0].ID != "web" || got[0].State != "running" || got[0].Health != "ok" {
		t.Errorf("extension health %+v", got)
	}
	info, err := apiInfo{a}.Info(context.Background())
	if err != nil || len(info.Extensions) == 0 || info.Extensions[0].Health != "ok" {
		t.Errorf("info extensions %+v, %v", info.Extensions, err)
	}
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, f := range []string{"config.yaml", "BASE_PROMPT.txt", "MEMORIES.txt", "world_state.json", DatabaseFile, "prompts/SEED_en.txt"} {
		if _, err := os.Stat(filepath.Join(dir, f)); err != nil {
			t.Errorf("data dir lacks %s: %v", f, err)
		}
	}
	// A second start on the same data dir works once the first has stopped.
	a, base, stop = startApp(t, dir)
	waitHealthy(t, a, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

func TestOneAgentPerDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	a, base, stop := startApp(t, dir)
	defer stop()
	waitHealthy(t, a, base)
	_, err := New(context.Background(), Options{DataDir: dir, Env: []string{"REVERIE_WEB__LISTEN=127.0.0.1:0"}, Console: io.Discard, Registry: webInfo(t)})
	if !errors.Is(err, datadir.ErrLocked) {
		t.Fatalf("second agent on the same data dir: err = %v, want ErrLocked", err)
	}
}

// TestBadConfigBesideLockedDataDir: the configuration is loaded while the
// lock is taken and the database opened on another goroutine; a bad
// configuration is still the error reported (as when they ran in turn),
// and the agent holding the data dir keeps running untouched.
func TestBadConfigBesideLockedDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	a, base, stop := startApp(t, dir)
	defer stop()
	waitHealthy(t, a, base)
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("log:\n  level: info\n  colour: red\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		_, err := New(context.Background(), Options{DataDir: dir, ConfigPath: bad, Console: io.Discard, Registry: webInfo(t)})
		var cerr *config.Error
		if !errors.As(err, &cerr) || errors.Is(err, datadir.ErrLocked) {
			t.Fatalf("bad config on a locked data dir: err = %v, want only the *config.Error", err)
		}
	}
	_, err := New(context.Background(), Options{DataDir: dir, Env: []string{"REVERIE_WEB__LISTEN=127.0.0.1:0"}, Console: io.Discard, Registry: webInfo(t)})
	if !errors.Is(err, datadir.ErrLocked) {
		t.Fatalf("the first agent lost its lock: err = %v, want ErrLocked", err)
	}
	waitHealthy(t, a, base)
}

func TestBadConfig(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("log:\n  level: info\n  colour: red\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{DataDir: dir, Console: io.Discard, Registry: webInfo(t)})
	var cerr *config.Error
	if !errors.As(err, &cerr) {
		t.Fatalf("err = %v, want *config.Error", err)
	}
	if cerr.Line != 3 || !strings.Contains(err.Error(), "colour") {
		t.Fatalf("error should name line 3 and the key: %v", err)
	}
}

// A broken prompt template fails the start naming the file and the token,
// instead of failing a compaction or a dream later.
func TestBadPromptTemplateIsFatal(t *testing.T) {
	cases := []struct {
		name, file, text, want string
	}{
		{"unknown placeholder", "prompts/COMPACTION_PROMPT.txt", "Summarise {bogus} please.\n", "bogus"},
		{"unclosed conditional", "BASE_PROMPT.txt", "You are Reverie.\n<!-- if tool:pulse -->\nUse pulse.\n", "BASE_PROMPT.txt"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if _, err := datadir.Bootstrap(dir, nil); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, c.file), []byte(c.text), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := New(context.Background(), Options{DataDir: dir, Console: io.Discard, Registry: webInfo(t)})
			if !errors.Is(err, ErrPromptFiles) {
				t.Fatalf("the agent started with a broken template, or failed otherwise: %v", err)
			}
			for _, w := range []string{c.want, filepath.Base(c.file)} {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not name %q: %v", w, err)
				}
			}
		})
	}
}

// The prompt files are checked beside the configuration; a bad
// configuration is still the error reported when both are bad.
func TestBadConfigBeforeBadPromptFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if _, err := datadir.Bootstrap(dir, nil); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "prompts/COMPACTION_PROMPT.txt"), []byte("Summarise {bogus} please.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte("log: [not, a, map]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{DataDir: dir, Console: io.Discard, Registry: webInfo(t)})
	if err == nil || errors.Is(err, ErrPromptFiles) || !strings.Contains(err.Error(), "config.yaml") {
		t.Fatalf("start with a bad configuration and a bad prompt file = %v, want the configuration's error", err)
	}
}

func TestCorruptWorldStateMovedAside(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "world_state.json"), []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	a, base, stop := startApp(t, dir)
	waitHealthy(t, a, base)
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(dir, "world_state.json.corrupt-*"))
	if len(matches) != 1 {
		t.Fatalf("corrupt world state not kept aside: %v", matches)
	}
	body, err := os.ReadFile(filepath.Join(dir, "world_state.json"))
	if err != nil || !json.Valid(body) {
		t.Fatalf("world_state.json not recreated: %v %q", err, body)
	}
}

func TestBadExtensionConfigIsFatal(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	_, err := New(context.Background(), Options{DataDir: dir, Console: io.Discard, Registry: webInfo(t),
		Env: []string{"REVERIE_WEB__LISTN=127.0.0.1:0"}})
	var cerr *config.Error
	if !errors.As(err, &cerr) || !strings.Contains(err.Error(), "REVERIE_WEB__LISTN") {
		t.Fatalf("err = %v, want a *config.Error naming the variable", err)
	}
}

// A web channel that cannot bind its port stops the start (it is the only
// channel) instead of leaving an agent nobody can reach that says "ready".
func TestPortInUseStopsStart(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	tests := []struct {
		name string
		env  []string
		why  string
	}{
		{"default web settings: the only channel", nil, "the only channel"},
		{"configured explicitly", []string{"REVERIE_WEB__LISTEN=" + ln.Addr().String()}, "configured explicitly"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if _, err := datadir.Bootstrap(dir, nil); err != nil {
				t.Fatal(err)
			}
			info := webInfo(t)
			if tt.env == nil {
				// Nothing configures web: its default address is made the
				// busy one behind the configuration's back.
				info = []extension.Info{{ID: "web", Description: info[0].Description, New: func() extension.Extension {
					return &defaultAddrWeb{Web: new(web.Web), addr: ln.Addr().String()}
				}}}
			}
			_, err := New(context.Background(), Options{DataDir: dir, Env: tt.env, Console: io.Discard, Registry: info})
			var ee *kernel.EssentialError
			if !errors.As(err, &ee) || ee.ID != "web" || ee.Why != tt.why || !errors.Is(err, syscall.EADDRINUSE) {
				t.Fatalf("start with the port in use: %v, want the web extension (%s) failing with EADDRINUSE", err, tt.why)
			}
			// Nothing was left holding the data dir.
			release, err := datadir.Lock(dir)
			if err != nil {
				t.Fatalf("data dir still locked after the failed start: %v", err)
			}
			release()
		})
	}
}

// defaultAddrWeb is the web extension with another default listen address.
type defaultAddrWeb struct {
	*web.Web
	addr string
}

func (w *defaultAddrWeb) Init(ctx context.Context, host extension.Host) error {
	return w.Web.Init(ctx, defaultAddrHost{host, w.addr})
}

type defaultAddrHost struct {
	extension.Host
	addr string
}

func (h defaultAddrHost) DecodeConfig(v any) error {
	if err := h.Host.DecodeConfig(v); err != nil {
		return err
	}
	if c, ok := v.(*web.Config); ok && c.Listen == web.DefaultListen {
		c.Listen = h.addr
	}
	return nil
}

// A fresh home without ~/.local/share (macOS, new containers): the data
// dir's parents are created, as `reverie` and `init` do.
func TestDataDirParentsAreCreated(t *testing.T) {
	home := t.TempDir()
	dir, err := datadir.Resolve("", []string{"HOME=" + home})
	if err != nil {
		t.Fatal(err)
	}
	a, err := New(context.Background(), Options{DataDir: dir, Env: []string{"HOME=" + home, "REVERIE_WEB__LISTEN=127.0.0.1:0"},
		Console: io.Discard, Registry: webInfo(t)})
	if err != nil {
		t.Fatalf("start in a home without .local/share: %v", err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(home, ".local", "share", "reverie", "config.yaml")); err != nil {
		t.Fatal(err)
	}
}

// A data dir whose files cannot be read is ErrUnusable (the agent exits 4
// and the supervisor does not retry), with a message naming the file.
func TestUnreadableWorldStateIsUnusable(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(filepath.Join(dir, "world_state.json"), 0o700); err != nil { // a directory: unreadable even for root
		t.Fatal(err)
	}
	_, err := New(context.Background(), Options{DataDir: dir, Env: []string{"REVERIE_WEB__LISTEN=127.0.0.1:0"}, Console: io.Discard, Registry: webInfo(t)})
	if !errors.Is(err, datadir.ErrUnusable) || !strings.Contains(err.Error(), "world_state.json") {
		t.Fatalf("start with an unreadable world_state.json: %v, want ErrUnusable naming the file", err)
	}
}

// TestOneShotSandbox: with OneShot (reverie send) the shell sandbox is not
// tested at start, and the first shell command waits for the test and runs
// in the tested sandbox.
func TestOneShotSandbox(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	a, err := New(ctx, Options{DataDir: dir, Console: io.Discard, Registry: []extension.Info{}, OneShot: true,
		Env: []string{"REVERIE_LOG__FILE=false"}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	defer func() { cancel(); <-done }()
	<-a.Ready()
	if a.core.Prepared() {
		t.Fatal("the sandbox was tested at start with OneShot")
	}
	var shellTool tool.Tool
	for _, tl := range a.coreTools {
		if tl.Name() == "execute_shell" {
			shellTool = tl
		}
	}
	if shellTool == nil {
		t.Fatal("no execute_shell tool")
	}
	if d := shellTool.Description(); !strings.Contains(d, "sandbox") {
		t.Fatalf("execute_shell description %q says nothing of the sandbox", d)
	}
	res, err := shellTool.Call(ctx, json.RawMessage(`{"command":"echo ok"}`))
	if err != nil {
		t.Fatal(err)
	}
	if !a.core.Prepared() {
		t.Fatal("the first shell command ran before the sandbox was tested")
	}
	var out struct{ Output, Sandbox string }
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatalf("result %q: %v", res.Content, err)
	}
	if strings.TrimSpace(out.Output) != "ok" || !strings.HasPrefix(a.core.SandboxStatus(), out.Sandbox) {
		t.Fatalf("first command: output %q sandbox %q; the tested sandbox is %q", out.Output, out.Sandbox, a.core.SandboxStatus())
	}
	if d := shellTool.Description(); strings.Contains(d, "tested before the first command") {
		t.Fatalf("execute_shell description after the test = %q; want what was tested", d)
	}
}

// Settled (where the agent command sets the collector back to its pace)
// comes once, after ready, with the background work; a one-shot process,
// which runs no background work, never calls it.
func TestSettledAfterReady(t *testing.T) {
	for _, tc := range []struct {
		name    string
		oneShot bool
	}{
		{"agent", false},
		{"one-shot", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var a *App
			settled := make(chan bool, 2) // whether ready had been signalled
			env := []string{"REVERIE_WEB__LISTEN=127.0.0.1:0", "REVERIE_LOG__FILE=false"}
			a, err := New(ctx, Options{DataDir: t.TempDir(), Env: env, Console: io.Discard, Registry: webInfo(t),
				OneShot: tc.oneShot,
				Settled: func() {
					select {
					case <-a.Ready():
						settled <- true
					default:
						settled <- false
					}
				}})
			if err != nil {
				t.Fatal(err)
			}
			done := make(chan error, 1)
			go func() { done <- a.Run(ctx) }()
			select {
			case <-a.Ready():
			case <-time.After(10 * time.Second):
				t.Fatal("not ready after 10s")
			}
			if !tc.oneShot {
				select {
				case afterReady := <-settled:
					if !afterReady {
						t.Error("Settled called before ready")
					}
				case <-time.After(10 * time.Second):
					t.Fatal("Settled not called 10s after ready")
				}
			}
			cancel()
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			if n := len(settled); n != 0 {
				t.Errorf("Settled called %d more times", n)
			}
		})
	}
}
