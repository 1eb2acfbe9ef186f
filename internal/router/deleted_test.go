package router

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// makerChannel is a channel whose user makes its threads (the web page).
type makerChannel struct{ fakeChannel }

func (*makerChannel) MakesThreads() bool { return true }

var _ extension.ThreadMaker = (*makerChannel)(nil)

// TestDeletedConversation: a deleted thread of a channel whose user makes
// threads takes no message, regeneration or edit until restored (the
// sender is told, the model is not called, nothing is stored); a deleted
// thread of a channel whose chat is the thread (Telegram) starts a new,
// greeted conversation with its next message, the old one kept closed and
// readable, never in the new one's requests; a redo there is refused.
func TestDeletedConversation(t *testing.T) {
	var (
		mu       sync.Mutex
		requests []llm.Request
	)
	m := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		mu.Lock()
		requests = append(requests, r)
		mu.Unlock()
		return llm.Response{Message: llm.AssistantText("answer to " + lastUser(r))}, nil
	})
	page := &makerChannel{fakeChannel{name: "page", out: make(chan sent, 16)}}
	h := newHarness(t, m, nil, func(o *Options) {
		o.Channels = lookup{"web": h0web(o), "page": page}
	})
	h.run()
	ctx := context.Background()
	calls := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(requests)
	}
	say := func(th chat.ThreadID, text string) {
		t.Helper()
		if _, err := h.router.Handle(ctx, chat.Inbound{Address: chat.Address{Thread: th}, Text: text}); err != nil {
			t.Fatalf("%s on %s: %v", text, th, err)
		}
	}

	t.Run("stays closed on the page", func(t *testing.T) {
		const th chat.ThreadID = "page:1"
		say(th, "the old topic")
		before := roles(t, h.store, th)
		if _, err := h.store.ArchiveThread(ctx, th); err != nil {
			t.Fatal(err)
		}
		n := calls()
		for _, tc := range []struct {
			name string
			run  func() (string, error)
		}{
			{"Handle", func() (string, error) {
				res, err := h.router.Handle(ctx, chat.Inbound{Address: chat.Address{Thread: th}, Text: "still there?"})
				return res.Reply, err
			}},
			{"command", func() (string, error) {
				res, err := h.router.Handle(ctx, chat.Inbound{Address: chat.Address{Thread: th}, Text: "/new"})
				return res.Reply, err
			}},
			{"regenerate", func() (string, error) {
				res, err := h.router.HandleRedo(ctx, Action{Kind: ActionRegenerate, Thread: th})
				return res.Reply, err
			}},
		} {
			t.Run(tc.name, func(t *testing.T) {
				reply, err := tc.run()
				if !errors.Is(err, ErrDeleted) || reply != DeletedReply {
					t.Errorf("= %q, %v; want DeletedReply, ErrDeleted", reply, err)
				}
			})
		}
		// Received from the channel: the sender is told on it.
		if err := h.router.Receive(ctx, chat.Inbound{Address: chat.Address{Channel: "page", Thread: th}, Text: "hello?"}); err != nil {
			t.Fatal(err)
		}
		if got := recv(t, page.out); got != (sent{chat.Error, th, DeletedReply}) {
			t.Errorf("delivered %+v", got)
		}
		if calls() != n {
			t.Errorf("the model was called %d times for a deleted conversation", calls()-n)
		}
		if got := roles(t, h.store, th); !slices.Equal(got, before) {
			t.Errorf("history %q, want it unchanged %q", got, before)
		}
		if th2, _, _ := h.store.Thread(ctx, th); th2.ArchivedAt.IsZero() {
			t.Error("the deleted conversation came back")
		}
		// Restored, it takes messages again, with its history.
		if _, err := h.store.RestoreThread(ctx, th); err != nil {
			t.Fatal(err)
		}
		say(th, "back again")
		if got := roles(t, h.store, th); len(got) != len(before)+2 || !slices.Equal(got[:len(before)], before) {
			t.Errorf("after the restore %q", got)
		}
	})

	t.Run("starts afresh on a chat", func(t *testing.T) {
		const th chat.ThreadID = "web:tg"
		say(th, "my secret garden plans")
		if _, err := h.store.ArchiveThread(ctx, th); err != nil {
			t.Fatal(err)
		}
		if _, err := h.router.HandleRedo(ctx, Action{Kind: ActionRegenerate, Thread: th}); !errors.Is(err, ErrDeleted) {
			t.Errorf("regenerate on a deleted chat: %v, want ErrDeleted", err)
		}
		n := calls()
		if err := h.router.Receive(ctx, chat.Inbound{Address: chat.Address{Channel: "web", Thread: th}, Text: "book a dentist"}); err != nil {
			t.Fatal(err)
		}
		if got := recv(t, h.web.out); got.Kind != chat.Reply || !strings.Contains(got.Text, "answer to book a dentist") {
			t.Errorf("delivered %+v", got)
		}
		mu.Lock()
		reqs := slices.Clone(requests[n:])
		mu.Unlock()
		if len(reqs) != 1 {
			t.Fatalf("%d model calls for the new conversation's first message, want 1", len(reqs))
		}
		for _, msg := range reqs[0].Messages {
			if strings.Contains(msg.Text(), "garden") {
				t.Errorf("the new conversation's request carries the deleted one: %q", msg.Text())
			}
		}
		if !greeted(reqs[0]) {
			t.Error("the new conversation is not greeted")
		}
		th2, _, _ := h.store.Thread(ctx, th)
		if !th2.ArchivedAt.IsZero() || th2.Title != "book a dentist" {
			t.Errorf("the thread = %+v, want listed with the new conversation's title", th2)
		}
		segs, err := h.store.Segments(ctx, conversation.SegmentQuery{Thread: th, Kind: conversation.SegmentConversation})
		if err != nil || len(segs) != 1 || segs[0].Title != "my secret garden plans" {
			t.Fatalf("the deleted conversation is not kept closed: %+v %v", segs, err)
		}
		for _, r := range roles(t, h.store, th) {
			if strings.Contains(r, "garden") {
				t.Errorf("the new conversation's history has %q", r)
			}
		}
	})
}

// h0web is the harness's plain web channel, kept when a test replaces the
// channel lookup.
func h0web(o *Options) extension.ChannelProvider {
	c, _ := o.Channels.Channel("web")
	return c
}

// greeted reports whether a request carries the conversation seed.
func greeted(r llm.Request) bool {
	return slices.ContainsFunc(r.Messages, func(m llm.Message) bool {
		return m.Role == llm.RoleUser && strings.HasPrefix(m.Text(), agent.SystemEventPrefix) && strings.Contains(m.Text(), agent.GreetNote)
	})
}
