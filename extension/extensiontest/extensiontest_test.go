package extensiontest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
	"github.com/reverie-ai/reverie/tool"
)

type noteConfig struct {
	Table    string        `yaml:"table"`
	Interval time.Duration `yaml:"interval"`
}

// notes is a small but realistic extension: it migrates a table in Init,
// subscribes to chat events, writes them in its handler, exposes a tool,
// a context provider and a service.
type notes struct {
	cfg  noteConfig
	host extension.Host
}

func (n *notes) Init(ctx context.Context, h extension.Host) error {
	n.cfg = noteConfig{Table: "notes", Interval: time.Minute}
	if err := h.DecodeConfig(&n.cfg); err != nil {
		return err
	}
	n.host = h
	if _, err := h.DB().ExecContext(ctx, fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %q (text TEXT NOT NULL, at TEXT NOT NULL)`, n.cfg.Table)); err != nil {
		return fmt.Errorf("create table: %w", err)
	}
	return h.Bus().Subscribe("writer", "chat.", func(ctx context.Context, ev extension.Event) error {
		var msg struct{ Text string }
		if err := json.Unmarshal(ev.Payload, &msg); err != nil {
			return err
		}
		_, err := h.DB().ExecContext(ctx, fmt.Sprintf(`INSERT INTO %q (text, at) VALUES (?, ?)`, n.cfg.Table), msg.Text, h.Now().Format(time.RFC3339))
		return err
	})
}

func (n *notes) Tools() []tool.Tool { return []tool.Tool{countTool{n}} }

func (n *notes) ContextPriority() int { return 5 }

func (n *notes) PromptContext(ctx context.Context, _ extension.ContextRequest) (string, error) {
	c, err := n.count(ctx)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%d notes", c), nil
}

func (n *notes) Run(ctx context.Context) error {
	t := time.NewTicker(n.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (n *notes) count(ctx context.Context) (int, error) {
	var c int
	err := n.host.DB().QueryRowContext(ctx, fmt.Sprintf(`SELECT count(*) FROM %q`, n.cfg.Table)).Scan(&c)
	return c, err
}

type countTool struct{ n *notes }

func (countTool) Name() string        { return "count_notes" }
func (countTool) Description() string { return "Counts the notes." }
func (countTool) Schema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{}}`)
}
func (c countTool) Call(ctx context.Context, _ json.RawMessage) (tool.Result, error) {
	n, err := c.n.count(ctx)
	return tool.Result{Content: fmt.Sprint(n)}, err
}

var (
	_ extension.ToolProvider    = (*notes)(nil)
	_ extension.ContextProvider = (*notes)(nil)
	_ extension.ServiceProvider = (*notes)(nil)
)

var notesInfo = extension.Info{
	ID:          "notes",
	Description: "keeps chat notes",
	New:         func() extension.Extension { return new(notes) },
}

func TestConformance(t *testing.T) {
	extensiontest.Run(t, notesInfo)
	t.Run("with config", func(t *testing.T) {
		extensiontest.Run(t, notesInfo, extensiontest.WithConfig("table: other\ninterval: 1h\n"))
	})
}

func TestHostRoundTrip(t *testing.T) {
	h := extensiontest.NewHost(t, extensiontest.WithID("notes"), extensiontest.WithConfig("table: memo"))
	n := new(notes)
	if err := n.Init(t.Context(), h); err != nil {
		t.Fatal(err)
	}
	if n.cfg.Table != "memo" || n.cfg.Interval != time.Minute {
		t.Errorf("config = %+v", n.cfg)
	}
	if got := h.EventBus().Subscribers(); !slices.Equal(got, []string{"notes/writer"}) {
		t.Errorf("subscribers = %v", got)
	}
	if err := h.EventBus().Publish(t.Context(), "chat.inbound", map[string]string{"Text": "buy milk"}); err != nil {
		t.Fatal(err)
	}
	res, err := countTool{n}.Call(t.Context(), nil)
	if err != nil || res.Content != "1" {
		t.Errorf("count = %q, %v", res.Content, err)
	}
	var at string
	if err := h.DB().QueryRow(`SELECT at FROM memo`).Scan(&at); err != nil || at != "2025-01-06T09:00:00Z" {
		t.Errorf("stored time %q, %v", at, err)
	}
	h.Logger().Info("noted")
	if !strings.Contains(h.Logs(), `msg=noted ext=notes`) {
		t.Errorf("logs = %q", h.Logs())
	}
}

func TestDecodeConfig(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    noteConfig
		wantErr string
	}{
		{"empty leaves defaults", "", noteConfig{Table: "t", Interval: time.Second}, ""},
		{"values", "table: x\ninterval: 90s", noteConfig{Table: "x", Interval: 90 * time.Second}, ""},
		{"unknown key", "tabel: x", noteConfig{}, "unknown field"},
		{"wrong type", "interval: [1]", noteConfig{}, "interval"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := extensiontest.NewHost(t, extensiontest.WithConfig(tc.yaml))
			cfg := noteConfig{Table: "t", Interval: time.Second}
			err := h.DecodeConfig(&cfg)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want it to mention %q", err, tc.wantErr)
				}
				return
			}
			if err != nil || cfg != tc.want {
				t.Fatalf("cfg = %+v, %v; want %+v", cfg, err, tc.want)
			}
		})
	}
}

func TestClockAndReceive(t *testing.T) {
	var handed []string
	h := extensiontest.NewHost(t, extensiontest.WithReceive(func(_ context.Context, msg chat.Inbound) error {
		handed = append(handed, msg.Text)
		if msg.Text == "reject" {
			return errors.New("rejected")
		}
		return nil
	}))
	if !h.Now().Equal(extensiontest.DefaultTime) {
		t.Errorf("Now = %v", h.Now())
	}
	h.Clock().Advance(90 * time.Minute)
	if want := extensiontest.DefaultTime.Add(90 * time.Minute); !h.Now().Equal(want) {
		t.Errorf("after Advance: %v, want %v", h.Now(), want)
	}
	later := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	h.Clock().Set(later)
	if !h.Now().Equal(later) {
		t.Errorf("after Set: %v", h.Now())
	}
	for _, text := range []string{"hello", "reject"} {
		err := h.Receive(t.Context(), chat.Inbound{Address: chat.Address{Channel: "cli", Thread: "cli:me"}, Text: text})
		if (err != nil) != (text == "reject") {
			t.Errorf("Receive(%q) = %v", text, err)
		}
	}
	var got []string
	for _, m := range h.Received() {
		got = append(got, m.Text)
	}
	if !slices.Equal(got, []string{"hello", "reject"}) || !slices.Equal(handed, got) {
		t.Errorf("received %v, handed %v", got, handed)
	}
	fc := extensiontest.NewHost(t, extensiontest.WithClock(func() time.Time { return later }))
	fc.Clock().Advance(time.Hour)
	if !fc.Now().Equal(later.Add(time.Hour)) {
		t.Errorf("advanced function clock = %v", fc.Now())
	}
}

func TestBus(t *testing.T) {
	b := extensiontest.NewBus(func() time.Time { return extensiontest.DefaultTime })
	var mu sync.Mutex
	var seen []string
	record := func(name string, failures int) extension.Handler {
		return func(ctx context.Context, ev extension.Event) error {
			mu.Lock()
			defer mu.Unlock()
			seen = append(seen, fmt.Sprintf("%s %s #%d attempt %d", name, ev.Topic, ev.ID, ev.Attempt))
			if ev.Attempt <= failures {
				return errors.New("not yet")
			}
			return nil
		}
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(b.Subscribe("all", "", record("all", 0)))
	must(b.Subscribe("flaky", "memory.", record("flaky", 1)))
	must(b.Subscribe("broken", "memory.saved", record("broken", 99)))
	must(b.Subscribe("relay", "chat.", func(ctx context.Context, ev extension.Event) error {
		return b.Publish(ctx, "memory.saved", json.RawMessage(ev.Payload))
	}))
	if err := b.Subscribe("all", "x", record("dup", 0)); err == nil {
		t.Error("duplicate subscriber name accepted")
	}
	must(b.Publish(t.Context(), "chat.inbound", map[string]string{"text": "hi"}))

	want := []string{
		"all chat.inbound #1 attempt 1",
		"all memory.saved #2 attempt 1",
		"flaky memory.saved #2 attempt 1",
		"flaky memory.saved #2 attempt 2",
		"broken memory.saved #2 attempt 1",
		"broken memory.saved #2 attempt 2",
		"broken memory.saved #2 attempt 3",
	}
	if !slices.Equal(seen, want) {
		t.Errorf("deliveries =\n%s\nwant\n%s", strings.Join(seen, "\n"), strings.Join(want, "\n"))
	}
	dead := b.DeadLetters()
	if len(dead) != 1 || dead[0].Subscriber != "broken" || dead[0].Event.ID != 2 {
		t.Errorf("dead letters = %+v", dead)
	}
	evs := b.Events()
	if len(evs) != 2 || string(evs[1].Payload) != `{"text":"hi"}` || !evs[0].Time.Equal(extensiontest.DefaultTime) {
		t.Errorf("events = %+v", evs)
	}
	if got := b.Published("memory."); len(got) != 1 || got[0].Topic != "memory.saved" {
		t.Errorf("Published(memory.) = %+v", got)
	}
	if err := b.Publish(t.Context(), "bad", func() {}); err == nil {
		t.Error("unmarshalable payload accepted")
	}
	for _, topic := range []string{"", "has space", "tab\there", strings.Repeat("x", 129)} {
		if err := b.Publish(t.Context(), topic, 1); err == nil {
			t.Errorf("topic %q accepted", topic)
		}
	}
	if err := b.Subscribe("spaced", "a b", record("spaced", 0)); err == nil {
		t.Error("prefix with a space accepted")
	}
}

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	errs []string
}

func (r *recorder) Helper()           {}
func (r *recorder) Error(args ...any) { r.errs = append(r.errs, fmt.Sprint(args...)) }
func (r *recorder) Errorf(format string, args ...any) {
	r.errs = append(r.errs, fmt.Sprintf(format, args...))
}

type schemaTool struct{ name, desc, schema string }

func (s schemaTool) Name() string            { return s.name }
func (s schemaTool) Description() string     { return s.desc }
func (s schemaTool) Schema() json.RawMessage { return json.RawMessage(s.schema) }
func (s schemaTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

func TestChecks(t *testing.T) {
	obj := `{"type":"object","properties":{"q":{"type":"string"}}}`
	run := func(fn func(testing.TB)) []string {
		r := &recorder{TB: t}
		fn(r)
		return r.errs
	}
	tests := []struct {
		name  string
		check func(testing.TB)
		want  []string // substrings, one per expected failure
	}{
		{"good tools", func(tb testing.TB) {
			extensiontest.CheckTools(tb, []tool.Tool{schemaTool{"a", "A.", obj}, schemaTool{"b-2", "B.", `{"type":"object"}`}})
		}, nil},
		{"bad tools", func(tb testing.TB) {
			extensiontest.CheckTools(tb, []tool.Tool{
				schemaTool{"has space", "x", obj},
				schemaTool{"dup", "x", obj}, schemaTool{"dup", "x", obj},
				schemaTool{"nodesc", " ", obj},
				schemaTool{"arr", "x", `{"type":"array"}`},
				schemaTool{"notjson", "x", `{`},
				schemaTool{"props", "x", `{"type":"object","properties":[]}`},
				nil,
			})
		}, []string{`"has space" does not match`, `"dup" used twice`, `"nodesc" has no description`,
			`"arr" schema: "type" is "array"`, `"notjson" schema: not a JSON object`, `"props" schema: "properties" is not an object`, "tool 7 is nil"}},
		{"jobs", func(tb testing.TB) {
			run := func(context.Context) error { return nil }
			extensiontest.CheckJobs(tb, []extension.Job{
				{Name: "ok", Schedule: "*/5 * * * *", Run: run},
				{Name: "every", Schedule: "@every 90s", Run: run},
				{Name: "every", Schedule: "@daily", Run: run},
				{Name: "norun", Schedule: "@hourly"},
				{Name: "bad", Schedule: "every day", Run: run},
				{Schedule: "@daily", Run: run},
			})
		}, []string{`"every" used twice`, `"norun" has neither a Run nor a Report function`, `"bad" schedule "every day"`, "has no name"}},
		{"setup", func(tb testing.TB) {
			extensiontest.CheckSetupSchema(tb, extension.SetupSchema{Fields: []extension.SetupField{
				{Key: "k", Label: "K", Kind: extension.FieldText},
				{Key: "k", Label: "Again", Kind: extension.FieldURL},
				{Key: "s", Label: "S", Kind: extension.FieldSelect},
				{Key: "x", Label: "X", Kind: "color"},
				{Label: "No key", Kind: extension.FieldSecret},
			}})
		}, []string{"no title", `"k" used twice`, `select field "s" has no options`, `unknown kind "color"`, "needs a key and a label"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			errs := run(tc.check)
			if len(errs) != len(tc.want) {
				t.Fatalf("got %d failures, want %d:\n%s", len(errs), len(tc.want), strings.Join(errs, "\n"))
			}
			for i, w := range tc.want {
				if !strings.Contains(errs[i], w) {
					t.Errorf("failure %d = %q, want it to contain %q", i, errs[i], w)
				}
			}
		})
	}
}

func TestHostRedactsRegisteredSecrets(t *testing.T) {
	h := extensiontest.NewHost(t)
	const token = "bot-token-0123456789"
	h.RegisterSecret(token)
	h.RegisterSecret(token)
	h.RegisterSecret("short")
	if got := h.Secrets(); !slices.Equal(got, []string{token}) {
		t.Fatalf("Secrets = %q", got)
	}
	if got := h.Redact("GET /bot" + token + "/getMe"); got != "GET /bot"+extension.RedactedSecret+"/getMe" {
		t.Errorf("Redact = %q", got)
	}
	h.Logger().Warn("request failed", "url", "https://api/bot"+token+"/send")
	if logs := h.Logs(); strings.Contains(logs, token) || !strings.Contains(logs, extension.RedactedSecret) {
		t.Errorf("logs: %s", logs)
	}
}
