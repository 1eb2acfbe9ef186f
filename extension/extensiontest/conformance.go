package extensiontest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/robfig/cron/v3"
	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/tool"
)

// Bounds used by Run.
const (
	// HealthBound is how long a health check may take.
	HealthBound = 2 * time.Second
	// ServiceStopBound is how long ServiceProvider.Run may take to return
	// after its context is cancelled.
	ServiceStopBound = 5 * time.Second
	// CallBound is how long any other extension method may take in the
	// suite before it counts as hanging.
	CallBound = 30 * time.Second
)

var (
	validID          = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)
	validToolName    = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)
	validChannelName = regexp.MustCompile(`^[a-z][a-z0-9_-]*$`)
)

// Run is the conformance suite for one registered extension. It checks, as
// subtests:
//
//   - registration: a valid id, a one-line description, a constructor that
//     returns a fresh non-nil instance on every call, valid dependencies;
//   - lifecycle: Init succeeds with the WithConfig configuration (empty by
//     default) without starting goroutines; the capabilities are consistent
//     (tool names valid and unique with a description and an object schema;
//     channel names; agents; scheduled jobs with parseable schedules;
//     context providers answer an empty request; setup forms); Start
//     succeeds; Health returns within HealthBound; OnReady does not panic;
//     ServiceProvider.Run returns nil within ServiceStopBound of its context
//     being cancelled; Stop and Destroy succeed; no goroutine is left
//     behind;
//   - stop without start, and stop after a failed start: Stop and Destroy
//     succeed after Init alone and after a Start given a cancelled context.
//
// Run's leak checks see every goroutine in the process: do not call it from
// a parallel test.
func Run(t *testing.T, info extension.Info, opts ...Option) {
	t.Helper()
	opts = append(slices.Clone(opts), WithID(info.ID))
	t.Run("registration", func(t *testing.T) { checkRegistration(t, info) })
	if info.New == nil {
		return
	}
	t.Run("lifecycle", func(t *testing.T) { checkLifecycle(t, info, opts) })
	t.Run("stop_without_start", func(t *testing.T) { checkStopWithoutStart(t, info, opts, false) })
	t.Run("stop_after_failed_start", func(t *testing.T) { checkStopWithoutStart(t, info, opts, true) })
}

func checkRegistration(t *testing.T, info extension.Info) {
	if !validID.MatchString(info.ID) {
		t.Errorf("id %q does not match %s", info.ID, validID)
	}
	if strings.TrimSpace(info.Description) == "" || strings.ContainsAny(info.Description, "\r\n") {
		t.Errorf("description %q must be one non-empty line", info.Description)
	}
	seen := map[string]bool{}
	for _, d := range info.DependsOn {
		switch {
		case !validID.MatchString(d):
			t.Errorf("dependency %q is not a valid id", d)
		case d == info.ID:
			t.Errorf("extension depends on itself")
		case seen[d]:
			t.Errorf("dependency %q listed twice", d)
		}
		seen[d] = true
	}
	if info.New == nil {
		t.Fatal("Info.New is nil")
	}
	var a, b extension.Extension
	if err := call(func() error { a, b = info.New(), info.New(); return nil }); err != nil {
		t.Fatalf("New: %v", err)
	}
	if a == nil || b == nil {
		t.Fatal("New returned nil")
	}
	va := reflect.ValueOf(a)
	if va.Kind() == reflect.Pointer && va.Type().Elem().Size() > 0 && a == b {
		t.Error("New returned the same instance twice; it must return a fresh one on every call")
	}
}

func checkLifecycle(t *testing.T, info extension.Info, opts []Option) {
	before := goleak.IgnoreCurrent()
	s := buildSettings(opts)
	leakOpts := []goleak.Option{before}
	for _, fn := range s.leakIgnore {
		leakOpts = append(leakOpts, goleak.IgnoreAnyFunction(fn))
	}
	h := NewHost(t, opts...)
	ext := info.New()
	ctx := t.Context()

	if err := bound(ctx, "Init", func(ctx context.Context) error { return ext.Init(ctx, h) }); err != nil {
		t.Fatal(err)
	}
	if err := goleak.Find(append(leakOpts, goleak.IgnoreAnyFunction("database/sql.(*DB).connectionOpener"))...); err != nil {
		t.Errorf("Init must not start goroutines: %v", err)
	}
	if s, ok := ext.(extension.Starter); ok {
		if err := bound(ctx, "Start", s.Start); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("capabilities", func(t *testing.T) { checkCapabilities(t, ext) })

	if hc, ok := ext.(extension.HealthChecker); ok {
		hctx, cancel := context.WithTimeout(ctx, HealthBound)
		err := within(HealthBound, func() error { return hc.Health(hctx) })
		cancel()
		if err != nil {
			t.Errorf("Health: %v", err)
		}
	}
	if l, ok := ext.(extension.ReadyListener); ok {
		if err := bound(ctx, "OnReady", func(ctx context.Context) error { l.OnReady(ctx); return nil }); err != nil {
			t.Error(err)
		}
	}
	if svc, ok := ext.(extension.ServiceProvider); ok {
		checkService(t, ctx, svc)
	}
	if st, ok := ext.(extension.Stopper); ok {
		if err := bound(ctx, "Stop", st.Stop); err != nil {
			t.Error(err)
		}
	}
	if d, ok := ext.(extension.Destroyer); ok {
		if err := bound(ctx, "Destroy", d.Destroy); err != nil {
			t.Error(err)
		}
	}
	if err := h.Close(); err != nil {
		t.Errorf("close host: %v", err)
	}
	if err := goleak.Find(leakOpts...); err != nil {
		t.Errorf("goroutines left after Destroy: %v", err)
	}
}

// checkService runs the service, cancels it and expects nil promptly.
func checkService(t *testing.T, ctx context.Context, svc extension.ServiceProvider) {
	t.Helper()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- call(func() error { return svc.Run(rctx) }) }()
	cancel()
	timer := time.NewTimer(ServiceStopBound)
	defer timer.Stop()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("ServiceProvider.Run returned %v after its context was cancelled; want nil", err)
		}
	case <-timer.C:
		t.Errorf("ServiceProvider.Run did not return within %v of its context being cancelled", ServiceStopBound)
	}
}

func checkStopWithoutStart(t *testing.T, info extension.Info, opts []Option, failStart bool) {
	h := NewHost(t, opts...)
	ext := info.New()
	ctx := t.Context()
	if err := bound(ctx, "Init", func(ctx context.Context) error { return ext.Init(ctx, h) }); err != nil {
		t.Fatal(err)
	}
	if s, ok := ext.(extension.Starter); ok && failStart {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		err := call(func() error { return s.Start(cctx) })
		var p *panicError
		if asPanic(err, &p) {
			t.Errorf("Start with a cancelled context panicked: %v\n%s", p.value, p.stack)
		}
	}
	if st, ok := ext.(extension.Stopper); ok {
		if err := bound(ctx, "Stop", st.Stop); err != nil {
			t.Error(err)
		}
	}
	if d, ok := ext.(extension.Destroyer); ok {
		if err := bound(ctx, "Destroy", d.Destroy); err != nil {
			t.Error(err)
		}
	}
}

func checkCapabilities(t *testing.T, ext extension.Extension) {
	ctx := t.Context()
	if p, ok := ext.(extension.ToolProvider); ok {
		t.Run("tools", func(t *testing.T) {
			var tools []tool.Tool
			if err := call(func() error { tools = p.Tools(); return nil }); err != nil {
				t.Fatalf("Tools: %v", err)
			}
			CheckTools(t, tools)
		})
	}
	if p, ok := ext.(extension.ChannelProvider); ok {
		t.Run("channel", func(t *testing.T) {
			var name string
			if err := call(func() error { name = p.ChannelName(); return nil }); err != nil {
				t.Fatalf("ChannelName: %v", err)
			}
			if !validChannelName.MatchString(name) {
				t.Errorf("channel name %q does not match %s", name, validChannelName)
			}
			if sc, ok := ext.(extension.StreamingChannelProvider); ok {
				if _, ok := any(sc).(extension.ChannelProvider); !ok {
					t.Error("streaming channel is not a channel")
				}
			}
		})
	}
	if p, ok := ext.(extension.AgentProvider); ok {
		t.Run("agent", func(t *testing.T) {
			var d extension.AgentDescriptor
			if err := call(func() error { d = p.AgentDescriptor(); return nil }); err != nil {
				t.Fatalf("AgentDescriptor: %v", err)
			}
			if d.Name == "" || strings.TrimSpace(d.Description) == "" {
				t.Errorf("agent descriptor %+v needs a name and a description", d)
			}
			if d.AsTool && !validToolName.MatchString(d.Name) {
				t.Errorf("agent %q is offered as a tool but its name does not match %s", d.Name, validToolName)
			}
		})
	}
	if p, ok := ext.(extension.SchedulerProvider); ok {
		t.Run("jobs", func(t *testing.T) {
			var jobs []extension.Job
			if err := call(func() error { jobs = p.ScheduledJobs(); return nil }); err != nil {
				t.Fatalf("ScheduledJobs: %v", err)
			}
			CheckJobs(t, jobs)
		})
	}
	if p, ok := ext.(extension.ContextProvider); ok {
		t.Run("context", func(t *testing.T) {
			if err := call(func() error { p.ContextPriority(); return nil }); err != nil {
				t.Fatalf("ContextPriority: %v", err)
			}
			if err := bound(ctx, "PromptContext", func(ctx context.Context) error {
				_, err := p.PromptContext(ctx, extension.ContextRequest{})
				return err
			}); err != nil {
				t.Errorf("with an empty request: %v", err)
			}
		})
	}
	if p, ok := ext.(extension.SetupProvider); ok {
		t.Run("setup", func(t *testing.T) {
			var schema extension.SetupSchema
			if err := bound(ctx, "SetupSchema", func(ctx context.Context) error {
				schema = p.SetupSchema(ctx)
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			CheckSetupSchema(t, schema)
		})
	}
}

// CheckTools reports (t.Errorf) every tool that breaks the tool.Tool rules:
// nil, an invalid or duplicate name, an empty description, a schema that is
// not a JSON object schema ("type": "object").
func CheckTools(t testing.TB, tools []tool.Tool) {
	t.Helper()
	seen := map[string]bool{}
	for i, tl := range tools {
		if tl == nil {
			t.Errorf("tool %d is nil", i)
			continue
		}
		name := tl.Name()
		if !validToolName.MatchString(name) {
			t.Errorf("tool name %q does not match %s", name, validToolName)
		}
		if seen[name] {
			t.Errorf("tool name %q used twice", name)
		}
		seen[name] = true
		if strings.TrimSpace(tl.Description()) == "" {
			t.Errorf("tool %q has no description", name)
		}
		if err := checkObjectSchema(tl.Schema()); err != nil {
			t.Errorf("tool %q schema: %v", name, err)
		}
	}
}

func checkObjectSchema(raw json.RawMessage) error {
	var schema struct {
		Type       json.RawMessage `json:"type"`
		Properties json.RawMessage `json:"properties"`
	}
	if err := json.Unmarshal(raw, &schema); err != nil {
		return fmt.Errorf("not a JSON object: %w", err)
	}
	var typ string
	if err := json.Unmarshal(schema.Type, &typ); err != nil || typ != "object" {
		return fmt.Errorf(`"type" is %s, want "object"`, orMissing(schema.Type))
	}
	if len(schema.Properties) > 0 {
		var props map[string]json.RawMessage
		if err := json.Unmarshal(schema.Properties, &props); err != nil {
			return fmt.Errorf(`"properties" is not an object: %w`, err)
		}
	}
	return nil
}

func orMissing(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "missing"
	}
	return string(raw)
}

// CheckJobs reports every scheduled job without a unique name, without a
// function, or whose schedule is neither a 5-field cron expression nor a
// descriptor such as "@every 5m" or "@daily".
func CheckJobs(t testing.TB, jobs []extension.Job) {
	t.Helper()
	seen := map[string]bool{}
	for _, j := range jobs {
		if j.Name == "" {
			t.Errorf("job with schedule %q has no name", j.Schedule)
		}
		if seen[j.Name] {
			t.Errorf("job name %q used twice", j.Name)
		}
		seen[j.Name] = true
		if j.Run == nil && j.Report == nil {
			t.Errorf("job %q has neither a Run nor a Report function", j.Name)
		}
		if _, err := cron.ParseStandard(j.Schedule); err != nil {
			t.Errorf("job %q schedule %q: %v", j.Name, j.Schedule, err)
		}
	}
}

// CheckSetupSchema reports a form without a title, fields without a key or
// label, duplicate keys, unknown kinds and select fields without options.
func CheckSetupSchema(t testing.TB, s extension.SetupSchema) {
	t.Helper()
	if strings.TrimSpace(s.Title) == "" {
		t.Error("setup schema has no title")
	}
	seen := map[string]bool{}
	for _, f := range s.Fields {
		if f.Key == "" || strings.TrimSpace(f.Label) == "" {
			t.Errorf("setup field %+v needs a key and a label", f)
		}
		if seen[f.Key] {
			t.Errorf("setup field key %q used twice", f.Key)
		}
		seen[f.Key] = true
		switch f.Kind {
		case extension.FieldText, extension.FieldSecret, extension.FieldURL:
		case extension.FieldSelect:
			if len(f.Options) == 0 {
				t.Errorf("select field %q has no options", f.Key)
			}
		default:
			t.Errorf("setup field %q has unknown kind %q", f.Key, f.Kind)
		}
	}
}

// panicError is a recovered panic with its stack.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v\n%s", p.value, p.stack) }

func asPanic(err error, p **panicError) bool {
	pe, ok := err.(*panicError)
	if ok {
		*p = pe
	}
	return ok
}

// call runs fn, turning a panic into an error carrying the stack.
func call(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return fn()
}

// bound runs fn with a context bounded by CallBound and fails if it has
// not returned by then.
func bound(ctx context.Context, what string, fn func(ctx context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, CallBound)
	defer cancel()
	if err := within(CallBound, func() error { return fn(cctx) }); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

// within runs fn and waits at most d (plus a small grace for a function
// that honours a context with the same deadline) for it to return.
func within(d time.Duration, fn func() error) error {
	done := make(chan error, 1)
	go func() { done <- call(fn) }()
	timer := time.NewTimer(d + d/10)
	defer timer.Stop()
	select {
	case err := <-done:
		return err
	case <-timer.C:
		return fmt.Errorf("did not return within %v", d)
	}
}
