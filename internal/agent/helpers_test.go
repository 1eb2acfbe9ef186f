package agent

import (
	"context"
	"database/sql"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// fixedNow is the test clock: Monday 6 January 2025, 09:00 UTC.
var fixedNow = time.Date(2025, time.January, 6, 9, 0, 0, 0, time.UTC)

// fakeModels serves a model per role with per-role limits.
type fakeModels struct {
	main, compaction toolloop.Model
	limits           map[string]modelrouter.Limits
}

func (f *fakeModels) Model(role string) toolloop.Model {
	if role == modelrouter.RoleCompaction && f.compaction != nil {
		return f.compaction
	}
	return f.main
}

func (f *fakeModels) Limits(role string) modelrouter.Limits {
	if l, ok := f.limits[role]; ok {
		return l
	}
	if l, ok := f.limits[modelrouter.RoleMain]; ok {
		return l
	}
	return modelrouter.DefaultLimits
}

// recordingBus records published events.
type recordingBus struct {
	mu     sync.Mutex
	events []busEvent
}

type busEvent struct {
	Topic   string
	Payload json.RawMessage
}

func (b *recordingBus) Publish(ctx context.Context, topic string, payload any) error {
	p, err := json.Marshal(payload)
	if err != nil {
		return err
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.events = append(b.events, busEvent{topic, p})
	return nil
}

func (b *recordingBus) topics() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for _, e := range b.events {
		out = append(out, e.Topic)
	}
	return out
}

// env is an agent over real SQLite in a temporary directory with a small
// data dir (short BASE_PROMPT, a plain compaction template).
type env struct {
	t      testing.TB
	dir    string
	db     *sql.DB
	store  *conversation.Store
	log    *interactions.Store
	bus    *recordingBus
	models *fakeModels
	agent  *Agent
}

const testBase = "You are a test assistant.\n<!-- if tool:echo -->\nUse echo to repeat things.\n<!-- end -->\n"

const testCompactionPrompt = "Summarise the conversation.\n\n{history}\n"

func newEnv(t testing.TB, main toolloop.Model, tweak func(*Options)) *env {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	store, err := conversation.Open(ctx, db, conversation.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	ilog, err := interactions.Open(ctx, db, interactions.Options{Now: func() time.Time { return fixedNow }})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, dir, "BASE_PROMPT.txt", testBase)
	writeFile(t, dir, "prompts/COMPACTION_PROMPT.txt", testCompactionPrompt)
	e := &env{t: t, dir: dir, db: db, store: store, log: ilog, bus: &recordingBus{},
		models: &fakeModels{main: main, limits: map[string]modelrouter.Limits{}}}
	opts := Options{
		Conversations: store, Models: e.models, DataDir: dir,
		Interactions: ilog, Events: e.bus,
		Now: func() time.Time { return fixedNow },
	}
	if tweak != nil {
		tweak(&opts)
	}
	a, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	e.agent = a
	return e
}

func writeFile(t testing.TB, dir, rel, content string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func (e *env) history(thread chat.ThreadID) []conversation.StoredMessage {
	e.t.Helper()
	h, err := e.store.History(context.Background(), thread)
	if err != nil {
		e.t.Fatal(err)
	}
	return h
}

func (e *env) interactions(action interactions.Action) []interactions.Entry {
	e.t.Helper()
	l, err := e.log.List(context.Background(), interactions.Filter{Action: action})
	if err != nil {
		e.t.Fatal(err)
	}
	return l
}

type echoArgs struct {
	Text string `json:"text"`
}

func echoTool() tool.Tool {
	return tool.New("echo", "Repeat text.", func(ctx context.Context, a echoArgs) (any, error) {
		return "echo: " + a.Text, nil
	})
}

// roles renders a history as "role:text" lines for comparisons.
func roles(h []conversation.StoredMessage) []string {
	out := make([]string, len(h))
	for i, m := range h {
		s := string(m.Message.Role) + ":"
		for _, p := range m.Message.Parts {
			switch p := p.(type) {
			case llm.Text:
				s += p.Text
			case llm.ToolCall:
				s += "call " + p.Name + " " + string(p.Arguments)
			case llm.ToolResult:
				s += "result " + p.Name + " " + p.Content
			}
		}
		out[i] = s
	}
	return out
}

// describedTool is a tool whose description can change between turns.
type describedTool struct {
	name, desc string
	schema     json.RawMessage
}

func (t *describedTool) Name() string            { return t.name }
func (t *describedTool) Description() string     { return t.desc }
func (t *describedTool) Schema() json.RawMessage { return t.schema }
func (t *describedTool) Call(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{}, nil
}

// Tool counts are kept between turns, and counted again when a tool's
// description or schema changes.
func TestToolTokensFollowChanges(t *testing.T) {
	a := &Agent{o: Options{Counter: prompt.NewCounter("")}}
	dt := &describedTool{name: "shell", desc: "Runs a command.", schema: json.RawMessage(`{"type":"object"}`)}
	other := &describedTool{name: "read", desc: "Reads a file.", schema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)}
	count := func(ts ...tool.Tool) int {
		n := 0
		for _, t := range ts {
			n += a.o.Counter.Count(t.Name()) + a.o.Counter.Count(t.Description()) + a.o.Counter.Count(string(t.Schema())) + prompt.ToolCallOverhead
		}
		return n
	}
	if got, want := a.toolTokens([]tool.Tool{dt, other}), count(dt, other); got != want {
		t.Fatalf("first count = %d, want %d", got, want)
	}
	dt.desc = "Runs a command in a sandbox (bubblewrap and Landlock, tested), with limits on processes and memory."
	if got, want := a.toolTokens([]tool.Tool{dt, other}), count(dt, other); got != want {
		t.Fatalf("after a new description: %d, want %d", got, want)
	}
	dt.schema = json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"},"timeout":{"type":"integer"}}}`)
	if got, want := a.toolTokens([]tool.Tool{dt}), count(dt); got != want {
		t.Fatalf("after a new schema: %d, want %d", got, want)
	}
}
