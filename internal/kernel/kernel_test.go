package kernel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func ids(st []Status) []string {
	var out []string
	for _, s := range st {
		out = append(out, s.ID)
	}
	return out
}

func statusOf(t *testing.T, k *Kernel, id string) Status {
	t.Helper()
	for _, s := range k.Status() {
		if s.ID == id {
			return s
		}
	}
	t.Fatalf("no status for %q", id)
	return Status{}
}

func mustNew(t *testing.T, opts Options) *Kernel {
	t.Helper()
	k, err := New(opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = k.Shutdown(context.Background()) })
	return k
}

func TestOrder(t *testing.T) {
	type ext struct {
		id   string
		deps []string
	}
	tests := []struct {
		name string
		exts []ext
		want []string
	}{
		{"independent sorted by id", []ext{{"c", nil}, {"a", nil}, {"b", nil}}, []string{"a", "b", "c"}},
		{"chain", []ext{{"a", []string{"b"}}, {"b", []string{"c"}}, {"c", nil}}, []string{"c", "b", "a"}},
		{"diamond", []ext{{"top", []string{"left", "right"}}, {"left", []string{"base"}}, {"right", []string{"base"}}, {"base", nil}},
			[]string{"base", "left", "right", "top"}},
		{"diamond with repeated dependency", []ext{{"d", []string{"b", "c", "b"}}, {"b", []string{"a"}}, {"c", []string{"a"}}, {"a", nil}},
			[]string{"a", "b", "c", "d"}},
		{"dependency sorts after unrelated ids", []ext{{"a", []string{"z"}}, {"m", nil}, {"z", nil}}, []string{"m", "z", "a"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &calls{}
			var reg []extension.Info
			for _, e := range tc.exts {
				reg = append(reg, newInfo(e.id, e.deps, plain, behaviour{}, c))
			}
			k := mustNew(t, Options{Registry: reg})
			if got := ids(k.Status()); !slices.Equal(got, tc.want) {
				t.Fatalf("order = %v, want %v", got, tc.want)
			}
			if err := k.Init(t.Context()); err != nil {
				t.Fatal(err)
			}
			var want []string
			for _, id := range tc.want {
				want = append(want, "init "+id)
			}
			if got := c.list(); !slices.Equal(got, want) {
				t.Fatalf("calls = %v, want %v", got, want)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	c := &calls{}
	info := func(id string, deps ...string) extension.Info { return newInfo(id, deps, plain, behaviour{}, c) }
	optIn := info("optin")
	optIn.Disabled = true
	tests := []struct {
		name   string
		reg    []extension.Info
		config Config
		want   []string
	}{
		{"two-cycle", []extension.Info{info("a", "b"), info("b", "a")}, nil,
			[]string{"dependency cycle: a → b → a"}},
		{"self dependency", []extension.Info{info("a", "a")}, nil, []string{"dependency cycle: a → a"}},
		{"three-cycle behind a root", []extension.Info{info("root"), info("x", "y", "root"), info("y", "z"), info("z", "x")}, nil,
			[]string{"dependency cycle: x → y → z → x"}},
		{"missing dependency", []extension.Info{info("a", "b")}, nil,
			[]string{`extension "a" depends on "b", which is not registered`}},
		{"dependency disabled by config", []extension.Info{info("a", "b"), info("b")}, &fakeConfig{enabled: map[string]bool{"b": false}},
			[]string{`extension "a" depends on "b", which is disabled`}},
		{"dependency on an opt-in extension", []extension.Info{info("a", "optin"), optIn}, nil,
			[]string{`extension "a" depends on "optin", which is disabled`}},
		{"every missing dependency named", []extension.Info{info("a", "x"), info("b", "y")}, nil,
			[]string{`extension "a" depends on "x"`, `extension "b" depends on "y"`}},
		{"duplicate id", []extension.Info{info("a"), info("a")}, nil, []string{`extension "a" registered twice`}},
		{"nil constructor", []extension.Info{{ID: "a"}}, nil, []string{`extension "a" has no constructor`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := New(Options{Registry: tc.reg, Config: tc.config})
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}

func TestDisabled(t *testing.T) {
	c := &calls{}
	optIn := newInfo("optin", nil, plain, behaviour{}, c)
	optIn.Disabled = true
	optInOn := newInfo("optin_on", nil, plain, behaviour{}, c)
	optInOn.Disabled = true
	reg := []extension.Info{
		newInfo("a", nil, plain, behaviour{}, c),
		newInfo("off", nil, plain, behaviour{}, c),
		newInfo("needs_off", []string{"off"}, plain, behaviour{}, c),
		optIn, optInOn,
	}
	cfg := &fakeConfig{enabled: map[string]bool{"off": false, "needs_off": false, "optin_on": true}}
	k := mustNew(t, Options{Registry: reg, Config: cfg})
	if err := k.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]State{"a": StateInitialised, "optin_on": StateInitialised,
		"off": StateDisabled, "needs_off": StateDisabled, "optin": StateDisabled}
	for id, st := range want {
		if got := statusOf(t, k, id).State; got != st {
			t.Errorf("%s: state %s, want %s", id, got, st)
		}
	}
	if _, ok := k.Extension("off"); ok {
		t.Error("disabled extension has an instance")
	}
	if got := c.list(); !slices.Equal(got, []string{"init a", "init optin_on"}) {
		t.Errorf("calls = %v", got)
	}
}

// AutoEnable turns an opt-in extension on from its section (a token set),
// an explicit enabled key wins, and a section that does not decode enables
// the extension so that its Init reports the problem.
func TestAutoEnable(t *testing.T) {
	type section struct {
		Token string `json:"token"`
	}
	hasToken := func(decode func(any) error) bool {
		var s section
		_ = decode(&s)
		return s.Token != ""
	}
	c := &calls{}
	mk := func(id string) extension.Info {
		info := newInfo(id, nil, plain, behaviour{}, c)
		info.Disabled, info.AutoEnable = true, hasToken
		return info
	}
	reg := []extension.Info{mk("with_token"), mk("without"), mk("forced_off"), mk("broken")}
	cfg := &fakeConfig{
		enabled:  map[string]bool{"forced_off": false},
		sections: map[string]string{"with_token": `{"token":"x"}`, "forced_off": `{"token":"x"}`, "broken": `{"token":1}`},
	}
	k := mustNew(t, Options{Registry: reg, Config: cfg})
	want := map[string]State{"with_token": StatePending, "without": StateDisabled, "forced_off": StateDisabled, "broken": StatePending}
	for id, st := range want {
		if got := statusOf(t, k, id).State; got != st {
			t.Errorf("%s: state %s, want %s", id, got, st)
		}
	}
}

func TestFailureIsolation(t *testing.T) {
	boom := errors.New("boom")
	tests := []struct {
		name      string
		bad       behaviour
		badState  State
		badError  string
		wantCalls []string
	}{
		{"init error", behaviour{initErr: boom}, StateFailed, "init: boom",
			[]string{"init bad", "init other", "start other", "stop other", "destroy other"}},
		{"init panic", behaviour{panicIn: "init"}, StateFailed, "init: panic: init exploded",
			[]string{"init bad", "init other", "start other", "stop other", "destroy other"}},
		{"start error", behaviour{startErr: boom}, StateFailed, "start: boom",
			[]string{"init bad", "init child", "init grandchild", "init other", "start bad", "start other",
				"stop other", "stop bad", "destroy other", "destroy grandchild", "destroy child", "destroy bad"}},
		{"start panic", behaviour{panicIn: "start"}, StateFailed, "start: panic: start exploded",
			[]string{"init bad", "init child", "init grandchild", "init other", "start bad", "start other",
				"stop other", "stop bad", "destroy other", "destroy grandchild", "destroy child", "destroy bad"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &calls{}
			logger, logs := newLogger()
			reg := []extension.Info{
				newInfo("bad", nil, plain, tc.bad, c),
				newInfo("child", []string{"bad"}, plain, behaviour{}, c),
				newInfo("grandchild", []string{"child"}, plain, behaviour{}, c),
				newInfo("other", nil, plain, behaviour{}, c),
			}
			k := mustNew(t, Options{Registry: reg, Logger: logger})
			if err := k.Init(t.Context()); err != nil {
				t.Fatalf("Init: %v", err)
			}
			if err := k.Start(t.Context()); err != nil {
				t.Fatalf("Start: %v", err)
			}
			bad := statusOf(t, k, "bad")
			if bad.State != tc.badState || bad.Error != tc.badError {
				t.Errorf("bad = %s %q, want %s %q", bad.State, bad.Error, tc.badState, tc.badError)
			}
			for id, reason := range map[string]string{"child": `dependency "bad" failed`, "grandchild": `dependency "child" was skipped`} {
				if s := statusOf(t, k, id); s.State != StateSkipped || s.Error != reason {
					t.Errorf("%s = %s %q, want skipped %q", id, s.State, s.Error, reason)
				}
			}
			if s := statusOf(t, k, "other"); s.State != StateStarted {
				t.Errorf("other = %s, want started", s.State)
			}
			if strings.Contains(tc.name, "panic") && !strings.Contains(logs.String(), "goroutine ") {
				t.Errorf("panic logged without a stack:\n%s", logs)
			}
			if err := k.Shutdown(t.Context()); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if got := c.list(); !slices.Equal(got, tc.wantCalls) {
				t.Errorf("calls =\n%v\nwant\n%v", got, tc.wantCalls)
			}
		})
	}
}

func TestConstructorFailure(t *testing.T) {
	c := &calls{}
	reg := []extension.Info{
		{ID: "nilext", Description: "returns nil", New: func() extension.Extension { return nil }},
		{ID: "panicky", Description: "panics", New: func() extension.Extension { panic("no") }},
		newInfo("dependent", []string{"panicky"}, plain, behaviour{}, c),
		newInfo("fine", nil, plain, behaviour{}, c),
	}
	k := mustNew(t, Options{Registry: reg})
	if err := k.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"nilext":    "failed: create: constructor returned nil",
		"panicky":   "failed: create: panic: no",
		"dependent": `skipped: dependency "panicky" failed`,
		"fine":      "initialised: ",
	}
	for id, w := range want {
		s := statusOf(t, k, id)
		if got := string(s.State) + ": " + s.Error; got != w {
			t.Errorf("%s = %q, want %q", id, got, w)
		}
	}
}

func TestServiceIsolation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &calls{}
		failed := errors.New("lost connection")
		reg := []extension.Info{
			newInfo("failing", nil, withService, behaviour{run: func(context.Context) error { return failed }}, c),
			newInfo("panicking", nil, withService, behaviour{panicIn: "run"}, c),
			newInfo("steady", nil, withService, behaviour{}, c),
			newInfo("finishing", nil, withService, behaviour{run: func(context.Context) error { return nil }}, c),
			newInfo("plain", nil, plain, behaviour{}, c),
		}
		k := mustNew(t, Options{Registry: reg})
		if err := k.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := k.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() { done <- k.Run(ctx) }()
		synctest.Wait()

		want := map[string]string{
			"failing":   "failed: service: lost connection",
			"panicking": "failed: service: panic: service exploded",
			"steady":    "running: ",
			"finishing": "started: ",
			"plain":     "started: ",
		}
		for id, w := range want {
			s := statusOf(t, k, id)
			if got := string(s.State) + ": " + s.Error; got != w {
				t.Errorf("%s = %q, want %q", id, got, w)
			}
		}
		select {
		case err := <-done:
			t.Fatalf("Run returned %v while a service still runs", err)
		default:
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if s := statusOf(t, k, "steady"); s.State != StateStarted {
			t.Errorf("steady after Run = %s, want started", s.State)
		}
		if err := k.Run(t.Context()); !errors.Is(err, ErrLifecycle) {
			t.Errorf("second Run = %v, want ErrLifecycle", err)
		}
	})
}

func TestShutdownCancelsRun(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &calls{}
		reg := []extension.Info{newInfo("svc", nil, withService, behaviour{}, c)}
		k := mustNew(t, Options{Registry: reg})
		if err := k.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := k.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- k.Run(context.Background()) }()
		synctest.Wait()
		if err := k.Shutdown(t.Context()); err != nil {
			t.Fatalf("Shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Fatalf("Run: %v", err)
		}
		if s := statusOf(t, k, "svc"); s.State != StateStopped {
			t.Errorf("state = %s, want stopped", s.State)
		}
	})
}

func TestShutdownReverseOrder(t *testing.T) {
	c := &calls{}
	stopErr := errors.New("stuck")
	reg := []extension.Info{
		newInfo("a", nil, plain, behaviour{}, c),
		newInfo("b", []string{"a"}, plain, behaviour{stop: func(context.Context) error { return stopErr }}, c),
		newInfo("c", []string{"b"}, plain, behaviour{panicIn: "stop"}, c),
	}
	k := mustNew(t, Options{Registry: reg})
	if err := k.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	err := k.Shutdown(t.Context())
	if err == nil || !strings.Contains(err.Error(), `stop extension "b": stuck`) ||
		!strings.Contains(err.Error(), `stop extension "c": panic: stop exploded`) {
		t.Errorf("Shutdown error = %v", err)
	}
	want := []string{"init a", "init b", "init c", "start a", "start b", "start c",
		"stop c", "stop b", "stop a", "destroy c", "destroy b", "destroy a"}
	if got := c.list(); !slices.Equal(got, want) {
		t.Errorf("calls =\n%v\nwant\n%v", got, want)
	}
	if err := k.Shutdown(t.Context()); err != nil {
		t.Errorf("second Shutdown = %v, want nil", err)
	}
}

func TestShutdownBounded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &calls{}
		release := make(chan struct{})
		reg := []extension.Info{
			newInfo("a", nil, plain, behaviour{}, c),
			newInfo("hangs", []string{"a"}, plain, behaviour{stop: func(context.Context) error { <-release; return nil }}, c),
		}
		k := mustNew(t, Options{Registry: reg})
		if err := k.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
		if err := k.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
		defer cancel()
		start := time.Now()
		err := k.Shutdown(ctx)
		if elapsed := time.Since(start); elapsed != 5*time.Second {
			t.Errorf("Shutdown took %v, want the 5s bound", elapsed)
		}
		for _, w := range []string{`stop extension "hangs": abandoned: context deadline exceeded`,
			`stop extension "a": not called`, `destroy extension "a": not called`} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Shutdown error %v does not contain %q", err, w)
			}
		}
		close(release)
		synctest.Wait()
	})
}

func TestLifecycleOrder(t *testing.T) {
	c := &calls{}
	k := mustNew(t, Options{Registry: []extension.Info{newInfo("a", nil, plain, behaviour{}, c)}})
	if err := k.Start(t.Context()); !errors.Is(err, ErrLifecycle) {
		t.Errorf("Start before Init = %v", err)
	}
	if err := k.Run(t.Context()); !errors.Is(err, ErrLifecycle) {
		t.Errorf("Run before Start = %v", err)
	}
	if err := k.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := k.Init(t.Context()); !errors.Is(err, ErrLifecycle) {
		t.Errorf("second Init = %v", err)
	}
	if err := k.Shutdown(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := k.Start(t.Context()); !errors.Is(err, ErrLifecycle) {
		t.Errorf("Start after Shutdown = %v", err)
	}
	if got := c.list(); !slices.Equal(got, []string{"init a", "destroy a"}) {
		t.Errorf("calls = %v", got)
	}
}

func TestInitCancelled(t *testing.T) {
	c := &calls{}
	k := mustNew(t, Options{Registry: []extension.Info{newInfo("a", nil, plain, behaviour{}, c)}})
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := k.Init(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), `before "a"`) {
		t.Errorf("Init = %v", err)
	}
	if len(c.list()) != 0 {
		t.Errorf("calls = %v", c.list())
	}
}

func TestCapabilities(t *testing.T) {
	c := &calls{}
	reg := []extension.Info{
		fullInfo("alpha", 10, c),
		fullInfo("beta", -5, c),
		newInfo("plain", nil, plain, behaviour{}, c),
	}
	k := mustNew(t, Options{Registry: reg})
	if err := k.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}

	var tools []string
	for _, tl := range k.Tools() {
		tools = append(tools, tl.Name())
	}
	if want := []string{"alpha_echo", "beta_echo"}; !slices.Equal(tools, want) {
		t.Errorf("Tools = %v, want %v", tools, want)
	}
	var channels []string
	for _, ch := range k.Channels() {
		channels = append(channels, ch.ChannelName())
	}
	if want := []string{"alphachan", "betachan"}; !slices.Equal(channels, want) {
		t.Errorf("Channels = %v, want %v", channels, want)
	}
	if ch, ok := k.Channel("betachan"); !ok || ch.ChannelName() != "betachan" {
		t.Errorf("Channel(betachan) = %v, %v", ch, ok)
	}
	if _, ok := k.Channel("nope"); ok {
		t.Error("Channel(nope) found")
	}
	var agents []string
	for _, a := range k.Agents() {
		agents = append(agents, a.AgentDescriptor().Name)
	}
	if want := []string{"alpha_agent", "beta_agent"}; !slices.Equal(agents, want) {
		t.Errorf("Agents = %v, want %v", agents, want)
	}
	var jobs []string
	for _, j := range k.Jobs() {
		jobs = append(jobs, j.Extension+"/"+j.Job.Name+" "+j.Job.Schedule)
	}
	if want := []string{"alpha/tick @every 5m", "beta/tick @every 5m"}; !slices.Equal(jobs, want) {
		t.Errorf("Jobs = %v, want %v", jobs, want)
	}
	var prios []int
	for _, p := range k.ContextProviders() {
		prios = append(prios, p.ContextPriority())
	}
	if want := []int{-5, 10}; !slices.Equal(prios, want) {
		t.Errorf("context priorities = %v, want %v", prios, want)
	}
	setup := k.SetupProviders()
	if len(setup) != 2 || setup["alpha"] == nil || setup["beta"] == nil {
		t.Errorf("SetupProviders = %v", setup)
	}
	ext, ok := k.Extension("alpha")
	if _, isFull := ext.(*full); !ok || !isFull {
		t.Errorf("Extension(alpha) = %T, %v", ext, ok)
	}
	if _, ok := k.Extension("missing"); ok {
		t.Error("Extension(missing) found")
	}

	k.Ready(t.Context())
	k.Ready(t.Context())
	for _, id := range []string{"alpha", "beta"} {
		e, _ := k.Extension(id)
		f := e.(*full)
		f.mu.Lock()
		if f.ready != 1 {
			t.Errorf("%s told ready %d times, want 1", id, f.ready)
		}
		f.mu.Unlock()
	}
	for _, s := range k.Health(t.Context()) {
		want := HealthOK
		if s.ID == "plain" {
			want = HealthNone
		}
		if s.Health != want {
			t.Errorf("%s health = %s, want %s", s.ID, s.Health, want)
		}
	}
}

func TestFailedStartDropsCapabilities(t *testing.T) {
	c := &calls{}
	reg := []extension.Info{
		newInfo("good", nil, withTools, behaviour{tools: []string{"good_tool"}}, c),
		newInfo("bad", nil, withTools, behaviour{tools: []string{"bad_tool"}, startErr: errors.New("no")}, c),
	}
	k := mustNew(t, Options{Registry: reg})
	if err := k.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if got := len(k.Tools()); got != 2 {
		t.Errorf("after Init: %d tools, want 2", got)
	}
	if err := k.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if tl := k.Tools(); len(tl) != 1 || tl[0].Name() != "good_tool" {
		t.Errorf("after Start: tools = %v", tl)
	}
}

func TestDuplicateToolNames(t *testing.T) {
	c := &calls{}
	logger, logs := newLogger()
	reg := []extension.Info{
		newInfo("first", nil, withTools, behaviour{tools: []string{"echo", "one"}}, c),
		newInfo("second", nil, withTools, behaviour{tools: []string{"two", "echo", "bad name!"}}, c),
	}
	k := mustNew(t, Options{Registry: reg, Logger: logger})
	if err := k.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tl := range k.Tools() {
		got = append(got, tl.Name()+"@"+tl.(fakeTool).owner)
	}
	if want := []string{"echo@first", "one@first", "two@second"}; !slices.Equal(got, want) {
		t.Errorf("Tools = %v, want %v", got, want)
	}
	for _, w := range []string{`msg="duplicate tool name: later one dropped" component=kernel tool=echo kept=first dropped=second`,
		`msg="tool with an invalid name dropped" component=kernel ext=second tool="bad name!"`} {
		if !strings.Contains(logs.String(), w) {
			t.Errorf("log does not contain %q:\n%s", w, logs)
		}
	}
}

func TestHealthTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		c := &calls{}
		release := make(chan struct{})
		reg := []extension.Info{
			newInfo("hanging", nil, withService, behaviour{health: func(context.Context) error { <-release; return nil }}, c),
			newInfo("honest", nil, withService, behaviour{health: func(ctx context.Context) error { <-ctx.Done(); return ctx.Err() }}, c),
			newInfo("sick", nil, withService, behaviour{health: func(context.Context) error { return errors.New("disk full") }}, c),
			newInfo("well", nil, withService, behaviour{}, c),
		}
		now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
		k := mustNew(t, Options{Registry: reg, Now: func() time.Time { return now }})
		if err := k.Init(t.Context()); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		got := map[string]string{}
		for _, s := range k.Health(t.Context()) {
			got[s.ID] = string(s.Health) + ": " + s.HealthError
			if !s.CheckedAt.Equal(now) {
				t.Errorf("%s checked at %v", s.ID, s.CheckedAt)
			}
		}
		if elapsed := time.Since(start); elapsed != DefaultHealthTimeout {
			t.Errorf("Health took %v, want %v", elapsed, DefaultHealthTimeout)
		}
		// A check that honours its context may be seen returning or
		// abandoned at the deadline: both are the same timeout.
		if h := got["honest"]; !strings.HasPrefix(h, "failing: ") || !strings.HasSuffix(h, "context deadline exceeded") {
			t.Errorf("honest health = %q, want a deadline failure", h)
		}
		want := map[string]string{
			"hanging": "failing: abandoned: context deadline exceeded",
			"sick":    "failing: disk full",
			"well":    "ok: ",
		}
		for id, w := range want {
			if got[id] != w {
				t.Errorf("%s health = %q, want %q", id, got[id], w)
			}
		}
		if s := statusOf(t, k, "sick"); s.Health != HealthFailing {
			t.Errorf("Status does not keep the health result: %+v", s)
		}
		close(release)
		synctest.Wait()
	})
}

func TestHost(t *testing.T) {
	c := &calls{}
	settings := &fakeSettings{Greeting: "default"}
	cfg := &fakeConfig{sections: map[string]string{"greeter": `{"greeting":"hello"}`}}
	bus := extensiontest.NewBus(nil)
	logger, logs := newLogger()
	var received []chat.Inbound
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	reg := []extension.Info{
		newInfo("greeter", nil, plain, behaviour{decodeInto: settings}, c),
		newInfo("other", nil, plain, behaviour{}, c),
	}
	var console strings.Builder
	k := mustNew(t, Options{
		Registry: reg, Config: cfg, Bus: bus, Logger: logger, Console: &console, DataDir: "/data", Now: func() time.Time { return now },
		Receive: func(_ context.Context, msg chat.Inbound) error { received = append(received, msg); return nil },
	})
	if err := k.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	if settings.Greeting != "hello" {
		t.Errorf("decoded greeting = %q", settings.Greeting)
	}
	if !slices.Equal(cfg.decoded, []string{"greeter"}) {
		t.Errorf("DecodeExtension ids = %v", cfg.decoded)
	}
	ext, _ := k.Extension("greeter")
	h := ext.(*fake).host
	other, _ := k.Extension("other")
	oh := other.(*fake).host

	if h.ID() != "greeter" || h.DataDir() != "/data" || !h.Now().Equal(now) || h.DB() != nil {
		t.Errorf("host: id %q, data %q, now %v", h.ID(), h.DataDir(), h.Now())
	}
	h.Logger().Info("hello from the extension")
	if !strings.Contains(logs.String(), `msg="hello from the extension" ext=greeter`) {
		t.Errorf("logger not tagged:\n%s", logs)
	}
	// The console is for the terminal only: nothing of it reaches the log.
	_, _ = io.WriteString(h.(interface{ Console() io.Writer }).Console(), "shown once\n")
	if console.String() != "shown once\n" || strings.Contains(logs.String(), "shown once") {
		t.Errorf("console %q, log:\n%s", console.String(), logs)
	}
	noop := func(context.Context, extension.Event) error { return nil }
	for _, host := range []extension.Host{h, oh} {
		if err := host.Bus().Subscribe("indexer", "chat.", noop); err != nil {
			t.Fatalf("Subscribe: %v", err)
		}
	}
	if got := bus.Subscribers(); !slices.Equal(got, []string{"greeter/indexer", "other/indexer"}) {
		t.Errorf("subscribers = %v", got)
	}
	if err := h.Bus().Publish(t.Context(), "chat.test", map[string]int{"n": 1}); err != nil {
		t.Fatal(err)
	}
	if ev := bus.Published("chat.test"); len(ev) != 1 || string(ev[0].Payload) != `{"n":1}` {
		t.Errorf("published = %v", ev)
	}
	msg := chat.Inbound{Address: chat.Address{Channel: "cli", Thread: "cli:me"}, Text: "hi"}
	if err := h.Receive(t.Context(), msg); err != nil || len(received) != 1 || received[0].Text != "hi" {
		t.Errorf("Receive = %v, received %v", err, received)
	}
}

func TestHostWithoutRouterOrBus(t *testing.T) {
	c := &calls{}
	k := mustNew(t, Options{Registry: []extension.Info{newInfo("a", nil, plain, behaviour{}, c)}})
	if err := k.Init(t.Context()); err != nil {
		t.Fatal(err)
	}
	ext, _ := k.Extension("a")
	h := ext.(*fake).host
	if c := h.(interface{ Console() io.Writer }).Console(); c != io.Discard {
		t.Errorf("Console without Options.Console = %v, want io.Discard", c)
	}
	if err := h.Receive(t.Context(), chat.Inbound{}); !errors.Is(err, ErrNoRouter) {
		t.Errorf("Receive = %v, want ErrNoRouter", err)
	}
	if dup, err := h.(interface {
		WasReceived(context.Context, chat.Inbound) (bool, error)
	}).WasReceived(t.Context(), chat.Inbound{ID: "1"}); dup || err != nil {
		t.Errorf("WasReceived without a router = %v, %v; want false", dup, err)
	}
	if err := h.Bus().Publish(t.Context(), "x", nil); !errors.Is(err, ErrNoBus) {
		t.Errorf("Publish = %v, want ErrNoBus", err)
	}
	var s fakeSettings
	if err := h.DecodeConfig(&s); err != nil {
		t.Errorf("DecodeConfig without config = %v", err)
	}
}

func TestConformanceOfTestExtensions(t *testing.T) {
	c := &calls{}
	for _, info := range []extension.Info{
		fullInfo("full", 0, c),
		newInfo("plain", nil, plain, behaviour{}, c),
		newInfo("svc", nil, withService, behaviour{}, c),
		newInfo("tools", nil, withTools, behaviour{tools: []string{"alpha", "beta"}}, c),
	} {
		t.Run(info.ID, func(t *testing.T) { extensiontest.Run(t, info) })
	}
}

func BenchmarkNewInitStartShutdown(b *testing.B) {
	c := &calls{}
	var reg []extension.Info
	for i := range 30 {
		id := string(rune('a'+i%26)) + strings.Repeat("x", i/26)
		var deps []string
		if i > 0 {
			deps = []string{reg[(i-1)/2].ID}
		}
		reg = append(reg, newInfo(id, deps, withTools, behaviour{tools: []string{id + "_tool"}}, c))
	}
	ctx := context.Background()
	for b.Loop() {
		c.mu.Lock()
		c.log = c.log[:0]
		c.mu.Unlock()
		k, err := New(Options{Registry: reg})
		if err != nil {
			b.Fatal(err)
		}
		if err := k.Init(ctx); err != nil {
			b.Fatal(err)
		}
		if err := k.Start(ctx); err != nil {
			b.Fatal(err)
		}
		if err := k.Shutdown(ctx); err != nil {
			b.Fatal(err)
		}
	}
}

func TestFatalInitErrorStopsStartUp(t *testing.T) {
	c := &calls{}
	errBadConfig := errors.New("bad config")
	reg := []extension.Info{
		newInfo("a", nil, plain, behaviour{}, c),
		newInfo("b", []string{"a"}, plain, behaviour{initErr: fmt.Errorf("decode: %w", errBadConfig)}, c),
		newInfo("c", []string{"b"}, plain, behaviour{}, c),
	}
	k, err := New(Options{Registry: reg, Fatal: func(err error) bool { return errors.Is(err, errBadConfig) }})
	if err != nil {
		t.Fatal(err)
	}
	err = k.Init(context.Background())
	if !errors.Is(err, errBadConfig) || !strings.Contains(err.Error(), `"b"`) {
		t.Fatalf("Init = %v, want the fatal error naming b", err)
	}
	if err := k.Shutdown(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, s := range k.Status() {
		if s.ID == "c" && s.State == StateInitialised {
			t.Fatal("c was initialised after a fatal error in its dependency")
		}
	}
}

func TestEssentialFailureStopsStartUp(t *testing.T) {
	boom := errors.New("boom")
	channel := func(id string, b behaviour, c *calls) extension.Info {
		return extension.Info{ID: id, Description: "test channel", New: func() extension.Extension {
			return &full{fake: fake{id: id, b: b, calls: c}, channel: id}
		}}
	}
	tests := []struct {
		name      string
		reg       func(c *calls) []extension.Info
		explicit  []string
		phase     string // "init" or "start": where the error comes; "" for none
		wantID    string
		wantWhy   string
		wantCalls []string
	}{
		{
			name: "explicit extension fails to start",
			reg: func(c *calls) []extension.Info {
				return []extension.Info{newInfo("bad", nil, plain, behaviour{startErr: boom}, c), newInfo("other", nil, plain, behaviour{}, c)}
			},
			explicit: []string{"bad"}, phase: "start", wantID: "bad", wantWhy: "configured explicitly",
			wantCalls: []string{"init bad", "init other", "start bad", "stop bad", "destroy other", "destroy bad"},
		},
		{
			name: "explicit extension fails to initialise",
			reg: func(c *calls) []extension.Info {
				return []extension.Info{newInfo("bad", nil, plain, behaviour{initErr: boom}, c), newInfo("other", nil, plain, behaviour{}, c)}
			},
			explicit: []string{"bad"}, phase: "init", wantID: "bad", wantWhy: "configured explicitly",
			wantCalls: []string{"init bad"},
		},
		{
			name: "explicit extension skipped for a failed dependency",
			reg: func(c *calls) []extension.Info {
				return []extension.Info{newInfo("base", nil, plain, behaviour{initErr: boom}, c), newInfo("top", []string{"base"}, plain, behaviour{}, c)}
			},
			explicit: []string{"top"}, phase: "init", wantID: "top", wantWhy: "configured explicitly",
			wantCalls: []string{"init base"},
		},
		{
			name: "explicit extension whose constructor fails",
			reg: func(c *calls) []extension.Info {
				return []extension.Info{{ID: "bad", Description: "panics", New: func() extension.Extension { panic(boom) }},
					newInfo("other", nil, plain, behaviour{}, c)}
			},
			explicit: []string{"bad"}, phase: "init", wantID: "bad", wantWhy: "configured explicitly",
		},
		{
			name: "the only channel fails to start",
			reg: func(c *calls) []extension.Info {
				return []extension.Info{channel("web", behaviour{startErr: boom}, c), newInfo("kv", nil, plain, behaviour{}, c)}
			},
			phase: "start", wantID: "web", wantWhy: "the only channel",
			wantCalls: []string{"init kv", "init web", "start kv", "start web", "stop web", "stop kv", "destroy web", "destroy kv"},
		},
		{
			name: "one of two channels fails to start",
			reg: func(c *calls) []extension.Info {
				return []extension.Info{channel("web", behaviour{startErr: boom}, c), channel("tg", behaviour{}, c)}
			},
			wantCalls: []string{"init tg", "init web", "start tg", "start web", "stop web", "stop tg", "destroy web", "destroy tg"},
		},
		{
			name: "an extension nobody configured fails",
			reg: func(c *calls) []extension.Info {
				return []extension.Info{newInfo("bad", nil, plain, behaviour{startErr: boom}, c), channel("web", behaviour{}, c)}
			},
			explicit:  []string{"web"},
			wantCalls: []string{"init bad", "init web", "start bad", "start web", "stop web", "stop bad", "destroy web", "destroy bad"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &calls{}
			k, err := New(Options{Registry: tc.reg(c), Essential: func(id string) bool { return slices.Contains(tc.explicit, id) }})
			if err != nil {
				t.Fatal(err)
			}
			var got error
			phase := "init"
			if got = k.Init(t.Context()); got == nil {
				phase = "start"
				got = k.Start(t.Context())
			}
			if err := k.Shutdown(t.Context()); err != nil {
				t.Fatalf("Shutdown: %v", err)
			}
			if tc.phase == "" {
				if got != nil {
					t.Fatalf("start-up failed: %v", got)
				}
			} else {
				var ee *EssentialError
				if !errors.As(got, &ee) || phase != tc.phase {
					t.Fatalf("%s error = %v, want an *EssentialError from %s", phase, got, tc.phase)
				}
				if ee.ID != tc.wantID || ee.Why != tc.wantWhy || !errors.Is(got, ErrEssential) || !errors.Is(got, boom) && !strings.Contains(got.Error(), "boom") {
					t.Errorf("error = %#v (%v), want %s (%s) wrapping boom and ErrEssential", ee, got, tc.wantID, tc.wantWhy)
				}
				if !strings.Contains(got.Error(), `"`+tc.wantID+`"`) || !strings.Contains(got.Error(), tc.wantWhy) {
					t.Errorf("message %q does not name the extension and why it is essential", got)
				}
			}
			if got := c.list(); tc.wantCalls != nil && !slices.Equal(got, tc.wantCalls) {
				t.Errorf("calls =\n%v\nwant\n%v", got, tc.wantCalls)
			}
		})
	}
}

// checker is a fake whose CheckConfig decodes its settings and rejects an
// empty greeting.
type checker struct{ fake }

func (c *checker) CheckConfig(decode func(any) error) error {
	var s fakeSettings
	if err := decode(&s); err != nil {
		return err
	}
	if s.Greeting == "" {
		return fmt.Errorf("greeting is empty: %w", extension.ErrInvalidConfig)
	}
	return nil
}

func TestCheckConfig(t *testing.T) {
	c := &calls{}
	checkerInfo := func(id string) extension.Info {
		return extension.Info{ID: id, Description: "checks its config", New: func() extension.Extension {
			return &checker{fake{id: id, calls: c}}
		}}
	}
	reg := []extension.Info{
		checkerInfo("good"), checkerInfo("empty"), checkerInfo("malformed"),
		newInfo("plain", nil, plain, behaviour{}, c),
		{ID: "broken", Description: "constructor panics", New: func() extension.Extension { panic("no") }},
	}
	cfg := &fakeConfig{sections: map[string]string{"good": `{"greeting":"hi"}`, "empty": `{}`, "malformed": `{"greeting":`}}
	k := mustNew(t, Options{Registry: reg, Config: cfg})
	got := map[string]string{}
	for _, r := range k.CheckConfig() {
		s := fmt.Sprintf("checked=%v", r.Checked)
		if r.Err != nil {
			s += " err=" + r.Err.Error()
		}
		got[r.ID] = s
	}
	want := map[string]string{
		"good":      "checked=true",
		"empty":     "checked=true err=greeting is empty: invalid configuration",
		"malformed": `checked=true err=decode configuration of extension "malformed": unexpected end of JSON input`,
		"plain":     "checked=false",
		"broken":    "checked=false err=create: panic: no",
	}
	if !maps.Equal(got, want) {
		t.Errorf("CheckConfig =\n%v\nwant\n%v", got, want)
	}
	if calls := c.list(); len(calls) != 0 {
		t.Errorf("CheckConfig initialised something: %v", calls)
	}
}

// diagnoser is a checker whose Diagnose reports its greeting, fails on
// "refused" and panics on "panic".
type diagnoser struct{ checker }

func (d *diagnoser) Diagnose(_ context.Context, decode func(any) error, dataDir string) (string, error) {
	var s fakeSettings
	if err := decode(&s); err != nil {
		return "", err
	}
	switch s.Greeting {
	case "refused":
		return "", errors.New("the service refuses the token")
	case "panic":
		panic("diagnose")
	}
	return "greets with " + s.Greeting + " in " + dataDir, nil
}

// Diagnose gives one verdict per extension: its settings, then what they
// name for a Diagnoser; a bad configuration is not diagnosed.
func TestDiagnose(t *testing.T) {
	c := &calls{}
	info := func(id string) extension.Info {
		return extension.Info{ID: id, Description: "diagnoses itself", New: func() extension.Extension {
			return &diagnoser{checker{fake{id: id, calls: c}}}
		}}
	}
	checkerOnly := extension.Info{ID: "checker", Description: "checks its config", New: func() extension.Extension {
		return &checker{fake{id: "checker", calls: c}}
	}}
	reg := []extension.Info{info("good"), info("refused"), info("panics"), info("empty"), checkerOnly}
	cfg := &fakeConfig{sections: map[string]string{"good": `{"greeting":"hi"}`, "refused": `{"greeting":"refused"}`,
		"panics": `{"greeting":"panic"}`, "empty": `{}`, "checker": `{"greeting":"hi"}`}}
	k := mustNew(t, Options{Registry: reg, Config: cfg, DataDir: "/data"})
	got := map[string]string{}
	for _, r := range k.Diagnose(context.Background()) {
		s := r.Diagnosis
		if r.Err != nil {
			s = "err=" + r.Err.Error()
		}
		got[r.ID] = s
	}
	want := map[string]string{
		"good":    "greets with hi in /data",
		"refused": "err=the service refuses the token",
		"panics":  "err=panic: diagnose",
		"empty":   "err=greeting is empty: invalid configuration",
		"checker": "",
	}
	if !maps.Equal(got, want) {
		t.Errorf("Diagnose =\n%v\nwant\n%v", got, want)
	}
	if calls := c.list(); len(calls) != 0 {
		t.Errorf("Diagnose initialised something: %v", calls)
	}
}
