package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
)

// fakeAPI is the chat, threads, world and setup services, recording what
// reached them.
type fakeAPI struct {
	mu      sync.Mutex
	turns   []chat.Inbound
	world   json.RawMessage
	applied []string
}

func (f *fakeAPI) services() *api.Services {
	return &api.Services{Chat: fakeChat{f}, Threads: fakeThreads{}, World: fakeWorld{f}, Setup: fakeSetup{f}}
}

type fakeChat struct{ f *fakeAPI }

func (c fakeChat) Handle(_ context.Context, msg chat.Inbound) (api.Reply, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.turns = append(c.f.turns, msg)
	return api.Reply{Reply: "ok"}, nil
}

func (fakeChat) Cancel(context.Context, chat.ThreadID) bool { return false }

type fakeThreads struct{}

func (fakeThreads) List(context.Context, api.ThreadQuery) ([]api.Thread, error) { return nil, nil }
func (fakeThreads) Messages(context.Context, chat.ThreadID, api.MessageQuery) ([]api.Message, error) {
	return nil, nil
}

type fakeWorld struct{ f *fakeAPI }

func (w fakeWorld) Get(context.Context) (api.WorldState, error) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	return append(json.RawMessage(nil), w.f.world...), nil
}

func (w fakeWorld) Put(_ context.Context, doc api.WorldState) (api.WorldState, error) {
	w.f.mu.Lock()
	defer w.f.mu.Unlock()
	w.f.world = append(json.RawMessage(nil), doc...)
	return doc, nil
}

type fakeSetup struct{ f *fakeAPI }

func (fakeSetup) Forms(context.Context) (api.SetupStatus, error) { return api.SetupStatus{}, nil }
func (s fakeSetup) Apply(_ context.Context, form string, _ map[string]string) (string, error) {
	s.f.mu.Lock()
	defer s.f.mu.Unlock()
	s.f.applied = append(s.f.applied, form)
	return "saved", nil
}

// login signs in with the token from a page at origin (or with only
// Sec-Fetch-Site) and returns the session cookie.
func (s *server) login(t testing.TB, origin, fetchSite string) *http.Cookie {
	t.Helper()
	req, _ := http.NewRequest("POST", s.base+"/api/v1/login", strings.NewReader(`{"token":"`+testToken+`"}`))
	req.Header.Set("Content-Type", "application/json")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if fetchSite != "" {
		req.Header.Set("Sec-Fetch-Site", fetchSite)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) != 1 {
		t.Fatalf("login: %d %v", resp.StatusCode, resp.Cookies())
	}
	return resp.Cookies()[0]
}

// The access rules of docs/api.md for every auth mode: a table over the
// credentials, Origin, Sec-Fetch-Site, Content-Type and Host of requests
// to representative routes. The expected answer is the rule as written;
// the cases a web page can produce against an open or signed-in server
// (text/plain or form bodies, cross-site Origin or Sec-Fetch-Site, a
// rebinding Host, setup writes without the token) all passed before the
// rules existed.
func TestAccessRules(t *testing.T) {
	type route struct {
		name, method, path, body string
		ws                       bool
		ok                       int
		setup                    bool
	}
	routes := []route{
		{name: "post message", method: "POST", path: "/api/v1/threads/web:t1/messages", body: `{"text":"hi"}`, ok: 200},
		{name: "put world", method: "PUT", path: "/api/v1/world", body: `{"version":2}`, ok: 200},
		{name: "setup", method: "POST", path: "/api/v1/setup/models", body: `{"values":{"base_url":"http://evil.example"}}`, ok: 200, setup: true},
		{name: "ws upgrade", method: "GET", path: "/api/v1/ws", ws: true, ok: http.StatusSwitchingProtocols},
		{name: "get threads", method: "GET", path: "/api/v1/threads", ok: 200},
	}
	creds := []string{"bearer", "cookie", "missing", "wrong"}
	origins := []string{"same", "cross", "absent", "null"}
	fetchSites := []string{"absent", "same-origin", "none", "same-site", "cross-site"}
	types := []string{"json", "text/plain", "form", "missing"}
	hosts := []string{"ok", "localhost", "rebinding"}

	for _, auth := range []string{AuthToken, AuthNone} {
		t.Run(auth, func(t *testing.T) {
			f := &fakeAPI{}
			s := startWeb(t, "rate_per_second: 0\nauth_failures_per_minute: 0\nauth: "+auth, f.services())
			_, port, _ := net.SplitHostPort(s.w.Addr().String())
			cookie := s.login(t, s.base, "")
			for _, rt := range routes {
				unsafe := rt.method != "GET"
				for _, cred := range creds {
					for _, origin := range origins {
						for _, site := range fetchSites {
							for _, ct := range types {
								if !unsafe && ct != "missing" {
									continue // a GET has no body
								}
								for _, hostKind := range hosts {
									name := fmt.Sprintf("%s/%s/origin=%s/site=%s/type=%s/host=%s", rt.name, cred, origin, site, ct, hostKind)
									host := map[string]string{
										"ok":        "127.0.0.1:" + port,
										"localhost": "localhost:" + port,
										"rebinding": "attacker.example:" + port,
									}[hostKind]

									// The rules, in the order they apply.
									want := rt.ok
									vouched := origin != "absent" || site == "same-origin" || site == "none"
									switch {
									case hostKind == "rebinding":
										want = http.StatusMisdirectedRequest
									case auth == AuthToken && (cred == "missing" || cred == "wrong"):
										want = http.StatusUnauthorized
									case (unsafe || rt.ws) && (site == "same-site" || site == "cross-site" || origin == "cross" || origin == "null"):
										want = http.StatusForbidden
									case (unsafe || rt.ws) && cred == "cookie" && !vouched:
										want = http.StatusForbidden
									case unsafe && ct != "json":
										want = http.StatusUnsupportedMediaType
									case rt.setup && cred != "bearer" && cred != "cookie":
										want = http.StatusUnauthorized
									}

									t.Run(name, func(t *testing.T) {
										got := accessRequest(t, s.base+rt.path, rt.method, host, rt.body, rt.ws, cred, origin, site, ct, cookie)
										if got != want {
											t.Errorf("%d, want %d", got, want)
										}
									})
								}
							}
						}
					}
				}
			}
			// What was refused never reached a service.
			f.mu.Lock()
			defer f.mu.Unlock()
			for _, in := range f.turns {
				if in.Address.Thread != "web:t1" {
					t.Errorf("a turn ran on %s", in.Address.Thread)
				}
			}
		})
	}
}

// accessRequest sends one request of TestAccessRules and returns its status.
func accessRequest(t *testing.T, url, method, host, body string, ws bool, cred, origin, site, ct string, cookie *http.Cookie) int {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	switch cred {
	case "bearer":
		req.Header.Set("Authorization", "Bearer "+testToken)
	case "cookie":
		req.AddCookie(cookie)
	case "wrong":
		req.Header.Set("Authorization", "Bearer not-the-token-0123456789")
	}
	switch origin {
	case "same":
		req.Header.Set("Origin", "http://"+host)
	case "cross":
		req.Header.Set("Origin", "http://attacker.example")
	case "null":
		req.Header.Set("Origin", "null")
	}
	if site != "absent" {
		req.Header.Set("Sec-Fetch-Site", site)
	}
	switch ct {
	case "json":
		req.Header.Set("Content-Type", "application/json; charset=utf-8")
	case "text/plain":
		req.Header.Set("Content-Type", "text/plain;charset=UTF-8")
	case "form":
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if ws {
		req.Header.Set("Connection", "Upgrade")
		req.Header.Set("Upgrade", "websocket")
		req.Header.Set("Sec-WebSocket-Version", "13")
		req.Header.Set("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ==")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode == http.StatusSwitchingProtocols {
		resp.Body.Close() // drops the connection
		return resp.StatusCode
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
	return resp.StatusCode
}
