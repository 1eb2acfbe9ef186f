package mcp

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reverie-ai/reverie/tool"
)

// State is where a server connection is in its life.
type State string

// The states of a server.
const (
	StateStarting State = "starting" // being started (or restarted)
	StateUp       State = "up"       // connected; its tools are offered
	StateDown     State = "down"     // failed or exited; restarted after a backoff
	StateStopped  State = "stopped"  // the agent is shutting down
)

// Supervision defaults.
const (
	minBackoff = time.Second
	maxBackoff = time.Minute
	// stableAfter is how long a connection must have lasted for the next
	// failure to start again from minBackoff.
	stableAfter = 2 * time.Minute
	// pingEvery is how often a connected server is pinged; pingTimeout is
	// how long it has to answer before it is taken for hung and restarted.
	pingEvery   = 30 * time.Second
	pingTimeout = 10 * time.Second
	// terminateGrace is how long a stdio server gets to exit after its
	// stdin is closed before it is signalled.
	terminateGrace = 2 * time.Second
)

// ServerStatus is one server as the health check and tests see it.
type ServerStatus struct {
	Name      string
	State     State
	Since     time.Time
	Err       string    // why it is down (or last went down)
	RetryAt   time.Time // when a down server is started again
	Tools     []string  // the names offered to the model while up
	Restarts  int       // how many times it was started after the first
	Calls     int       // tool calls in flight
	Refreshes int       // tool lists fetched after notifications/tools/list_changed
}

// server supervises one configured MCP server: it connects, lists the
// tools, keeps them current and restarts the connection when it fails.
type server struct {
	name    string
	cfg     ServerConfig
	dataDir string
	log     *slog.Logger
	impl    *sdk.Implementation
	now     func() time.Time
	// secret registers a resolved env or header value for redaction
	// (Host.RegisterSecret).
	secret func(string)

	// Timings, shortened by tests.
	minBackoff, maxBackoff, pingEvery, pingTimeout time.Duration

	refresh chan struct{} // tools/list_changed arrived (buffer 1)
	suspect chan struct{} // a call timed out: ping now (buffer 1)

	mu      sync.Mutex
	st      ServerStatus
	session *sdk.ClientSession
	tools   []tool.Tool
	cmd     *exec.Cmd     // the running stdio process (tests kill it)
	changed chan struct{} // closed and replaced on every change of st
}

func newServer(name string, cfg ServerConfig, dataDir string, log *slog.Logger, impl *sdk.Implementation, now func() time.Time) *server {
	return &server{
		name: name, cfg: cfg, dataDir: dataDir, log: log.With("mcp_server", name), impl: impl, now: now,
		minBackoff: minBackoff, maxBackoff: maxBackoff, pingEvery: pingEvery, pingTimeout: pingTimeout,
		secret:  func(string) {},
		refresh: make(chan struct{}, 1), suspect: make(chan struct{}, 1),
		st:      ServerStatus{Name: name, State: StateStarting, Since: now()},
		changed: make(chan struct{}),
	}
}

// status returns the current status and a channel closed at its next
// change.
func (s *server) status() (ServerStatus, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.st
	st.Tools = append([]string(nil), s.st.Tools...)
	return st, s.changed
}

// update changes the status under the lock and wakes the watchers.
func (s *server) update(f func(st *ServerStatus)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(&s.st)
	close(s.changed)
	s.changed = make(chan struct{})
}

// currentTools are the tools to offer now (none unless up).
func (s *server) currentTools() []tool.Tool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.st.State != StateUp {
		return nil
	}
	return s.tools
}

// Run supervises the server until ctx ends: start, serve, and after a
// failure wait a backoff (doubling up to maxBackoff) and start again.
func (s *server) Run(ctx context.Context) error {
	backoff := s.minBackoff
	for first := true; ; first = false {
		if !first {
			s.update(func(st *ServerStatus) { st.Restarts++ })
		}
		upSince, err := s.runOnce(ctx)
		if ctx.Err() != nil {
			s.update(func(st *ServerStatus) { st.State, st.Since, st.RetryAt = StateStopped, s.now(), time.Time{} })
			return nil
		}
		if !upSince.IsZero() && s.now().Sub(upSince) >= stableAfter {
			backoff = s.minBackoff
		}
		msg := "exited"
		if err != nil {
			msg = err.Error()
		}
		retry := s.now().Add(backoff)
		s.log.Warn("MCP server is down; restarting after a pause", "err", msg, "retry_in", backoff.String())
		s.update(func(st *ServerStatus) {
			st.State, st.Since, st.Err, st.RetryAt, st.Tools = StateDown, s.now(), msg, retry, nil
		})
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			s.update(func(st *ServerStatus) { st.State, st.Since, st.RetryAt = StateStopped, s.now(), time.Time{} })
			return nil
		case <-t.C:
		}
		backoff = min(2*backoff, s.maxBackoff)
	}
}

// runOnce connects, lists the tools and serves until the session ends or
// ctx does. upSince is when it came up (zero if it never did).
func (s *server) runOnce(ctx context.Context) (upSince time.Time, err error) {
	s.update(func(st *ServerStatus) { st.State, st.Since, st.RetryAt = StateStarting, s.now(), time.Time{} })
	cs, tools, err := s.connect(ctx)
	if err != nil {
		return time.Time{}, err
	}
	done := make(chan error, 1)
	go func() { done <- cs.Wait() }()
	closeSession := func() error {
		s.mu.Lock()
		s.session, s.tools, s.cmd = nil, nil, nil
		s.mu.Unlock()
		_ = cs.Close()
		return <-done
	}
	upSince = s.now()
	s.mu.Lock()
	s.session, s.tools = cs, tools
	s.mu.Unlock()
	s.update(func(st *ServerStatus) {
		st.State, st.Since, st.Err, st.Tools = StateUp, upSince, "", names(tools)
	})
	s.log.Info("MCP server up", "tools", len(tools))

	ping := time.NewTicker(s.pingEvery)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			closeSession()
			return upSince, ctx.Err()
		case err := <-done:
			s.mu.Lock()
			s.session, s.tools, s.cmd = nil, nil, nil
			s.mu.Unlock()
			if err == nil {
				err = errors.New("the connection closed")
			}
			return upSince, fmt.Errorf("connection lost: %w", err)
		case <-s.refresh:
			lctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
			tools, err := s.listTools(lctx, cs)
			cancel()
			if err != nil {
				// A server that cannot list its tools is not usable.
				closeSession()
				return upSince, fmt.Errorf("list tools after tools/list_changed: %w", err)
			}
			s.mu.Lock()
			s.tools = tools
			s.mu.Unlock()
			s.update(func(st *ServerStatus) { st.Tools, st.Refreshes = names(tools), st.Refreshes+1 })
			s.log.Info("MCP server's tools changed", "tools", len(tools))
		case <-ping.C:
			if err := s.ping(ctx, cs); err != nil {
				closeSession()
				return upSince, err
			}
		case <-s.suspect:
			if err := s.ping(ctx, cs); err != nil {
				closeSession()
				return upSince, err
			}
		}
	}
}

// connect starts the server and lists its tools, within StartTimeout.
func (s *server) connect(ctx context.Context) (*sdk.ClientSession, []tool.Tool, error) {
	transport, err := s.transport()
	if err != nil {
		return nil, nil, err
	}
	client := sdk.NewClient(s.impl, &sdk.ClientOptions{
		ToolListChangedHandler: func(context.Context, *sdk.ToolListChangedRequest) {
			select {
			case s.refresh <- struct{}{}:
			default:
			}
		},
	})
	startCtx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout)
	defer cancel()
	cs, err := client.Connect(startCtx, transport, nil)
	if err != nil {
		return nil, nil, startError(startCtx, s.cfg.StartTimeout, "start", err)
	}
	tools, err := s.listTools(startCtx, cs)
	if err != nil {
		_ = cs.Close()
		return nil, nil, startError(startCtx, s.cfg.StartTimeout, "list tools", err)
	}
	return cs, tools, nil
}

// ping checks that the server still answers.
func (s *server) ping(ctx context.Context, cs *sdk.ClientSession) error {
	pctx, cancel := context.WithTimeout(ctx, s.pingTimeout)
	defer cancel()
	if err := cs.Ping(pctx, nil); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("not answering (ping: %w); restarting it", err)
	}
	return nil
}

// startError explains a failed start, naming the timeout when it was hit.
func startError(ctx context.Context, timeout time.Duration, what string, err error) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("%s: no answer within %s (start_timeout)", what, timeout)
	}
	return fmt.Errorf("%s: %w", what, err)
}

// transport builds the connection of the configured kind.
func (s *server) transport() (sdk.Transport, error) {
	if s.cfg.URL != "" {
		headers := http.Header{}
		for k, v := range s.cfg.Headers {
			val, err := v.Resolve(s.dataDir)
			if err != nil {
				return nil, fmt.Errorf("header %s: %w", k, err)
			}
			s.secret(val)
			headers.Set(k, val)
		}
		return &sdk.StreamableClientTransport{
			Endpoint:   s.cfg.URL,
			HTTPClient: &http.Client{Transport: headerTransport{headers: headers, base: http.DefaultTransport}},
		}, nil
	}
	env, err := s.environment()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(s.cfg.Command, s.cfg.Args...)
	cmd.Env = env
	cmd.Dir = s.cfg.Dir
	if cmd.Dir == "" {
		cmd.Dir = s.dataDir
	}
	cmd.Stderr = &stderrLog{log: s.log}
	s.mu.Lock()
	s.cmd = cmd
	s.mu.Unlock()
	return &sdk.CommandTransport{Command: cmd, TerminateDuration: terminateGrace}, nil
}

// inheritedEnv are the variables a stdio server gets from Reverie's
// environment (as the official SDKs do): enough to run, no secrets.
var inheritedEnv = []string{"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// environment is the stdio server's environment: inheritedEnv plus the
// configured variables (resolved secrets).
func (s *server) environment() ([]string, error) {
	var env []string
	for _, k := range inheritedEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	for k, v := range s.cfg.Env {
		val, err := v.Resolve(s.dataDir)
		if err != nil {
			return nil, fmt.Errorf("env %s: %w", k, err)
		}
		s.secret(val)
		env = append(env, k+"="+val)
	}
	return env, nil
}

// headerTransport adds the configured headers to every request.
type headerTransport struct {
	headers http.Header
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	for k, vs := range t.headers {
		r.Header[k] = vs
	}
	return t.base.RoundTrip(r)
}

// stderrLog logs a stdio server's standard error, line by line, at debug
// level (capped, so a chatty server cannot flood the log).
type stderrLog struct {
	log  *slog.Logger
	mu   sync.Mutex
	part []byte
}

const maxStderrLine = 2048

func (w *stderrLog) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.part = append(w.part, p...)
	for {
		i := bytes.IndexByte(w.part, '\n')
		if i < 0 {
			break
		}
		w.emit(w.part[:i])
		w.part = w.part[i+1:]
	}
	if len(w.part) > maxStderrLine {
		w.emit(w.part)
		w.part = nil
	}
	return len(p), nil
}

func (w *stderrLog) emit(line []byte) {
	if len(line) > maxStderrLine {
		line = append(line[:maxStderrLine:maxStderrLine], "…"...)
	}
	if l := strings.TrimSpace(string(line)); l != "" {
		w.log.Debug("MCP server stderr", "line", l)
	}
}

var _ io.Writer = (*stderrLog)(nil)

// listTools fetches every page of tools/list and builds the tools to
// offer, applying allow and deny.
func (s *server) listTools(ctx context.Context, cs *sdk.ClientSession) ([]tool.Tool, error) {
	var out []tool.Tool
	seen := map[string]bool{}
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		if t == nil || !s.cfg.offers(t.Name) {
			continue
		}
		tl, err := s.wrap(t)
		if err != nil {
			s.log.Warn("MCP tool left out", "tool", t.Name, "err", err)
			continue
		}
		if seen[tl.Name()] {
			s.log.Warn("MCP tool left out: its name clashes with another after cleaning", "tool", t.Name, "as", tl.Name())
			continue
		}
		seen[tl.Name()] = true
		out = append(out, tl)
	}
	return out, nil
}

// unsafeChars are the characters a tool name may not have.
var unsafeChars = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^a-zA-Z0-9_-]`) })

// ToolName is the name the model sees for the tool called remote on server:
// "<server>__<tool>", characters outside [a-zA-Z0-9_-] replaced by '_'.
func ToolName(server, remote string) string {
	return server + "__" + unsafeChars().ReplaceAllString(remote, "_")
}

// wrap turns an MCP tool into a Reverie tool that calls it on this server.
func (s *server) wrap(t *sdk.Tool) (tool.Tool, error) {
	name := ToolName(s.name, t.Name)
	if err := tool.CheckName(name); err != nil {
		return nil, err
	}
	desc := strings.TrimSpace(t.Description)
	if desc == "" {
		desc = strings.TrimSpace(t.Title)
	}
	if desc == "" {
		desc = fmt.Sprintf("Tool %s of the MCP server %s.", t.Name, s.name)
	}
	schema, err := inputSchema(t.InputSchema)
	if err != nil {
		return nil, err
	}
	remote := t.Name
	call := func(ctx context.Context, args json.RawMessage) (tool.Result, error) {
		return s.call(ctx, remote, args)
	}
	// An MCP server's answers come from outside. Its tools can reach the
	// open world (MCP's openWorldHint, true unless the server says false):
	// where a call's data goes is the server's business, so it can go
	// anywhere.
	opts := []tool.Option{tool.WithCategories("mcp", "mcp:"+s.name), tool.UntrustedResults()}
	if t.Annotations == nil || t.Annotations.OpenWorldHint == nil || *t.Annotations.OpenWorldHint {
		server := s.name
		opts = append(opts, tool.SendsOut(func(args json.RawMessage) []tool.Destination {
			return []tool.Destination{{Anywhere: "the MCP server " + server + " and whatever it reaches", Data: string(args)}}
		}))
	}
	tl, err := tool.NewRaw(name, desc, schema, call, opts...)
	if err != nil {
		// The validator knows JSON Schema 2020-12; servers often declare
		// draft-07, which reads the same for argument schemas.
		var m map[string]json.RawMessage
		if json.Unmarshal(schema, &m) == nil && m["$schema"] != nil {
			delete(m, "$schema")
			stripped, _ := json.Marshal(m)
			tl, err = tool.NewRaw(name, desc, stripped, call, opts...)
		}
	}
	return tl, err
}

// inputSchema is a tool's input schema as JSON (an empty object schema
// when the server gave none).
func inputSchema(v any) (json.RawMessage, error) {
	if v == nil {
		return json.RawMessage(`{"type":"object","properties":{}}`), nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("input schema: %w", err)
	}
	return b, nil
}

// ErrServerDown is returned by calls to a server that is not connected.
var ErrServerDown = errors.New("MCP server is down")

// call runs a tool call on the current session, bounded by the server's
// timeout; cancelling ctx cancels the call (notifications/cancelled).
func (s *server) call(ctx context.Context, remote string, args json.RawMessage) (tool.Result, error) {
	res, err := s.callRaw(ctx, remote, args)
	if err != nil {
		return tool.Result{}, err
	}
	return mapResult(res, ToolName(s.name, remote), fmt.Sprintf("%s on the MCP server %s", remote, s.name))
}

// callRaw is call without mapping the result.
func (s *server) callRaw(ctx context.Context, remote string, args json.RawMessage) (*sdk.CallToolResult, error) {
	s.mu.Lock()
	cs, st := s.session, s.st
	s.mu.Unlock()
	if cs == nil {
		return nil, fmt.Errorf("%w: %s (%s)", ErrServerDown, s.name, st.Err)
	}
	s.update(func(st *ServerStatus) { st.Calls++ })
	defer s.update(func(st *ServerStatus) { st.Calls-- })
	cctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	res, err := cs.CallTool(cctx, &sdk.CallToolParams{Name: remote, Arguments: args})
	switch {
	case err == nil:
		return res, nil
	case ctx.Err() != nil:
		return nil, fmt.Errorf("call to %s on MCP server %s cancelled: %w", remote, s.name, context.Cause(ctx))
	case errors.Is(cctx.Err(), context.DeadlineExceeded):
		// Maybe the server hangs: have the supervisor ping it now.
		select {
		case s.suspect <- struct{}{}:
		default:
		}
		return nil, fmt.Errorf("MCP server %s did not answer %s within %s (the call was cancelled)", s.name, remote, s.cfg.Timeout)
	}
	return nil, fmt.Errorf("MCP server %s: %s: %w", s.name, remote, err)
}

func names(ts []tool.Tool) []string {
	out := make([]string, len(ts))
	for i, t := range ts {
		out[i] = t.Name()
	}
	return out
}
