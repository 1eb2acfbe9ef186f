package router

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// TestRedo: regenerate, retry and edit answer again in the thread's order;
// what they replace goes to a branch that stays readable, never deleted.
func TestRedo(t *testing.T) {
	var n atomic.Int32
	fail := atomic.Bool{}
	m := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		if fail.Load() {
			return llm.Response{}, errors.New("model down")
		}
		return llm.Response{Message: llm.AssistantText("answer " + string(rune('0'+n.Add(1))) + " to " + lastUser(r))}, nil
	})
	h := newHarness(t, m, nil, nil)
	h.markKnown("web:r")
	h.run()
	ctx := context.Background()
	const th chat.ThreadID = "web:r"
	if _, err := h.router.Handle(ctx, chat.Inbound{Address: chat.Address{Thread: th}, Text: "q1"}); err != nil {
		t.Fatal(err)
	}
	// Retry refuses a reply that did not fail; regenerate answers again.
	if _, err := h.router.HandleRedo(ctx, Action{Kind: ActionRetry, Thread: th}); !errors.Is(err, ErrNotRetryable) {
		t.Errorf("retry of a good reply: %v", err)
	}
	res, err := h.router.HandleRedo(ctx, Action{Kind: ActionRegenerate, Thread: th})
	if err != nil || res.Reply != "answer 2 to q1" {
		t.Fatalf("regenerate = %q, %v", res.Reply, err)
	}
	if got, want := roles(t, h.store, th), []string{"assistant:earlier", "user:q1", "assistant:answer 2 to q1"}; !slices.Equal(got, want) {
		t.Errorf("after regenerate %q, want %q", got, want)
	}
	// A failed reply is kept with its mark; retry replaces it.
	fail.Store(true)
	if _, err := h.router.Handle(ctx, chat.Inbound{Address: chat.Address{Thread: th}, Text: "q2"}); err == nil {
		t.Fatal("the turn did not fail")
	}
	fail.Store(false)
	hist, _ := h.store.History(ctx, th)
	if last := hist[len(hist)-1]; last.Status != conversation.StatusFailed {
		t.Fatalf("the failed reply is not kept: %+v", last)
	}
	// Asynchronously, delivered through the channel like a message.
	done, err := h.router.Redo(ctx, Action{Kind: ActionRetry, Thread: th, Channel: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if err := recv(t, done); err != nil {
		t.Fatalf("retry: %v", err)
	}
	for got := recv(t, h.web.out); got.Kind != chat.Reply; got = recv(t, h.web.out) {
	}
	// Edit q1: it and what followed go to a branch; the new text is answered.
	hist, _ = h.store.History(ctx, th)
	q1 := hist[1].ID
	res, err = h.router.HandleRedo(ctx, Action{Kind: ActionEdit, Thread: th, MessageID: q1, Text: "q1 edited"})
	if err != nil || res.Reply != "answer 4 to q1 edited" {
		t.Fatalf("edit = %q, %v", res.Reply, err)
	}
	if got, want := roles(t, h.store, th), []string{"assistant:earlier", "user:q1 edited", "assistant:answer 4 to q1 edited"}; !slices.Equal(got, want) {
		t.Errorf("after the edit %q, want %q", got, want)
	}
	segs, err := h.store.Segments(ctx, conversation.SegmentQuery{Thread: th})
	if err != nil || len(segs) != 3 {
		t.Fatalf("branches: %+v %v", segs, err)
	}
	_, msgs, _ := h.store.Segment(ctx, segs[0].ID)
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Message.Text())
	}
	if got := strings.Join(texts, "|"); got != "q1|answer 2 to q1|q2|answer 3 to q2" {
		t.Errorf("the edit's branch holds %q", got)
	}
	for _, tc := range []struct {
		name string
		a    Action
		want error
	}{
		{"edit of an archived message", Action{Kind: ActionEdit, Thread: th, MessageID: q1, Text: "x"}, ErrNotEditable},
		{"edit of a reply", Action{Kind: ActionEdit, Thread: th, MessageID: hist[0].ID, Text: "x"}, ErrNotEditable},
		{"edit without text", Action{Kind: ActionEdit, Thread: th, MessageID: q1, Text: " "}, ErrEmptyText},
		{"regenerate with no message", Action{Kind: ActionRegenerate, Thread: "web:empty"}, ErrNothingToRedo},
		{"unknown action", Action{Kind: "undo", Thread: th}, ErrUnknownAction},
		{"bad thread", Action{Kind: ActionRegenerate, Thread: ""}, chat.ErrInvalidThreadID},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := h.router.HandleRedo(ctx, tc.a); !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestPostDeliversWhatHandleReturns: Post and PostRedo return the turn's
// result as Handle and HandleRedo do, and also deliver it through the
// thread's channel (streamed: the web pages following the thread see it);
// Handle and HandleRedo deliver nothing.
func TestPostDeliversWhatHandleReturns(t *testing.T) {
	h := newHarness(t, echo("reply"), nil, nil)
	const th chat.ThreadID = "live:1"
	h.markKnown(th)
	h.run()
	ctx := t.Context()
	msg := func(text string) chat.Inbound { return chat.Inbound{Address: chat.Address{Thread: th}, Text: text} }
	regenerate := Action{Kind: ActionRegenerate, Thread: th}
	for _, tc := range []struct {
		name     string
		run      func() (agent.Result, error)
		want     string
		streamed bool // to the channel
	}{
		{"Handle", func() (agent.Result, error) { return h.router.Handle(ctx, msg("one")) }, "reply: one", false},
		{"Post", func() (agent.Result, error) { return h.router.Post(ctx, msg("two")) }, "reply: two", true},
		{"HandleRedo", func() (agent.Result, error) { return h.router.HandleRedo(ctx, regenerate) }, "reply: two", false},
		{"PostRedo", func() (agent.Result, error) { return h.router.PostRedo(ctx, regenerate) }, "reply: two", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res, err := tc.run()
			if err != nil || res.Reply != tc.want {
				t.Fatalf("result %q, %v; want %q", res.Reply, err, tc.want)
			}
			// The stream closes before the result is handed back.
			var got []string
			select {
			case got = <-h.live.streams:
			default:
			}
			want := []string{"open " + string(th), "close " + tc.want}
			if ends := len(got) >= 2 && got[0] == want[0] && got[len(got)-1] == want[1]; ends != tc.streamed || tc.streamed != (got != nil) {
				t.Errorf("streamed %q, want a stream: %v", got, tc.streamed)
			}
		})
	}
	// A command's answer is sent whole.
	if _, err := h.router.Post(ctx, msg("/nosuchcommand")); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-h.live.out:
		if got.Kind != chat.Reply || !strings.Contains(got.Text, "Unknown command /nosuchcommand") {
			t.Errorf("sent %+v", got)
		}
	default:
		t.Error("a posted command's answer was not delivered")
	}
}
