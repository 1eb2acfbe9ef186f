package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

func TestConformance(t *testing.T) {
	info, ok := extension.Lookup(ID)
	if !ok {
		t.Fatal("cli is not registered")
	}
	if !info.Disabled {
		t.Error("cli must be disabled by default (only reverie chat enables it)")
	}
	extensiontest.Run(t, info)
}

// next reads one event or fails after a bound.
func next(t *testing.T, q interface {
	Next(context.Context) (Event, error)
}) Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	ev, err := q.Next(ctx)
	if err != nil {
		t.Fatalf("next event: %v", err)
	}
	return ev
}

func TestChannelTurnsDeliveriesIntoEvents(t *testing.T) {
	host := extensiontest.NewHost(t)
	c := new(CLI)
	if err := c.Init(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	addr := chat.Address{Channel: ChannelName, Thread: "cli:ann"}
	s, err := c.OpenStream(ctx, addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Delta("Hel")
	_ = s.Status(extension.StreamStatus{Kind: extension.ToolCallStarted, CallID: "c1", Tool: "clock", Arguments: json.RawMessage(`{}`)})
	_ = s.Status(extension.StreamStatus{Kind: extension.ToolCallFinished, CallID: "c1", Tool: "clock", Result: "09:00"})
	_ = s.Close("Hello", nil)
	s2, _ := c.OpenStream(ctx, addr)
	_ = s2.Close("", errors.New("model down"))
	_ = c.Send(ctx, chat.Outbound{Address: addr, Kind: chat.Reply, Text: "/status answer"})
	_ = c.Send(ctx, chat.Outbound{Address: addr, Kind: chat.Notify, Text: "Reminder"})
	_ = c.Send(ctx, chat.Outbound{Address: addr, Kind: chat.Error, Text: "/compact failed"})

	want := []Event{
		{Kind: EventDelta, Thread: "cli:ann", Text: "Hel"},
		{Kind: EventToolCall, Thread: "cli:ann", Tool: "clock", CallID: "c1", Arguments: json.RawMessage(`{}`)},
		{Kind: EventToolResult, Thread: "cli:ann", Tool: "clock", CallID: "c1", Result: "09:00"},
		{Kind: EventDone, Thread: "cli:ann", Text: "Hello"},
		{Kind: EventError, Thread: "cli:ann", Text: "model down"},
		{Kind: EventDone, Thread: "cli:ann", Text: "/status answer"},
		{Kind: EventNotify, Thread: "cli:ann", Text: "Reminder"},
		{Kind: EventError, Thread: "cli:ann", Text: "/compact failed"},
	}
	for i, w := range want {
		got := next(t, c.Events())
		if got.Kind != w.Kind || got.Text != w.Text || got.Tool != w.Tool || got.Result != w.Result || string(got.Arguments) != string(w.Arguments) {
			t.Errorf("event %d = %+v, want %+v", i, got, w)
		}
	}
	if err := c.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Events().Next(ctx); !errors.Is(err, ErrClosed) {
		t.Errorf("after Stop: %v", err)
	}
}

func TestQueue(t *testing.T) {
	q := NewQueue()
	for i := range 1000 {
		q.Push(Event{Kind: EventDelta, Text: string(rune('a' + i%26))})
	}
	for i := range 1000 {
		if ev := next(t, q); ev.Text != string(rune('a'+i%26)) {
			t.Fatalf("event %d out of order: %q", i, ev.Text)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := q.Next(ctx); !errors.Is(err, context.Canceled) {
		t.Errorf("empty queue, cancelled context: %v", err)
	}
	// A consumer waiting in Next wakes up for a push from another goroutine.
	got := make(chan Event)
	go func() {
		ev, _ := q.Next(context.Background())
		got <- ev
	}()
	q.Push(Event{Kind: EventNotify, Text: "late"})
	if ev := <-got; ev.Text != "late" {
		t.Errorf("got %+v", ev)
	}
	q.Push(Event{Kind: EventNotify, Text: "queued before close"})
	q.Close()
	q.Push(Event{Kind: EventNotify, Text: "dropped"})
	if ev := next(t, q); ev.Text != "queued before close" {
		t.Errorf("got %+v", ev)
	}
	if _, err := q.Next(context.Background()); !errors.Is(err, ErrClosed) {
		t.Errorf("closed queue: %v", err)
	}
}

func TestEditor(t *testing.T) {
	type step func(e *editor)
	typ := func(s string) step { return func(e *editor) { e.insert(s) } }
	tests := []struct {
		name  string
		steps []step
		want  string
		pos   int
	}{
		{"typing", []step{typ("hello")}, "hello", 5},
		{"backspace and insert in the middle", []step{typ("helo"), (*editor).left, typ("l"), (*editor).end, (*editor).backspace}, "hell", 4},
		{"control characters are dropped", []step{typ("a\x1b[31mb\x07")}, "a[31mb", 6},
		{"CR LF in a paste becomes LF", []step{typ("one\r\ntwo\rthree")}, "one\ntwo\nthree", 13},
		{"delete word", []step{typ("send it now"), (*editor).deleteWord}, "send it ", 8},
		{"kill to line start", []step{typ("one\ntwo"), (*editor).killBack}, "one\n", 4},
		{"kill to line end", []step{typ("one two"), (*editor).home, (*editor).right, (*editor).killForward}, "o", 1},
		{"up keeps the column", []step{typ("abcdef\nxy"), func(e *editor) {
			if !e.up() {
				panic("up failed")
			}
		}}, "abcdef\nxy", 2},
		{"up on the first line does nothing", []step{typ("abc"), func(e *editor) {
			if e.up() {
				panic("up moved")
			}
		}}, "abc", 3},
		{"down to a shorter line", []step{typ("a\nbcdef"), func(e *editor) { e.pos = 1; e.down() }}, "a\nbcdef", 3},
		{"set", []step{typ("x"), func(e *editor) { e.set("history entry") }}, "history entry", 13},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var e editor
			for _, s := range tc.steps {
				s(&e)
			}
			if e.String() != tc.want || e.pos != tc.pos {
				t.Errorf("got %q at %d, want %q at %d", e.String(), e.pos, tc.want, tc.pos)
			}
		})
	}
}

func TestEditorRender(t *testing.T) {
	tests := []struct {
		name       string
		text       string
		pos        int
		width      int
		rows       []string
		curX, curY int
	}{
		{"empty", "", 0, 40, []string{"› "}, 2, 0},
		{"one line", "hello", 5, 40, []string{"› hello"}, 7, 0},
		{"cursor inside", "hello", 1, 40, []string{"› hello"}, 3, 0},
		{"two lines", "ab\ncd", 4, 40, []string{"› ab", "  cd"}, 3, 1},
		{"soft wrap", "abcdefghijkl", 12, 12, []string{"› abcdefghi", "  jkl"}, 5, 1},
		{"cursor at a wrapped row start", "abcdefghijkl", 9, 12, []string{"› abcdefghi", "  jkl"}, 2, 1},
		{"wide runes", "日本語", 3, 40, []string{"› 日本語"}, 8, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := editor{buf: []rune(tc.text), pos: tc.pos}
			rows, x, y := e.render(tc.width, "› ", "  ")
			if !slices.Equal(rows, tc.rows) || x != tc.curX || y != tc.curY {
				t.Errorf("render = %q cursor (%d,%d), want %q (%d,%d)", rows, x, y, tc.rows, tc.curX, tc.curY)
			}
		})
	}
}

func TestHistory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, HistoryFile)
	// An existing file with loose permissions and a broken line.
	if err := os.WriteFile(path, []byte("\"first\"\nnot json\n\"multi\\nline\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := OpenHistory(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Entries(); !slices.Equal(got, []string{"first", "multi\nline"}) {
		t.Fatalf("loaded %q", got)
	}
	for _, e := range []string{"second", "second", "  ", "third"} {
		if err := h.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("history file mode %v, want 0600", st.Mode().Perm())
	}
	h2, err := OpenHistory(path, 3)
	if err != nil {
		t.Fatal(err)
	}
	if got := h2.Entries(); !slices.Equal(got, []string{"multi\nline", "second", "third"}) {
		t.Errorf("reloaded %q (kept: the last 3, no blanks, no repeats)", got)
	}
	// Growing past twice the size rewrites the file with the last entries.
	for _, e := range []string{"4", "5", "6", "7"} {
		if err := h2.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	b, _ := os.ReadFile(path)
	if got := strings.Count(string(b), "\n"); got != 3 {
		t.Errorf("after compaction the file has %d lines:\n%s", got, b)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o600 {
		t.Errorf("rewritten history file mode %v", st.Mode().Perm())
	}
	// A history in a place that cannot be written reports the error.
	bad, _ := OpenHistory(filepath.Join(dir, "missing", "dir", HistoryFile), 0)
	if err := bad.Add("x"); err == nil {
		t.Error("no error for an unwritable history")
	}
}

func TestRenderHelpers(t *testing.T) {
	tests := []struct {
		name, got, want string
	}{
		{"sanitize escapes", sanitize("a\x1b]0;pwned\x07b\x1b[2Jc\r\nd\re\tf\u009bg"), "a]0;pwnedb[2Jc\nd\ne\tfg"},
		{"sanitize invalid UTF-8", sanitize("ok\xff"), "ok\uFFFD"},
		{"tool call", toolCallLine("read_file", json.RawMessage(`{ "path" : "notes.md" }`)), `read_file {"path":"notes.md"}`},
		{"tool call without arguments", toolCallLine("clock", json.RawMessage(`{}`)), "clock"},
		{"tool call long arguments", toolCallLine("write_file", json.RawMessage(`{"content":"`+strings.Repeat("x", 300)+`"}`)),
			"write_file " + `{"content":"` + strings.Repeat("x", 87) + "…"},
		{"tool result folded", toolResultLine("\n  first line  \nsecond\nthird"), "first line  (+2 lines)"},
		{"tool result empty", toolResultLine("  "), "(no output)"},
		{"tool result cut", toolResultLine(strings.Repeat("y", 200)), strings.Repeat("y", 119) + "…"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got  %q\nwant %q", tc.got, tc.want)
			}
		})
	}
	md := markdown{style: "notty"}
	out := md.render("# Title\n\nSome `code` and a list:\n\n- one\n- two\n\x1b[31mred", 60)
	for _, want := range []string{"Title", "code", "one", "two", "red"} {
		if !strings.Contains(out, want) {
			t.Errorf("rendered markdown lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b[31m") {
		t.Errorf("model escape sequences reached the terminal:\n%q", out)
	}
}

// fakeBackend is a scripted Backend: script answers each sent message
// with events.
type fakeBackend struct {
	q      *Queue
	script func(text string) []Event
	mu     sync.Mutex
	sent   []string
	sentc  chan string
	cancel chan struct{}
	refuse error

	answers  []string // "id=true"
	answered chan string
	attached []Attached
	switched []chat.ThreadID

	last    *api.Message // LastUserMessage (nil: none)
	redone  chan string  // "regenerate", "edit 7 text"
	renamed []string
}

func newFakeBackend(script func(string) []Event) *fakeBackend {
	return &fakeBackend{q: NewQueue(), script: script, sentc: make(chan string, 64), cancel: make(chan struct{}, 64), redone: make(chan string, 64)}
}

func (b *fakeBackend) Thread() chat.ThreadID { return "cli:tester" }
func (b *fakeBackend) Where() string         { return "fake backend" }
func (b *fakeBackend) Send(_ context.Context, text string) error {
	if b.refuse != nil {
		return b.refuse
	}
	b.mu.Lock()
	b.sent = append(b.sent, text)
	b.mu.Unlock()
	b.sentc <- text
	if b.script != nil {
		for _, ev := range b.script(text) {
			b.q.Push(ev)
		}
	}
	return nil
}
func (b *fakeBackend) Attach(_ context.Context, p string) (Attached, error) {
	name, data, media, image, err := readAttachment(p)
	if err != nil {
		return Attached{}, err
	}
	a := Attached{Name: name, Path: "cli/tester/" + name, Image: image, MediaType: media, Size: int64(len(data))}
	b.mu.Lock()
	b.attached = append(b.attached, a)
	b.mu.Unlock()
	return a, nil
}
func (b *fakeBackend) Threads(context.Context) ([]api.Thread, error) {
	return []api.Thread{{ID: "cli:tester", Title: "Groceries"}, {ID: "cli:work", Title: "Quarterly report"}}, nil
}
func (b *fakeBackend) Switch(_ context.Context, t chat.ThreadID) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.switched = append(b.switched, t)
	return nil
}
func (b *fakeBackend) LastUserMessage(context.Context) (api.Message, bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.last == nil {
		return api.Message{}, false, nil
	}
	return *b.last, true, nil
}
func (b *fakeBackend) Regenerate(context.Context) error {
	if b.refuse != nil {
		return b.refuse
	}
	b.redone <- "regenerate"
	b.play("regenerate")
	return nil
}
func (b *fakeBackend) Edit(_ context.Context, id int64, text string) error {
	if b.refuse != nil {
		return b.refuse
	}
	b.redone <- fmt.Sprintf("edit %d %s", id, text)
	b.play("edit " + text)
	return nil
}

// play pushes what script answers to text.
func (b *fakeBackend) play(text string) {
	if b.script != nil {
		for _, ev := range b.script(text) {
			b.q.Push(ev)
		}
	}
}
func (b *fakeBackend) Rename(_ context.Context, title string) (api.Thread, error) {
	if b.refuse != nil {
		return api.Thread{}, b.refuse
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	b.renamed = append(b.renamed, title)
	return api.Thread{ID: "cli:tester", Title: title}, nil
}
func (b *fakeBackend) Cancel(context.Context) string {
	b.cancel <- struct{}{}
	return "cancelled"
}
func (b *fakeBackend) Answer(_ context.Context, id string, approve bool) error {
	b.mu.Lock()
	b.answers = append(b.answers, fmt.Sprintf("%s=%v", id, approve))
	b.mu.Unlock()
	if b.answered != nil {
		b.answered <- id
	}
	return nil
}
func (b *fakeBackend) Next(ctx context.Context) (Event, error) { return b.q.Next(ctx) }
func (b *fakeBackend) Close() error                            { b.q.Close(); return nil }

func TestRunPlain(t *testing.T) {
	script := func(text string) []Event {
		switch text {
		case "hello":
			return []Event{{Kind: EventDone, Text: "Hi, I'm Reverie (greeting)."},
				{Kind: EventDelta, Text: "Hel"}, {Kind: EventDelta, Text: "lo!"},
				{Kind: EventToolCall, Tool: "clock"}, {Kind: EventToolResult, Tool: "clock", Result: "9"},
				{Kind: EventDone, Text: "Hello!"}, {Kind: EventIdle}}
		case "two\nlines":
			return []Event{{Kind: EventNotify, Text: "Reminder: tea"}, {Kind: EventDone, Text: "got two lines"}, {Kind: EventIdle}}
		case "fail":
			return []Event{{Kind: EventError, Text: "The model is unavailable right now."}, {Kind: EventIdle, Err: "provider down"}}
		default:
			return []Event{{Kind: EventDone, Text: "echo " + text}, {Kind: EventIdle}}
		}
	}
	tests := []struct {
		name, input    string
		stdout, stderr string
		err            error
	}{
		{"replies in order", "hello\n/status\n", "Hello!\necho /status\n", "Hi, I'm Reverie (greeting).\n", nil},
		{"blank lines and continuation", "\n  \ntwo\\\nlines\n", "got two lines\n", "notice: Reminder: tea\n", nil},
		{"last line without newline", "tail", "echo tail\n", "", nil},
		{"a failure goes on and exits non-zero", "fail\nafter\n", "echo after\n", "error: The model is unavailable right now.\n", ErrFailed},
		{"nothing to send", "", "", "", nil},
		{"retry, edit and rename", "/retry\n/edit better words\n/rename Lyon\n", "echo regenerate\necho edit better words\nThis conversation is now “Lyon”\n", "", nil},
		{"chat commands misused", "/retry now\n/edit\n/rename\n", "",
			"not sent: /retry takes no argument\nnot sent: /edit TEXT replaces your last message with TEXT (editing it in place needs the interactive chat)\nerror: /rename TITLE names this conversation\n", ErrFailed},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBackend(script)
			b.last = &api.Message{ID: 3, Role: "user", Text: "hello"}
			var out, errb strings.Builder
			err := RunPlain(context.Background(), b, strings.NewReader(tc.input), &out, &errb)
			if !errors.Is(err, tc.err) || (tc.err == nil) != (err == nil) {
				t.Errorf("err = %v, want %v", err, tc.err)
			}
			if out.String() != tc.stdout || errb.String() != tc.stderr {
				t.Errorf("stdout %q stderr %q\nwant   %q        %q", out.String(), errb.String(), tc.stdout, tc.stderr)
			}
		})
	}
	t.Run("refused message", func(t *testing.T) {
		b := newFakeBackend(script)
		b.refuse = errors.New("message too large")
		var out, errb strings.Builder
		err := RunPlain(context.Background(), b, strings.NewReader("x\n"), &out, &errb)
		if !errors.Is(err, ErrFailed) || !strings.Contains(errb.String(), "not sent: message too large") {
			t.Errorf("err %v stderr %q", err, errb.String())
		}
	})
	t.Run("backend gone", func(t *testing.T) {
		b := newFakeBackend(func(string) []Event { return nil })
		b.q.Close()
		err := RunPlain(context.Background(), b, strings.NewReader("x\n"), &strings.Builder{}, &strings.Builder{})
		if !errors.Is(err, ErrClosed) {
			t.Errorf("err %v", err)
		}
	})
}

// fakeRouter records Submit and CancelTurn like *router.Router.
type fakeRouter struct {
	got      chan chat.Inbound
	done     chan error
	canceled chan chat.ThreadID
}

func (r *fakeRouter) Submit(_ context.Context, msg chat.Inbound) (<-chan error, error) {
	if msg.Text == "refuse" {
		return nil, errors.New("too many messages waiting")
	}
	r.got <- msg
	return r.done, nil
}

func (r *fakeRouter) CancelTurn(thread chat.ThreadID) bool {
	r.canceled <- thread
	return true
}

func TestLocal(t *testing.T) {
	host := extensiontest.NewHost(t)
	c := new(CLI)
	if err := c.Init(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	r := &fakeRouter{got: make(chan chat.Inbound, 1), done: make(chan error, 1), canceled: make(chan chat.ThreadID, 1)}
	if _, err := NewLocal(c, r, "web:x", chat.Sender{}); err == nil {
		t.Error("a web thread was accepted")
	}
	l, err := NewLocal(c, r, "cli:ann", chat.Sender{ID: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if err := l.Send(ctx, "refuse"); err == nil {
		t.Error("a refused message reported no error")
	}
	if err := l.Send(ctx, "hi"); err != nil {
		t.Fatal(err)
	}
	if in := <-r.got; in.Address != (chat.Address{Channel: "cli", Thread: "cli:ann"}) || in.Sender.ID != "ann" || in.Text != "hi" {
		t.Errorf("submitted %+v", in)
	}
	// The reply of this thread, a message to another cli thread, then the
	// end of the message.
	_ = c.Send(ctx, chat.Outbound{Address: chat.Address{Channel: "cli", Thread: "cli:ann"}, Kind: chat.Reply, Text: "hello"})
	s, _ := c.OpenStream(ctx, chat.Address{Channel: "cli", Thread: "cli:bob"})
	_ = s.Delta("for bob")
	_ = s.Close("for bob", nil)
	r.done <- errors.New("turn failed")
	for _, want := range []Event{
		{Kind: EventDone, Text: "hello"},
		{Kind: EventNotify, Text: "[cli:bob] for bob"},
		{Kind: EventIdle, Err: "turn failed"},
	} {
		if got := next(t, l); got.Kind != want.Kind || got.Text != want.Text || got.Err != want.Err {
			t.Errorf("got %+v, want %+v", got, want)
		}
	}
	if got := l.Cancel(ctx); got != "cancelled" || <-r.canceled != "cli:ann" {
		t.Errorf("cancel: %q", got)
	}
	// /switch: another cli conversation, never another channel's.
	if err := l.Switch(ctx, "web:x"); err == nil {
		t.Error("switched to a web thread")
	}
	if err := l.Switch(ctx, "cli:bob"); err != nil || l.Thread() != "cli:bob" {
		t.Fatalf("switch: %v, thread %s", err, l.Thread())
	}
	if err := l.Send(ctx, "hi bob"); err != nil {
		t.Fatal(err)
	}
	if in := <-r.got; in.Address.Thread != "cli:bob" || in.Text != "hi bob" {
		t.Errorf("after the switch, submitted %+v", in)
	}
}

// fakeConversations records what Local asks of the host's conversation
// services.
type fakeConversations struct {
	got  chan api.RedoRequest
	done chan error
	msgs []api.Message
}

func (f *fakeConversations) Rename(_ context.Context, thread chat.ThreadID, title string) (api.Thread, error) {
	if thread == "cli:new" {
		return api.Thread{}, fmt.Errorf("%w: rename %q: no such conversation", api.ErrNotFound, thread)
	}
	return api.Thread{ID: thread, Title: title}, nil
}

func (f *fakeConversations) Submit(_ context.Context, r api.RedoRequest) (<-chan error, error) {
	if r.Text == "refuse" {
		return nil, fmt.Errorf("%w: only a message you wrote can be edited", api.ErrInvalid)
	}
	f.got <- r
	return f.done, nil
}

func (f *fakeConversations) Messages(_ context.Context, _ chat.ThreadID, q api.MessageQuery) ([]api.Message, error) {
	var out []api.Message
	for _, m := range f.msgs {
		if m.ID > q.AfterID && len(out) < q.Limit {
			out = append(out, m)
		}
	}
	return out, nil
}

// TestLocalRedo: in process, /retry and /edit go to the host's
// conversation services and the chat learns their end from Submit's
// channel; the last user message skips system events and archived ones,
// across pages.
func TestLocalRedo(t *testing.T) {
	host := extensiontest.NewHost(t)
	c := new(CLI)
	if err := c.Init(context.Background(), host); err != nil {
		t.Fatal(err)
	}
	l, err := NewLocal(c, &fakeRouter{}, "cli:ann", chat.Sender{ID: "ann"})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx := context.Background()
	if _, _, err := l.LastUserMessage(ctx); err == nil {
		t.Error("no error without the conversation services")
	}
	f := &fakeConversations{got: make(chan api.RedoRequest, 1), done: make(chan error, 1)}
	for i := range messagePage + 3 {
		f.msgs = append(f.msgs, api.Message{ID: int64(i + 1), Role: "assistant", Text: "reply"})
	}
	f.msgs[messagePage-1] = api.Message{ID: messagePage, Role: "user", Text: "the question"}
	f.msgs[messagePage] = api.Message{ID: messagePage + 1, Role: "user", Text: "[SYSTEM EVENT] reminder", SystemEvent: true}
	f.msgs[messagePage+1] = api.Message{ID: messagePage + 2, Role: "user", Text: "old", Archived: true}
	l.conv, l.msgs = f, f

	msg, ok, err := l.LastUserMessage(ctx)
	if err != nil || !ok || msg.ID != messagePage || msg.Text != "the question" {
		t.Fatalf("last user message %+v %v %v", msg, ok, err)
	}
	tests := []struct {
		name string
		do   func() error
		want api.RedoRequest
		end  error
	}{
		{"regenerate", func() error { return l.Regenerate(ctx) }, api.RedoRequest{Action: api.RedoRegenerate, Thread: "cli:ann"}, nil},
		{"edit", func() error { return l.Edit(ctx, 7, "new text") }, api.RedoRequest{Action: api.RedoEdit, Thread: "cli:ann", MessageID: 7, Text: "new text"}, nil},
		{"a failed turn", func() error { return l.Regenerate(ctx) }, api.RedoRequest{Action: api.RedoRegenerate, Thread: "cli:ann"}, errors.New("model down")},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); err != nil {
				t.Fatal(err)
			}
			if got := <-f.got; got != tc.want {
				t.Errorf("submitted %+v, want %+v", got, tc.want)
			}
			f.done <- tc.end
			ev := next(t, l)
			wantErr := ""
			if tc.end != nil {
				wantErr = tc.end.Error()
			}
			if ev.Kind != EventIdle || ev.Thread != "cli:ann" || ev.Err != wantErr {
				t.Errorf("event %+v, want idle with %q", ev, wantErr)
			}
		})
	}
	if err := l.Edit(ctx, 7, "refuse"); err == nil || !strings.Contains(err.Error(), "only a message you wrote") {
		t.Errorf("refused edit: %v", err)
	}
	if th, err := l.Rename(ctx, "Lyon trip"); err != nil || th.Title != "Lyon trip" {
		t.Errorf("rename: %+v %v", th, err)
	}
	if err := l.Switch(ctx, "cli:new"); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Rename(ctx, "x"); !errors.Is(err, errNoConversation) {
		t.Errorf("rename of a conversation not stored yet: %v", err)
	}
}
