// Package web is Reverie's HTTP channel. It owns the listener on the
// configured address (default 127.0.0.1:8420) and serves GET /healthz, which
// answers 200 {"status":"ok"} only once the agent is ready to take messages
// and 503 before that. The HTTP API, WebSocket chat and the web page grow
// from this extension.
package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// DefaultListen is the address used when the configuration names none.
const DefaultListen = "127.0.0.1:8420"

func init() {
	extension.Register(extension.Info{
		ID:          "web",
		New:         func() extension.Extension { return new(Web) },
		Description: "HTTP listener: health check, API and web page",
	})
}

// Config is the `web:` section of config.yaml.
type Config struct {
	// Listen is host:port; port 0 picks a free port (the bound address is logged).
	Listen string `yaml:"listen"`
	// ReadTimeout bounds reading a request, headers and body.
	ReadTimeout time.Duration `yaml:"read_timeout"`
	// WriteTimeout bounds writing a non-streaming response.
	WriteTimeout time.Duration `yaml:"write_timeout"`
}

// Web is the HTTP channel extension.
type Web struct {
	cfg     Config
	log     *slog.Logger
	ln      net.Listener
	srv     *http.Server
	ready   atomic.Bool
	serving atomic.Bool
	served  chan struct{}
}

// Init decodes the web section.
func (w *Web) Init(_ context.Context, host extension.Host) error {
	w.cfg = Config{Listen: DefaultListen, ReadTimeout: 30 * time.Second, WriteTimeout: 60 * time.Second}
	if err := host.DecodeConfig(&w.cfg); err != nil {
		return err
	}
	if _, _, err := net.SplitHostPort(w.cfg.Listen); err != nil {
		return fmt.Errorf("web.listen %q: %w", w.cfg.Listen, err)
	}
	w.log = host.Logger()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", w.healthz)
	w.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       w.cfg.ReadTimeout,
		WriteTimeout:      w.cfg.WriteTimeout,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(w.log.Handler(), slog.LevelWarn),
	}
	return nil
}

// Start binds the listener so that a port conflict is reported at start-up.
func (w *Web) Start(ctx context.Context) error {
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", w.cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", w.cfg.Listen, err)
	}
	w.ln = ln
	w.served = make(chan struct{})
	w.log.Info("web listener bound", "addr", ln.Addr().String(), "url", "http://"+ln.Addr().String()+"/")
	return nil
}

// Addr is the bound address, or nil before Start.
func (w *Web) Addr() net.Addr {
	if w.ln == nil {
		return nil
	}
	return w.ln.Addr()
}

// OnReady makes /healthz answer 200.
func (w *Web) OnReady(context.Context) { w.ready.Store(true) }

// Run serves HTTP until ctx is cancelled, then shuts the server down
// gracefully (in-flight requests get 5 seconds).
func (w *Web) Run(ctx context.Context) error {
	if w.ln == nil {
		return errors.New("web: Run before Start")
	}
	errc := make(chan error, 1)
	w.serving.Store(true)
	go func() {
		defer close(w.served)
		errc <- w.srv.Serve(w.ln)
	}()
	select {
	case err := <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			return nil
		}
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	w.ready.Store(false)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	err := w.srv.Shutdown(sctx)
	<-w.served
	if err != nil {
		return fmt.Errorf("shut down http server: %w", err)
	}
	return nil
}

// Stop closes the listener if Run never served it.
func (w *Web) Stop(context.Context) error {
	w.ready.Store(false)
	if w.ln != nil && !w.serving.Load() {
		// Run never handed the listener to the server: close it here.
		if err := w.ln.Close(); err != nil && !errors.Is(err, net.ErrClosed) {
			return fmt.Errorf("close web listener: %w", err)
		}
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

func (w *Web) healthz(rw http.ResponseWriter, _ *http.Request) {
	rw.Header().Set("Content-Type", "application/json")
	rw.Header().Set("Cache-Control", "no-store")
	if !w.ready.Load() {
		rw.WriteHeader(http.StatusServiceUnavailable)
		_ = json.NewEncoder(rw).Encode(map[string]string{"status": "starting"})
		return
	}
	_ = json.NewEncoder(rw).Encode(map[string]string{"status": "ok"})
}

var (
	_ extension.Extension       = (*Web)(nil)
	_ extension.Starter         = (*Web)(nil)
	_ extension.Stopper         = (*Web)(nil)
	_ extension.ServiceProvider = (*Web)(nil)
	_ extension.ReadyListener   = (*Web)(nil)
	_ extension.HealthChecker   = (*Web)(nil)
)
