package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
	"github.com/reverie-ai/reverie/extensions/mcp/mcptest"
	"github.com/reverie-ai/reverie/tool"
)

// startServer supervises a server configured by cfg until the test ends.
func startServer(t *testing.T, name string, cfg ServerConfig) *server {
	t.Helper()
	c := Config{Servers: map[string]ServerConfig{name: cfg}}
	if err := c.validate(); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(testLog{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	s := newServer(name, c.Servers[name], t.TempDir(), log, &sdk.Implementation{Name: "reverie-test", Version: "1"}, time.Now)
	s.minBackoff, s.maxBackoff = 10*time.Millisecond, 200*time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = s.Run(ctx) })
	t.Cleanup(func() { cancel(); wg.Wait() })
	return s
}

type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// waitFor waits for a status that satisfies ok (a minute at most).
func waitFor(t *testing.T, s *server, what string, ok func(ServerStatus) bool) ServerStatus {
	t.Helper()
	deadline := time.NewTimer(time.Minute)
	defer deadline.Stop()
	for {
		st, changed := s.status()
		if ok(st) {
			return st
		}
		select {
		case <-changed:
		case <-deadline.C:
			t.Fatalf("timed out waiting for %s; last status %+v", what, st)
		}
	}
}

func isUp(st ServerStatus) bool { return st.State == StateUp }

func findTool(t *testing.T, s *server, name string) tool.Tool {
	t.Helper()
	for _, tl := range s.currentTools() {
		if tl.Name() == name {
			return tl
		}
	}
	t.Fatalf("no tool %s among %v", name, names(s.currentTools()))
	return nil
}

// call validates args like the tool loop does, then calls.
func call(t *testing.T, tl tool.Tool, args string) (tool.Result, error) {
	t.Helper()
	if err := tool.Validate(tl, json.RawMessage(args)); err != nil {
		return tool.Result{}, err
	}
	return tl.Call(context.Background(), json.RawMessage(args))
}

func everythingStdio(p mcptest.Peers) ServerConfig {
	return ServerConfig{Command: p.Node, Args: append(slices.Clone(p.Everything), "stdio")}
}

func TestEverythingOverStdio(t *testing.T) {
	p := mcptest.Find(t)
	cfg := everythingStdio(p)
	cfg.Deny = []string{"get-env"}
	s := startServer(t, "everything", cfg)
	st := waitFor(t, s, "server-everything up", isUp)

	t.Run("discovery", func(t *testing.T) {
		for _, want := range []string{"everything__echo", "everything__get-sum", "everything__get-tiny-image"} {
			if !slices.Contains(st.Tools, want) {
				t.Errorf("tools %v lack %s", st.Tools, want)
			}
		}
		if slices.Contains(st.Tools, "everything__get-env") {
			t.Errorf("get-env is denied but offered: %v", st.Tools)
		}
		echo := findTool(t, s, "everything__echo")
		if !slices.Contains(tool.CategoriesOf(echo), "mcp") || !slices.Contains(tool.CategoriesOf(echo), "mcp:everything") {
			t.Errorf("categories %v, want mcp and mcp:everything", tool.CategoriesOf(echo))
		}
		if !strings.Contains(string(echo.Schema()), `"message"`) {
			t.Errorf("echo schema %s does not carry the server's schema", echo.Schema())
		}
	})

	cases := []struct {
		name, tool, args string
		want             []string // substrings of the result
		wantErr          string
	}{
		{"echo with arguments", "everything__echo", `{"message":"hello MCP"}`, []string{"Echo: hello MCP"}, ""},
		{"numbers", "everything__get-sum", `{"a":2,"b":40}`, []string{"42"}, ""},
		{"structured content", "everything__get-structured-content", `{"location":"New York"}`, []string{`"structured":{`, `"temperature"`, `"kind":"tool_output"`}, ""},
		{"image", "everything__get-tiny-image", `{}`, []string{`"label":"image/png","text":"image, `}, ""},
		{"missing argument refused by the schema", "everything__echo", `{}`, nil, "message"},
		{"wrong type refused by the schema", "everything__get-sum", `{"a":"two","b":1}`, nil, `"a"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, err := call(t, findTool(t, s, tc.tool), tc.args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Content, w) {
					t.Errorf("result %s lacks %s", res.Content, w)
				}
			}
		})
	}

	t.Run("list_changed", func(t *testing.T) {
		// server-everything registers get-roots-list (we offer roots) after
		// initialisation and says so with notifications/tools/list_changed.
		st := waitFor(t, s, "a refresh after tools/list_changed", func(st ServerStatus) bool {
			return st.Refreshes > 0 && slices.Contains(st.Tools, "everything__get-roots-list")
		})
		if st.State != StateUp {
			t.Fatalf("state %s after refresh", st.State)
		}
		findTool(t, s, "everything__get-roots-list")
	})
}

func TestEverythingOverStreamableHTTP(t *testing.T) {
	p := mcptest.Find(t)
	port := freePort(t)
	cmd := exec.Command(p.Node, append(slices.Clone(p.Everything), "streamableHttp")...)
	cmd.Env = append(os.Environ(), "PORT="+strconv.Itoa(port))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	// Until the server listens, connecting fails and the supervisor
	// retries: that is the restart path too.
	var auth extension.Secret
	_ = auth.UnmarshalText([]byte("Bearer not-needed-here"))
	s := startServer(t, "web-everything", ServerConfig{
		URL: fmt.Sprintf("http://127.0.0.1:%d/mcp", port), Headers: map[string]extension.Secret{"Authorization": auth},
	})
	waitFor(t, s, "server-everything over HTTP up", isUp)
	res, err := call(t, findTool(t, s, "web-everything__echo"), `{"message":"over http"}`)
	if err != nil || !strings.Contains(res.Content, "Echo: over http") {
		t.Fatalf("echo = %q, %v", res.Content, err)
	}
}

func TestServerKilledMidCallIsRestarted(t *testing.T) {
	p := mcptest.Find(t)
	s := startServer(t, "everything", everythingStdio(p))
	waitFor(t, s, "up", isUp)
	long := findTool(t, s, "everything__trigger-long-running-operation")

	errc := make(chan error, 1)
	go func() {
		_, err := call(t, long, `{"duration":60,"steps":60}`)
		errc <- err
	}()
	waitFor(t, s, "the call in flight", func(st ServerStatus) bool { return st.Calls > 0 })
	s.mu.Lock()
	proc := s.cmd.Process
	s.mu.Unlock()
	if err := proc.Kill(); err != nil {
		t.Fatal(err)
	}
	if err := <-errc; err == nil {
		t.Fatal("the call to a killed server succeeded")
	} else {
		t.Logf("call error: %v", err)
	}
	st := waitFor(t, s, "restarted and up again", func(st ServerStatus) bool { return st.Restarts > 0 && st.State == StateUp })
	if st.Restarts < 1 {
		t.Fatalf("restarts = %d", st.Restarts)
	}
	res, err := call(t, findTool(t, s, "everything__echo"), `{"message":"back"}`)
	if err != nil || !strings.Contains(res.Content, "back") {
		t.Fatalf("echo after restart = %q, %v", res.Content, err)
	}
}

func TestHangingCallIsCutByItsTimeout(t *testing.T) {
	p := mcptest.Find(t)
	cfg := everythingStdio(p)
	cfg.Timeout = time.Second
	s := startServer(t, "everything", cfg)
	waitFor(t, s, "up", isUp)
	_, err := call(t, findTool(t, s, "everything__trigger-long-running-operation"), `{"duration":120,"steps":2}`)
	if err == nil || !strings.Contains(err.Error(), "did not answer") || !strings.Contains(err.Error(), "1s") {
		t.Fatalf("err = %v, want a timeout naming 1s", err)
	}
	// The server itself still answers: it stays up and works.
	res, err := call(t, findTool(t, s, "everything__echo"), `{"message":"still here"}`)
	if err != nil || !strings.Contains(res.Content, "still here") {
		t.Fatalf("echo after a timeout = %q, %v", res.Content, err)
	}
}

func TestServerThatNeverStarts(t *testing.T) {
	p := mcptest.Find(t)
	cases := []struct {
		name string
		cfg  ServerConfig
		want string
	}{
		{"no such command", ServerConfig{Command: "/nonexistent/mcp-server"}, "no such file"},
		{"exits at once", ServerConfig{Command: p.Node, Args: []string{"-e", "process.exit(3)"}}, "start"},
		{"never answers", ServerConfig{Command: p.Node, Args: []string{"-e", "process.stdin.resume()"}, StartTimeout: 300 * time.Millisecond}, "no answer within 300ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := startServer(t, "broken", tc.cfg)
			st := waitFor(t, s, "down after a restart", func(st ServerStatus) bool { return st.State == StateDown && st.Restarts >= 1 })
			if !strings.Contains(st.Err, tc.want) {
				t.Errorf("err %q lacks %q", st.Err, tc.want)
			}
			if ts := s.currentTools(); len(ts) != 0 {
				t.Errorf("a down server offers %v", names(ts))
			}
			m := &MCP{servers: []*server{s}}
			if err := m.Health(context.Background()); err == nil || !strings.Contains(err.Error(), "broken") {
				t.Errorf("health = %v, want the server named as not up", err)
			}
			// A one-shot exchange in process waits for it, and says so.
			if got := m.WaitStarted(t.Context()); len(got) != 1 || !strings.HasPrefix(got[0], "MCP server broken is not up (down: ") ||
				!strings.Contains(got[0], tc.want) {
				t.Errorf("WaitStarted = %q, want the server named as down, with why", got)
			}
			_, err := s.call(context.Background(), "anything", json.RawMessage(`{}`))
			if !errors.Is(err, ErrServerDown) {
				t.Errorf("call on a down server: %v, want ErrServerDown", err)
			}
		})
	}
}

func TestConfigValidation(t *testing.T) {
	cases := []struct {
		name, yaml, want string
	}{
		{"command", "servers:\n  a:\n    command: x\n", ""},
		{"url", "servers:\n  a_b:\n    url: https://x.example/mcp\n    headers: {Authorization: {env: TOKEN}}\n", ""},
		{"neither", "servers:\n  a:\n    args: [x]\n", "set command"},
		{"both", "servers:\n  a:\n    command: x\n    url: http://y/\n", "not both"},
		{"bad url", "servers:\n  a:\n    url: ftp://x\n", "http://"},
		{"double underscore", "servers:\n  a__b:\n    command: x\n", "server name"},
		{"headers on a command", "servers:\n  a:\n    command: x\n    headers: {A: b}\n", "headers apply to a url"},
		{"negative timeout", "servers:\n  a:\n    command: x\n    timeout: -1s\n", "negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := extensiontest.NewHost(t, extensiontest.WithID(ID), extensiontest.WithConfig(tc.yaml))
			err := new(MCP).Init(context.Background(), h)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("Init: %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, extension.ErrInvalidConfig)):
				t.Fatalf("Init = %v, want an invalid-configuration error with %q", err, tc.want)
			}
		})
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

func TestConformance(t *testing.T) {
	info, ok := extension.Lookup(ID)
	if !ok {
		t.Fatal("not registered")
	}
	extensiontest.Run(t, info)
}

func TestMemoryTexts(t *testing.T) {
	cases := []struct {
		name, result string
		want         []string
	}{
		{"knowledge graph", `{"entities":[{"name":"Alice","entityType":"person","observations":["works at Acme","likes tea"]}],"relations":[]}`,
			[]string{"Alice: works at Acme", "Alice: likes tea"}},
		{"OpenMemory results", `{"results":[{"id":"1","memory":"Likes tea"},{"id":"2","memory":"Lives in Lyon"}]}`,
			[]string{"Likes tea", "Lives in Lyon"}},
		{"bare list", `[{"text":"a fact"},"another fact",{"content":"a third"}]`, []string{"a fact", "another fact", "a third"}},
		{"plain text, duplicates dropped", "one\n\n two \none\n", []string{"one", "two"}},
		{"empty", `{"results":[]}`, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := MemoryTexts(tc.result); !slices.Equal(got, tc.want) {
				t.Fatalf("MemoryTexts = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestSecretsAreRedacted: env and header values of the servers are
// registered with the host, so they never reach a log line.
func TestSecretsAreRedacted(t *testing.T) {
	const envValue, headerValue = "sk-env-secret-0123456789", "Bearer header-secret-0123456789"
	h := extensiontest.NewHost(t, extensiontest.WithID(ID), extensiontest.WithConfig(
		"servers:\n  a:\n    command: /nonexistent\n    env: {API_KEY: \""+envValue+"\"}\n"+
			"  b:\n    url: http://127.0.0.1:1/mcp\n    headers: {Authorization: \""+headerValue+"\"}\n"))
	if err := new(MCP).Init(context.Background(), h); err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{envValue, headerValue} {
		if got := h.Redact("value: " + v); strings.Contains(got, v) {
			t.Errorf("%q is not redacted: %s", v, got)
		}
	}
}
