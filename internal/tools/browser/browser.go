// Package browser drives a headless Chromium for the browser_* tools: one
// browser per conversation, started on its first call, its profile in the
// workspace, closed after an idle time, with every call bounded by a
// timeout.
//
// Every request the browser makes goes through an in-process proxy
// (proxy.go) that applies fetch_url's SSRF guard (web.Guard: no loopback,
// private, link-local or metadata address unless allowed, checked on the
// resolved address when dialled) and the call's approval gate
// (tool.GateFrom): a request to a host not yet approved in this browser
// is a further destination of the running call, asked about like a
// redirect fetch_url follows. Requests made while no browser call runs
// are refused. Chromium's own request for a site's default icon
// (GET /favicon.ico, which it makes once a page has loaded, possibly
// after the call that opened it) is answered by the proxy with 404: it
// never leaves, and no one is asked about a request the page did not
// make. Chromium is started so that it has no way around the
// proxy: loopback is not bypassed, QUIC, DNS prefetch, background
// networking and non-proxied WebRTC are off, and its own name resolution
// is disabled.
//
// Nothing is started or allocated before the first call: New only
// records the configuration.
package browser

import (
	"context"
	"crypto/rand"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/internal/tools/web"
	"github.com/reverie-ai/reverie/tool"
)

//go:embed snapshot.js
var snapshotJS string

//go:embed actions.js
var actionsJS string

// Defaults for zero Config fields.
const (
	DefaultTimeout     = 30 * time.Second
	DefaultIdleTimeout = 5 * time.Minute
	DefaultMaxBrowsers = 2
	DefaultMaxChars    = 20_000
	DefaultMaxMemory   = 1 << 30
	DefaultMemoryPoll  = 250 * time.Millisecond
	DefaultMaxDownload = 100 << 20
	startTimeout       = 30 * time.Second
	settleQuiet        = 300 * time.Millisecond
	settleMax          = 3 * time.Second
)

// Names under which the executable is looked for in PATH, in order.
var execNames = []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome"}

// Find returns the Chromium to run: path when set (it must exist), else
// the first of chromium, chromium-browser, google-chrome… in PATH. ok is
// false when there is none.
func Find(path string) (string, error) {
	if path != "" {
		p, err := exec.LookPath(path)
		if err != nil {
			return "", fmt.Errorf("browser %q: %w", path, err)
		}
		return p, nil
	}
	for _, n := range execNames {
		if p, err := exec.LookPath(n); err == nil {
			return p, nil
		}
	}
	return "", errors.New("no Chromium found in PATH (looked for " + strings.Join(execNames, ", ") + ")")
}

// Timer is a stoppable pending call (*time.Timer).
type Timer interface{ Stop() bool }

// Clock schedules the idle close; tests inject a fake.
type Clock interface {
	AfterFunc(d time.Duration, f func()) Timer
}

type systemClock struct{}

func (systemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Config configures a Manager.
type Config struct {
	// Exec is Chromium's executable (see Find).
	Exec string
	// Workspace is the workspace directory: profiles go under
	// browser/profiles, screenshots under browser/screenshots and
	// downloads under downloads.
	Workspace string
	// Guard is fetch_url's SSRF guard, applied to every request.
	Guard *web.Guard
	// Timeout bounds each call, page loads included; the wait for an
	// approval is not counted (default 30s).
	Timeout time.Duration
	// IdleTimeout closes a conversation's browser when no call used it
	// for that long (default 5m).
	IdleTimeout time.Duration
	// MaxBrowsers is how many browsers run at once; opening one more
	// closes the least recently used idle one, or fails when every one
	// runs a call (default 2).
	MaxBrowsers int
	// MaxMemory bounds a browser's resident memory (all its processes),
	// checked every MemoryPoll during a call and after it: above it the
	// browser is stopped, a call running fails with a tool error, and the
	// next call starts a new browser (default 1 GiB).
	MaxMemory int64
	// MaxDownload bounds one file a page downloads into the workspace's
	// downloads: a larger one is stopped (or, when it completed before
	// that, removed) and the call says so (default 100 MiB).
	MaxDownload int64
	// MemoryPoll is how often a running call checks the memory (default
	// 250ms).
	MemoryPoll time.Duration
	// MaxChars caps a snapshot's text (default 20000).
	MaxChars int
	// Clock schedules idle closes (default: the system clock).
	Clock  Clock
	Logger *slog.Logger
}

// Manager runs the conversations' browsers. Safe for concurrent use.
type Manager struct {
	cfg Config
	log *slog.Logger

	mu       sync.Mutex
	sessions map[string]*session   // the running browser of each conversation
	live     map[*session]struct{} // every session not yet closed (sessions, and those being closed)
	closed   bool
}

// New records cfg; nothing starts until the first call.
func New(cfg Config) *Manager {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = DefaultIdleTimeout
	}
	if cfg.MaxBrowsers <= 0 {
		cfg.MaxBrowsers = DefaultMaxBrowsers
	}
	if cfg.MaxMemory <= 0 {
		cfg.MaxMemory = DefaultMaxMemory
	}
	if cfg.MaxChars <= 0 {
		cfg.MaxChars = DefaultMaxChars
	}
	if cfg.MaxDownload <= 0 {
		cfg.MaxDownload = DefaultMaxDownload
	}
	if cfg.MemoryPoll <= 0 {
		cfg.MemoryPoll = DefaultMemoryPoll
	}
	if cfg.Clock == nil {
		cfg.Clock = systemClock{}
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Manager{cfg: cfg, log: cfg.Logger, sessions: map[string]*session{}, live: map[*session]struct{}{}}
}

// Close closes every browser and waits for them to exit, those an idle
// timer is closing included.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	all := make([]*session, 0, len(m.live))
	for s := range m.live {
		all = append(all, s)
	}
	m.sessions = map[string]*session{}
	m.mu.Unlock()
	for _, s := range all {
		m.closeSession(s)
	}
	return nil
}

// closeSession closes s (waiting when another goroutine is closing it).
func (m *Manager) closeSession(s *session) {
	s.close()
	m.mu.Lock()
	delete(m.live, s)
	m.mu.Unlock()
}

// Running returns the conversations whose browser runs, sorted.
func (m *Manager) Running() []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	for k := range m.sessions {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// key is the conversation a call belongs to ("" outside a turn).
func key(ctx context.Context) string {
	if c, ok := tool.CallFrom(ctx); ok {
		return string(c.Thread)
	}
	return ""
}

// session returns the conversation's browser, starting one when create
// is set and none runs (nil, nil when none runs and create is not set).
func (m *Manager) session(ctx context.Context, create bool) (*session, error) {
	k := key(ctx)
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, errors.New("the browser tools are shut down")
	}
	s := m.sessions[k]
	if s != nil && s.dead() {
		delete(m.sessions, k)
		m.mu.Unlock()
		crash := s.exitReason()
		m.closeSession(s)
		if !create {
			return nil, fmt.Errorf("the browser of this conversation %s; browser_open starts a new one", crash)
		}
		return nil, fmt.Errorf("the browser of this conversation %s; the next browser call starts a new one", crash)
	}
	if s != nil || !create {
		m.mu.Unlock()
		return s, nil
	}
	var evict *session
	if len(m.sessions) >= m.cfg.MaxBrowsers {
		// The least recently used idle browser; one running a call of
		// another conversation is not taken from it.
		for _, o := range m.sessions {
			if o.busy() {
				continue
			}
			if evict == nil || o.lastUsed().Before(evict.lastUsed()) {
				evict = o
			}
		}
		if evict == nil {
			m.mu.Unlock()
			return nil, fmt.Errorf("all %d browsers (tools.browser.max_browsers) are running calls of other conversations; try again when one is done", m.cfg.MaxBrowsers)
		}
		delete(m.sessions, evict.key)
	}
	s = newSession(m, k)
	m.sessions[k] = s
	m.live[s] = struct{}{}
	m.mu.Unlock()
	if evict != nil {
		m.log.Info("browser closed to make room", "thread", evict.key)
		m.closeSession(evict)
	}
	if err := s.start(); err != nil {
		m.drop(s)
		m.closeSession(s)
		return nil, err
	}
	return s, nil
}

// drop forgets s if it is still the session of its conversation.
func (m *Manager) drop(s *session) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.sessions[s.key] == s {
		delete(m.sessions, s.key)
	}
}

// closeIdle closes s when it is still idle (its idle timer, armed as
// generation gen, fired).
func (m *Manager) closeIdle(s *session, gen int) {
	if !s.idleFired(gen) {
		return
	}
	m.drop(s)
	m.log.Info("idle browser closed", "thread", s.key)
	m.closeSession(s)
}

// profileDir is the conversation's profile directory in the workspace.
func (m *Manager) profileDir(k string) string {
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '_'
	}, k)
	if name == "" {
		name = "default"
	}
	return filepath.Join(m.cfg.Workspace, "browser", "profiles", name)
}

// Page is what the page-returning tools give the model: the page as text.
type Page struct {
	URL       string `json:"url"`
	Title     string `json:"title"`
	Content   string `json:"content"`
	Truncated bool   `json:"truncated,omitempty"`
	// Refused lists the requests of the page that were refused (the
	// SSRF guard, the user's denial, or no call running), with why.
	Refused []string `json:"refused,omitempty"`
	// Note says something the model should know (a form that was not
	// submitted, a download saved).
	Note string `json:"note,omitempty"`
}

// OpenArgs are browser_open's arguments.
type OpenArgs struct {
	URL string `json:"url" jsonschema:"the http or https URL to open"`
}

// ClickArgs are browser_click's arguments.
type ClickArgs struct {
	Ref string `json:"ref" jsonschema:"the reference of a link or button in the last snapshot (such as e12)"`
}

// TypeArgs are browser_type's arguments.
type TypeArgs struct {
	Ref    string `json:"ref" jsonschema:"the reference of a form field in the last snapshot (such as e7)"`
	Text   string `json:"text" jsonschema:"the text to put in the field (replacing what it holds); for a list, the option to choose; for a checkbox, true or false"`
	Submit bool   `json:"submit,omitempty" jsonschema:"submit the field's form afterwards (or press Enter when it has none)"`
}

// NoArgs are the arguments of browser_snapshot, browser_screenshot and
// browser_close.
type NoArgs struct{}

// Screenshot is browser_screenshot's result.
type Screenshot struct {
	// Path is the PNG's path relative to the workspace.
	Path  string `json:"path"`
	URL   string `json:"url"`
	Title string `json:"title"`
}

// Open starts the conversation's browser when needed and loads a.URL.
func (m *Manager) Open(ctx context.Context, a OpenArgs) (Page, error) {
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return Page{}, fmt.Errorf("bad URL: %w", err)
	}
	if err := m.cfg.Guard.CheckURL(u); err != nil {
		return Page{}, fmt.Errorf("open %s: %w", u.Redacted(), err)
	}
	s, err := m.session(ctx, true)
	if err != nil {
		return Page{}, err
	}
	return s.do(ctx, func(c *call) (Page, error) {
		s.clearFor(c, u) // the call itself was approved (or needed no approval) for this URL
		if err := chromedp.Do(c.ctx, chromedp.Navigate(u.String())); err != nil {
			return Page{}, fmt.Errorf("open %s: %w", u.Redacted(), s.explain(c, err))
		}
		return s.snapshot(c)
	})
}

// Snapshot returns the open page as text.
func (m *Manager) Snapshot(ctx context.Context, _ NoArgs) (Page, error) {
	s, err := m.open(ctx)
	if err != nil {
		return Page{}, err
	}
	return s.do(ctx, func(c *call) (Page, error) { return s.snapshot(c) })
}

// Click clicks the element a.Ref of the last snapshot, then returns the
// page.
func (m *Manager) Click(ctx context.Context, a ClickArgs) (Page, error) {
	s, err := m.open(ctx)
	if err != nil {
		return Page{}, err
	}
	return s.do(ctx, func(c *call) (Page, error) {
		if err := s.act(c, "click", a.Ref, "", false); err != nil {
			return Page{}, err
		}
		return s.snapshot(c)
	})
}

// Type puts a.Text into the field a.Ref, submits when asked, then
// returns the page.
func (m *Manager) Type(ctx context.Context, a TypeArgs) (Page, error) {
	s, err := m.open(ctx)
	if err != nil {
		return Page{}, err
	}
	return s.do(ctx, func(c *call) (Page, error) {
		if err := s.act(c, "type", a.Ref, a.Text, a.Submit); err != nil {
			return Page{}, err
		}
		return s.snapshot(c)
	})
}

// Screenshot saves a PNG of the page's visible part in the workspace.
func (m *Manager) Screenshot(ctx context.Context, _ NoArgs) (Screenshot, error) {
	s, err := m.open(ctx)
	if err != nil {
		return Screenshot{}, err
	}
	var shot Screenshot
	_, err = s.do(ctx, func(c *call) (Page, error) {
		png, err := chromedp.Run(c.ctx, chromedp.CaptureScreenshot())
		if err != nil {
			return Page{}, fmt.Errorf("take a screenshot: %w", s.explain(c, err))
		}
		title, _ := chromedp.Run(c.ctx, chromedp.Title())
		loc, _ := chromedp.Run(c.ctx, chromedp.Location())
		rel := filepath.ToSlash(filepath.Join("browser", "screenshots", time.Now().UTC().Format("20060102-150405.000")+".png"))
		abs := filepath.Join(m.cfg.Workspace, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(abs), 0o700); err != nil {
			return Page{}, fmt.Errorf("save the screenshot: %w", err)
		}
		if err := os.WriteFile(abs, png, 0o600); err != nil {
			return Page{}, fmt.Errorf("save the screenshot: %w", err)
		}
		shot = Screenshot{Path: rel, URL: loc, Title: title}
		return Page{}, nil
	})
	return shot, err
}

// CloseResult is browser_close's result.
type CloseResult struct {
	Closed bool `json:"closed"`
}

// CloseBrowser closes the conversation's browser.
func (m *Manager) CloseBrowser(ctx context.Context, _ NoArgs) (CloseResult, error) {
	m.mu.Lock()
	s := m.sessions[key(ctx)]
	delete(m.sessions, key(ctx))
	m.mu.Unlock()
	if s == nil {
		return CloseResult{}, nil
	}
	m.closeSession(s)
	return CloseResult{Closed: true}, nil
}

// open returns the conversation's running browser, or an error telling
// the model to open a page first.
func (m *Manager) open(ctx context.Context) (*session, error) {
	s, err := m.session(ctx, false)
	if err != nil {
		return nil, err
	}
	if s == nil {
		return nil, errors.New("no page is open in this conversation: call browser_open first")
	}
	return s, nil
}

// refAttr makes the attribute name snapshots mark elements with: random
// per browser, so a page cannot guess it.
func refAttr() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return "data-rv-" + hex.EncodeToString(b)
}

// jsCall is the expression calling the function fn with args.
func jsCall(fn string, args ...any) (string, error) {
	enc := make([]string, len(args))
	for i, a := range args {
		b, err := json.Marshal(a)
		if err != nil {
			return "", fmt.Errorf("encode a script argument: %w", err)
		}
		enc[i] = string(b)
	}
	return "(" + strings.TrimSpace(stripComments(fn)) + ")(" + strings.Join(enc, ",") + ")", nil
}

// stripComments drops the leading // comment lines of an embedded script.
func stripComments(js string) string {
	lines := strings.Split(js, "\n")
	for len(lines) > 0 && strings.HasPrefix(strings.TrimSpace(lines[0]), "//") {
		lines = lines[1:]
	}
	return strings.Join(lines, "\n")
}

// pressEnter sends the Enter key to the focused element.
func pressEnter(ctx context.Context) error {
	return chromedp.Do(ctx, chromedp.KeyEvent("\r"))
}
