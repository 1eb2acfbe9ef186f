// Package web is Reverie's HTTP channel: the HTTP API of docs/api.md, the
// WebSocket chat, the Server-Sent Events stream of the event bus and the web
// page, on the configured address (default 127.0.0.1:8420).
//
// GET /healthz answers 200 {"status":"ok"} only once the agent is ready to
// take messages and 503 before that; under the supervisor the body also
// carries "instance" (api.Services.Instance), so that its probe knows it
// reached its own child. A full disk is one 507 on every route
// (api.IsDiskFull, mapped in one place: statusOf). Everything under /api/
// needs the access token (bearer header or the session cookie set by POST
// /api/v1/login, kept server-side in web_sessions and ended by POST
// /api/v1/logout); the page shell needs none. Whatever web.auth says, every
// request passes the access rules of access.go (Host, Origin /
// Sec-Fetch-Site, JSON bodies) in the order guard applies them, and setup
// writes need the token even with web.auth: none.
//
// The same handler is also served on the control socket, <data>/reverie.sock
// (control.go): to peers of the agent's uid only, with the control token
// instead of the web token and without the Host check, for the command
// line beside a running agent (api/client.Local).
//
// The extension is the channel "web" (threads web:<session>): messages
// arrive over the WebSocket and go to the router through Host.Receive;
// replies stream back to the connections following the thread. The data
// endpoints are served from the api.Services the host offers
// (api.ServicesFrom); a service the host does not offer answers 501.
//
// Delivery guarantees and concurrency: a message read from a WebSocket is
// handed to the router (which stores it) on a context detached from the
// connection, so a client that disconnects right after sending still gets
// its turn run and saved. Frames for a thread go to the connections
// following it at that moment, each through its own bounded queue and a
// writer goroutine that runs while frames are queued: a slow or dead client
// never blocks a turn or another client (a client more than 1024 frames
// behind is disconnected and catches up from the history). An idle
// connection costs one goroutine (its reader, owned by the hub) and about
// 15 KB. Nothing is lost when nobody is connected: the
// router stores every reply before delivering it. On shutdown the listener
// closes, event streams end, WebSocket connections are closed with status
// 1001 and every connection goroutine is awaited before Run returns.
package web

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/term"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
)

// DefaultListen is the address used when the configuration names none.
const DefaultListen = "127.0.0.1:8420"

func init() {
	extension.Register(extension.Info{
		ID:          "web",
		New:         func() extension.Extension { return new(Web) },
		Description: "web page, HTTP API, WebSocket chat and event stream",
	})
}

// Config is the `web:` section of config.yaml.
type Config struct {
	// Listen is host:port; port 0 picks a free port (the bound address is logged).
	Listen string `yaml:"listen"`
	// PublicURL is the page's address as users reach it (behind a reverse
	// proxy); empty means http://<listen address>.
	PublicURL string `yaml:"public_url"`
	// Auth is "token" (default) or "none" (only on a loopback listener).
	Auth string `yaml:"auth"`
	// Token overrides the generated access token.
	Token Secret `yaml:"token"`
	// ReadTimeout bounds reading a request, headers and body.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing a non-streaming response.
	WriteTimeout time.Duration `yaml:"write_timeout"`
	// TurnTimeout bounds POST …/messages waiting for its turn.
	TurnTimeout time.Duration `yaml:"turn_timeout"`
	// MaxBodyBytes bounds request bodies and WebSocket frames.
	MaxBodyBytes int64 `yaml:"max_body_bytes"`
	// MaxUploadBytes bounds one attachment uploaded from the page (the
	// upload's JSON body may be a third larger: base64); 0 turns uploads
	// off.
	MaxUploadBytes int64 `yaml:"max_upload_bytes"`
	// RatePerSecond and RateBurst limit requests per client IP (0 turns the
	// limit off).
	RatePerSecond float64 `yaml:"rate_per_second"`
	RateBurst     int     `yaml:"rate_burst"`
	// AuthFailuresPerMinute bounds failed authentications per client IP
	// (IPv6: per /64), apart from RatePerSecond, so that unauthenticated
	// requests never spend the owner's budget; 0 turns it off.
	AuthFailuresPerMinute int `yaml:"auth_failures_per_minute"`
	// MaxConnections bounds open WebSocket and event-stream connections.
	MaxConnections int `yaml:"max_connections"`
}

// DefaultConfig is the configuration without a `web:` section.
func DefaultConfig() Config {
	return Config{
		Listen:         DefaultListen,
		Auth:           AuthToken,
		ReadTimeout:    30 * time.Second,
		WriteTimeout:   60 * time.Second,
		TurnTimeout:    10 * time.Minute,
		MaxBodyBytes:   1 << 20,
		MaxUploadBytes: 10 << 20,
		RatePerSecond:  20,
		RateBurst:      60,
		MaxConnections: 4096,

		AuthFailuresPerMinute: 20,
	}
}

// Web is the HTTP channel extension.
type Web struct {
	cfg  Config
	host extension.Host
	log  *slog.Logger
	now  func() time.Time
	svc  *api.Services

	auth         *authenticator
	token        string // the token file's token, kept only to print the sign-in URL at ready
	tokenFile    string // where that file is
	tokenCreated bool
	signInDue    bool     // no browser has a live session: print the sign-in URL at ready
	limit        *limiter // requests that authenticated
	failed       *limiter // failed authentications
	hub          *hub
	streams      atomic.Int64 // open WebSocket and SSE connections

	ln       net.Listener
	srv      *http.Server
	ctl      *control // the control socket (control.go)
	ready    atomic.Bool
	serving  atomic.Bool
	served   chan struct{}
	stopping chan struct{} // closed when Run begins shutting down
	stopOnce sync.Once
}

// Init decodes the web section, loads (or creates) the access token and
// builds the handler.
func (w *Web) Init(ctx context.Context, host extension.Host) error {
	cfg, err := loadConfig(host.DecodeConfig)
	if err != nil {
		return err
	}
	w.cfg = cfg
	w.host, w.log, w.now = host, host.Logger(), host.Now
	w.svc = api.ServicesFrom(host)
	// The token exists with web.auth: none too: the setup form and the
	// session cookie need it.
	token, created, err := loadToken(w.cfg.Token, host.DataDir())
	if err != nil {
		if w.cfg.Token.IsSet() {
			err = fmt.Errorf("%w: %w", extension.ErrInvalidConfig, err)
		}
		return err
	}
	// From now on the token is redacted from every log line, stored record
	// and error response; the sign-in URL goes to the console, not through
	// the logger.
	host.RegisterSecret(token)
	w.tokenCreated = created
	w.tokenFile = filepath.Join(host.DataDir(), TokenFile)
	if !w.cfg.Token.IsSet() {
		w.token = token
	}
	sess, err := openSessions(ctx, host.DB(), token, host.Now)
	if err != nil {
		return err
	}
	w.signInDue = sess.count() == 0
	w.auth = newAuthenticator(token, w.cfg.Auth == AuthNone, sess)
	w.failed = newLimiter(float64(w.cfg.AuthFailuresPerMinute)/60, w.cfg.AuthFailuresPerMinute, host.Now)
	w.limit = newLimiter(w.cfg.RatePerSecond, w.cfg.RateBurst, host.Now)
	w.hub = newHub()
	w.stopping = make(chan struct{})
	w.srv = &http.Server{
		Handler:           w.routes(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       w.cfg.ReadTimeout,
		WriteTimeout:      w.cfg.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(w.log.Handler(), slog.LevelWarn),
	}
	ctl, ctlToken, err := newControl(host.DataDir(), w.srv.Handler, w.srv, w.log)
	if err != nil {
		return err
	}
	host.RegisterSecret(ctlToken)
	w.ctl = ctl
	return nil
}

// CheckConfig decodes and validates the web section as Init does, without
// loading the token or binding anything (`reverie doctor`).
func (w *Web) CheckConfig(decode func(any) error) error {
	_, err := loadConfig(decode)
	return err
}

// loadConfig decodes the web section over the defaults and validates it.
func loadConfig(decode func(any) error) (Config, error) {
	cfg := DefaultConfig()
	if err := decode(&cfg); err != nil {
		return cfg, err
	}
	return cfg, cfg.validate()
}

// validate checks the section; its errors wrap extension.ErrInvalidConfig
// (the agent refuses to start rather than run without its web channel).
func (c Config) validate() error {
	if err := c.check(); err != nil {
		return fmt.Errorf("%w: %w", extension.ErrInvalidConfig, err)
	}
	return nil
}

func (c Config) check() error {
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		return fmt.Errorf("web.listen %q: %w", c.Listen, err)
	}
	switch c.Auth {
	case AuthToken:
	case AuthNone:
		if !isLoopback(c.Listen) {
			return fmt.Errorf("web.auth: none is allowed only on a loopback listener, and web.listen is %q: "+
				"set web.listen to 127.0.0.1:<port> or keep token authentication", c.Listen)
		}
	default:
		return fmt.Errorf("web.auth: %q is not %q or %q", c.Auth, AuthToken, AuthNone)
	}
	switch {
	case c.ReadTimeout <= 0, c.WriteTimeout <= 0, c.TurnTimeout <= 0:
		return errors.New("web: read_timeout, write_timeout and turn_timeout must be positive")
	case c.MaxBodyBytes < 1024:
		return fmt.Errorf("web.max_body_bytes: %d is below the minimum of 1024", c.MaxBodyBytes)
	case c.MaxUploadBytes < 0 || c.MaxUploadBytes > 1<<30:
		return fmt.Errorf("web.max_upload_bytes: %d is not between 0 (uploads off) and 1 GiB", c.MaxUploadBytes)
	case c.RatePerSecond < 0 || c.RateBurst < 0 || c.AuthFailuresPerMinute < 0:
		return errors.New("web: rate_per_second, rate_burst and auth_failures_per_minute must not be negative")
	case c.MaxConnections < 1:
		return errors.New("web.max_connections must be at least 1")
	}
	if c.PublicURL != "" && !strings.HasPrefix(c.PublicURL, "http://") && !strings.HasPrefix(c.PublicURL, "https://") {
		return fmt.Errorf("web.public_url %q: must start with http:// or https://", c.PublicURL)
	}
	return nil
}

// Start binds the listener so that a port conflict is reported at start-up.
func (w *Web) Start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", w.cfg.Listen)
	if errors.Is(err, syscall.EADDRINUSE) {
		return fmt.Errorf("listen on %s: another program (another Reverie?) uses this address; stop it, or set web.listen "+
			"(REVERIE_WEB__LISTEN) to a free port: %w: %w", w.cfg.Listen, extension.ErrEnvironment, err)
	}
	if err != nil {
		return fmt.Errorf("listen on %s: %w", w.cfg.Listen, err)
	}
	w.ln = ln
	w.served = make(chan struct{})
	w.ctl.bind(ctx)
	w.log.Info("web listener bound", "addr", ln.Addr().String(), "url", w.BaseURL()+"/")
	if w.tokenCreated {
		// The URL carries the token: it goes to the terminal only (at
		// ready, see printSignIn), never to the log file.
		w.log.Info("web access token created and kept in " + TokenFile + " in the data dir; the sign-in URL is printed on the console")
	}
	if w.auth.none {
		w.log.Warn("web authentication is off (web.auth: none): anyone who can reach " + w.cfg.Listen + " can use the assistant")
	}
	return nil
}

// consoleHost is a host with a console: the terminal the agent was
// started from, apart from the log (internal/kernel's host is one).
type consoleHost interface{ Console() io.Writer }

// consoleOf is host's console, or io.Discard.
func consoleOf(host extension.Host) io.Writer {
	if c, ok := host.(consoleHost); ok {
		return c.Console()
	}
	return io.Discard
}

// Addr is the bound address, or nil before Start.
func (w *Web) Addr() net.Addr {
	if w.ln == nil {
		return nil
	}
	return w.ln.Addr()
}

// BaseURL is the page's address without a trailing slash: web.public_url,
// else http:// and the bound address (a wildcard address shown as
// localhost).
func (w *Web) BaseURL() string {
	if w.cfg.PublicURL != "" {
		return strings.TrimRight(w.cfg.PublicURL, "/")
	}
	addr := w.cfg.Listen
	if w.ln != nil {
		addr = w.ln.Addr().String()
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return "http://" + addr
	}
	if ip := net.ParseIP(host); host == "" || (ip != nil && ip.IsUnspecified()) {
		host = "localhost"
	}
	return "http://" + net.JoinHostPort(host, port)
}

// PanelURL is the debug panel's address (what /debug prints).
func (w *Web) PanelURL() string { return w.BaseURL() + "/#debug" }

// OnReady makes /healthz answer 200 and, while no browser has signed in,
// prints the sign-in URL on the console.
func (w *Web) OnReady(context.Context) {
	w.ready.Store(true)
	if w.signInDue {
		w.printSignIn(consoleOf(w.host))
		w.signInDue = false
	}
	w.token = ""
}

// printSignIn writes the sign-in address to the console, on every start
// while no browser has a live session (not only the first): the agent's
// start-up lines come before it (but for the "agent ready" line and what
// the background work it starts logs), and it is highlighted on a
// terminal. The URL carries the token of the token
// file; a token set in web.token is not printed (its owner knows it).
func (w *Web) printSignIn(out io.Writer) {
	url := w.BaseURL() + "/"
	var head string
	if w.token != "" {
		head = fmt.Sprintf("Reverie is ready. No browser has signed in yet: open this address to sign in (it carries the access token, kept in %s):", w.tokenFile)
		url += "#token=" + w.token
	} else {
		head = "Reverie is ready. No browser has signed in yet: open this address and sign in with the token set in web.token (REVERIE_WEB__TOKEN):"
	}
	line := "  ➜ " + url
	if isTerminal(out) {
		line = "\x1b[1;7m" + line + " \x1b[0m"
	}
	fmt.Fprintf(out, "\n%s\n%s\n", head, line)
}

// isTerminal reports whether w is a terminal (to highlight with ANSI
// escapes only there).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Run serves HTTP until ctx is cancelled, then shuts down: event streams end,
// WebSocket connections are closed (1001), in-flight requests get 5 seconds.
func (w *Web) Run(ctx context.Context) error {
	if w.ln == nil {
		return errors.New("web: Run before Start")
	}
	errc := make(chan error, 1)
	ctlErr := make(chan error, 1)
	w.serving.Store(true)
	go func() {
		defer close(w.served)
		errc <- w.srv.Serve(w.ln)
	}()
	go func() { ctlErr <- w.ctl.serve() }()
	pctx, stopPings := context.WithCancel(ctx)
	var pinger sync.WaitGroup
	pinger.Go(func() { w.hub.pingAll(pctx) })
	defer func() {
		stopPings()
		pinger.Wait()
	}()
	var serveErr error
	select {
	case serveErr = <-errc:
	case <-ctx.Done():
	}
	w.ready.Store(false)
	w.stopOnce.Do(func() { close(w.stopping) })
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	herr := w.hub.close(sctx)
	cerr := w.ctl.shutdown(sctx)
	err := w.srv.Shutdown(sctx)
	if err != nil {
		// Requests still running after the grace period are cut.
		_ = w.srv.Close()
	}
	<-w.served
	herr = errors.Join(herr, cerr, <-ctlErr)
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		return fmt.Errorf("serve http: %w", serveErr)
	}
	if err != nil {
		return fmt.Errorf("shut down http server: %w", err)
	}
	return herr
}

// Stop closes the listener if Run never served it.
func (w *Web) Stop(context.Context) error {
	w.ready.Store(false)
	if w.ln != nil && !w.serving.Load() {
		// Run never handed the listener to the server: close it here.
		if err := w.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return errors.Join(fmt.Errorf("close web listener: %w", err), w.ctl.close())
		}
		return w.ctl.close()
	}
	return nil
}

// Health reports whether the listener is bound.
func (w *Web) Health(context.Context) error {
	if w.ln == nil {
		return errors.New("web listener not bound")
	}
	return nil
}

// Connections is the number of open WebSocket connections.
func (w *Web) Connections() int { return w.hub.count() }

// acquireStream counts an open WebSocket or SSE connection; false when
// MaxConnections are open or the server is stopping.
func (w *Web) acquireStream() bool {
	select {
	case <-w.stopping:
		return false
	default:
	}
	if w.streams.Add(1) > int64(w.cfg.MaxConnections) {
		w.streams.Add(-1)
		return false
	}
	return true
}

func (w *Web) releaseStream() { w.streams.Add(-1) }

var (
	_ extension.Extension       = (*Web)(nil)
	_ extension.ConfigChecker   = (*Web)(nil)
	_ extension.Starter         = (*Web)(nil)
	_ extension.Stopper         = (*Web)(nil)
	_ extension.ServiceProvider = (*Web)(nil)
	_ extension.ReadyListener   = (*Web)(nil)
	_ extension.HealthChecker   = (*Web)(nil)
	_ extension.ThreadMaker     = (*Web)(nil)
)
