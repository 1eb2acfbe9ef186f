package modelrouter

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"testing"

	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

// withUsage answers text with the given usage.
func withUsage(text string, in, out int) func(context.Context, llm.StreamFunc) (llm.Response, error) {
	return func(context.Context, llm.StreamFunc) (llm.Response, error) {
		return llm.Response{Message: llm.AssistantText(text), Usage: llm.Usage{InputTokens: in, OutputTokens: out}}, nil
	}
}

// A conversation's chosen backend is tried first for its main-role calls
// (the role's others stay fallbacks), its limits are the chosen backend's,
// other conversations and roles keep the configured order, the choice
// survives a new Router on the same database, and each conversation's
// token use is recorded apart.
func TestThreadBackend(t *testing.T) {
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "r.db")
	db, err := sqlite.Open(ctx, dbPath)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	a := &fakeBackend{name: "a", gen: withUsage("a", 100, 10)}
	big := &fakeBackend{name: "big", gen: withUsage("big", 700, 20)}
	build := func() *Router {
		r, err := New(ctx, Options{Backends: []Backend{a, big}, DB: db,
			Roles:  map[string][]string{RoleMain: {"a"}, RoleScout: {"a"}},
			Limits: map[string]Limits{"a": {ContextSize: 8000, MaxTokens: 500}, "big": {ContextSize: 200000, MaxTokens: 8000, Vision: true}}})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	r := build()
	if err := r.SetThreadBackend(ctx, "web:x", "nope"); !errors.Is(err, ErrUnknownBackend) {
		t.Fatalf("unknown backend: %v", err)
	}
	if err := r.SetThreadBackend(ctx, "web:x", "big"); err != nil {
		t.Fatal(err)
	}
	r = build() // the choice is stored
	m, lim := r.ForThread(ctx, RoleMain, "web:x")
	if lim.ContextSize != 200000 || !lim.Vision {
		t.Errorf("limits of the chosen backend = %+v", lim)
	}
	resp, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, nil)
	if err != nil || resp.Message.Text() != "big" {
		t.Fatalf("chosen backend not called: %q %v", resp.Message.Text(), err)
	}
	other, lim := r.ForThread(ctx, RoleMain, "web:y")
	if lim.ContextSize != 8000 {
		t.Errorf("another conversation's limits = %+v", lim)
	}
	for range 2 {
		if resp, err := other.Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, nil); err != nil || resp.Message.Text() != "a" {
			t.Fatalf("another conversation: %q %v", resp.Message.Text(), err)
		}
	}
	if scout, _ := r.ForThread(ctx, RoleScout, "web:x"); scout.names()[0] != "a" {
		t.Errorf("the choice applies to the scout role too: %v", scout.names())
	}
	// Down: the role's own backends are the fallback.
	big.gen = fail(errDown)
	if resp, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, nil); err != nil || resp.Message.Text() != "a" {
		t.Errorf("no fallback from a chosen backend that is down: %q %v", resp.Message.Text(), err)
	}
	x, err := r.Thread(ctx, "web:x")
	if err != nil {
		t.Fatal(err)
	}
	if want := (ThreadUsage{Backend: "big", LastInputTokens: 100, InputTokens: 800, OutputTokens: 30, Calls: 2}); x != want {
		t.Errorf("web:x = %+v, want %+v", x, want)
	}
	y, _ := r.Thread(ctx, "web:y")
	if want := (ThreadUsage{LastInputTokens: 100, InputTokens: 200, OutputTokens: 20, Calls: 2}); y != want {
		t.Errorf("web:y = %+v, want %+v", y, want)
	}
	// Back to the role's backends.
	if err := r.SetThreadBackend(ctx, "web:x", ""); err != nil {
		t.Fatal(err)
	}
	if x, _ := r.Thread(ctx, "web:x"); x.Backend != "" || x.InputTokens != 800 {
		t.Errorf("after clearing: %+v", x)
	}
	// The router keeps each conversation's choice once read: a new one
	// is what the next turn uses.
	if _, lim := r.ForThread(ctx, RoleMain, "web:x"); lim.ContextSize != 8000 {
		t.Errorf("limits after clearing = %+v", lim)
	}
	if err := r.SetThreadBackend(ctx, "web:x", "big"); err != nil {
		t.Fatal(err)
	}
	if m, lim := r.ForThread(ctx, RoleMain, "web:x"); lim.ContextSize != 200000 || m.names()[0] != "big" {
		t.Errorf("limits after choosing again = %+v, backends %v", lim, m.names())
	}
}

// Roles lists every built-in role with the backends it resolves to and
// what it falls back to; Backends lists each backend with its limits.
func TestRolesAndBackends(t *testing.T) {
	a := &fakeBackend{name: "a", gen: ok("a")}
	s := &fakeBackend{name: "s", gen: ok("s")}
	r := newRouter(t, map[string][]string{RoleMain: {"a", "s"}, RoleScout: {"s"}}, a, s)
	r.RegisterRole("thalamus", RoleMain)
	got := map[string]RoleInfo{}
	var order []string
	for _, ri := range r.Roles() {
		got[ri.Role] = ri
		order = append(order, ri.Role)
	}
	if !reflect.DeepEqual(order, append(append([]string(nil), BuiltinRoles...), "thalamus")) {
		t.Errorf("roles = %v", order)
	}
	for role, want := range map[string]RoleInfo{
		RoleMain:       {Role: RoleMain, Backends: []string{"a", "s"}},
		RoleScout:      {Role: RoleScout, Backends: []string{"s"}},
		RoleCompaction: {Role: RoleCompaction, Backends: []string{"a", "s"}, FallsBackTo: RoleMain},
		"thalamus":     {Role: "thalamus", Backends: []string{"a", "s"}, FallsBackTo: RoleMain},
	} {
		if !reflect.DeepEqual(got[role], want) {
			t.Errorf("%s = %+v, want %+v", role, got[role], want)
		}
	}
	bs := r.Backends()
	if len(bs) != 2 || bs[0].Name != "a" || bs[0].Model != "m-a" || bs[0].Limits != DefaultLimits {
		t.Errorf("backends = %+v", bs)
	}
}
