// Package extensiontest helps test Reverie extensions, in tree and out of
// tree: a fake extension.Host (NewHost) backed by a real SQLite database in
// a temporary directory, an in-memory event bus that records what is
// published and delivers synchronously, a recording Receive and a settable
// clock; and a conformance suite (Run) that every extension's tests call:
//
//	func TestConformance(t *testing.T) {
//		info, _ := extension.Lookup("kv")
//		extensiontest.Run(t, info, extensiontest.WithConfig("max_keys: 10"))
//	}
//
// It depends only on Reverie's public packages, the standard library and
// third-party modules, so out-of-tree extensions can use it.
//
// Concurrency: every Host, Bus and Clock method is safe for concurrent use.
// The Bus delivers each event on the publishing goroutine, before Publish
// returns.
package extensiontest

import (
	"bytes"
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net/url"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// DefaultTime is the fake clock's time unless WithClock says otherwise:
// Monday 6 January 2025, 09:00 UTC.
var DefaultTime = time.Date(2025, time.January, 6, 9, 0, 0, 0, time.UTC)

// DatabaseFile is the name of the SQLite database inside the data dir.
const DatabaseFile = "reverie.db"

// Option configures NewHost and Run.
type Option func(*settings)

type settings struct {
	id         string
	config     string
	now        func() time.Time
	dataDir    string
	receive    func(ctx context.Context, msg chat.Inbound) error
	leakIgnore []string
}

// WithID sets the extension id the host reports (default "test"; Run uses
// the id of the Info it checks).
func WithID(id string) Option { return func(s *settings) { s.id = id } }

// WithConfig gives the extension's configuration section as YAML (without
// the top-level id key), decoded strictly by DecodeConfig.
func WithConfig(yamlText string) Option { return func(s *settings) { s.config = yamlText } }

// WithClock replaces the fixed clock by now (time.Now, or a synctest-aware
// clock).
func WithClock(now func() time.Time) Option { return func(s *settings) { s.now = now } }

// WithDataDir uses dir as the data dir instead of a fresh t.TempDir().
func WithDataDir(dir string) Option { return func(s *settings) { s.dataDir = dir } }

// WithReceive makes Receive call fn after recording the message; fn's error
// is returned to the extension.
func WithReceive(fn func(ctx context.Context, msg chat.Inbound) error) Option {
	return func(s *settings) { s.receive = fn }
}

// IgnoreGoroutine makes Run's leak check ignore goroutines whose stack
// contains the function fn (fully qualified, as goleak.IgnoreAnyFunction),
// for libraries that keep package-level workers.
func IgnoreGoroutine(fn string) Option {
	return func(s *settings) { s.leakIgnore = append(s.leakIgnore, fn) }
}

func buildSettings(opts []Option) settings {
	s := settings{id: "test"}
	for _, o := range opts {
		o(&s)
	}
	return s
}

// Host is a fake extension.Host for tests.
type Host struct {
	t       testing.TB
	id      string
	config  string
	dataDir string
	logger  *slog.Logger
	logs    *logSink
	bus     *Bus
	clock   *Clock
	receive func(ctx context.Context, msg chat.Inbound) error

	mu       sync.Mutex
	received []chat.Inbound
	secrets  []string
	db       *sql.DB
	closed   bool
}

// NewHost returns a Host with a fresh data dir, an empty configuration, the
// fixed DefaultTime clock and no subscribers. Its database (DataDir/
// reverie.db) is opened on first use and closed by Close or at the end of
// the test.
func NewHost(t testing.TB, opts ...Option) *Host {
	t.Helper()
	s := buildSettings(opts)
	if s.dataDir == "" {
		s.dataDir = t.TempDir()
	}
	clock := NewClock(DefaultTime)
	if s.now != nil {
		clock = &Clock{now: s.now}
	}
	sink := &logSink{t: t}
	t.Cleanup(sink.finish)
	h := &Host{
		t:       t,
		id:      s.id,
		config:  s.config,
		dataDir: s.dataDir,
		logs:    sink,
		logger:  slog.New(slog.NewTextHandler(sink, &slog.HandlerOptions{Level: slog.LevelDebug})).With("ext", s.id),
		clock:   clock,
		receive: s.receive,
	}
	sink.redact = h.Redact
	h.bus = NewBus(clock.Now)
	h.bus.scope = s.id
	t.Cleanup(func() {
		if err := h.Close(); err != nil {
			t.Errorf("close fake host: %v", err)
		}
	})
	return h
}

// ID is the extension id.
func (h *Host) ID() string { return h.id }

// Logger logs to the test output (while the test runs) and to Logs.
func (h *Host) Logger() *slog.Logger { return h.logger }

// DataDir is the host's data directory.
func (h *Host) DataDir() string { return h.dataDir }

// DecodeConfig decodes the WithConfig YAML into v strictly (unknown keys
// are errors); with no configuration v is left unchanged.
func (h *Host) DecodeConfig(v any) error {
	if strings.TrimSpace(h.config) == "" {
		return nil
	}
	if err := yaml.UnmarshalWithOptions([]byte(h.config), v, yaml.Strict()); err != nil {
		return fmt.Errorf("decode configuration of extension %q: %w", h.id, err)
	}
	return nil
}

// Migrate applies migrations to DB (extension.Migrate).
func (h *Host) Migrate(ctx context.Context, component string, files fs.FS, dir string) error {
	return extension.Migrate(ctx, h.DB(), component, files, dir)
}

// DB opens (once) and returns the SQLite database in the data dir, with a
// busy timeout, foreign keys and WAL like the real one. Opening failures
// fail the test.
func (h *Host) DB() *sql.DB {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.db != nil {
		return h.db
	}
	if h.closed {
		h.t.Errorf("extensiontest: DB used after Close")
		return nil
	}
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "journal_mode(WAL)")
	q.Set("_txlock", "immediate")
	q.Set("_time_format", "sqlite")
	db, err := sql.Open("sqlite", "file:"+filepath.Join(h.dataDir, DatabaseFile)+"?"+q.Encode())
	if err != nil {
		h.t.Errorf("extensiontest: open database: %v", err)
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		h.t.Errorf("extensiontest: open database: %v", err)
		return nil
	}
	h.db = db
	return db
}

// Bus returns the host's bus as the extension sees it.
func (h *Host) Bus() extension.Bus { return h.bus }

// EventBus returns the fake bus, for assertions and for publishing events
// to the extension.
func (h *Host) EventBus() *Bus { return h.bus }

// Receive records msg and, with WithReceive, hands it on.
func (h *Host) Receive(ctx context.Context, msg chat.Inbound) error {
	h.mu.Lock()
	h.received = append(h.received, msg)
	h.mu.Unlock()
	if h.receive != nil {
		return h.receive(ctx, msg)
	}
	return nil
}

// WasReceived reports whether a message with msg's channel and ID was
// passed to Receive before (the kernel's host asks the router); a message without an ID never was.
func (h *Host) WasReceived(_ context.Context, msg chat.Inbound) (bool, error) {
	if msg.ID == "" {
		return false, nil
	}
	channel := func(m chat.Inbound) string { return cmp.Or(m.Address.Channel, m.Address.Thread.Channel()) }
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, m := range h.received {
		if m.ID == msg.ID && channel(m) == channel(msg) {
			return true, nil
		}
	}
	return false, nil
}

// Received returns the messages passed to Receive, in order.
func (h *Host) Received() []chat.Inbound {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.received)
}

// Now reads the host's clock.
func (h *Host) Now() time.Time { return h.clock.Now() }

// Clock returns the host's clock, to set or advance it.
func (h *Host) Clock() *Clock { return h.clock }

// RegisterSecret records value (see Secrets); from then on Redact, Logs
// and the test output replace it, as the real host does (values shorter
// than 8 bytes are ignored, like there). The fake replaces the value as
// written only, not its encoded forms.
func (h *Host) RegisterSecret(value string) {
	if len(value) < minSecretLen {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if !slices.Contains(h.secrets, value) {
		h.secrets = append(h.secrets, value)
	}
}

// Redact replaces every registered secret in text by
// extension.RedactedSecret.
func (h *Host) Redact(text string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, v := range h.secrets {
		text = strings.ReplaceAll(text, v, extension.RedactedSecret)
	}
	return text
}

// Secrets returns the values passed to RegisterSecret, in order, for tests
// asserting that an extension registers its credentials.
func (h *Host) Secrets() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.secrets)
}

// minSecretLen is the real host's shortest registered secret.
const minSecretLen = 8

// Logs returns everything logged through Logger so far, as slog text
// lines.
func (h *Host) Logs() string { return h.logs.String() }

// Close closes the database, if it was opened. It is called at the end of
// the test too; calling it twice is harmless.
func (h *Host) Close() error {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.closed = true
	if h.db == nil {
		return nil
	}
	err := h.db.Close()
	h.db = nil
	if err != nil {
		return fmt.Errorf("close database: %w", err)
	}
	return nil
}

// Clock is a settable clock. Unless built from a function (WithClock), it
// stands still until Set or Advance.
type Clock struct {
	mu  sync.Mutex
	t   time.Time
	now func() time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now != nil {
		return c.now()
	}
	return c.t
}

// Set stops the clock at t (also a clock built from a function).
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = nil
	c.t = t
}

// Advance moves the clock forward by d (from its current reading).
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.now != nil {
		c.t = c.now()
		c.now = nil
	}
	c.t = c.t.Add(d)
}

// logSink keeps every log line and copies it to the test output while the
// test runs (writing to a finished test's output would panic).
type logSink struct {
	t      testing.TB
	redact func(string) string // the host's registered secrets
	mu     sync.Mutex
	buf    bytes.Buffer
	done   bool
}

func (s *logSink) Write(p []byte) (int, error) {
	n := len(p)
	if s.redact != nil {
		p = []byte(s.redact(string(p)))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.buf.Write(p)
	if !s.done {
		_, _ = s.t.Output().Write(p)
	}
	return n, nil
}

func (s *logSink) finish() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.done = true
}

func (s *logSink) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}

var (
	_ extension.Host = (*Host)(nil)
	_ io.Writer      = (*logSink)(nil)
)
