package router

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type models struct{ m toolloop.Model }

func (f models) Model(string) toolloop.Model      { return f.m }
func (f models) Limits(string) modelrouter.Limits { return modelrouter.DefaultLimits }

// sent is one delivery to a fake channel.
type sent struct {
	Kind   chat.OutboundKind
	Thread chat.ThreadID
	Text   string
}

// fakeChannel records Send calls on a channel.
type fakeChannel struct {
	name string
	out  chan sent
}

func (c *fakeChannel) ChannelName() string { return c.name }
func (c *fakeChannel) Send(ctx context.Context, msg chat.Outbound) error {
	c.out <- sent{msg.Kind, msg.Address.Thread, msg.Text}
	return nil
}

// streamingChannel records streams as event lists.
type streamingChannel struct {
	fakeChannel
	streams chan []string
}

type recStream struct {
	c      *streamingChannel
	events []string
}

func (c *streamingChannel) OpenStream(ctx context.Context, addr chat.Address) (extension.Stream, error) {
	return &recStream{c: c, events: []string{"open " + string(addr.Thread)}}, nil
}
func (s *recStream) Delta(text string) error { s.events = append(s.events, "delta "+text); return nil }
func (s *recStream) Status(st extension.StreamStatus) error {
	s.events = append(s.events, string(st.Kind)+" "+st.Tool+" "+st.Result)
	return nil
}
func (s *recStream) Close(final string, err error) error {
	e := "close " + final
	if err != nil {
		e += " (error)"
	}
	s.c.streams <- append(s.events, e)
	return nil
}

type lookup map[string]extension.ChannelProvider

func (l lookup) Channel(name string) (extension.ChannelProvider, bool) {
	c, ok := l[name]
	return c, ok
}

type harness struct {
	t      *testing.T
	db     *sql.DB
	store  *conversation.Store
	router *Router
	web    *fakeChannel
	live   *streamingChannel
}

func newHarness(t *testing.T, model toolloop.Model, tools []tool.Tool, tweak func(*Options)) *harness {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return newHarnessOn(t, db, dir, model, tools, tweak)
}

func newHarnessOn(t *testing.T, db *sql.DB, dir string, model toolloop.Model, tools []tool.Tool, tweak func(*Options)) *harness {
	t.Helper()
	ctx := context.Background()
	store, err := conversation.Open(ctx, db, conversation.Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := agent.New(agent.Options{
		Conversations: store, Models: models{model}, DataDir: dir,
		Tools: func(chat.ThreadID) []tool.Tool { return tools },
	})
	if err != nil {
		t.Fatal(err)
	}
	h := &harness{t: t, db: db, store: store,
		web:  &fakeChannel{name: "web", out: make(chan sent, 16)},
		live: &streamingChannel{fakeChannel: fakeChannel{name: "live", out: make(chan sent, 16)}, streams: make(chan []string, 16)},
	}
	// the inbox writes through a shared group commit, as in the app
	opts := Options{DB: db, Commits: sqlite.NewCommitter(db, nil), Agent: a, Threads: store, Channels: lookup{"web": h.web, "live": h.live}}
	if tweak != nil {
		tweak(&opts)
	}
	r, err := New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.router = r
	return h
}

// run runs the router until the test ends.
func (h *harness) run() {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.router.Run(ctx) }()
	h.t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			h.t.Errorf("Run: %v", err)
		}
	})
}

func (h *harness) markKnown(t chat.ThreadID) {
	// An existing conversation: no seed.
	if _, err := h.store.Append(context.Background(), t, llm.AssistantText("earlier")); err != nil {
		h.t.Fatal(err)
	}
}

func recv[T any](t *testing.T, ch <-chan T) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for a delivery")
		panic("unreachable")
	}
}

// lastUser is the text of the last user message of a request.
func lastUser(r llm.Request) string {
	for i := len(r.Messages) - 1; i >= 0; i-- {
		if r.Messages[i].Role == llm.RoleUser {
			return r.Messages[i].Text()
		}
	}
	return ""
}

func echo(text string) llmtest.Func {
	return func(ctx context.Context, r llm.Request) (llm.Response, error) {
		if strings.HasPrefix(lastUser(r), agent.SystemEventPrefix) {
			return llm.Response{Message: llm.AssistantText(text + " (event)")}, nil
		}
		return llm.Response{Message: llm.AssistantText(text + ": " + lastUser(r))}, nil
	}
}

func TestNonStreamingChannelGetsTheWholeReply(t *testing.T) {
	h := newHarness(t, echo("reply"), nil, nil)
	h.markKnown("web:1")
	h.run()
	if err := h.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, h.web.out); got != (sent{chat.Reply, "web:1", "reply: hello"}) {
		t.Errorf("sent %+v", got)
	}
}

func TestStreamingChannel(t *testing.T) {
	type noArgs struct{}
	clock := tool.New("clock", "Time.", func(context.Context, noArgs) (any, error) { return "09:00", nil })
	m := llmtest.NewScripted(t, llmtest.CallTool("clock", `{}`), llmtest.Reply("It is nine."))
	h := newHarness(t, m, []tool.Tool{clock}, nil)
	h.markKnown("live:1")
	h.run()
	if err := h.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Channel: "live", Thread: "live:1"}, Text: "time?"}); err != nil {
		t.Fatal(err)
	}
	events := recv(t, h.live.streams)
	var text strings.Builder
	var rest []string
	for _, e := range events {
		if d, ok := strings.CutPrefix(e, "delta "); ok {
			text.WriteString(d)
			continue
		}
		rest = append(rest, e)
	}
	want := []string{"open live:1", "tool_call clock ", "tool_result clock 09:00", "close It is nine."}
	if !slices.Equal(rest, want) || text.String() != "It is nine." {
		t.Errorf("stream = %q (text %q), want %q", rest, text.String(), want)
	}
	if h := roles(t, h.store, "live:1"); len(h) != 5 {
		t.Errorf("stored %q", h)
	}
}

func roles(t *testing.T, s *conversation.Store, id chat.ThreadID) []string {
	t.Helper()
	h, err := s.History(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range h {
		out = append(out, string(m.Message.Role)+":"+m.Message.Text())
	}
	return out
}

func TestThreadsRunInParallelButEachThreadIsSerial(t *testing.T) {
	started := make(chan string, 8)
	release := make(chan struct{})
	m := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		text := lastUser(r)
		started <- text
		if strings.HasPrefix(text, "wait") {
			select {
			case <-release:
			case <-ctx.Done():
				return llm.Response{}, ctx.Err()
			}
		}
		return llm.Response{Message: llm.AssistantText("done " + text)}, nil
	})
	h := newHarness(t, m, nil, nil)
	h.markKnown("web:a")
	h.markKnown("web:b")
	h.run()
	send := func(thread chat.ThreadID, text string) {
		if err := h.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: thread}, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	send("web:a", "wait a1")
	send("web:a", "a2")
	send("web:b", "wait b1")
	got := []string{recv(t, started), recv(t, started)}
	slices.Sort(got)
	if !slices.Equal(got, []string{"wait a1", "wait b1"}) {
		t.Fatalf("started %q, want both threads' first turns at once", got)
	}
	select {
	case s := <-started:
		t.Fatalf("%q started while its thread's first turn was running", s)
	default:
	}
	if d := h.router.QueueDepth(); d != 1 {
		t.Errorf("queue depth = %d, want 1 (a2)", d)
	}
	close(release)
	if s := recv(t, started); s != "a2" {
		t.Errorf("then started %q", s)
	}
	var replies []string
	for range 3 {
		replies = append(replies, recv(t, h.web.out).Text)
	}
	ia, ib := slices.Index(replies, "done wait a1"), slices.Index(replies, "done a2")
	if ia < 0 || ib < 0 || ia > ib || !slices.Contains(replies, "done wait b1") {
		t.Errorf("replies in order %q", replies)
	}
}

// TestGreetingInTheFirstReply: a new conversation is greeted in the same
// model call that answers its first message — one delivery, one wait — and
// the seed is stored before the message, so the stored order is the order
// shown (the seed itself is never shown).
func TestGreetingInTheFirstReply(t *testing.T) {
	var mu sync.Mutex
	var calls [][]string
	m := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		var users []string
		for _, msg := range r.Messages {
			if msg.Role == llm.RoleUser && !strings.HasPrefix(msg.Text(), agent.TurnContextPrefix) {
				users = append(users, msg.Text())
			}
		}
		mu.Lock()
		calls = append(calls, users)
		mu.Unlock()
		return llm.Response{Message: llm.AssistantText("Hello! reply: " + lastUser(r))}, nil
	})
	h := newHarness(t, m, nil, nil)
	h.run()
	if err := h.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:new"}, Text: "first"}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, h.web.out); got != (sent{chat.Reply, "web:new", "Hello! reply: first"}) {
		t.Errorf("delivered %+v", got)
	}
	select {
	case got := <-h.web.out:
		t.Errorf("a second delivery: %+v", got)
	default:
	}
	mu.Lock()
	if len(calls) != 1 || len(calls[0]) != 2 || !strings.HasPrefix(calls[0][0], agent.SystemEventPrefix) ||
		!strings.Contains(calls[0][0], agent.GreetNote) || calls[0][1] != "first" {
		t.Errorf("model calls %q, want one with the seed then the message", calls)
	}
	mu.Unlock()
	got := roles(t, h.store, "web:new")
	if len(got) != 3 || !strings.HasPrefix(got[0], "user:"+agent.SystemEventPrefix) || got[1] != "user:first" || got[2] != "assistant:Hello! reply: first" {
		t.Errorf("stored %q", got)
	}
	// The next message is not greeted again.
	res, err := h.router.Handle(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:new"}, Text: "second"})
	if err != nil || res.Reply != "Hello! reply: second" || res.SeedReply != "" {
		t.Errorf("Handle = %+v, %v", res, err)
	}
	mu.Lock()
	if n := len(calls); n != 2 || len(calls[1]) != 3 {
		t.Errorf("second call's user messages %q", calls[n-1])
	}
	mu.Unlock()
}

func TestCommands(t *testing.T) {
	compaction := 0
	m := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		if !slices.ContainsFunc(r.Messages, func(m llm.Message) bool { // the compaction call has no turn context
			return strings.HasPrefix(m.Text(), agent.TurnContextPrefix)
		}) {
			compaction++
			return llm.Response{Message: llm.AssistantText("the summary")}, nil
		}
		return echo("reply")(ctx, r)
	})
	h := newHarness(t, m, nil, func(o *Options) {
		o.Roles = []string{"main", "compaction"}
		o.Describe = func(role string) string { return "scripted/" + role }
		o.Memory = func(context.Context) string { return "embedding model m@8/8; re-embedding 64 of 100" }
		o.UsageToday = func(context.Context) (llm.Usage, error) { return llm.Usage{InputTokens: 12, OutputTokens: 34}, nil }
		o.UsageByRole = func(context.Context) ([]RoleUsage, error) {
			return []RoleUsage{{Role: "scout", Calls: 2, Usage: llm.Usage{InputTokens: 700, OutputTokens: 20}}}, nil
		}
		o.Extensions = func(context.Context) []ExtensionHealth {
			return []ExtensionHealth{
				{ID: "web", State: "running", Health: "ok"},
				{ID: "kv", State: "started", Health: "none"},
				{ID: "telegram", State: "failed", Health: "failing", Detail: "token rejected"},
			}
		}
	})
	if err := h.router.Register(Command{Name: "pulse", Help: "show the pulse", Run: func(context.Context, CommandContext) (string, error) {
		return "no items", nil
	}}); err != nil {
		t.Fatalf("replace a placeholder: %v", err)
	}
	if err := h.router.Register(Command{Name: "refuse", Help: "refuse", Run: func(context.Context, CommandContext) (string, error) {
		return "", fmt.Errorf("%w: dreaming needs a language model", api.ErrConflict)
	}}); err != nil {
		t.Fatalf("register /refuse: %v", err)
	}
	if err := h.router.Register(Command{Name: "help", Run: func(context.Context, CommandContext) (string, error) { return "", nil }}); !errors.Is(err, ErrDuplicateCommand) {
		t.Errorf("duplicate /help: %v", err)
	}
	h.markKnown("web:c")
	for range 14 {
		if _, err := h.store.Append(context.Background(), "web:c", llm.UserText("q"), llm.AssistantText("a")); err != nil {
			t.Fatal(err)
		}
	}
	h.run()
	tests := []struct {
		name   string
		thread chat.ThreadID
		text   string
		want   []string
	}{
		{"help", "web:c", "/help", []string{"/new — start a new conversation", "/compact", "/status", "/debug", "/dream — ", "not enabled in this build", "/pulse — show the pulse"}},
		{"status", "web:c", "/status", []string{"main: scripted/main", "compaction: scripted/compaction", "Uptime:", "Conversations: 1", "Turns running: 0, waiting: 0", "12 input + 34 output tokens", "Memory: embedding model m@8/8; re-embedding 64 of 100", "scout: 2 call(s), 700 + 20 tokens", "Extensions:", "web: running, health ok", "kv: started\n", "telegram: failed, health failing (token rejected)"}},
		{"debug without web", "web:c", "/debug", []string{"not available"}},
		{"placeholder", "web:c", "/dream", []string{"/dream is not enabled in this build."}},
		{"registered", "web:c", "/pulse", []string{"no items"}},
		{"unknown", "web:c", "/frobnicate now", []string{"Unknown command /frobnicate", "/help"}},
		{"telegram style", "web:c", "/HELP@reverie_bot", []string{"Commands:"}},
		{"compact", "web:c", "/compact", []string{"Compacted: 19 older messages"}},
		{"compact again", "web:c", "/compact", []string{"Nothing to compact"}},
		{"new", "web:c", "/new", []string{"reply (event)"}},
		{"not a command", "web:c", "/usr/bin is a directory", []string{"reply: /usr/bin is a directory"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res, err := h.router.Handle(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: tc.thread}, Text: tc.text})
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(res.Reply, w) {
					t.Errorf("reply %q lacks %q", res.Reply, w)
				}
			}
		})
	}
	// A failing command's reason reads as a sentence, without the API
	// error's word ("conflict: ") in front; the error is the command's.
	res, err := h.router.Handle(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:c"}, Text: "/refuse"})
	if !errors.Is(err, api.ErrConflict) || res.Reply != "/refuse failed: dreaming needs a language model" {
		t.Errorf("a failing command: reply %q, error %v", res.Reply, err)
	}
	if compaction != 1 {
		t.Errorf("compaction calls = %d", compaction)
	}
	// After /new the old messages are archived: seed + its reply + the last message and reply.
	if got := roles(t, h.store, "web:c"); len(got) != 4 || !strings.HasPrefix(got[0], "user:"+agent.SystemEventPrefix) {
		t.Errorf("after /new: %q", got)
	}
	// Commands through Receive answer on the channel.
	if err := h.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:c"}, Text: "/nope"}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, h.web.out); got.Kind != chat.Reply || !strings.Contains(got.Text, "Unknown command /nope") {
		t.Errorf("sent %+v", got)
	}
}

func TestSystemEventsAndNotifications(t *testing.T) {
	h := newHarness(t, echo("ack"), nil, nil)
	h.markKnown("web:e")
	h.run()
	ctx := context.Background()
	if err := h.router.EnqueueSystemEvent(ctx, "web:e", "worker sub_1 finished: 42"); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, h.web.out); got != (sent{chat.Notify, "web:e", "ack (event)"}) {
		t.Errorf("system event delivered as %+v", got)
	}
	if err := h.router.Notify(ctx, chat.Outbound{Address: chat.Address{Thread: "web:e"}, Text: "Your reminder: call Bob."}); err != nil {
		t.Fatal(err)
	}
	if got := recv(t, h.web.out); got != (sent{chat.Notify, "web:e", "Your reminder: call Bob."}) {
		t.Errorf("notification delivered as %+v", got)
	}
	got := roles(t, h.store, "web:e")
	want := []string{"assistant:earlier", "user:" + agent.SystemEventPrefix + "worker sub_1 finished: 42", "assistant:ack (event)", "assistant:Your reminder: call Bob."}
	if !slices.Equal(got, want) {
		t.Errorf("stored %q, want %q", got, want)
	}
}

func TestSupervisorCorrectionNeverLoops(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	m := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		mu.Lock()
		calls = append(calls, lastUser(r))
		mu.Unlock()
		return llm.Response{Message: llm.AssistantText("I've started a background worker for it.")}, nil
	})
	h := newHarness(t, m, nil, nil)
	h.markKnown("web:s")
	h.run()
	res, err := h.router.Handle(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:s"}, Text: "research X"})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.FollowUps) != 1 {
		t.Fatalf("follow-ups = %+v", res.FollowUps)
	}
	// The correction runs as a system event, delivered as the assistant's
	// own reply (it corrects itself; not a notification); its own (still
	// false) claim raises nothing further.
	if got := recv(t, h.web.out); got.Kind != chat.Reply {
		t.Errorf("correction reply delivered as %+v", got)
	}
	if d := h.router.QueueDepth(); d != 0 {
		t.Errorf("queue depth after the correction = %d", d)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(calls) != 2 || !strings.HasPrefix(calls[1], agent.SystemEventPrefix+agent.SupervisorPrefix) {
		t.Errorf("model calls %q", calls)
	}
}

func TestAcceptedMessagesSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	first := newHarnessOn(t, db, dir, echo("never"), nil, nil)
	first.markKnown("web:r")
	// Accepted, never run: the first router stops before processing.
	if err := first.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:r"}, Text: "do not lose me"}); err != nil {
		t.Fatal(err)
	}
	second := newHarnessOn(t, db, dir, echo("replayed"), nil, nil)
	second.run()
	if got := recv(t, second.web.out); got.Text != "replayed: do not lose me" {
		t.Errorf("replayed %+v", got)
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM router_inbox`).Scan(&n); err != nil || n != 0 {
		t.Errorf("inbox rows = %d, %v", n, err)
	}
}

// A photo without a caption is accepted; its attachment is kept in the
// inbox across a restart and reaches the model as an image part.
func TestAttachmentsSurviveARestart(t *testing.T) {
	dir := t.TempDir()
	db, err := sqlite.Open(context.Background(), filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	first := newHarnessOn(t, db, dir, echo("never"), nil, nil)
	first.markKnown("web:r")
	att := chat.Attachment{Kind: chat.AttachImage, Path: "telegram/1/p.jpg", MediaType: "image/jpeg"}
	if err := first.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:r"},
		Attachments: []chat.Attachment{att}}); err != nil {
		t.Fatal(err)
	}
	model := llmtest.NewScripted(t, llmtest.Reply("a photo").WithCheck(func(r llm.Request) error {
		last := r.Messages[len(r.Messages)-1]
		want := []llm.Part{llm.Image{MediaType: "image/jpeg", Path: "telegram/1/p.jpg"}}
		if !reflect.DeepEqual(last.Parts, want) {
			return fmt.Errorf("last message parts %#v, want %#v", last.Parts, want)
		}
		return nil
	}))
	second := newHarnessOn(t, db, dir, model, nil, nil)
	second.run()
	if got := recv(t, second.web.out); got.Text != "a photo" {
		t.Errorf("reply %+v", got)
	}
	model.AssertDone()
}

func TestRejectedInput(t *testing.T) {
	h := newHarness(t, echo("x"), nil, func(o *Options) { o.MaxMessageBytes = 10; o.MaxQueue = 1 })
	ctx := context.Background()
	tests := []struct {
		name string
		in   chat.Inbound
		want error
	}{
		{"empty", chat.Inbound{Address: chat.Address{Thread: "web:1"}, Text: "  "}, ErrEmptyText},
		{"too large", chat.Inbound{Address: chat.Address{Thread: "web:1"}, Text: "01234567890"}, ErrTooLarge},
		{"bad thread", chat.Inbound{Address: chat.Address{Thread: "a\nb"}, Text: "hi"}, chat.ErrInvalidThreadID},
		{"attachment outside the workspace", chat.Inbound{Address: chat.Address{Thread: "web:1"}, Text: "hi",
			Attachments: []chat.Attachment{{Kind: chat.AttachImage, Path: "../etc/passwd", MediaType: "image/jpeg"}}}, chat.ErrInvalidAttachment},
		{"attachment with an absolute path", chat.Inbound{Address: chat.Address{Thread: "web:1"},
			Attachments: []chat.Attachment{{Kind: chat.AttachImage, Path: "/tmp/p.jpg", MediaType: "image/jpeg"}}}, chat.ErrInvalidAttachment},
		{"attachment of unknown kind", chat.Inbound{Address: chat.Address{Thread: "web:1"},
			Attachments: []chat.Attachment{{Kind: "video", Path: "v.mp4"}}}, chat.ErrInvalidAttachment},
		{"too many attachments", chat.Inbound{Address: chat.Address{Thread: "web:1"},
			Attachments: make([]chat.Attachment, chat.MaxAttachments+1)}, ErrTooLarge},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := h.router.Receive(ctx, tc.in); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
	// Not running yet: the first is queued, the second finds the queue full.
	in := chat.Inbound{Address: chat.Address{Thread: "web:q"}, Text: "one"}
	if err := h.router.Receive(ctx, in); err != nil {
		t.Fatal(err)
	}
	if err := h.router.Receive(ctx, in); !errors.Is(err, ErrQueueFull) {
		t.Errorf("second message: %v", err)
	}
}

func TestShutdownCancelsTurnsAfterTheGraceAndTheNextStartResumes(t *testing.T) {
	started := make(chan struct{})
	m := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		close(started)
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	})
	h := newHarness(t, m, nil, func(o *Options) { o.Grace = time.Millisecond })
	h.markKnown("web:g")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- h.router.Run(ctx) }()
	if err := h.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Thread: "web:g"}, Text: "slow"}); err != nil {
		t.Fatal(err)
	}
	<-started
	cancel()
	if err := recv(t, done); err != nil {
		t.Fatal(err)
	}
	if err := h.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Thread: "web:g"}, Text: "late"}); !errors.Is(err, ErrStopped) {
		t.Errorf("after stop: %v", err)
	}
	// The cut-off turn is kept (nothing was delivered for it: the next start
	// answers it) and the next start carries it on: it had run no tool.
	select {
	case got := <-h.web.out:
		t.Errorf("delivered on shutdown: %+v", got)
	default:
	}
	var startedAt, attempts int64
	if err := h.db.QueryRow(`SELECT started_at, attempts FROM router_inbox`).Scan(&startedAt, &attempts); err != nil || startedAt == 0 || attempts != 1 {
		t.Fatalf("inbox row: started_at %d attempts %d err %v", startedAt, attempts, err)
	}
	h2 := newHarnessOn(t, h.db, t.TempDir(), echo("resumed"), nil, nil)
	h2.run()
	if got := recv(t, h2.web.out); got != (sent{chat.Reply, "web:g", "resumed: slow"}) {
		t.Errorf("sent %+v", got)
	}
	if got, want := roles(t, h2.store, "web:g"), []string{"assistant:earlier", "user:slow", "assistant:resumed: slow"}; !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
}

// FuzzValidCommandName checks the hand-written command name check against
// the regular expression it replaces.
func FuzzValidCommandName(f *testing.F) {
	for _, s := range []string{"status", "", "a", strings.Repeat("a", 32), strings.Repeat("a", 33), "Status", "1st", "re_do2", "a-b", "ä"} {
		f.Add(s)
	}
	re := regexp.MustCompile(`^[a-z][a-z0-9_]{0,31}$`)
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := validCommandName(s), re.MatchString(s); got != want {
			t.Fatalf("validCommandName(%q) = %v, the expression says %v", s, got, want)
		}
	})
}

// listened records overheard messages.
type listened struct {
	mu   sync.Mutex
	msgs []chat.Inbound
	err  error
}

func (l *listened) Overheard(_ context.Context, msg chat.Inbound) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return l.err
	}
	l.msgs = append(l.msgs, msg)
	return nil
}

// A message the assistant only listens to is handed to the listener once
// (with its time and channel filled in) and never answered, stored in the
// conversation or queued; Handle and Submit refuse one; a listener's
// failure is Receive's, so that the channel offers it again.
func TestOverheardIsRememberedNotAnswered(t *testing.T) {
	model := llmtest.Func(func(context.Context, llm.Request) (llm.Response, error) {
		t.Error("an overheard message reached the model")
		return llm.Response{Message: llm.AssistantText("no")}, nil
	})
	l := &listened{}
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	h := newHarness(t, model, nil, func(o *Options) {
		o.Listener = l
		o.Now = func() time.Time { return at }
	})
	h.run()
	ctx := context.Background()
	msg := chat.Inbound{Address: chat.Address{Thread: "web:room"}, Sender: chat.Sender{ID: "7", DisplayName: "Ines"},
		Text: "see you at the lake", Overheard: true}
	if err := h.router.Receive(ctx, msg); err != nil {
		t.Fatal(err)
	}
	want := msg
	want.Address.Channel, want.Received = "web", at
	if len(l.msgs) != 1 || !reflect.DeepEqual(l.msgs[0], want) {
		t.Errorf("listener got %+v, want %+v", l.msgs, want)
	}
	if _, err := h.router.Handle(ctx, msg); !errors.Is(err, ErrOverheard) {
		t.Errorf("Handle: %v, want ErrOverheard", err)
	}
	if _, err := h.router.Submit(ctx, msg); !errors.Is(err, ErrOverheard) {
		t.Errorf("Submit: %v, want ErrOverheard", err)
	}
	l.err = errors.New("disk on fire")
	if err := h.router.Receive(ctx, msg); err == nil || !strings.Contains(err.Error(), "disk on fire") {
		t.Errorf("a listener's failure: %v", err)
	}
	if got := roles(t, h.store, "web:room"); len(got) != 0 {
		t.Errorf("overheard message stored in the conversation: %q", got)
	}
	if n := h.router.QueueDepth(); n != 0 {
		t.Errorf("%d items queued", n)
	}
	select {
	case s := <-h.web.out:
		t.Errorf("delivered %+v", s)
	default:
	}
	// Without a listener (memory.episodes off) it is dropped.
	h2 := newHarness(t, model, nil, nil)
	if err := h2.router.Receive(ctx, msg); err != nil {
		t.Errorf("no listener: %v", err)
	}
}
