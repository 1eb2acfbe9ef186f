package cli

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/api/client"
	"github.com/reverie-ai/reverie/chat"
)

// fakeServer speaks the WebSocket protocol of docs/api.md: answer maps a
// client frame to the frames sent back. history is what the thread holds.
func fakeServer(t *testing.T, history int, answer func(api.ClientFrame) []api.ServerFrame) (*client.Client, chan struct{}) {
	drop := make(chan struct{})
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/threads/{thread}/messages", func(w http.ResponseWriter, r *http.Request) {
		var l api.MessageList
		for range history {
			l.Messages = append(l.Messages, api.Message{Role: "user", Text: "earlier"})
		}
		_ = json.NewEncoder(w).Encode(l)
	})
	mux.HandleFunc("GET /api/v1/ws", func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go func() {
			select {
			case <-drop:
				cancel() // drops the connection
			case <-ctx.Done():
			}
		}()
		for {
			var f api.ClientFrame
			if err := wsjson.Read(ctx, ws, &f); err != nil {
				return
			}
			for _, out := range answer(f) {
				if err := wsjson.Write(ctx, ws, out); err != nil {
					return
				}
			}
		}
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	c, err := client.New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	return c, drop
}

func str(s string) *string { return &s }

func TestRemote(t *testing.T) {
	const th = chat.ThreadID("web:cli-ann")
	answer := func(f api.ClientFrame) []api.ServerFrame {
		switch f.Text {
		case "refuse":
			return []api.ServerFrame{{Type: api.FrameError, Error: "too many messages; slow down", ID: f.ID}}
		case "tool":
			return []api.ServerFrame{
				{Type: api.FrameDelta, Thread: th, Text: "Let me look."},
				{Type: api.FrameToolCall, Thread: th, CallID: "c1", Name: "clock", Arguments: json.RawMessage(`{}`)},
				{Type: api.FrameToolResult, Thread: th, CallID: "c1", Name: "clock", Result: str("09:00"), IsError: new(bool)},
				{Type: api.FrameDone, Thread: th, Text: "It is nine."},
			}
		case "fail":
			return []api.ServerFrame{{Type: api.FrameError, Thread: th, Error: "The model is unavailable."}}
		case "noise":
			return []api.ServerFrame{
				{Type: api.FrameNotify, Thread: "web:other", Text: "for someone else"},
				{Type: api.FrameError, Error: "malformed frame"},
				{Type: api.FrameNotify, Thread: th, Text: "Reminder: tea"},
				{Type: api.FrameDone, Thread: th, Text: "noise done"},
			}
		default:
			return []api.ServerFrame{{Type: api.FrameDone, Thread: th, Text: "echo " + f.Text}}
		}
	}
	c, drop := fakeServer(t, 1, answer)
	ctx := context.Background()
	r, err := DialRemote(ctx, c, th)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Where() != c.URL() || r.Thread() != th {
		t.Errorf("where %q thread %q", r.Where(), r.Thread())
	}
	exchange := func(text string, want ...Event) {
		t.Helper()
		if err := r.Send(ctx, text); err != nil {
			t.Fatalf("send %q: %v", text, err)
		}
		for i, w := range want {
			got := next(t, r)
			if got.Kind != w.Kind || got.Text != w.Text || got.Err != w.Err || got.Tool != w.Tool || got.Result != w.Result {
				t.Errorf("%q event %d = %+v, want %+v", text, i, got, w)
			}
		}
	}
	exchange("refuse", Event{Kind: EventError, Text: "too many messages; slow down"}, Event{Kind: EventIdle, Err: "too many messages; slow down"})
	exchange("tool", Event{Kind: EventDelta, Text: "Let me look."}, Event{Kind: EventToolCall, Tool: "clock"},
		Event{Kind: EventToolResult, Tool: "clock", Result: "09:00"}, Event{Kind: EventDone, Text: "It is nine."}, Event{Kind: EventIdle})
	exchange("fail", Event{Kind: EventError, Text: "The model is unavailable."}, Event{Kind: EventIdle, Err: "The model is unavailable."})
	exchange("noise", Event{Kind: EventNotify, Text: "[web:other] for someone else"}, Event{Kind: EventNotify, Text: "server: malformed frame"},
		Event{Kind: EventNotify, Text: "Reminder: tea"}, Event{Kind: EventDone, Text: "noise done"}, Event{Kind: EventIdle})
	if got := r.Cancel(ctx); got != "nothing to cancel" {
		t.Errorf("cancel while idle: %q", got)
	}

	// Losing the connection ends the chat with an error.
	close(drop)
	if _, err := r.Next(ctx); err == nil || !strings.Contains(err.Error(), "connection to") {
		t.Errorf("after the connection dropped: %v", err)
	}
	if err := r.Send(ctx, "late"); err == nil {
		t.Error("send on a lost connection succeeded")
	}
}

// TestRemoteNewThreadOneReply: a new thread's first message is answered by
// one reply that opens with the greeting (no separate seed reply).
func TestRemoteNewThreadOneReply(t *testing.T) {
	const th = chat.ThreadID("web:new")
	answer := func(f api.ClientFrame) []api.ServerFrame {
		if strings.HasPrefix(f.Text, "/") {
			return []api.ServerFrame{{Type: api.FrameDone, Thread: th, Text: "command " + f.Text}}
		}
		return []api.ServerFrame{
			{Type: api.FrameDelta, Thread: th, Text: "Hi"},
			{Type: api.FrameDone, Thread: th, Text: "Hi, I'm Reverie. echo " + f.Text},
		}
	}
	c, _ := fakeServer(t, 0, answer)
	ctx := context.Background()
	r, err := DialRemote(ctx, c, th)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	// A command on a new thread runs no seed.
	if err := r.Send(ctx, "/status"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []EventKind{EventDone, EventIdle} {
		if got := next(t, r); got.Kind != want {
			t.Fatalf("got %+v, want %s", got, want)
		}
	}
	if err := r.Send(ctx, "hello"); err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for {
		ev := next(t, r)
		kinds = append(kinds, string(ev.Kind)+":"+ev.Text)
		if ev.Kind == EventIdle {
			break
		}
	}
	want := "delta:Hi done:Hi, I'm Reverie. echo hello idle:"
	if got := strings.Join(kinds, " "); got != want {
		t.Errorf("events %q, want %q", got, want)
	}
}

func TestRemoteCancelHidesTheRestOfTheReply(t *testing.T) {
	const th = chat.ThreadID("web:c")
	release := make(chan struct{})
	var cancels atomic.Int32
	answer := func(f api.ClientFrame) []api.ServerFrame {
		if f.Type == api.FrameCancel {
			cancels.Add(1)
			return nil
		}
		if f.Text == "slow" {
			<-release
			return []api.ServerFrame{{Type: api.FrameDelta, Thread: th, Text: "late"}, {Type: api.FrameDone, Thread: th, Text: "late reply"}}
		}
		return []api.ServerFrame{{Type: api.FrameDone, Thread: th, Text: "echo " + f.Text}}
	}
	c, _ := fakeServer(t, 1, answer)
	var once sync.Once
	open := func() { once.Do(func() { close(release) }) }
	t.Cleanup(open) // before the server closes, if the test fails early
	ctx := context.Background()
	r, err := DialRemote(ctx, c, th)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Send(ctx, "slow"); err != nil {
		t.Fatal(err)
	}
	if got := r.Cancel(ctx); got != "cancelled" {
		t.Errorf("cancel: %q", got)
	}
	if ev := next(t, r); ev.Kind != EventIdle || ev.Err != "cancelled" {
		t.Errorf("after cancel: %+v", ev)
	}
	open()
	if err := r.Send(ctx, "next"); err != nil {
		t.Fatal(err)
	}
	for _, want := range []Event{{Kind: EventDone, Text: "echo next"}, {Kind: EventIdle}} {
		if got := next(t, r); got.Kind != want.Kind || got.Text != want.Text {
			t.Errorf("got %+v, want %+v (the cancelled reply must stay hidden)", got, want)
		}
	}
	if n := cancels.Load(); n != 1 {
		t.Errorf("%d cancel frames reached the server, want 1", n)
	}
}

// TestRemoteApproval: an approval frame becomes an EventApproval, and
// Answer sends the client's approval frame.
func TestRemoteApproval(t *testing.T) {
	const th = chat.ThreadID("web:cli-bo")
	answers := make(chan api.ClientFrame, 1)
	c, _ := fakeServer(t, 1, func(f api.ClientFrame) []api.ServerFrame {
		switch f.Type {
		case api.FrameApproval:
			answers <- f
			return []api.ServerFrame{{Type: api.FrameApproval, Thread: th, Approval: f.Approval, Name: "fetch_url", State: "approved"},
				{Type: api.FrameDone, Thread: th, Text: "fetched"}}
		default:
			return []api.ServerFrame{{Type: api.FrameApproval, Thread: th, Approval: "ap_7", Name: "fetch_url",
				Arguments: json.RawMessage(`{"url":"https://x.example/"}`), Text: "a host you did not mention", State: "pending"}}
		}
	})
	ctx := context.Background()
	r, err := DialRemote(ctx, c, th)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if err := r.Send(ctx, "fetch it"); err != nil {
		t.Fatal(err)
	}
	ev := next(t, r)
	if ev.Kind != EventApproval || ev.Approval != "ap_7" || ev.State != chat.ApprovalPending || ev.Tool != "fetch_url" ||
		ev.Text != "a host you did not mention" || string(ev.Arguments) != `{"url":"https://x.example/"}` {
		t.Fatalf("event = %+v", ev)
	}
	if err := r.Answer(ctx, "ap_7", true); err != nil {
		t.Fatal(err)
	}
	if f := <-answers; f.Approval != "ap_7" || f.Approve == nil || !*f.Approve {
		t.Fatalf("answer frame = %+v", f)
	}
	if ev := next(t, r); ev.Kind != EventApproval || ev.State != chat.ApprovalApproved {
		t.Fatalf("outcome = %+v", ev)
	}
	if ev := next(t, r); ev.Kind != EventDone || ev.Text != "fetched" {
		t.Fatalf("reply = %+v", ev)
	}
}

// TestRemoteRedo: regenerate and edit frames carry an id; a refusal echoing
// it ends the wait, a reply ends it like a message's.
func TestRemoteRedo(t *testing.T) {
	const th = chat.ThreadID("web:r")
	var frames sync.Map // id -> frame
	answer := func(f api.ClientFrame) []api.ServerFrame {
		frames.Store(f.ID, f)
		switch {
		case f.Type == api.FrameEdit && f.Message != 41:
			return []api.ServerFrame{{Type: api.FrameError, Error: "could not edit: only a message you wrote can be edited", ID: f.ID}}
		case f.Type == api.FrameRegenerate:
			return []api.ServerFrame{{Type: api.FrameDelta, Thread: th, Text: "Again"}, {Type: api.FrameDone, Thread: th, Text: "Again, better."}}
		case f.Type == api.FrameEdit:
			return []api.ServerFrame{{Type: api.FrameDone, Thread: th, Text: "edited: " + f.Text}}
		}
		return nil
	}
	c, _ := fakeServer(t, 1, answer)
	ctx := context.Background()
	r, err := DialRemote(ctx, c, th)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	tests := []struct {
		name  string
		do    func() error
		frame api.ClientFrame
		want  []Event
	}{
		{"regenerate", func() error { return r.Regenerate(ctx) }, api.ClientFrame{Type: api.FrameRegenerate, Thread: string(th), ID: "c1"},
			[]Event{{Kind: EventDelta, Text: "Again"}, {Kind: EventDone, Text: "Again, better."}, {Kind: EventIdle}}},
		{"edit", func() error { return r.Edit(ctx, 41, "new words") }, api.ClientFrame{Type: api.FrameEdit, Thread: string(th), ID: "c2", Message: 41, Text: "new words"},
			[]Event{{Kind: EventDone, Text: "edited: new words"}, {Kind: EventIdle}}},
		{"refused edit", func() error { return r.Edit(ctx, 40, "x") }, api.ClientFrame{Type: api.FrameEdit, Thread: string(th), ID: "c3", Message: 40, Text: "x"},
			[]Event{{Kind: EventError, Text: "could not edit: only a message you wrote can be edited"},
				{Kind: EventIdle, Err: "could not edit: only a message you wrote can be edited"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if err := tc.do(); err != nil {
				t.Fatal(err)
			}
			for i, w := range tc.want {
				got := next(t, r)
				if got.Kind != w.Kind || got.Text != w.Text || got.Err != w.Err {
					t.Errorf("event %d = %+v, want %+v", i, got, w)
				}
			}
			f, ok := frames.Load(tc.frame.ID)
			if !ok {
				t.Fatalf("no frame %s reached the server", tc.frame.ID)
			}
			if got := f.(api.ClientFrame); got.Type != tc.frame.Type || got.Thread != tc.frame.Thread || got.Message != tc.frame.Message || got.Text != tc.frame.Text {
				t.Errorf("frame %+v, want %+v", got, tc.frame)
			}
		})
	}
}

// TestDialRemoteNothingAnswers: when nothing listens at --remote's address
// the chat refuses in one sentence that says what to check, not with the
// transport's chain of requests; the error still unwraps to the dial's.
func TestDialRemoteNothingAnswers(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now
	c, err := client.New(url, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = DialRemote(context.Background(), c, "web:cli-local")
	want := "nothing answers at " + url + " (the connection was refused): is Reverie running there (reverie run), and is --remote its address?"
	if err == nil || err.Error() != want {
		t.Fatalf("DialRemote = %v\nwant %s", err, want)
	}
	var op *net.OpError
	if !errors.As(err, &op) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("the error does not unwrap to the dial's: %#v", err)
	}
}
