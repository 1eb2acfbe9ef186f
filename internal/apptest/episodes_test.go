package apptest

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/world"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// Every answered message becomes two episode memories (the message and the
// reply) with no model call of their own, stored with thread, session,
// role and time as fields, and recallable in the next turns.
func TestEpisodesEndToEnd(t *testing.T) {
	h := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	// turn.completed is published after the episodes are stored
	done := h.App.Bus.Watch(ctx, agent.TopicTurnCompleted, 4)
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: "What a lovely name for a cat!"}
	})
	// The channel names the sender; the reply is the assistant's, under
	// its name in the world state.
	if err := h.Channel.host.Receive(ctx, chat.Inbound{Address: chat.Address{Channel: ChannelName, Thread: chat.NewThreadID(ChannelName, "bob")},
		Sender: chat.Sender{ID: "bob", DisplayName: "Bob Marsh"}, Text: "I adopted a kitten called Miso today"}); err != nil {
		t.Fatal(err)
	}
	for user := false; !user; {
		select {
		case ev := <-done:
			var p struct {
				Kind agent.Kind `json:"kind"`
			}
			user = json.Unmarshal(ev.Payload, &p) == nil && p.Kind == agent.KindUser
		case <-ctx.Done():
			t.Fatal("the turn did not complete")
		}
	}
	eps, err := h.App.Memory.List(ctx, memory.Filter{Kinds: []memory.Kind{memory.KindEpisode}})
	if err != nil {
		t.Fatal(err)
	}
	if len(eps) != 2 {
		t.Fatalf("episodes %+v, want the message and the reply", eps)
	}
	byRole := map[memory.Role]memory.Memory{}
	for _, e := range eps {
		byRole[e.Role] = e
	}
	u, a := byRole[memory.RoleUser], byRole[memory.RoleAssistant]
	if u.Text != "I adopted a kitten called Miso today" || a.Text != "What a lovely name for a cat!" {
		t.Errorf("episode texts %q / %q", u.Text, a.Text)
	}
	if u.Speaker != "Bob Marsh" || a.Speaker != world.DefaultAgentName {
		t.Errorf("speakers %q / %q, want the sender's display name and the assistant's name", u.Speaker, a.Speaker)
	}
	for _, e := range eps {
		if e.Thread != "test:bob" || e.Session == "" || e.EventTime == nil || e.Source != memory.SourceConversation {
			t.Errorf("episode fields %+v", e)
		}
	}
	res, err := h.App.Memory.Search(ctx, memory.Query{Text: "what is the kitten's name", Peek: true})
	found := false
	for _, r := range res[:min(2, len(res))] {
		found = found || strings.Contains(r.Text, "Miso")
	}
	if err != nil || !found {
		t.Fatalf("recall after the turn: %+v, %v", res, err)
	}
}

// A regenerated or edited turn replaces its episodes: the message and the
// reply are stored once, with the new reply or the edited text.
func TestRedoneTurnReplacesItsEpisodes(t *testing.T) {
	h := Start(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n := 0
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		n++
		return llmtest.ServerReply{Text: fmt.Sprintf("reply %d", n)}
	})
	th := chat.NewThreadID(ChannelName, "bob")
	episodes := func() []string {
		t.Helper()
		eps, err := h.App.Memory.List(ctx, memory.Filter{Kinds: []memory.Kind{memory.KindEpisode}})
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range eps {
			out = append(out, string(e.Role)+":"+e.Text)
		}
		slices.Sort(out)
		return out
	}
	for _, text := range []string{"I adopted a kitten called Miso", "She likes tuna"} {
		if _, err := h.App.Router.Handle(ctx, chat.Inbound{Address: chat.Address{Channel: ChannelName, Thread: th},
			Sender: chat.Sender{ID: "bob", DisplayName: "Bob"}, Text: text}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := h.App.Router.HandleRedo(ctx, router.Action{Kind: router.ActionRegenerate, Thread: th}); err != nil {
		t.Fatal(err)
	}
	want := []string{"assistant:reply 1", "assistant:reply 3", "user:I adopted a kitten called Miso", "user:She likes tuna"}
	if got := episodes(); !slices.Equal(got, want) {
		t.Errorf("after regenerate: episodes %q, want %q", got, want)
	}
	hist, err := h.App.Conversations.History(ctx, th)
	if err != nil {
		t.Fatal(err)
	}
	first := slices.IndexFunc(hist, func(m conversation.StoredMessage) bool { return m.Message.Text() == "I adopted a kitten called Miso" })
	if first < 0 {
		t.Fatalf("no first message in %+v", hist)
	}
	if _, err := h.App.Router.HandleRedo(ctx, router.Action{Kind: router.ActionEdit, Thread: th, MessageID: hist[first].ID, Text: "I adopted a puppy called Miso"}); err != nil {
		t.Fatal(err)
	}
	want = []string{"assistant:reply 4", "user:I adopted a puppy called Miso"}
	if got := episodes(); !slices.Equal(got, want) {
		t.Errorf("after the edit of the first message: episodes %q, want %q", got, want)
	}
}
