package router

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

func TestSubmitReportsWhenTheMessageIsHandled(t *testing.T) {
	h := newHarness(t, echo("reply"), nil, nil)
	h.markKnown("web:s")
	h.run()
	ctx := context.Background()
	cases := []struct {
		name, text string
		want       sent
	}{
		{"message", "hello", sent{chat.Reply, "web:s", "reply: hello"}},
		{"command", "/debug", sent{chat.Reply, "web:s", "The debug panel is not available: the web channel is not running."}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			done, err := h.router.Submit(ctx, chat.Inbound{Address: chat.Address{Thread: "web:s"}, Text: c.text})
			if err != nil {
				t.Fatal(err)
			}
			if err := recv(t, done); err != nil {
				t.Fatalf("handled with %v", err)
			}
			// The reply was delivered before Submit's channel fired.
			select {
			case got := <-h.web.out:
				if got != c.want {
					t.Errorf("sent %+v, want %+v", got, c.want)
				}
			default:
				t.Fatal("nothing delivered before the message was reported handled")
			}
		})
	}
	if _, err := h.router.Submit(ctx, chat.Inbound{Address: chat.Address{Thread: "web:s"}, Text: "  "}); !errors.Is(err, ErrEmptyText) {
		t.Errorf("empty text: %v", err)
	}
}

func TestCancelTurnEndsOnlyTheRunningTurn(t *testing.T) {
	started := make(chan struct{}, 1)
	m := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		if lastUser(r) == "slow" {
			started <- struct{}{}
			<-ctx.Done()
			return llm.Response{}, ctx.Err()
		}
		return llm.Response{Message: llm.AssistantText("fast: " + lastUser(r))}, nil
	})
	h := newHarness(t, m, nil, nil)
	h.markKnown("web:c")
	h.run()
	ctx := context.Background()
	if h.router.CancelTurn("web:c") {
		t.Error("CancelTurn reported a turn on an idle thread")
	}
	slow, err := h.router.Submit(ctx, chat.Inbound{Address: chat.Address{Thread: "web:c"}, Text: "slow"})
	if err != nil {
		t.Fatal(err)
	}
	next, err := h.router.Submit(ctx, chat.Inbound{Address: chat.Address{Thread: "web:c"}, Text: "next"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	if !h.router.CancelTurn("web:c") {
		t.Fatal("CancelTurn found nothing running")
	}
	if err := recv(t, slow); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled turn ended with %v", err)
	}
	if got := recv(t, h.web.out); got.Kind != chat.Error || !strings.Contains(got.Text, "Stopped") || strings.Contains(got.Text, "fake") {
		t.Errorf("cancelled turn sent %+v", got)
	}
	// The queued message still runs.
	if err := recv(t, next); err != nil {
		t.Errorf("next message: %v", err)
	}
	if got := recv(t, h.web.out); got != (sent{chat.Reply, "web:c", "fast: next"}) {
		t.Errorf("next message sent %+v", got)
	}
	// The cancelled message is stored.
	if r := roles(t, h.store, "web:c"); !strings.Contains(strings.Join(r, "|"), "user:slow") {
		t.Errorf("history %q lacks the cancelled message", r)
	}
}
