package apptest

import (
	"github.com/reverie-ai/reverie/internal/providers"

	"context"
	"io"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// ChannelName is the test channel's name; its threads are "test:<x>".
const ChannelName = "test"

// Harness is a running app with a fake model server and a test channel.
type Harness struct {
	App     *app.App
	Model   *llmtest.OpenAIServer
	Channel *Channel
	DataDir string

	cancel context.CancelFunc
	done   chan error
}

// Option adjusts the harness before start.
type Option func(*settings)

type settings struct {
	env      []string
	modelEnv func(baseURL string) []string
	registry []extension.Info
	dataDir  string
	console  io.Writer
	clock    providers.Clock
	now      func() time.Time
	handler  func(llmtest.ChatRequest) llmtest.ServerReply
}

// WithModel scripts the model before the app starts: for a restart whose
// resumed turn calls the model at once (Model.Handle after Start would
// leave it unscripted for a moment).
func WithModel(handler func(llmtest.ChatRequest) llmtest.ServerReply) Option {
	return func(s *settings) { s.handler = handler }
}

// WithModelClock drives the model providers' retry waits and timeouts
// with clock (providerstest.Clock: a 429's Retry-After takes no time).
func WithModelClock(clock providers.Clock) Option { return func(s *settings) { s.clock = clock } }

// WithNow runs the app on the clock now instead of time.Now (app.Options.Now):
// what it stores, reads and schedules is dated by now.
func WithNow(now func() time.Time) Option { return func(s *settings) { s.now = now } }

// WithConsole copies the app's console log to w (it also goes to the test
// log).
func WithConsole(w io.Writer) Option { return func(s *settings) { s.console = w } }

// WithDataDir runs on an existing data dir (a restart) instead of a new one.
func WithDataDir(dir string) Option { return func(s *settings) { s.dataDir = dir } }

// WithEnv adds environment variables (REVERIE_… overrides).
func WithEnv(kv ...string) Option { return func(s *settings) { s.env = append(s.env, kv...) } }

// WithModelEnv adds the environment variables env returns for the fake
// model server's base URL (…/v1): to configure a model backend on it.
func WithModelEnv(env func(baseURL string) []string) Option {
	return func(s *settings) { s.modelEnv = env }
}

// WithExtensions adds extensions to the registry (the test channel is
// always present).
func WithExtensions(infos ...extension.Info) Option {
	return func(s *settings) { s.registry = append(s.registry, infos...) }
}

// Start builds and runs the app; it is stopped when the test ends.
func Start(t testing.TB, opts ...Option) *Harness {
	t.Helper()
	model := llmtest.NewOpenAIServer(t)
	s := &settings{}
	for _, o := range opts {
		o(s)
	}
	if s.handler != nil {
		model.Handle(s.handler)
	}
	dir := s.dataDir
	if dir == "" {
		dir = filepath.Join(t.TempDir(), "data")
	}
	env := append([]string{
		"OPENAI_BASE_URL=" + model.BaseURL(),
		"OPENAI_API_KEY=sk-test",
		"REVERIE_MODEL=gpt-test",
		"REVERIE_LOG__FILE=false",
		"REVERIE_TOOLS__SHELL__SANDBOX=off",
	}, s.env...)
	if s.modelEnv != nil {
		env = append(env, s.modelEnv(model.BaseURL())...)
	}
	channel := &Channel{}
	registry := append([]extension.Info{channel.Info()}, s.registry...)
	ctx, cancel := context.WithCancel(context.Background())
	var console io.Writer = testWriter{t}
	if s.console != nil {
		console = io.MultiWriter(console, s.console)
	}
	a, err := app.New(ctx, app.Options{DataDir: dir, Env: env, Console: console, Registry: registry, ModelClock: s.clock, Now: s.now})
	if err != nil {
		cancel()
		t.Fatalf("start app: %v", err)
	}
	h := &Harness{App: a, Model: model, Channel: channel, DataDir: dir, cancel: cancel, done: make(chan error, 1)}
	go func() { h.done <- a.Run(ctx) }()
	select {
	case <-a.Ready():
	case err := <-h.done:
		t.Fatalf("app stopped before ready: %v", err)
	}
	t.Cleanup(func() {
		if err := h.Stop(); err != nil {
			t.Errorf("stop app: %v", err)
		}
	})
	return h
}

// Stop stops the app (idempotent) and returns Run's error.
func (h *Harness) Stop() error {
	if h.cancel == nil {
		return nil
	}
	h.cancel()
	h.cancel = nil
	return <-h.done
}

// Send hands a message to the router as the test channel would.
func (h *Harness) Send(t *testing.T, thread, text string) {
	t.Helper()
	id := chat.NewThreadID(ChannelName, thread)
	if err := h.Channel.host.Receive(context.Background(), chat.Inbound{
		Address: chat.Address{Channel: ChannelName, Thread: id},
		Sender:  chat.Sender{ID: "tester"},
		Text:    text,
	}); err != nil {
		t.Fatalf("receive: %v", err)
	}
}

// Channel is a recording, non-streaming channel extension.
type Channel struct {
	host extension.Host
	mu   sync.Mutex
	sent []chat.Outbound
	cond chan struct{} // closed and replaced on every Send
}

// Info registers the channel (under the id "testchan").
func (c *Channel) Info() extension.Info {
	return extension.Info{ID: "testchan", New: func() extension.Extension { return c }, Description: "test channel"}
}

// Init keeps the host for Receive.
func (c *Channel) Init(_ context.Context, host extension.Host) error {
	c.host = host
	c.mu.Lock()
	c.cond = make(chan struct{})
	c.mu.Unlock()
	return nil
}

// ChannelName implements extension.ChannelProvider.
func (c *Channel) ChannelName() string { return ChannelName }

// Send records a message.
func (c *Channel) Send(_ context.Context, msg chat.Outbound) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.sent = append(c.sent, msg)
	close(c.cond)
	c.cond = make(chan struct{})
	return nil
}

// patience bounds the tests' waits for an event (a message delivered, a
// frame, a page state): a wait ends as soon as the event happens, so the
// bound only decides when a test that will never see it fails. It is
// generous because CI runs the whole-app tests with -race on a loaded
// machine.
const patience = 2 * time.Minute

// WaitFor waits until n messages have been sent to thread and returns them.
func (c *Channel) WaitFor(t *testing.T, thread string, n int) []chat.Outbound {
	t.Helper()
	id := chat.NewThreadID(ChannelName, thread)
	deadline := time.After(patience)
	for {
		c.mu.Lock()
		var got []chat.Outbound
		for _, m := range c.sent {
			if m.Address.Thread == id {
				got = append(got, m)
			}
		}
		wait := c.cond
		c.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-wait:
		case <-deadline:
			t.Fatalf("thread %s: %d messages delivered after %v, want %d: %+v", id, len(got), patience, n, got)
		}
	}
}

var (
	_ extension.Extension       = (*Channel)(nil)
	_ extension.ChannelProvider = (*Channel)(nil)
)

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Logf("%s", p)
	return len(p), nil
}

var _ io.Writer = testWriter{}
