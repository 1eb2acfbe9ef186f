package web

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

// fakeAPI is the chat, threads, world and setup services, recording what
// reached them.
type fakeAPI struct {
	mu       sync.Mutex
	turns    []chat.Inbound
	posted   int // of turns, those run with Post (delivered to the channel)
	world    json.RawMessage
	applied  []string
	models   []string
	reverted []int64
	answered []string
}

// postedTurns is how many turns ran with Chat.Post.
func (f *fakeAPI) postedTurns() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.posted
}

func (f *fakeAPI) services() *api.Services {
	return &api.Services{Chat: fakeChat{f}, Threads: fakeThreads{}, World: fakeWorld{f}, Setup: fakeSetup{f}, Models: fakeModels{f}, Dreams: fakeDreams{f}, Conversations: fakeConversations{f}, Approvals: fakeApprovals{f},
		Project: fakeProject{}}
}

type fakeProject struct{}

func (fakeProject) Status(_ context.Context, t chat.ThreadID) (api.ProjectStatus, error) {
	return api.ProjectStatus{Thread: t, World: api.WorldState("{}")}, nil
}

type fakeApprovals struct{ f *fakeAPI }

func (fakeApprovals) Pending(context.Context, chat.ThreadID) ([]api.Approval, error) { return nil, nil }
func (a fakeApprovals) Answer(_ context.Context, id string, approve bool, via string) (api.Approval, error) {
	a.f.mu.Lock()
	defer a.f.mu.Unlock()
	a.f.answered = append(a.f.answered, id)
	return api.Approval{ID: id, State: "approved"}, nil
}

type fakeDreams struct{ f *fakeAPI }

func (fakeDreams) List(context.Context, int) ([]api.Dream, error) { return nil, nil }
func (fakeDreams) Dream(_ context.Context, trigger string) (api.Dream, error) {
	return api.Dream{ID: 1, Trigger: trigger}, nil
}
func (d fakeDreams) Revert(_ context.Context, id int64) (api.DreamRevert, error) {
	d.f.mu.Lock()
	defer d.f.mu.Unlock()
	d.f.reverted = append(d.f.reverted, id)
	return api.DreamRevert{ID: id}, nil
}

type fakeModels struct{ f *fakeAPI }

func (fakeModels) List(context.Context) (api.ModelList, error) { return api.ModelList{}, nil }
func (fakeModels) Thread(_ context.Context, t chat.ThreadID) (api.ThreadModel, error) {
	return api.ThreadModel{Thread: t}, nil
}
func (m fakeModels) SetThread(_ context.Context, t chat.ThreadID, backend string) (api.ThreadModel, error) {
	m.f.mu.Lock()
	defer m.f.mu.Unlock()
	m.f.models = append(m.f.models, string(t)+"="+backend)
	return api.ThreadModel{Thread: t, Backend: backend}, nil
}

// fakeConversations records the threads its changes reached as turns.
type fakeConversations struct{ f *fakeAPI }

func (c fakeConversations) record(t chat.ThreadID) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.turns = append(c.f.turns, chat.Inbound{Address: chat.Address{Thread: t}})
}

func (c fakeConversations) Rename(_ context.Context, t chat.ThreadID, title string) (api.Thread, error) {
	c.record(t)
	return api.Thread{ID: t, Title: title}, nil
}

func (c fakeConversations) Archive(_ context.Context, t chat.ThreadID) (api.Thread, error) {
	c.record(t)
	return api.Thread{ID: t}, nil
}

func (c fakeConversations) Restore(_ context.Context, t chat.ThreadID) (api.Thread, error) {
	c.record(t)
	return api.Thread{ID: t}, nil
}

func (fakeConversations) Segments(context.Context, api.SegmentQuery) ([]api.Segment, error) {
	return nil, nil
}

func (fakeConversations) Segment(_ context.Context, id int64) (api.SegmentMessages, error) {
	return api.SegmentMessages{Segment: api.Segment{ID: id}}, nil
}

func (fakeConversations) Search(context.Context, string, int) ([]api.SearchHit, error) {
	return nil, nil
}

func (c fakeConversations) Redo(_ context.Context, r api.RedoRequest) (api.Reply, error) {
	c.record(r.Thread)
	return api.Reply{Reply: "again"}, nil
}

func (c fakeConversations) Submit(_ context.Context, r api.RedoRequest) (<-chan error, error) {
	c.record(r.Thread)
	done := make(chan error, 1)
	done <- nil
	return done, nil
}

type fakeChat struct{ f *fakeAPI }

func (c fakeChat) Handle(_ context.Context, msg chat.Inbound) (api.Reply, error) {
	c.f.mu.Lock()
	defer c.f.mu.Unlock()
	c.f.turns = append(c.f.turns, msg)
	return api.Reply{Reply: "ok"}, nil
}

func (c fakeChat) Post(ctx context.Context, msg chat.Inbound) (api.Reply, error) {
	c.f.mu.Lock()
	c.f.posted++
	c.f.mu.Unlock()
	return c.Handle(ctx, msg)
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
		// An approval lets a held call run: the token is needed in every
		// mode, or a sandboxed command could approve its own request.
		{name: "answer an approval", method: "POST", path: "/api/v1/approvals/ap_1", body: `{"approve":true}`, ok: 200, setup: true},
		{name: "ws upgrade", method: "GET", path: "/api/v1/ws", ws: true, ok: http.StatusSwitchingProtocols},
		{name: "get threads", method: "GET", path: "/api/v1/threads", ok: 200},
		{name: "put thread model", method: "PUT", path: "/api/v1/threads/web:t1/model", body: `{"backend":"b"}`, ok: 200},
		{name: "revert a dream", method: "POST", path: "/api/v1/dreams/7/revert", body: `{}`, ok: 200},
		// A dream costs model calls: a page from elsewhere must not start one.
		{name: "dream now", method: "POST", path: "/api/v1/dreams", body: `{}`, ok: 200},
		// Uploads are JSON (base64) too: the same rules, no multipart exception.
		{name: "upload an attachment", method: "POST", path: "/api/v1/threads/web:t1/attachments", body: uploadBody("a.png", "image/png", onePixelPNG), ok: 201},
		{name: "rename thread", method: "PUT", path: "/api/v1/threads/web:t1", body: `{"title":"x"}`, ok: 200},
		{name: "delete thread", method: "DELETE", path: "/api/v1/threads/web:t1", ok: 200},
		{name: "restore thread", method: "POST", path: "/api/v1/threads/web:t1/restore", body: `{}`, ok: 200},
		{name: "regenerate", method: "POST", path: "/api/v1/threads/web:t1/regenerate", body: `{}`, ok: 200},
		{name: "retry", method: "POST", path: "/api/v1/threads/web:t1/retry", body: `{}`, ok: 200},
		{name: "edit", method: "POST", path: "/api/v1/threads/web:t1/messages/3/edit", body: `{"text":"x"}`, ok: 200},
		{name: "segments", method: "GET", path: "/api/v1/segments?thread=web:t1", ok: 200},
		{name: "segment", method: "GET", path: "/api/v1/segments/3", ok: 200},
		{name: "search", method: "GET", path: "/api/v1/search?q=lyon", ok: 200},
		{name: "project status", method: "GET", path: "/api/v1/status/project?thread=web:t1", ok: 200},
		// A spoken reply: a GET like the other reads.
		{name: "speech", method: "GET", path: "/api/v1/threads/web:t1/speech/reply-1.ogg", ok: 200},
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
			speech := filepath.Join(s.host.DataDir(), workspaceDir, "voice", "web", "t1")
			if err := os.MkdirAll(speech, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(speech, "reply-1.ogg"), []byte("OggS fake"), 0o600); err != nil {
				t.Fatal(err)
			}
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
									case unsafe && ct != "json" && (rt.body != "" || ct != "missing"):
										// A write without a body (DELETE) needs no Content-Type.
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
			for _, m := range f.models {
				if m != "web:t1=b" {
					t.Errorf("a model was chosen: %s", m)
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

func TestLogoutRevokesTheSession(t *testing.T) {
	s := startWeb(t, "rate_per_second: 0", &api.Services{Events: &fakeEvents{live: make(chan extension.Event)}})
	cookie := s.login(t, s.base, "")
	other := s.login(t, "", "same-origin")
	get := func(c *http.Cookie) int {
		req, _ := http.NewRequest("GET", s.base+"/api/v1/info", nil)
		req.AddCookie(c)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if get(cookie) != 200 || get(other) != 200 {
		t.Fatal("a fresh session is not accepted")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	wsOf, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/api/v1/ws", &websocket.DialOptions{
		HTTPHeader: http.Header{"Cookie": {cookie.Name + "=" + cookie.Value}, "Origin": {s.base}}})
	if err != nil {
		t.Fatalf("WebSocket with the session: %v", err)
	}
	defer wsOf.CloseNow()
	bearerWS := s.dial(t, "")
	events, _ := http.NewRequest("GET", s.base+"/api/v1/events", nil)
	events.AddCookie(cookie)
	stream, err := http.DefaultClient.Do(events)
	if err != nil || stream.StatusCode != 200 {
		t.Fatalf("event stream with the session: %v %v", err, stream)
	}
	defer stream.Body.Close()
	streamEnded := make(chan error, 1)
	go func() { _, err := io.Copy(io.Discard, stream.Body); streamEnded <- err }()
	req, _ := http.NewRequest("POST", s.base+"/api/v1/logout", nil)
	req.Header.Set("Origin", s.base)
	req.AddCookie(cookie)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNoContent || len(resp.Cookies()) != 1 || resp.Cookies()[0].MaxAge >= 0 {
		t.Fatalf("logout: %d %v", resp.StatusCode, resp.Cookies())
	}
	// The copied cookie is dead on the server; the other session lives.
	if code := get(cookie); code != 401 {
		t.Errorf("revoked session: %d, want 401", code)
	}
	if code := get(other); code != 200 {
		t.Errorf("other session after the logout: %d, want 200", code)
	}
	// The session's WebSocket is closed; one opened with the token is not.
	if _, _, err := wsOf.Read(ctx); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Errorf("the ended session's WebSocket: %v, want closed with 1008", err)
	}
	select {
	case err := <-streamEnded:
		if err != nil {
			t.Errorf("the ended session's event stream: %v", err)
		}
	case <-ctx.Done():
		t.Error("the ended session's event stream is still open")
	}
	writeClientFrame(t, bearerWS, api.ClientFrame{Type: api.FramePing})
	if f := readServerFrame(t, bearerWS); f.Type != api.FramePong {
		t.Errorf("the token's WebSocket after the logout: %+v", f)
	}
}

// A sign-in without Origin is a browser's only when Sec-Fetch-Site says
// so; a program signing in with the token never needs a cookie.
func TestLoginNeedsTheBrowsersWord(t *testing.T) {
	s := startWeb(t, "rate_per_second: 0", &api.Services{})
	for _, tc := range []struct {
		origin, site string
		want         int
	}{
		{"", "", 403},
		{"", "cross-site", 403},
		{"", "same-site", 403},
		{"http://attacker.example", "", 403},
		{"", "same-origin", 204},
		{"", "none", 204},
		{"same", "", 204},
	} {
		req, _ := http.NewRequest("POST", s.base+"/api/v1/login", strings.NewReader(`{"token":"`+testToken+`"}`))
		req.Header.Set("Content-Type", "application/json")
		if tc.origin == "same" {
			tc.origin = s.base
		}
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.site != "" {
			req.Header.Set("Sec-Fetch-Site", tc.site)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want || (tc.want == 204) != (len(resp.Cookies()) == 1) {
			t.Errorf("origin %q site %q: %d with %d cookies, want %d", tc.origin, tc.site, resp.StatusCode, len(resp.Cookies()), tc.want)
		}
	}
}

func TestSessionsSurviveARestartAndEndWithTheToken(t *testing.T) {
	host := extensiontest.NewHost(t)
	now := func() time.Time { return time.Unix(1_800_000_000, 0) }
	ctx := context.Background()
	a, err := openSessions(ctx, host.DB(), testToken, now)
	if err != nil {
		t.Fatal(err)
	}
	kept, _ := a.create(ctx)
	ended, _ := a.create(ctx)
	if err := a.revoke(ctx, ended); err != nil {
		t.Fatal(err)
	}
	b, err := openSessions(ctx, host.DB(), testToken, now)
	if err != nil {
		t.Fatal(err)
	}
	if !b.valid(kept) || b.valid(ended) || b.valid("") || b.valid(kept[:63]) {
		t.Fatalf("after a restart: kept %v, revoked %v", b.valid(kept), b.valid(ended))
	}
	later := func() time.Time { return now().Add(sessionMaxAge + time.Second) }
	if c, _ := openSessions(ctx, host.DB(), testToken, later); c.valid(kept) {
		t.Error("an expired session is accepted")
	}
	if c, _ := openSessions(ctx, host.DB(), "another-token-0123456789", now); c.valid(kept) {
		t.Error("a session outlived a change of the token")
	}
	// The cap ends the oldest session.
	d, _ := openSessions(ctx, nil, testToken, now)
	first, _ := d.create(ctx)
	for range maxSessions {
		if _, err := d.create(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if d.valid(first) || len(d.expires) != maxSessions {
		t.Errorf("%d sessions, the first still valid: %v", len(d.expires), d.valid(first))
	}
}

func TestPostMessageOnlyOnWebThreads(t *testing.T) {
	f := &fakeAPI{}
	s := startWeb(t, "rate_per_second: 0", f.services())
	for _, tc := range []struct {
		thread string
		want   int
	}{
		{"web:notes", 200},
		{"notes", 200},
		{"sub_123", 200}, // a session name: it becomes web:sub_123
		{"system", 200},
		{"cli:alice", 400},
		{"telegram:42", 400},
		{"web:", 400},
		{"web:a%20b", 400},
	} {
		code, _, body := s.do(t, "POST", "/api/v1/threads/"+tc.thread+"/messages", `{"text":"hi"}`, "Bearer "+testToken)
		if code != tc.want {
			t.Errorf("%s: %d %s, want %d", tc.thread, code, body, tc.want)
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, in := range f.turns {
		if !strings.HasPrefix(string(in.Address.Thread), "web:") || in.Address.Channel != ChannelName {
			t.Errorf("a turn ran on %s", in.Address.Thread)
		}
	}
	// Each reply also goes to the pages following its thread.
	if f.posted != len(f.turns) {
		t.Errorf("%d of %d turns delivered to the web channel", f.posted, len(f.turns))
	}
}

func TestHostAllowed(t *testing.T) {
	for _, tc := range []struct {
		listen, public, host string
		want                 bool
	}{
		{"127.0.0.1:8420", "", "127.0.0.1:8420", true},
		{"127.0.0.1:8420", "", "localhost:8420", true},
		{"127.0.0.1:8420", "", "LOCALHOST.:8420", true},
		{"127.0.0.1:8420", "", "[::1]:8420", true},
		{"127.0.0.1:8420", "", "127.0.0.2:8420", true}, // loopback: cannot be rebound
		{"127.0.0.1:8420", "", "localhost:8421", false},
		{"127.0.0.1:8420", "", "localhost", false},
		{"127.0.0.1:8420", "", "attacker.example:8420", false},
		{"127.0.0.1:8420", "", "localhost.attacker.example:8420", false},
		{"127.0.0.1:8420", "", "", false},
		{"127.0.0.1:80", "", "localhost", true},
		{"0.0.0.0:8420", "", "192.168.1.20:8420", true},
		{"0.0.0.0:8420", "", "mybox.lan:8420", false},
		{"[::]:8420", "", "[2001:db8::5]:8420", true},
		{"192.168.1.20:8420", "", "192.168.1.20:8420", true},
		{"192.168.1.20:8420", "", "192.168.1.21:8420", false},
		{"mybox.lan:8420", "", "mybox.lan:8420", true},
		{"127.0.0.1:8420", "https://reverie.example.org", "reverie.example.org", true},
		{"127.0.0.1:8420", "https://reverie.example.org", "reverie.example.org:443", true},
		{"127.0.0.1:8420", "https://reverie.example.org", "reverie.example.org:8420", false},
		{"127.0.0.1:8420", "https://reverie.example.org/", "REVERIE.example.org", true},
		{"127.0.0.1:8420", "http://reverie.lan:9000", "reverie.lan:9000", true},
		{"127.0.0.1:8420", "http://reverie.lan:9000", "evil.lan:9000", false},
	} {
		w := &Web{cfg: Config{Listen: tc.listen, PublicURL: tc.public}}
		if got := w.hostAllowed(tc.host); got != tc.want {
			t.Errorf("listen %s public %q: host %q allowed=%v, want %v", tc.listen, tc.public, tc.host, got, tc.want)
		}
	}
}
