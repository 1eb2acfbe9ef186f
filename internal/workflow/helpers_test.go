package workflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/eventbus"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

func TestMain(m *testing.M) {
	if runHelperProcess() {
		return
	}
	goleak.VerifyTestMain(m,
		// database/sql's connection opener ends asynchronously after
		// DB.Close.
		goleak.IgnoreTopFunction("database/sql.(*DB).connectionOpener"))
}

// thread is the user thread most tests spawn from.
const thread chat.ThreadID = "test:alice"

func testLogger(t testing.TB) *slog.Logger {
	if testing.Verbose() {
		return slog.New(slog.NewTextHandler(tlogWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(io.Discard, nil))
}

type tlogWriter struct{ t testing.TB }

func (w tlogWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func openDB(t testing.TB, file string) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), file)
	if err != nil {
		t.Fatal(err)
	}
	// One connection: goroutines then queue for it on a channel instead of
	// sleeping in SQLite's busy handler. A busy sleep counts as durably
	// blocked in a synctest bubble, so synctest.Wait could return while a
	// write is still in progress.
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}

// recorder is a Deliverer that records system events.
type recorder struct {
	mu     sync.Mutex
	events []delivered
	signal chan struct{}
	fail   int // refuse this many deliveries first
}

type delivered struct {
	Thread chat.ThreadID
	Text   string
}

func newRecorder() *recorder { return &recorder{signal: make(chan struct{}, 1000)} }

func (r *recorder) EnqueueSystemEvent(_ context.Context, th chat.ThreadID, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.fail > 0 {
		r.fail--
		return fmt.Errorf("queue full")
	}
	r.events = append(r.events, delivered{th, text})
	r.signal <- struct{}{}
	return nil
}

// wait blocks until n events have been delivered in total and returns them.
func (r *recorder) wait(t testing.TB, n int) []delivered {
	t.Helper()
	for {
		r.mu.Lock()
		got := slices.Clone(r.events)
		r.mu.Unlock()
		if len(got) >= n {
			return got
		}
		select {
		case <-r.signal:
		case <-time.After(48 * time.Hour):
			t.Fatalf("%d deliveries after 48 hours of (fake) time, want %d: %+v", len(got), n, got)
		}
	}
}

func (r *recorder) all() []delivered {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.events)
}

// objectiveOf extracts a worker's objective from its system prompt.
func objectiveOf(req llm.Request) string {
	_, after, ok := strings.Cut(req.System, "## Objective\n")
	if !ok {
		return ""
	}
	obj, _, _ := strings.Cut(after, "\n\n")
	return obj
}

func toolNamesOf(req llm.Request) []string {
	var out []string
	for _, s := range req.Tools {
		out = append(out, s.Name)
	}
	return out
}

func lastMessage(req llm.Request) llm.Message {
	if len(req.Messages) == 0 {
		return llm.Message{}
	}
	return req.Messages[len(req.Messages)-1]
}

// behaviour answers one worker's model call.
type behaviour func(ctx context.Context, req llm.Request) (llm.Response, error)

// fakeModel dispatches model calls by objective; unknown objectives
// answer "done: <objective>" at once.
type fakeModel struct {
	mu       sync.Mutex
	by       map[string]behaviour
	requests map[string][]llm.Request
}

func newModel() *fakeModel {
	return &fakeModel{by: map[string]behaviour{}, requests: map[string][]llm.Request{}}
}

func (f *fakeModel) on(objective string, b behaviour) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.by[objective] = b
}

func (f *fakeModel) reqs(objective string) []llm.Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.requests[objective])
}

func (f *fakeModel) Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error) {
	obj := objectiveOf(req)
	f.mu.Lock()
	f.requests[obj] = append(f.requests[obj], req)
	b := f.by[obj]
	f.mu.Unlock()
	if b == nil {
		b = func(context.Context, llm.Request) (llm.Response, error) { return reply("done: " + obj), nil }
	}
	return llmtest.Func(b).Generate(ctx, req, stream)
}

func reply(text string) llm.Response {
	return llm.Response{Message: llm.AssistantText(text)}
}

func callTools(calls ...llm.ToolCall) llm.Response {
	msg := llm.Message{Role: llm.RoleAssistant}
	for i, c := range calls {
		if c.ID == "" {
			c.ID = fmt.Sprintf("c%d", i)
		}
		msg.Parts = append(msg.Parts, c)
	}
	return llm.Response{Message: msg}
}

func call(name string, args any) llm.ToolCall {
	b, _ := json.Marshal(args)
	return llm.ToolCall{Name: name, Arguments: b}
}

// blockUntilDone is a model call that only returns when its context ends.
func blockUntilDone(ctx context.Context, _ llm.Request) (llm.Response, error) {
	<-ctx.Done()
	return llm.Response{}, context.Cause(ctx)
}

// testTools are the main agent's tools as workers see them.
func testTools() []tool.Tool {
	type args struct {
		Q string `json:"q"`
	}
	type pathArgs struct {
		Path string `json:"path"`
	}
	echo := func(_ context.Context, a args) (any, error) { return "result for " + a.Q, nil }
	return []tool.Tool{
		tool.New("lookup", "look something up", echo, tool.ReadOnly(), tool.WithCategories("research")),
		tool.New("write_note", "write a note", echo, tool.WithCategories("execution")),
		tool.New("read_file", "read a file", func(_ context.Context, a pathArgs) (any, error) { return "file " + a.Path, nil },
			tool.WithCategories("files", "research")),
		tool.New("append_memory", "remember", echo),
		tool.New("read_skill", "read a skill", func(_ context.Context, a struct {
			Name string `json:"name"`
		}) (any, error) {
			return "skill " + a.Name, nil
		}, tool.ReadOnly(), tool.WithCategories("memory")),
		tool.New("add_skill", "add a skill", func(_ context.Context, a struct {
			Name string `json:"name"`
		}) (any, error) {
			return "saved", nil
		}, tool.WithCategories("memory")),
		tool.New("send_to_channel", "send", echo, tool.WithCategories("orchestration")),
		tool.New("request_restart", "restart", echo),
	}
}

// env is a manager under test with its collaborators.
type env struct {
	t       testing.TB
	db      *sql.DB
	file    string
	m       *Manager
	model   *fakeModel
	deliver *recorder
	bus     *eventbus.Bus
	log     *interactions.Store
	stop    func()
	opts    Options
}

type envOption func(*Options)

func newEnv(t testing.TB, opts ...envOption) *env {
	t.Helper()
	file := filepath.Join(t.TempDir(), "reverie.db")
	return openEnv(t, file, newModel(), opts...)
}

// openEnv opens a manager on file (which may hold a previous run's state)
// and runs it until the test ends or e.stop is called.
func openEnv(t testing.TB, file string, model *fakeModel, opts ...envOption) *env {
	t.Helper()
	db := openDB(t, file)
	ctx := context.Background()
	bus, err := eventbus.Open(ctx, db, eventbus.Options{Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	ilog, err := interactions.Open(ctx, db, interactions.Options{})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, db: db, file: file, model: model, deliver: newRecorder(), bus: bus, log: ilog}
	o := Options{
		DB: db, Model: model, Tools: testTools, Deliver: e.deliver, Events: bus, Interactions: ilog,
		DataDir: t.TempDir(), Profiles: tool.Profiles{"researcher": {"lookup", "read_file"}},
		MaxConcurrent: 8, Logger: testLogger(t),
	}
	for _, f := range opts {
		f(&o)
	}
	e.opts = o
	m, err := Open(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	e.m = m
	rctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- m.Run(rctx) }()
	var once sync.Once
	e.stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("Run: %v", err)
			}
		})
	}
	t.Cleanup(e.stop)
	return e
}

func (e *env) spawn(req SpawnRequest) SpawnResult {
	e.t.Helper()
	if req.Parent == "" {
		req.Parent = thread
	}
	res, err := e.m.Spawn(context.Background(), req)
	if err != nil {
		e.t.Fatalf("spawn %q: %v", req.Objective, err)
	}
	return res
}

func (e *env) node(id string) Node {
	e.t.Helper()
	n, err := e.m.GetNode(context.Background(), id)
	if err != nil {
		e.t.Fatal(err)
	}
	return n
}

// topics lists the bus events published so far with their session ids.
func (e *env) topics(prefix string) []string {
	e.t.Helper()
	evs, err := e.bus.Recent(context.Background(), prefix, 0, 1000)
	if err != nil {
		e.t.Fatal(err)
	}
	slices.SortFunc(evs, func(a, b extension.Event) int { return int(a.ID - b.ID) })
	var out []string
	for _, ev := range evs {
		var p struct {
			Session  string `json:"session_id"`
			Workflow string `json:"workflow_id"`
		}
		_ = json.Unmarshal(ev.Payload, &p)
		out = append(out, ev.Topic+" "+p.Session)
	}
	return out
}

func (e *env) outcomes() []Outcome {
	e.t.Helper()
	os, err := e.m.Outcomes(context.Background(), OutcomeFilter{})
	if err != nil {
		e.t.Fatal(err)
	}
	slices.Reverse(os)
	return os
}

func contains(t testing.TB, s, sub string) {
	t.Helper()
	if !strings.Contains(s, sub) {
		t.Errorf("%q\ndoes not contain %q", s, sub)
	}
}
