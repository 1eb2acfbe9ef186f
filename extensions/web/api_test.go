package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

func TestTokenGeneratedOnceAndKeptPrivate(t *testing.T) {
	dir := t.TempDir()
	initWith := func() *Web {
		t.Helper()
		host := extensiontest.NewHost(t, extensiontest.WithDataDir(dir), extensiontest.WithConfig("listen: 127.0.0.1:0"))
		w := new(Web)
		if err := w.Init(context.Background(), host); err != nil {
			t.Fatal(err)
		}
		return w
	}
	first := initWith()
	path := filepath.Join(dir, TokenFile)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("token file mode %v, want 0600", fi.Mode().Perm())
	}
	if di, _ := os.Stat(filepath.Dir(path)); di.Mode().Perm() != 0o700 {
		t.Errorf("secrets dir mode %v, want 0700", di.Mode().Perm())
	}
	data, _ := os.ReadFile(path)
	token := strings.TrimSpace(string(data))
	if !regexp.MustCompile(`^[0-9a-f]{64}$`).MatchString(token) || !first.tokenCreated || first.token != token {
		t.Fatalf("token %q created=%v", token, first.tokenCreated)
	}
	if !first.auth.tokenOK(token) || first.auth.tokenOK(token[:63]) {
		t.Fatal("generated token not accepted, or a prefix accepted")
	}
	second := initWith()
	if second.tokenCreated || !second.auth.tokenOK(token) {
		t.Fatalf("second start: created=%v", second.tokenCreated)
	}
	// The URL with the token is printed on the console (never in the log,
	// which goes to the file), as its last line, at ready, on every start
	// while no browser has signed in; with a session it is not printed.
	for _, auth := range []string{AuthToken, AuthNone} {
		dir := t.TempDir()
		start := func() (string, *extensiontest.Host, *Web) {
			t.Helper()
			host := extensiontest.NewHost(t, extensiontest.WithDataDir(dir), extensiontest.WithConfig("listen: 127.0.0.1:0\nauth: "+auth))
			console := &strings.Builder{}
			w := new(Web)
			if err := w.Init(context.Background(), consoleHostOf{host, console}); err != nil {
				t.Fatal(err)
			}
			if err := w.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if console.Len() != 0 {
				t.Errorf("auth %s: printed before ready: %q", auth, console)
			}
			_, _ = console.WriteString("other start-up output\n")
			w.OnReady(context.Background())
			t.Cleanup(func() { _ = w.Stop(context.Background()) })
			return console.String(), host, w
		}
		for run := range 2 {
			out, host, w := start()
			tok, _ := os.ReadFile(filepath.Join(dir, TokenFile))
			token := strings.TrimSpace(string(tok))
			lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
			last := lines[len(lines)-1]
			if len(token) != 64 || strings.Count(out, "#token="+token) != 1 || !strings.HasSuffix(last, "/#token="+token) || w.token != "" {
				t.Errorf("auth %s, start %d: the sign-in URL is not the console's last line:\n%s", auth, run+1, out)
			}
			if !strings.Contains(out, filepath.Join(dir, TokenFile)) {
				t.Errorf("auth %s, start %d: the console does not say where the token file is:\n%s", auth, run+1, out)
			}
			if logs := host.Logs(); strings.Contains(logs, token) || (run == 0 && !strings.Contains(logs, TokenFile)) {
				t.Errorf("auth %s: the log has the token, or does not say where it is kept:\n%s", auth, logs)
			}
			if run == 1 {
				// A browser signs in: the next start prints no link.
				if _, err := w.auth.sessions.create(context.Background()); err != nil {
					t.Fatal(err)
				}
			}
		}
		if out, _, _ := start(); strings.Contains(out, "#token=") {
			t.Errorf("auth %s: the sign-in URL is printed although a browser has signed in:\n%s", auth, out)
		}
	}
	// A token set in web.token is not printed; the address is.
	host := extensiontest.NewHost(t, extensiontest.WithConfig("listen: 127.0.0.1:0\ntoken: "+testToken))
	console := &strings.Builder{}
	w := new(Web)
	if err := w.Init(context.Background(), consoleHostOf{host, console}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = w.Stop(context.Background()) }()
	w.OnReady(context.Background())
	if out := console.String(); strings.Contains(out, testToken) || !strings.Contains(out, "web.token") || !strings.HasSuffix(out, w.BaseURL()+"/\n") {
		t.Errorf("configured token: console\n%s", out)
	}
}

// consoleHostOf is a host with a console.
type consoleHostOf struct {
	*extensiontest.Host
	console io.Writer
}

func (h consoleHostOf) Console() io.Writer { return h.console }

func TestConfiguration(t *testing.T) {
	t.Setenv("WEB_TEST_TOKEN", "from-the-environment-1234")
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tok"), []byte("from-a-file-123456789\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		config  string
		wantErr string
		token   string
	}{
		{"defaults", "listen: 127.0.0.1:0", "", ""},
		{"inline token", "listen: 127.0.0.1:0\ntoken: inline-token-123456789", "", "inline-token-123456789"},
		{"env token", "listen: 127.0.0.1:0\ntoken: {env: WEB_TEST_TOKEN}", "", "from-the-environment-1234"},
		{"file token", "listen: 127.0.0.1:0\ntoken: {file: tok}", "", "from-a-file-123456789"},
		{"missing env", "listen: 127.0.0.1:0\ntoken: {env: WEB_TEST_NOPE}", "WEB_TEST_NOPE is not set", ""},
		{"short token", "listen: 127.0.0.1:0\ntoken: short", "shorter than 16", ""},
		{"bad secret form", "listen: 127.0.0.1:0\ntoken: {vault: x}", "a secret is", ""},
		{"no auth on loopback", "listen: 127.0.0.1:0\nauth: none", "", ""},
		{"no auth on localhost", "listen: localhost:0\nauth: none", "", ""},
		{"no auth on all interfaces", "listen: 0.0.0.0:8420\nauth: none", "only on a loopback listener", ""},
		{"no auth on a LAN address", "listen: 192.168.1.5:8420\nauth: none", "only on a loopback listener", ""},
		{"unknown auth", "listen: 127.0.0.1:0\nauth: maybe", `"maybe" is not`, ""},
		{"tiny body limit", "listen: 127.0.0.1:0\nmax_body_bytes: 10", "below the minimum", ""},
		{"bad public url", "listen: 127.0.0.1:0\npublic_url: example.org", "must start with http", ""},
		{"unknown key", "listen: 127.0.0.1:0\ntokn: x", "unknown", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			host := extensiontest.NewHost(t, extensiontest.WithDataDir(dir), extensiontest.WithConfig(tc.config))
			w := new(Web)
			err := w.Init(context.Background(), host)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("Init: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("Init error %v, want one containing %q", err, tc.wantErr)
			case tc.wantErr != "":
				// Decoding errors are the host's (*config.Error in the app).
				if !errors.Is(err, extension.ErrInvalidConfig) && !strings.Contains(err.Error(), "decode configuration") {
					t.Errorf("error %v does not wrap extension.ErrInvalidConfig", err)
				}
				for _, secret := range []string{"from-the-environment", "from-a-file"} {
					if strings.Contains(err.Error(), secret) {
						t.Fatalf("error leaks the secret: %v", err)
					}
				}
				return
			}
			if tc.token != "" && !w.auth.tokenOK(tc.token) {
				t.Fatalf("token %q not accepted", tc.token)
			}
		})
	}
	if s := fmtSecret(); strings.Contains(s, "hunter2") {
		t.Fatalf("a Secret printed its value: %s", s)
	}
}

func fmtSecret() string {
	s := extension.LiteralSecret("hunter2hunter2hunter2")
	b, _ := json.Marshal(s)
	return fmt.Sprintf("%v %+v %#v %s %v ", s, s, s, s, &s) + s.String() + string(b)
}

func TestAuthNoneServesWithoutAToken(t *testing.T) {
	s := startWeb(t, "auth: none\nrate_per_second: 0", &api.Services{})
	if code, _, body := s.do(t, "GET", "/api/v1/info", "", ""); code != 200 || !strings.Contains(body, `"auth":"none"`) {
		t.Fatalf("%d %s", code, body)
	}
}

func TestUnauthorizedLeaksNothing(t *testing.T) {
	s := startWeb(t, "rate_per_second: 0", &api.Services{})
	for _, path := range []string{"/api/v1/threads", "/api/v1/ws", "/api/v1/events", "/api/v1/nothing", "/api/v1/memories/1"} {
		code, h, body := s.do(t, "GET", path, "", "Bearer nope")
		if code != 401 || body != "{\"error\":\"unauthorized\"}\n" || h.Get("WWW-Authenticate") == "" {
			t.Errorf("%s: %d %q", path, code, body)
		}
	}
	// Query-string tokens are not accepted.
	if code, _, _ := s.do(t, "GET", "/api/v1/threads?token="+testToken, "", ""); code != 401 {
		t.Errorf("?token= accepted: %d", code)
	}
	// The page shell and health need none.
	if code, _, _ := s.do(t, "GET", "/healthz", "", ""); code != 200 {
		t.Errorf("/healthz: %d", code)
	}
	code, h, _ := s.do(t, "GET", "/", "", "")
	if code != 200 || h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" {
		t.Errorf("page shell: %d %v", code, h)
	}
}

func TestDisabledFeaturesAnswer501(t *testing.T) {
	s := startWeb(t, "rate_per_second: 0", &api.Services{})
	for _, tc := range []struct{ method, path, body, feature string }{
		{"GET", "/api/v1/threads", "", "threads"},
		{"GET", "/api/v1/threads/web:x/messages", "", "threads"},
		{"POST", "/api/v1/threads/web:x/messages", `{"text":"hi"}`, "chat"},
		{"GET", "/api/v1/events", "", "events"},
		{"GET", "/api/v1/events/recent", "", "events"},
		{"GET", "/api/v1/interactions", "", "interactions"},
		{"GET", "/api/v1/prompt", "", "prompt"},
		{"GET", "/api/v1/status/project", "", "project"},
		{"GET", "/api/v1/usage", "", "usage"},
		{"GET", "/api/v1/memories", "", "memories"},
		{"POST", "/api/v1/memories", `{"text":"x","kind":"fact"}`, "memories"},
		{"DELETE", "/api/v1/memories/3", "", "memories"},
		{"GET", "/api/v1/pulse", "", "pulse"},
		{"PUT", "/api/v1/pulse/3", `{"text":"x"}`, "pulse"},
		{"GET", "/api/v1/skills", "", "skills"},
		{"PUT", "/api/v1/skills/x", `{"content":"x"}`, "skills"},
		{"GET", "/api/v1/tasks", "", "tasks"},
		{"POST", "/api/v1/tasks/t_1/pause", "", "tasks"},
		{"GET", "/api/v1/receipts", "", "tasks"},
		{"GET", "/api/v1/workflows", "", "workflows"},
		{"POST", "/api/v1/workflows/wf/cancel", "", "workflows"},
		{"GET", "/api/v1/world", "", "world"},
		{"GET", "/api/v1/setup", "", "setup"},
	} {
		code, _, body := s.do(t, tc.method, tc.path, tc.body, "Bearer "+testToken)
		if code != 501 || body != `{"error":"`+tc.feature+" is not enabled\"}\n" {
			t.Errorf("%s %s: %d %s", tc.method, tc.path, code, body)
		}
	}
	var info api.AgentInfo
	_, _, body := s.do(t, "GET", "/api/v1/info", "", "Bearer "+testToken)
	if err := json.Unmarshal([]byte(body), &info); err != nil || info.Features["memories"] || info.Auth != "token" {
		t.Fatalf("info %s: %v", body, err)
	}
}

func TestRateLimit(t *testing.T) {
	s := startWeb(t, "rate_per_second: 1\nrate_burst: 3", &api.Services{})
	for i := range 3 {
		if code, _, _ := s.do(t, "GET", "/api/v1/info", "", "Bearer "+testToken); code != 200 {
			t.Fatalf("request %d: %d", i, code)
		}
	}
	// The host's clock stands still: no refill.
	code, h, body := s.do(t, "GET", "/api/v1/info", "", "Bearer "+testToken)
	if code != 429 || h.Get("Retry-After") == "" || !strings.Contains(body, "too many requests") {
		t.Fatalf("4th request: %d %v %s", code, h, body)
	}
	s.host.Clock().Advance(2 * time.Second)
	if code, _, _ := s.do(t, "GET", "/api/v1/info", "", "Bearer "+testToken); code != 200 {
		t.Fatalf("after the refill: %d", code)
	}
}

// Failed authentications have their own budget: they never spend the
// owner's, and a client over it gets 429 for a wrong token or none, while
// valid credentials from the same address (bearer token, session cookie,
// sign-in with the token) still pass — in both auth modes. Before, a
// stranger's 20 failures a minute from a shared address kept every
// token-bearing client at 429.
func TestFailedAuthNeverThrottlesTheOwner(t *testing.T) {
	for _, mode := range []string{"token", "none"} {
		t.Run(mode, func(t *testing.T) {
			s := startWeb(t, "auth: "+mode+"\nrate_per_second: 1\nrate_burst: 20\nauth_failures_per_minute: 3", &api.Services{})
			signIn := func(token string) int {
				req, _ := http.NewRequest("POST", s.base+"/api/v1/login", strings.NewReader(`{"token":"`+token+`"}`))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Origin", s.base)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				return resp.StatusCode
			}
			cookie := s.login(t, s.base, "")
			for i := range 3 {
				if code, _, _ := s.do(t, "GET", "/api/v1/info", "", "Bearer wrong-token"); code != 401 && !(mode == "none" && code == 200) {
					t.Fatalf("failure %d: %d, want 401", i, code)
				}
				if mode == "none" {
					// Wrong tokens on an open server only fail the sign-in.
					if code := signIn("wrong-token-wrong"); code != 401 {
						t.Fatalf("failed sign-in %d: %d, want 401", i, code)
					}
				}
			}
			// The stranger is over its budget.
			code, h, _ := s.do(t, "GET", "/api/v1/info", "", "Bearer wrong-token")
			if code != 429 || h.Get("Retry-After") == "" {
				t.Errorf("wrong token after the failures: %d, want 429 with Retry-After", code)
			}
			if code := signIn("wrong-token-wrong"); code != 429 {
				t.Errorf("wrong sign-in after the failures: %d, want 429", code)
			}
			if mode == "token" {
				if code, _, _ := s.do(t, "GET", "/api/v1/info", "", ""); code != 429 {
					t.Errorf("no credentials after the failures: %d, want 429", code)
				}
			}
			// The owner, from the same address, is not throttled.
			for i := range 2 {
				if code, _, body := s.do(t, "GET", "/api/v1/info", "", "Bearer "+testToken); code != 200 {
					t.Fatalf("owner request %d during the attack: %d %s", i, code, body)
				}
			}
			req, _ := http.NewRequest("GET", s.base+"/api/v1/info", nil)
			req.AddCookie(cookie)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Errorf("owner's page during the attack: %d", resp.StatusCode)
			}
			s.login(t, s.base, "") // fails the test unless 204 with a cookie
		})
	}
}

func TestClientKey(t *testing.T) {
	for _, tc := range []struct{ remote, want string }{
		{"192.0.2.7:5000", "192.0.2.7"},
		{"[::ffff:192.0.2.7]:5000", "192.0.2.7"},
		{"[2001:db8:1:2:3:4:5:6]:5000", "2001:db8:1:2::/64"},
		{"[2001:db8:1:2:ffff::1]:80", "2001:db8:1:2::/64"},
		{"[fe80::1%eth0]:80", "fe80::/64"},
		{"@", "@"},
	} {
		if got := clientKey(&http.Request{RemoteAddr: tc.remote}); got != tc.want {
			t.Errorf("clientKey(%q) = %q, want %q", tc.remote, got, tc.want)
		}
	}
}

func TestBucket(t *testing.T) {
	t0 := time.Unix(1000, 0)
	var b bucket
	for i := range 5 {
		if ok, _ := b.take(t0, 2, 5); !ok {
			t.Fatalf("take %d refused", i)
		}
	}
	ok, wait := b.take(t0, 2, 5)
	if ok || wait != 500*time.Millisecond {
		t.Fatalf("empty bucket: %v %v", ok, wait)
	}
	if ok, _ := b.take(t0.Add(500*time.Millisecond), 2, 5); !ok {
		t.Fatal("no refill after 500ms at 2/s")
	}
}

// A flood of new clients evicts the least recently seen one at a time,
// never the whole table: a client seen recently keeps its (empty) bucket.
func TestLimiterEvictsLeastRecentlySeen(t *testing.T) {
	t0 := time.Unix(1000, 0)
	l := newLimiter(1, 1, func() time.Time { return t0 })
	if ok, _ := l.allow("owner"); !ok {
		t.Fatal("first request refused")
	}
	for i := range maxTrackedClients + 10 {
		l.allow(fmt.Sprint("flood-", i))
		if i%1000 == 0 {
			if ok, _ := l.allow("owner"); ok {
				t.Fatalf("after %d new clients the owner's empty bucket was forgotten", i)
			}
		}
	}
	if n := len(l.clients); n != maxTrackedClients || l.lru.Len() != n {
		t.Fatalf("%d clients tracked (list %d), want %d", n, l.lru.Len(), maxTrackedClients)
	}
	if _, ok := l.clients["flood-0"]; ok {
		t.Fatal("the least recently seen client was kept")
	}
}

// fakeServices records what the handlers pass on.
type fakeMemories struct {
	api.Memories
	added  []api.MemoryInput
	listed []api.MemoryFilter
}

func (f *fakeMemories) Add(_ context.Context, in api.MemoryInput) (api.Memory, error) {
	f.added = append(f.added, in)
	return api.Memory{ID: 7, Text: in.Text, Kind: in.Kind, Source: in.Source}, nil
}

func (f *fakeMemories) Update(context.Context, int64, api.MemoryInput) (api.Memory, error) {
	return api.Memory{}, errors.New("disk on fire: /var/secret/path")
}

func (f *fakeMemories) Get(_ context.Context, id int64) (api.Memory, error) {
	return api.Memory{}, fmt.Errorf("%w: memory %d not found", api.ErrNotFound, id)
}

func (f *fakeMemories) List(_ context.Context, filter api.MemoryFilter) ([]api.Memory, error) {
	f.listed = append(f.listed, filter)
	return nil, nil
}

// GET /api/v1/memories?order= picks the listing order (reverie memory list
// --by-access); another order is refused, naming the two.
func TestMemoryListOrder(t *testing.T) {
	mem := &fakeMemories{}
	s := startWeb(t, "rate_per_second: 0", &api.Services{Memories: mem})
	tests := []struct {
		name, query string
		code        int
		byAccess    bool
	}{
		{"default", "", 200, false},
		{"newest first", "?order=created", 200, false},
		{"most recalled first", "?order=access&kind=fact", 200, true},
		{"unknown", "?order=random", 400, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mem.listed = nil
			code, _, body := s.do(t, "GET", "/api/v1/memories"+tc.query, "", "Bearer "+testToken)
			switch {
			case code != tc.code:
				t.Fatalf("%d %s, want %d", code, body, tc.code)
			case code == 400:
				if len(mem.listed) != 0 || !strings.Contains(body, `unknown order \"random\" (created or access)`) {
					t.Errorf("refused: %s, listed %+v", body, mem.listed)
				}
			case len(mem.listed) != 1 || mem.listed[0].OrderByAccess != tc.byAccess:
				t.Errorf("listed %+v, want OrderByAccess %v", mem.listed, tc.byAccess)
			}
		})
	}
}

func TestServiceErrorsMapToStatuses(t *testing.T) {
	mem := &fakeMemories{}
	s := startWeb(t, "rate_per_second: 0", &api.Services{Memories: mem})
	auth := "Bearer " + testToken
	code, _, body := s.do(t, "POST", "/api/v1/memories", `{"text":"I like tea","kind":"preference"}`, auth)
	if code != 201 || len(mem.added) != 1 || mem.added[0].Source != "user_explicit" {
		t.Fatalf("add: %d %s %+v", code, body, mem.added)
	}
	// Internal errors are logged, not shown.
	code, _, body = s.do(t, "PUT", "/api/v1/memories/7", `{"text":"x","kind":"fact"}`, auth)
	if code != 500 || strings.Contains(body, "secret") || !strings.Contains(s.host.Logs(), "disk on fire") {
		t.Fatalf("internal error: %d %s", code, body)
	}
	// The body says why in words; the status, not the error's first
	// words ("not found: "), says what kind of refusal it is.
	if code, _, body := s.do(t, "GET", "/api/v1/memories/7", "", auth); code != 404 || body != `{"error":"memory 7 not found"}`+"\n" {
		t.Fatalf("not found: %d %s", code, body)
	}
	for _, tc := range []struct{ body, want string }{
		{`{"text":"x"}`, "kind is missing"},
		{`{"text":"","kind":"fact"}`, "memory text is empty"},
		{`{"text":"x","kind":"fact","source":"rumour"}`, "unknown source"},
		{`{"text":"x","kind":"fact","extra":1}`, "unknown field"},
		{`[1,2]`, "malformed JSON"},
		{`{"text":"x","kind":"fact"} {"again":1}`, "more than one"},
		{``, "empty body"},
	} {
		code, _, body := s.do(t, "POST", "/api/v1/memories", tc.body, auth)
		if code != 400 || !strings.Contains(body, tc.want) || strings.Contains(body, api.ErrInvalid.Error()) {
			t.Errorf("body %q: %d %s, want 400 with %q", tc.body, code, body, tc.want)
		}
	}
}

// chatRecorder is a host Receive that records messages.
type chatRecorder struct{ ch chan chat.Inbound }

func (c chatRecorder) receive(_ context.Context, msg chat.Inbound) error {
	if strings.Contains(msg.Text, "refuse") {
		return errors.New("too many messages waiting in this conversation")
	}
	c.ch <- msg
	return nil
}

func readServerFrame(t testing.TB, c *websocket.Conn) api.ServerFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var f api.ServerFrame
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("frame %s: %v", data, err)
	}
	return f
}

func writeClientFrame(t testing.TB, c *websocket.Conn, f api.ClientFrame) {
	t.Helper()
	b, _ := json.Marshal(f)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, b); err != nil {
		t.Fatal(err)
	}
}

// refusingConversations refuses every regeneration, retry and edit as
// the agent refuses a retry of a reply that did not fail.
type refusingConversations struct{ fakeConversations }

func (refusingConversations) Submit(context.Context, api.RedoRequest) (<-chan error, error) {
	return nil, fmt.Errorf("%w: the last reply did not fail; regenerate it instead", api.ErrConflict)
}

// A refused redo's error frame says why in words, as an HTTP answer's
// body does: without the API error's words in front.
func TestRedoRefusalFrame(t *testing.T) {
	s := startWeb(t, "rate_per_second: 0", &api.Services{Conversations: refusingConversations{fakeConversations{&fakeAPI{}}}})
	c := s.dial(t, "")
	writeClientFrame(t, c, api.ClientFrame{Type: api.FrameRetry, Thread: "web:a", ID: "r1"})
	if f := readServerFrame(t, c); f.Type != api.FrameError || f.ID != "r1" || f.Error != "could not retry: the last reply did not fail; regenerate it instead" {
		t.Fatalf("refused retry: %+v", f)
	}
}

func TestChannelDeliversToFollowersOnly(t *testing.T) {
	rec := chatRecorder{ch: make(chan chat.Inbound, 4)}
	s := startWeb(t, "rate_per_second: 0", &api.Services{}, extensiontest.WithReceive(rec.receive))
	a := s.dial(t, "?thread=web:a")
	b := s.dial(t, "?thread=b")
	// The upgrade answers before the server registers the connection.
	waitConnections(t, s.w, 2)
	writeClientFrame(t, a, api.ClientFrame{Type: api.FrameMessage, Thread: "a", Text: "hello"})
	msg := <-rec.ch
	if msg.Address != (chat.Address{Channel: "web", Thread: "web:a"}) || msg.Text != "hello" {
		t.Fatalf("received %+v", msg)
	}
	writeClientFrame(t, a, api.ClientFrame{Type: api.FrameMessage, Thread: "a", Text: "please refuse", ID: "x1"})
	if f := readServerFrame(t, a); f.Type != api.FrameError || f.ID != "x1" || !strings.Contains(f.Error, "not accepted") {
		t.Fatalf("refused message: %+v", f)
	}

	st, err := s.w.OpenStream(context.Background(), chat.Address{Channel: "web", Thread: "web:a"})
	if err != nil {
		t.Fatal(err)
	}
	_ = st.Delta("Hel")
	_ = st.Status(extension.StreamStatus{Kind: extension.ToolCallStarted, CallID: "c1", Tool: "t", Arguments: json.RawMessage(`{bad`)})
	_ = st.Status(extension.StreamStatus{Kind: extension.ToolCallFinished, CallID: "c1", Tool: "t", Result: "r", IsError: true})
	_ = st.Close("Hello", nil)
	want := []string{"delta Hel", `tool_call "{bad"`, "tool_result r true", "done Hello"}
	for i, w := range want {
		f := readServerFrame(t, a)
		var got string
		switch f.Type {
		case api.FrameDelta, api.FrameDone:
			got = f.Type + " " + f.Text
		case api.FrameToolCall:
			got = f.Type + " " + string(f.Arguments)
		case api.FrameToolResult:
			got = f.Type + " " + *f.Result + " " + map[bool]string{true: "true", false: "false"}[*f.IsError]
		}
		if got != w || f.Thread != "web:a" {
			t.Fatalf("frame %d: %q (%+v), want %q", i, got, f, w)
		}
	}
	// A failed turn ends with an error frame carrying the user-facing text.
	st, _ = s.w.OpenStream(context.Background(), chat.Address{Channel: "web", Thread: "web:a"})
	_ = st.Close("The model is unavailable.", errors.New("HTTP 500 from http://internal"))
	if f := readServerFrame(t, a); f.Type != api.FrameError || f.Error != "The model is unavailable." {
		t.Fatalf("failed turn: %+v", f)
	}
	// Complete messages: a notification to a followed thread, and one to a
	// thread of no web session goes to everyone.
	_ = s.w.Send(context.Background(), chat.Outbound{Address: chat.Address{Channel: "web", Thread: "web:b"}, Kind: chat.Notify, Text: "reminder"})
	if f := readServerFrame(t, b); f.Type != api.FrameNotify || f.Text != "reminder" {
		t.Fatalf("notify to b: %+v", f)
	}
	_ = s.w.Send(context.Background(), chat.Outbound{Address: chat.Address{Channel: "web", Thread: "default"}, Kind: chat.Notify, Text: "for all"})
	for _, c := range []*websocket.Conn{a, b} {
		if f := readServerFrame(t, c); f.Type != api.FrameNotify || f.Text != "for all" {
			t.Fatalf("broadcast: %+v", f)
		}
	}
	// b never saw a's stream: its next frame answers its own ping.
	writeClientFrame(t, b, api.ClientFrame{Type: api.FramePing})
	if f := readServerFrame(t, b); f.Type != api.FramePong {
		t.Fatalf("b: %+v", f)
	}
	// Nobody following: nothing to deliver, no error.
	if err := s.w.Send(context.Background(), chat.Outbound{Address: chat.Address{Channel: "web", Thread: "web:nobody"}, Kind: chat.Reply, Text: "x"}); err != nil {
		t.Fatal(err)
	}
}

func TestSlowClientIsDisconnected(t *testing.T) {
	// No WebSocket: nothing is written, so the queue only grows.
	c := newWSConn(context.Background(), nil, func() {})
	for range maxQueuedFrames {
		c.enqueue([]byte("x"))
	}
	if c.done {
		t.Fatal("closed before the queue was full")
	}
	c.enqueue([]byte("one too many"))
	if !c.done || c.code != websocket.StatusPolicyViolation || c.queue != nil {
		t.Fatalf("done=%v code=%v queued=%d", c.done, c.code, len(c.queue))
	}
	c.enqueue([]byte("after"))
	if c.queue != nil {
		t.Fatal("queued after closing")
	}
}

func TestMessageRatePerConnection(t *testing.T) {
	rec := chatRecorder{ch: make(chan chat.Inbound, 64)}
	s := startWeb(t, "rate_per_second: 0", &api.Services{}, extensiontest.WithReceive(rec.receive))
	c := s.dial(t, "")
	for range int(wsMessageBurst) {
		writeClientFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "r", Text: "hi"})
	}
	writeClientFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "r", Text: "hi", ID: "over"})
	if f := readServerFrame(t, c); f.Type != api.FrameError || f.ID != "over" || !strings.Contains(f.Error, "slow down") {
		t.Fatalf("over the rate: %+v", f)
	}
	if n := len(rec.ch); n != int(wsMessageBurst) {
		t.Fatalf("%d messages passed on, want %d", n, int(wsMessageBurst))
	}
}

// fakeEvents is an event source with a fixed log and a live channel.
type fakeEvents struct {
	log  []extension.Event
	live chan extension.Event
}

func (f *fakeEvents) Watch(ctx context.Context, prefix string, _ int) <-chan extension.Event {
	out := make(chan extension.Event, 16)
	go func() {
		defer close(out)
		for {
			select {
			case ev := <-f.live:
				if strings.HasPrefix(ev.Topic, prefix) {
					out <- ev
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

func (f *fakeEvents) Recent(_ context.Context, prefix string, after int64, limit int) ([]extension.Event, error) {
	var out []extension.Event
	for _, ev := range f.log {
		if ev.ID > after && strings.HasPrefix(ev.Topic, prefix) && len(out) < limit {
			out = append(out, ev)
		}
	}
	return out, nil
}

func (f *fakeEvents) Last(ctx context.Context, prefix string, limit int) ([]extension.Event, error) {
	return f.Recent(ctx, prefix, 0, limit)
}

func TestShutdownEndsStreams(t *testing.T) {
	ev := &fakeEvents{live: make(chan extension.Event)}
	host := extensiontest.NewHost(t, extensiontest.WithConfig("listen: 127.0.0.1:0\ntoken: "+testToken))
	w := new(Web)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if err := w.Init(ctx, svcHost{host, &api.Services{Events: ev}}); err != nil {
		t.Fatal(err)
	}
	if err := w.Start(ctx); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	s := &server{w: w, host: host, base: "http://" + w.Addr().String()}
	c := s.dial(t, "")
	req, _ := http.NewRequest("GET", s.base+"/api/v1/events", nil)
	req.Header.Set("Authorization", "Bearer "+testToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	rctx, rcancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer rcancel()
	if _, _, err := c.Read(rctx); websocket.CloseStatus(err) != websocket.StatusGoingAway {
		t.Fatalf("WebSocket ended with %v, want 1001", err)
	}
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Fatalf("event stream did not end cleanly: %v", err)
	}
	if err := w.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestOriginChecksBehindAProxy(t *testing.T) {
	s := startWeb(t, "rate_per_second: 0\npublic_url: https://reverie.example.org", (&fakeAPI{}).services())
	cookie := s.login(t, "https://reverie.example.org", "")
	for _, tc := range []struct {
		origin, fetchSite string
		want              int
	}{
		{"https://reverie.example.org", "", http.StatusOK},
		{"", "same-origin", http.StatusOK},
		{"", "", http.StatusForbidden}, // the cookie needs a browser's word
		{"https://evil.example.org", "", http.StatusForbidden},
		{"null", "", http.StatusForbidden},
		{"https://reverie.example.org", "cross-site", http.StatusForbidden},
	} {
		req, _ := http.NewRequest("PUT", s.base+"/api/v1/world", strings.NewReader(`{}`))
		req.Header.Set("Content-Type", "application/json")
		req.AddCookie(cookie)
		if tc.origin != "" {
			req.Header.Set("Origin", tc.origin)
		}
		if tc.fetchSite != "" {
			req.Header.Set("Sec-Fetch-Site", tc.fetchSite)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("origin %q, Sec-Fetch-Site %q: %d, want %d", tc.origin, tc.fetchSite, resp.StatusCode, tc.want)
		}
	}
	if got := s.w.PanelURL(); got != "https://reverie.example.org/#debug" {
		t.Errorf("panel URL %q", got)
	}
}

func TestOversizedFrameClosesTheConnection(t *testing.T) {
	s := startWeb(t, "rate_per_second: 0\nmax_body_bytes: 2048", &api.Services{})
	c := s.dial(t, "")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	big, _ := json.Marshal(api.ClientFrame{Type: api.FrameMessage, Thread: "web:x", Text: strings.Repeat("x", 4096)})
	if err := c.Write(ctx, websocket.MessageText, big); err != nil {
		t.Fatal(err)
	}
	if _, _, err := c.Read(ctx); websocket.CloseStatus(err) != websocket.StatusMessageTooBig {
		t.Fatalf("read after an oversized frame: %v, want close 1009", err)
	}
}
