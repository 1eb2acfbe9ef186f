package web

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	apiclient "github.com/reverie-ai/reverie/api/client"
)

func TestCheckPeer(t *testing.T) {
	tests := []struct {
		name   string
		uid    int
		err    error
		own    int
		refuse string
	}{
		{name: "same uid", uid: 1000, own: 1000},
		{name: "root agent, root peer", uid: 0, own: 0},
		{name: "another uid", uid: 1001, own: 1000, refuse: "uid 1001"},
		{name: "root peer of a user's agent", uid: 0, own: 1000, refuse: "uid 0"},
		{name: "credentials unreadable", uid: -1, err: errors.New("getsockopt: bad file descriptor"), own: 1000, refuse: "credentials"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkPeer(tt.uid, tt.err, tt.own)
			switch {
			case tt.refuse == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.refuse != "" && (err == nil || !strings.Contains(err.Error(), tt.refuse)):
				t.Fatalf("err = %v, want a refusal naming %q", err, tt.refuse)
			}
		})
	}
}

// The control socket serves the API to the command line of the same user
// with the control token: a private socket file, no Host check, and
// neither the web token nor a missing token let in.
func TestControlSocket(t *testing.T) {
	fake := &fakeAPI{}
	svc := fake.services()
	s := startWeb(t, "", svc)
	dir := s.host.DataDir()
	sock := filepath.Join(dir, api.ControlSocket)
	fi, err := os.Stat(sock)
	if err != nil || fi.Mode().Type() != fs.ModeSocket || fi.Mode().Perm() != 0o600 {
		t.Fatalf("control socket: %v %v, want a socket with mode 0600", fi, err)
	}
	tok, err := os.Stat(filepath.Join(dir, api.ControlTokenFile))
	if err != nil || tok.Mode().Perm() != 0o600 {
		t.Fatalf("control token file: %v %v, want mode 0600", tok, err)
	}
	ctx := context.Background()
	c, err := apiclient.Local(ctx, dir)
	if err != nil {
		t.Fatalf("apiclient.Local: %v", err)
	}
	if _, err := c.Info(ctx); err != nil {
		t.Fatalf("info over the socket: %v", err)
	}
	// A write: the cross-site and JSON rules hold, the Host is not checked.
	if _, err := c.Dreams().Revert(ctx, 7); err != nil {
		t.Fatalf("revert over the socket: %v", err)
	}
	if got := fake.reverted; len(got) != 1 || got[0] != 7 {
		t.Fatalf("reverted %v, want [7]", got)
	}
	// Any thread is allowed over the socket (in-process send allows it too).
	if _, err := c.Send(ctx, "default", "hello"); err != nil {
		t.Fatalf("send to thread default over the socket: %v", err)
	}
	// Only a web thread's reply goes to its pages too.
	if fake.postedTurns() != 0 {
		t.Errorf("a message to thread default was delivered to the web channel")
	}
	if _, err := c.Send(ctx, "web:notes", "hello"); err != nil {
		t.Fatalf("send to thread web:notes over the socket: %v", err)
	}
	if fake.postedTurns() != 1 {
		t.Errorf("a message to thread web:notes was not delivered to its pages")
	}

	hc := unixTransport(sock)
	for _, tc := range []struct {
		name, auth, origin string
		want               int
	}{
		{name: "no token", want: http.StatusUnauthorized},
		{name: "the web token", auth: "Bearer " + testToken, want: http.StatusUnauthorized},
		{name: "a wrong token", auth: "Bearer nope", want: http.StatusUnauthorized},
		{name: "a cross-site write", auth: "control", origin: "https://evil.example", want: http.StatusForbidden},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method, body := http.MethodGet, ""
			if tc.origin != "" {
				method, body = http.MethodPost, "{}"
			}
			req, _ := http.NewRequest(method, "http://localhost"+api.Prefix+"/dreams/7/revert", strings.NewReader(body))
			if method == http.MethodGet {
				req.URL.Path = api.Prefix + "/info"
			}
			req.Header.Set("Content-Type", "application/json")
			if tc.origin != "" {
				req.Header.Set("Origin", tc.origin)
			}
			if tc.auth == "control" {
				req = req.WithContext(ctx)
				resp, err := c.HTTPClient().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != tc.want {
					t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
				}
				return
			}
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			resp, err := hc.RoundTrip(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.want {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.want)
			}
		})
	}

	// The control token does not open the TCP listener.
	ctl, _ := os.ReadFile(filepath.Join(dir, api.ControlTokenFile))
	if code, _, _ := s.do(t, http.MethodGet, api.Prefix+"/info", "", "Bearer "+strings.TrimSpace(string(ctl))); code != http.StatusUnauthorized {
		t.Fatalf("control token on the TCP listener: %d, want 401", code)
	}
}

// unixTransport sends requests to the Unix socket at path.
func unixTransport(path string) http.RoundTripper {
	return &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
}

// A stale socket file (an agent that was killed) is not an agent to the
// client, and the next agent's bind replaces it.
func TestControlSocketStale(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := apiclient.Local(ctx, dir); !errors.Is(err, apiclient.ErrNoAgent) {
		t.Fatalf("Local on a data dir without a socket: %v, want ErrNoAgent", err)
	}
	c, _, err := newControl(dir, http.NotFoundHandler(), &http.Server{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("unix", c.path)
	if err != nil {
		t.Fatal(err)
	}
	ln.(*net.UnixListener).SetUnlinkOnClose(false)
	ln.Close() // the socket file stays, nobody listens
	if _, err := apiclient.Local(ctx, dir); !errors.Is(err, apiclient.ErrNoAgent) {
		t.Fatalf("Local with a stale socket: %v, want ErrNoAgent", err)
	}
	c.bind(ctx)
	if c.ln == nil {
		t.Fatal("bind over a stale socket failed")
	}
	if err := c.close(); err != nil {
		t.Fatal(err)
	}
}

// connectAsEnv names the socket the helper process connects to.
const connectAsEnv = "REVERIE_TEST_CONNECT_SOCKET"

// TestControlSocketHelper is the process TestControlSocketRefusesOtherUID
// starts as another uid; it does nothing in a normal run.
func TestControlSocketHelper(t *testing.T) {
	sock := os.Getenv(connectAsEnv)
	if sock == "" {
		t.Skip("helper process only")
	}
	c, err := apiclient.Local(context.Background(), filepath.Dir(sock))
	if err == nil {
		_, err = c.Info(context.Background())
	}
	var apiErr *apiclient.Error
	switch {
	case err == nil:
		t.Fatal("ANSWERED: the socket served another uid")
	case errors.As(err, &apiErr):
		t.Fatalf("ANSWERED with HTTP %d: the socket served another uid", apiErr.Status)
	}
	t.Logf("REFUSED: %v", err)
}

// The socket refuses a peer of another uid even when the file system lets
// it connect: a real connection from a process running as nobody (needs
// root to switch uid; skipped otherwise).
func TestControlSocketRefusesOtherUID(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("switching to another uid needs root")
	}
	svc := (&fakeAPI{}).services()
	s := startWeb(t, "", svc)
	dir := s.host.DataDir()
	sock := filepath.Join(dir, api.ControlSocket)
	// Open the way for the other user, so that only the uid check stands:
	// the directories, the socket and the token.
	for d := dir; d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range []string{sock, filepath.Join(dir, api.ControlTokenFile)} {
		if err := os.Chmod(p, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Dir(filepath.Join(dir, api.ControlTokenFile)), 0o755); err != nil {
		t.Fatal(err)
	}
	// The test binary, where the other user may run it.
	bin := filepath.Join(t.TempDir(), "web.test")
	exe, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, exe, 0o755); err != nil {
		t.Fatal(err)
	}
	for d := filepath.Dir(bin); d != "/" && d != os.TempDir(); d = filepath.Dir(d) {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "-test.run=^TestControlSocketHelper$", "-test.v")
	cmd.Env = append(os.Environ(), connectAsEnv+"="+sock)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "REFUSED") {
		t.Fatalf("helper as uid 65534: %v\n%s", err, out)
	}
	if !strings.Contains(s.host.Logs(), "the peer runs as uid 65534") {
		t.Errorf("the refusal is not logged:\n%s", s.host.Logs())
	}
}
