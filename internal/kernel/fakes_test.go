package kernel

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/logtest"
	"github.com/reverie-ai/reverie/tool"
)

// calls records lifecycle calls across extensions, in order.
type calls struct {
	mu  sync.Mutex
	log []string
}

func (c *calls) add(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.log = append(c.log, fmt.Sprintf(format, args...))
}

func (c *calls) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.log)
}

// behaviour scripts a fake extension.
type behaviour struct {
	initErr    error
	startErr   error
	panicIn    string // "init", "start", "stop", "run"
	run        func(ctx context.Context) error
	health     func(ctx context.Context) error
	stop       func(ctx context.Context) error
	tools      []string
	decodeInto *fakeSettings
}

// fake is a scriptable extension with every lifecycle method.
type fake struct {
	id    string
	b     behaviour
	calls *calls
	host  extension.Host
}

type fakeSettings struct {
	Greeting string `json:"greeting"`
}

func (f *fake) Init(_ context.Context, h extension.Host) error {
	f.calls.add("init %s", f.id)
	f.host = h
	if f.b.panicIn == "init" {
		panic("init exploded")
	}
	if f.b.decodeInto != nil {
		if err := h.DecodeConfig(f.b.decodeInto); err != nil {
			return err
		}
	}
	return f.b.initErr
}

func (f *fake) Start(context.Context) error {
	f.calls.add("start %s", f.id)
	if f.b.panicIn == "start" {
		panic("start exploded")
	}
	return f.b.startErr
}

func (f *fake) Stop(ctx context.Context) error {
	f.calls.add("stop %s", f.id)
	if f.b.panicIn == "stop" {
		panic("stop exploded")
	}
	if f.b.stop != nil {
		return f.b.stop(ctx)
	}
	return nil
}

func (f *fake) Destroy(context.Context) error {
	f.calls.add("destroy %s", f.id)
	return nil
}

// service is a fake with a background service and health check.
type service struct{ fake }

func (s *service) Run(ctx context.Context) error {
	if s.b.panicIn == "run" {
		panic("service exploded")
	}
	if s.b.run != nil {
		return s.b.run(ctx)
	}
	<-ctx.Done()
	return nil
}

func (s *service) Health(ctx context.Context) error {
	if s.b.health != nil {
		return s.b.health(ctx)
	}
	return nil
}

// toolset is a fake providing tools by name.
type toolset struct{ fake }

func (t *toolset) Tools() []tool.Tool {
	var out []tool.Tool
	for _, n := range t.b.tools {
		out = append(out, fakeTool{name: n, owner: t.id})
	}
	return out
}

type fakeTool struct{ name, owner string }

func (t fakeTool) Name() string        { return t.name }
func (t fakeTool) Description() string { return "Echoes its input back (from " + t.owner + ")." }
func (t fakeTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{}}`)
}
func (t fakeTool) Call(_ context.Context, args json.RawMessage) (tool.Result, error) {
	return tool.Result{Content: string(args)}, nil
}

// kind selects which fake type newInfo builds.
type kind int

const (
	plain kind = iota
	withService
	withTools
)

func newInfo(id string, deps []string, k kind, b behaviour, c *calls) extension.Info {
	return extension.Info{
		ID:          id,
		DependsOn:   deps,
		Description: "test extension " + id,
		New: func() extension.Extension {
			f := fake{id: id, b: b, calls: c}
			switch k {
			case withService:
				return &service{f}
			case withTools:
				return &toolset{f}
			}
			return &f
		},
	}
}

// fakeConfig records the ids it is asked about.
type fakeConfig struct {
	enabled  map[string]bool
	sections map[string]string // id → JSON
	mu       sync.Mutex
	decoded  []string
}

func (c *fakeConfig) ExtensionEnabled(id string, defaultOn bool) bool {
	if on, ok := c.enabled[id]; ok {
		return on
	}
	return defaultOn
}

func (c *fakeConfig) DecodeExtension(id string, v any) error {
	c.mu.Lock()
	c.decoded = append(c.decoded, id)
	c.mu.Unlock()
	s, ok := c.sections[id]
	if !ok {
		return nil
	}
	return json.Unmarshal([]byte(s), v)
}

// full implements every capability.
type full struct {
	fake
	priority int
	channel  string
	ready    int
	mu       sync.Mutex
}

func (f *full) Tools() []tool.Tool {
	return []tool.Tool{fakeTool{name: f.id + "_echo", owner: f.id}}
}
func (f *full) ChannelName() string                       { return f.channel }
func (f *full) Send(context.Context, chat.Outbound) error { return nil }
func (f *full) OpenStream(context.Context, chat.Address) (extension.Stream, error) {
	return nil, errors.New("streaming is not supported by the test channel")
}
func (f *full) AgentDescriptor() extension.AgentDescriptor {
	return extension.AgentDescriptor{Name: f.id + "_agent", Description: "Answers test questions.", AsTool: true}
}
func (f *full) Invoke(_ context.Context, inv extension.AgentInvocation) (extension.AgentResponse, error) {
	return extension.AgentResponse{Text: "done: " + inv.Task}, nil
}
func (f *full) ScheduledJobs() []extension.Job {
	return []extension.Job{{Name: "tick", Schedule: "@every 5m", Run: func(context.Context) error { return nil }}}
}
func (f *full) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (f *full) ContextPriority() int          { return f.priority }
func (f *full) PromptContext(context.Context, extension.ContextRequest) (string, error) {
	return "context from " + f.id, nil
}
func (f *full) SetupSchema(context.Context) extension.SetupSchema {
	return extension.SetupSchema{Title: "Test", Fields: []extension.SetupField{
		{Key: "token", Label: "Token", Kind: extension.FieldSecret, Required: true},
		{Key: "mode", Label: "Mode", Kind: extension.FieldSelect, Options: []string{"a", "b"}},
	}}
}
func (f *full) ApplySetup(context.Context, extension.SetupValues) error { return nil }
func (f *full) Health(context.Context) error                            { return nil }
func (f *full) OnReady(context.Context) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ready++
}

func fullInfo(id string, priority int, c *calls) extension.Info {
	return extension.Info{
		ID:          id,
		Description: "extension with every capability",
		New: func() extension.Extension {
			return &full{fake: fake{id: id, calls: c}, priority: priority, channel: id + "chan"}
		},
	}
}

var (
	_ extension.Extension                = (*full)(nil)
	_ extension.Starter                  = (*full)(nil)
	_ extension.Stopper                  = (*full)(nil)
	_ extension.Destroyer                = (*full)(nil)
	_ extension.HealthChecker            = (*full)(nil)
	_ extension.ReadyListener            = (*full)(nil)
	_ extension.ToolProvider             = (*full)(nil)
	_ extension.StreamingChannelProvider = (*full)(nil)
	_ extension.AgentProvider            = (*full)(nil)
	_ extension.SchedulerProvider        = (*full)(nil)
	_ extension.ServiceProvider          = (*full)(nil)
	_ extension.ContextProvider          = (*full)(nil)
	_ extension.SetupProvider            = (*full)(nil)
)

func newLogger() (*slog.Logger, *logtest.Buffer) {
	b := &logtest.Buffer{}
	return slog.New(slog.NewTextHandler(b, &slog.HandlerOptions{Level: slog.LevelDebug})), b
}
