package modelrouter

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

type fakeBackend struct {
	name  string
	mu    sync.Mutex
	calls int
	reqs  []llm.Request
	gen   func(ctx context.Context, stream llm.StreamFunc) (llm.Response, error)
}

func (f *fakeBackend) Name() string                             { return f.name }
func (f *fakeBackend) Model() string                            { return "m-" + f.name }
func (f *fakeBackend) Ping(ctx context.Context) (string, error) { return "nothing (a fake)", nil }
func (f *fakeBackend) Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error) {
	f.mu.Lock()
	f.calls++
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	return f.gen(ctx, stream)
}
func (f *fakeBackend) Calls() int { f.mu.Lock(); defer f.mu.Unlock(); return f.calls }

func ok(text string) func(context.Context, llm.StreamFunc) (llm.Response, error) {
	return func(_ context.Context, s llm.StreamFunc) (llm.Response, error) {
		if s != nil {
			s(llm.Event{Kind: llm.EventTextDelta, Text: text})
		}
		return llm.Response{Message: llm.AssistantText(text), Usage: llm.Usage{InputTokens: 10, OutputTokens: 3}}, nil
	}
}

func fail(err error) func(context.Context, llm.StreamFunc) (llm.Response, error) {
	return func(context.Context, llm.StreamFunc) (llm.Response, error) { return llm.Response{}, err }
}

var (
	errDown = &providers.Error{Provider: "x", Model: "y", Err: fmt.Errorf("%w: connection refused", providers.ErrUnavailable)}
	errAuth = &providers.Error{Provider: "x", Model: "y", Status: 401, Err: providers.ErrAuth}
)

func newRouter(t *testing.T, roles map[string][]string, bs ...Backend) *Router {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	r, err := New(context.Background(), Options{Backends: bs, Roles: roles, DB: db})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestFallback(t *testing.T) {
	tests := []struct {
		name       string
		first      func(context.Context, llm.StreamFunc) (llm.Response, error)
		stream     bool
		wantText   string
		wantErr    error
		wantSecond int
	}{
		{"first answers", ok("a"), false, "a", nil, 0},
		{"unavailable falls back", fail(errDown), false, "b", nil, 1},
		{"auth error does not fall back", fail(errAuth), false, "", providers.ErrAuth, 0},
		{"cancelled does not fall back", fail(context.Canceled), false, "", context.Canceled, 0},
		{"failure after streamed text does not fall back", func(_ context.Context, s llm.StreamFunc) (llm.Response, error) {
			s(llm.Event{Kind: llm.EventTextDelta, Text: "par"})
			return llm.Response{}, errDown
		}, true, "", providers.ErrUnavailable, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := &fakeBackend{name: "a", gen: tc.first}
			b := &fakeBackend{name: "b", gen: ok("b")}
			r := newRouter(t, map[string][]string{"main": {"a", "b"}}, a, b)
			var stream llm.StreamFunc
			if tc.stream {
				stream = func(llm.Event) {}
			}
			resp, err := r.Model(RoleMain).Generate(context.Background(), llm.Request{}, stream)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("err = %v, want %v", err, tc.wantErr)
				}
			} else if err != nil {
				t.Fatal(err)
			}
			if got := resp.Message.Text(); tc.wantErr == nil && got != tc.wantText {
				t.Fatalf("text = %q, want %q", got, tc.wantText)
			}
			if b.Calls() != tc.wantSecond {
				t.Fatalf("second backend calls = %d, want %d", b.Calls(), tc.wantSecond)
			}
		})
	}
}

func TestAllUnavailable(t *testing.T) {
	a := &fakeBackend{name: "a", gen: fail(errDown)}
	b := &fakeBackend{name: "b", gen: fail(errDown)}
	r := newRouter(t, map[string][]string{"main": {"a", "b"}}, a, b)
	_, err := r.Model(RoleMain).Generate(context.Background(), llm.Request{}, nil)
	if !errors.Is(err, providers.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	if a.Calls() != 1 || b.Calls() != 1 {
		t.Fatalf("calls a=%d b=%d", a.Calls(), b.Calls())
	}
}

func TestCooldownSkipsDownBackend(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	a := &fakeBackend{name: "a", gen: fail(errDown)}
	b := &fakeBackend{name: "b", gen: ok("b")}
	r, err := New(context.Background(), Options{
		Backends: []Backend{a, b}, Roles: map[string][]string{"main": {"a", "b"}},
		Now: func() time.Time { return now }, Cooldown: time.Minute,
	})
	if err != nil {
		t.Fatal(err)
	}
	m := r.Model(RoleMain)
	for range 3 {
		if _, err := m.Generate(context.Background(), llm.Request{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if a.Calls() != 1 {
		t.Fatalf("down backend called %d times during cool-down, want 1", a.Calls())
	}
	now = now.Add(2 * time.Minute)
	a.gen = ok("a")
	resp, err := m.Generate(context.Background(), llm.Request{}, nil)
	if err != nil || resp.Message.Text() != "a" {
		t.Fatalf("after cool-down: %q, %v", resp.Message.Text(), err)
	}
}

func TestPoolSpreadsLoad(t *testing.T) {
	release := make(chan struct{})
	started := make(chan string, 2)
	block := func(name string) func(context.Context, llm.StreamFunc) (llm.Response, error) {
		return func(context.Context, llm.StreamFunc) (llm.Response, error) {
			started <- name
			<-release
			return llm.Response{Message: llm.AssistantText(name)}, nil
		}
	}
	a := &fakeBackend{name: "a", gen: block("a")}
	b := &fakeBackend{name: "b", gen: block("b")}
	r := newRouter(t, map[string][]string{"sub_sessions": {"a", "b"}, "main": {"a"}}, a, b)
	m := r.Model(RoleSubSessions)
	var wg sync.WaitGroup
	wg.Go(func() { m.Generate(context.Background(), llm.Request{}, nil) })
	first := <-started
	wg.Go(func() { m.Generate(context.Background(), llm.Request{}, nil) })
	second := <-started
	close(release)
	wg.Wait()
	if first == second {
		t.Fatalf("both concurrent calls went to %s; a pool role must spread them", first)
	}
}

func TestRolesFallBackToMain(t *testing.T) {
	a := &fakeBackend{name: "a", gen: ok("a")}
	s := &fakeBackend{name: "s", gen: ok("s")}
	r := newRouter(t, map[string][]string{"main": {"a"}, "scout": {"s"}}, a, s)
	r.RegisterRole("thalamus", RoleMain)
	for role, want := range map[string]string{"main": "a", "scout": "s", "dreaming": "a", "thalamus": "a", "unknown": ""} {
		resp, err := r.Model(role).Generate(context.Background(), llm.Request{}, nil)
		if want == "" {
			if !errors.Is(err, ErrNoModel) {
				t.Errorf("role %s: err = %v, want ErrNoModel", role, err)
			}
			continue
		}
		if err != nil || resp.Message.Text() != want {
			t.Errorf("role %s: %q, %v; want %q", role, resp.Message.Text(), err, want)
		}
	}
}

func TestNoModel(t *testing.T) {
	r := newRouter(t, nil)
	if r.Configured() {
		t.Fatal("Configured with no backends")
	}
	_, err := r.Model(RoleMain).Generate(context.Background(), llm.Request{}, nil)
	if !errors.Is(err, ErrNoModel) {
		t.Fatalf("err = %v", err)
	}
	if r.Describe(RoleMain) != "none" {
		t.Fatal(r.Describe(RoleMain))
	}
}

func TestUnknownBackendInRole(t *testing.T) {
	a := &fakeBackend{name: "a", gen: ok("a")}
	_, err := New(context.Background(), Options{Backends: []Backend{a}, Roles: map[string][]string{"main": {"a", "zz"}}})
	if err == nil || !strings.Contains(err.Error(), `unknown backend "zz"`) {
		t.Fatalf("err = %v", err)
	}
}

func TestUsageRecorded(t *testing.T) {
	a := &fakeBackend{name: "a", gen: ok("a")}
	r := newRouter(t, map[string][]string{"main": {"a"}}, a)
	for _, role := range []string{"main", "main", "scout"} {
		if _, err := r.Model(role).Generate(context.Background(), llm.Request{}, nil); err != nil {
			t.Fatal(err)
		}
	}
	rows, err := r.Usage(context.Background(), "", "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]UsageRow{}
	for _, u := range rows {
		got[u.Role] = u
	}
	if u := got["main"]; u.Calls != 2 || u.InputTokens != 20 || u.OutputTokens != 6 || u.Backend != "a" {
		t.Fatalf("main usage = %+v", u)
	}
	if u := got["scout"]; u.Calls != 1 {
		t.Fatalf("scout usage = %+v", u)
	}
}

func TestEnvDefaults(t *testing.T) {
	ollama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/tags" {
			http.NotFound(w, r)
			return
		}
		w.Write([]byte(`{"models":[{"name":"llama3.2:3b"},{"name":"qwen3:8b"}]}`))
	}))
	defer ollama.Close()
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()

	tests := []struct {
		name         string
		env          []string
		wantOK       bool
		wantProvider string
		wantModel    string
		wantBase     string
	}{
		{"openai key", []string{"OPENAI_API_KEY=k"}, true, ProviderOpenAI, DefaultOpenAIModel, ""},
		{"openai compatible with model", []string{"OPENAI_BASE_URL=http://x/v1", "REVERIE_MODEL=qwen"}, true, ProviderOpenAI, "qwen", "http://x/v1"},
		{"openai wins over anthropic", []string{"ANTHROPIC_API_KEY=a", "OPENAI_API_KEY=k"}, true, ProviderOpenAI, DefaultOpenAIModel, ""},
		{"anthropic", []string{"ANTHROPIC_API_KEY=a", "OLLAMA_HOST=" + ollama.URL}, true, ProviderAnthropic, DefaultAnthropicModel, ""},
		{"ollama first model", []string{"OLLAMA_HOST=" + ollama.URL}, true, ProviderOllama, "llama3.2:3b", ollama.URL + "/v1"},
		{"ollama named model", []string{"OLLAMA_HOST=" + ollama.URL, "REVERIE_MODEL=qwen3:8b"}, true, ProviderOllama, "qwen3:8b", ollama.URL + "/v1"},
		{"nothing answers", []string{"OLLAMA_HOST=" + closedURL}, false, "", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec, ok := EnvDefaults(context.Background(), tc.env, nil)
			if ok != tc.wantOK {
				t.Fatalf("ok = %v, want %v (%+v)", ok, tc.wantOK, spec)
			}
			if !ok {
				return
			}
			if spec.Provider != tc.wantProvider || spec.Model != tc.wantModel || spec.BaseURL != tc.wantBase {
				t.Fatalf("spec = %+v", spec)
			}
		})
	}
	for _, v := range []struct {
		value string
		want  bool
	}{{"", false}, {"true", true}, {"1", true}, {"no", false}} {
		spec, _ := EnvDefaults(context.Background(), []string{"OPENAI_API_KEY=k", "REVERIE_MODEL_VISION=" + v.value}, nil)
		if spec.Vision != v.want {
			t.Errorf("REVERIE_MODEL_VISION=%q: vision = %v, want %v", v.value, spec.Vision, v.want)
		}
	}
}

// A backend configured for vision gets image parts as they are; one without
// (here the fallback while the first is down) gets each as a note naming
// the file.
func TestImagesForBackendsWithoutVision(t *testing.T) {
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	vision := &fakeBackend{name: "v", gen: fail(errDown)}
	text := &fakeBackend{name: "t", gen: ok("fine")}
	r, err := New(context.Background(), Options{Backends: []Backend{vision, text}, DB: db,
		Roles:  map[string][]string{RoleMain: {"v", "t"}},
		Limits: map[string]Limits{"v": {ContextSize: 1000, MaxTokens: 100, Vision: true}, "t": {ContextSize: 1000, MaxTokens: 100}}})
	if err != nil {
		t.Fatal(err)
	}
	if !r.Limits(RoleMain).Vision {
		t.Error("Limits(main).Vision = false for a vision backend")
	}
	img := llm.Image{MediaType: "image/jpeg", Path: "telegram/1/p.jpg", Data: []byte("jpeg")}
	req := llm.Request{Messages: []llm.Message{{Role: llm.RoleUser, Parts: []llm.Part{img, llm.Text{Text: "what is it?"}}}}}
	if _, err := r.Model(RoleMain).Generate(context.Background(), req, nil); err != nil {
		t.Fatal(err)
	}
	if got := vision.reqs[0].Messages[0].Parts[0]; !reflect.DeepEqual(got, img) {
		t.Errorf("vision backend got %#v, want the image", got)
	}
	want := llm.Text{Text: "[image saved at workspace/telegram/1/p.jpg; this model cannot see images]"}
	if got := text.reqs[0].Messages[0].Parts[0]; got != llm.Part(want) {
		t.Errorf("text-only backend got %#v, want %#v", got, want)
	}
	if _, ok := req.Messages[0].Parts[0].(llm.Image); !ok {
		t.Error("the caller's request was changed")
	}
}

// Calls made at once are each accounted for once, in the day's usage and
// in their conversation's, whether or not their records shared a
// transaction.
func TestUsageRecordedConcurrently(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared commits %v", shared), func(t *testing.T) { usageRecordedConcurrently(t, shared) })
	}
}

func usageRecordedConcurrently(t *testing.T, shared bool) {
	ctx := context.Background()
	a := &fakeBackend{name: "a", gen: ok("a")}
	r := newRouter(t, map[string][]string{"main": {"a"}}, a)
	if shared {
		r.opts.Commits = sqlite.NewCommitter(r.opts.DB, nil)
	}
	const threads, calls = 8, 5
	var wg sync.WaitGroup
	for i := range threads {
		for range calls {
			wg.Go(func() {
				m, _ := r.ForThread(ctx, RoleMain, fmt.Sprintf("web:%d", i))
				if _, err := m.Generate(ctx, llm.Request{}, nil); err != nil {
					t.Error(err)
				}
			})
		}
	}
	wg.Go(func() { // no thread: the day's usage only
		if _, err := r.Model("scout").Generate(ctx, llm.Request{}, nil); err != nil {
			t.Error(err)
		}
	})
	wg.Wait()
	rows, err := r.Usage(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]UsageRow{}
	for _, u := range rows {
		got[u.Role] = u
	}
	if u := got["main"]; u.Calls != threads*calls || u.InputTokens != 10*threads*calls || u.OutputTokens != 3*threads*calls {
		t.Errorf("main usage = %+v", u)
	}
	if u := got["scout"]; u.Calls != 1 || u.InputTokens != 10 {
		t.Errorf("scout usage = %+v", u)
	}
	for i := range threads {
		u, err := r.Thread(ctx, fmt.Sprintf("web:%d", i))
		if err != nil {
			t.Fatal(err)
		}
		if u.Calls != calls || u.InputTokens != 10*calls || u.OutputTokens != 3*calls || u.LastInputTokens != 10 {
			t.Errorf("web:%d usage = %+v", i, u)
		}
	}
}
