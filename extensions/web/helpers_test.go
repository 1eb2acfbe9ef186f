package web

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

const testToken = "unit-test-token-0123456789abcdef"

// svcHost is the fake host offering API services.
type svcHost struct {
	*extensiontest.Host
	svc *api.Services
}

func (h svcHost) APIServices() *api.Services { return h.svc }

// server is a running Web on a free loopback port.
type server struct {
	w    *Web
	host *extensiontest.Host
	base string
}

// startWeb runs the extension with config (YAML lines added to a listen
// and token setting) and services until the test ends.
func startWeb(t testing.TB, config string, svc *api.Services, opts ...extensiontest.Option) *server {
	t.Helper()
	cfg := "listen: 127.0.0.1:0\ntoken: " + testToken + "\n" + config
	host := extensiontest.NewHost(t, append([]extensiontest.Option{extensiontest.WithConfig(cfg)}, opts...)...)
	w := new(Web)
	ctx, cancel := context.WithCancel(context.Background())
	if err := w.Init(ctx, svcHost{host, svc}); err != nil {
		cancel()
		t.Fatalf("Init: %v", err)
	}
	if err := w.Start(ctx); err != nil {
		cancel()
		t.Fatalf("Start: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	w.OnReady(ctx)
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		if err := w.Stop(context.Background()); err != nil {
			t.Errorf("Stop: %v", err)
		}
	})
	return &server{w: w, host: host, base: "http://" + w.Addr().String()}
}

// do sends a request with the token (auth "" sends none) and returns the
// status, headers and body.
func (s *server) do(t testing.TB, method, path, body, auth string) (int, http.Header, string) {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, s.base+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

func (s *server) dial(t testing.TB, query string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10e9)
	defer cancel()
	c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/api/v1/ws"+query,
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + testToken}}})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}
