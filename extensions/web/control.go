package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/reverie-ai/reverie/api"
)

// maxSocketPath is the longest path a Unix socket can be bound to on every
// supported platform (sun_path: 108 bytes on Linux, 104 on macOS, with
// its terminating NUL).
const maxSocketPath = 103

// control is the control socket: the same handler as the TCP listener,
// served on a Unix socket in the data dir (api.ControlSocket) to the
// command line of the same user. Its access rules replace two of the TCP
// listener's (docs/security.md "Control socket"):
//
//   - authentication: the listener accepts only peers of the agent's own
//     uid (SO_PEERCRED on Linux, getpeereid on macOS; peerListener), and
//     each request must carry the control token (api.ControlTokenFile,
//     0600 in the data dir) as its bearer token. Session cookies and the
//     web token do not count there. A sandboxed command runs with the
//     same uid but cannot read the data dir's secrets, so the uid alone
//     would not be enough;
//   - Host: not checked. The check defends against DNS rebinding, which
//     needs a browser reaching a TCP address; no browser connects to a
//     Unix socket.
//
// Everything else is the TCP listener's: the cross-site check of writes
// and upgrades, JSON bodies, body sizes, the rate limits (one client key,
// "control socket") and the routes.
type control struct {
	path     string
	tokenSum [32]byte
	srv      *http.Server
	ln       net.Listener
	served   chan struct{}
	log      *slog.Logger
}

// controlKey marks a request's context as arriving over the control
// socket (set by the socket server's ConnContext; a request cannot set
// it).
type controlKey struct{}

// viaControl reports whether r came over the control socket.
func viaControl(r *http.Request) bool {
	v, _ := r.Context().Value(controlKey{}).(bool)
	return v
}

// newControl loads (or creates) the control token and builds the socket's
// server around handler; the socket is bound by bind.
func newControl(dataDir string, handler http.Handler, base *http.Server, log *slog.Logger) (*control, string, error) {
	token, _, err := loadTokenFile(filepath.Join(dataDir, api.ControlTokenFile), "control token")
	if err != nil {
		return nil, "", err
	}
	c := &control{path: filepath.Join(dataDir, api.ControlSocket), tokenSum: sha256.Sum256([]byte(token)), log: log}
	c.srv = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: base.ReadHeaderTimeout,
		ReadTimeout:       base.ReadTimeout,
		WriteTimeout:      base.WriteTimeout,
		IdleTimeout:       base.IdleTimeout,
		MaxHeaderBytes:    base.MaxHeaderBytes,
		ErrorLog:          base.ErrorLog,
		ConnContext: func(ctx context.Context, _ net.Conn) context.Context {
			return context.WithValue(ctx, controlKey{}, true)
		},
	}
	return c, token, nil
}

// check authenticates a request that came over the socket: the control
// token as a bearer token, nothing else.
func (c *control) check(r *http.Request) authKind {
	if c == nil {
		return authFailed
	}
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return authFailed
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(tok)))
	if subtle.ConstantTimeCompare(sum[:], c.tokenSum[:]) == 1 {
		return authControl
	}
	return authFailed
}

// bind listens on the socket (mode 0600), replacing a stale socket file:
// the agent holds the data dir's lock, so no other agent serves it. A
// socket that cannot be bound is logged and left off: the web page and the
// API work without it, and the command line then says an agent runs.
func (c *control) bind(ctx context.Context) {
	if c == nil {
		return
	}
	if len(c.path) > maxSocketPath {
		c.log.Warn("control socket not served: its path is too long for a Unix socket; the command line cannot reach this agent",
			"path", c.path, "max", maxSocketPath)
		return
	}
	if fi, err := os.Lstat(c.path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			c.log.Warn("control socket not served: a file that is not a socket has its name", "path", c.path)
			return
		}
		if err := os.Remove(c.path); err != nil {
			c.log.Warn("control socket not served: cannot remove the stale socket", "path", c.path, "err", err)
			return
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", c.path)
	if err != nil {
		c.log.Warn("control socket not served", "path", c.path, "err", err)
		return
	}
	if err := os.Chmod(c.path, 0o600); err != nil {
		_ = ln.Close()
		c.log.Warn("control socket not served: cannot make it private", "path", c.path, "err", err)
		return
	}
	c.ln = &peerListener{Listener: ln, uid: os.Geteuid(), log: c.log}
	c.served = make(chan struct{})
	c.log.Debug("control socket bound", "path", c.path)
}

// serve serves the socket until shutdown; it returns at once when the
// socket is not bound. The methods of a nil *control do nothing.
func (c *control) serve() error {
	if c == nil || c.ln == nil {
		return nil
	}
	defer close(c.served)
	if err := c.srv.Serve(c.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serve the control socket: %w", err)
	}
	return nil
}

// shutdown ends serve (in-flight requests get ctx) and waits for it.
func (c *control) shutdown(ctx context.Context) error {
	if c == nil || c.ln == nil {
		return nil
	}
	err := c.srv.Shutdown(ctx)
	if err != nil {
		_ = c.srv.Close()
	}
	<-c.served
	if err != nil {
		return fmt.Errorf("shut down the control socket: %w", err)
	}
	return nil
}

// close closes a socket serve never served.
func (c *control) close() error {
	if c == nil || c.ln == nil {
		return nil
	}
	if err := c.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
		return fmt.Errorf("close the control socket: %w", err)
	}
	return nil
}

// peerListener accepts only connections whose peer runs as uid; the
// others are logged and closed.
type peerListener struct {
	net.Listener
	uid int
	log *slog.Logger
}

func (l *peerListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		peer, err := peerUID(conn)
		if err = checkPeer(peer, err, l.uid); err != nil {
			l.log.Warn("control socket: connection refused", "err", err)
			_ = conn.Close()
			continue
		}
		return conn, nil
	}
}

// peerUID is the uid of the process at the other end of a Unix socket
// connection (fdPeerUID: per platform).
func peerUID(conn net.Conn) (int, error) {
	uc, ok := conn.(*net.UnixConn)
	if !ok {
		return -1, errors.New("not a Unix socket connection")
	}
	raw, err := uc.SyscallConn()
	if err != nil {
		return -1, err
	}
	uid, uerr := -1, error(nil)
	if err := raw.Control(func(fd uintptr) { uid, uerr = fdPeerUID(int(fd)) }); err != nil {
		return -1, err
	}
	return uid, uerr
}

// checkPeer decides whether a peer whose credentials are (uid, err) may
// use the socket of an agent running as own: only the same uid, and never
// a peer whose credentials could not be read.
func checkPeer(uid int, err error, own int) error {
	switch {
	case err != nil:
		return fmt.Errorf("cannot read the peer's credentials: %w", err)
	case uid != own:
		return fmt.Errorf("the peer runs as uid %d, the agent as uid %d", uid, own)
	}
	return nil
}
