package router

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/eventbus"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// publishOnly hides the bus's PublishTx: the router publishes each event
// after the write it reports, in a commit of its own.
type publishOnly struct{ b *eventbus.Bus }

func (p publishOnly) Publish(ctx context.Context, topic string, payload any) error {
	return p.b.Publish(ctx, topic, payload)
}

var _ TxPublisher = (*eventbus.Bus)(nil)

// withBus sets the router's Events to a bus on the harness's database and
// shared group commit (hiding its PublishTx unless tx) and returns the bus
// and the commit.
// The agent publishes its events on the same bus, as in the app.
func withBus(t *testing.T, tx bool, bus **eventbus.Bus, commits **sqlite.Committer) func(*Options) {
	return func(o *Options) {
		b, err := eventbus.Open(context.Background(), o.DB, eventbus.Options{Commits: o.Commits})
		if err != nil {
			t.Fatal(err)
		}
		*bus, *commits = b, o.Commits
		o.Events = b
		if !tx {
			o.Events = publishOnly{b}
		}
		if o.Agent, err = agent.New(agent.Options{Conversations: o.Threads.(*conversation.Store), Models: models{echo("reply")},
			DataDir: t.TempDir(), Events: b}); err != nil {
			t.Fatal(err)
		}
	}
}

// topics are the topics of evs.
func topics(evs []extension.Event) []string {
	var out []string
	for _, ev := range evs {
		out = append(out, ev.Topic)
	}
	return out
}

// TestMessageEventsShareTheInboxCommits: with a bus that writes events
// within the shared group commit, a message's message.received is
// committed with its inbox row, and the agent's turn.completed and the
// message.replied with the row's removal (after the delivery when the
// router delivers the reply: Post): a turn commits three transactions
// fewer, and the same events are stored, in the same order.
func TestMessageEventsShareTheInboxCommits(t *testing.T) {
	ctx := context.Background()
	for _, how := range []string{"Handle", "Post"} {
		commitsOf := map[bool]int64{}
		for _, tx := range []bool{false, true} {
			var bus *eventbus.Bus
			var commits *sqlite.Committer
			h := newHarness(t, echo("reply"), nil, withBus(t, tx, &bus, &commits))
			h.markKnown("web:1")
			h.run()
			before := commits.Committed()
			send := h.router.Handle
			if how == "Post" {
				send = h.router.Post
			}
			res, err := send(ctx, chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, Text: "hello"})
			if err != nil || res.Reply != "reply: hello" {
				t.Fatalf("%s, tx %v: %q, %v", how, tx, res.Reply, err)
			}
			commitsOf[tx] = commits.Committed() - before
			if how == "Post" {
				if s := recv(t, h.web.out); s.Text != "reply: hello" {
					t.Errorf("Post delivered %q", s.Text)
				}
			}
			evs, err := bus.Recent(ctx, "", 0, 10)
			if err != nil {
				t.Fatal(err)
			}
			if got := topics(evs); !slices.Equal(got, []string{TopicMessageReceived, agent.TopicTurnCompleted, TopicMessageReplied}) {
				t.Errorf("%s, tx %v: events %q, want message.received, turn.completed, message.replied", how, tx, got)
			}
			var left int
			if err := h.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM router_inbox`).Scan(&left); err != nil || left != 0 {
				t.Errorf("%s, tx %v: %d inbox rows left (%v), want 0", how, tx, left, err)
			}
		}
		if commitsOf[true] != commitsOf[false]-3 {
			t.Errorf("%s: a turn committed %d transactions with the events written in the inbox's, %d without; want three fewer",
				how, commitsOf[true], commitsOf[false])
		}
	}
}

// TestRepliedAfterDelivery: a reply the router delivers to its channel has
// its message.replied, written with the inbox row's removal, after the
// delivery.
func TestRepliedAfterDelivery(t *testing.T) {
	var bus *eventbus.Bus
	var commits *sqlite.Committer
	h := newHarness(t, echo("reply"), nil, withBus(t, true, &bus, &commits))
	h.markKnown("web:1")
	wctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	watch := bus.Watch(wctx, TopicMessageReplied, 4)
	h.run()
	if err := h.router.Receive(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	recv(t, watch)
	// The delivery happened before the event was published, on the same
	// goroutine: it is in the channel's buffer by now.
	select {
	case s := <-h.web.out:
		if s.Text != "reply: hello" {
			t.Errorf("delivered %q", s.Text)
		}
	default:
		t.Error("message.replied was published before the reply was delivered")
	}
}

// TestFailedTurnEventsInOrder: a turn the model fails still has its
// closing event (turn.failed) before its message.replied, both written
// with the inbox row's removal.
func TestFailedTurnEventsInOrder(t *testing.T) {
	ctx := context.Background()
	var bus *eventbus.Bus
	var commits *sqlite.Committer
	failing := llmtest.Func(func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{}, errors.New("the model is down")
	})
	h := newHarness(t, failing, nil, func(o *Options) {
		withBus(t, true, &bus, &commits)(o)
		var err error
		if o.Agent, err = agent.New(agent.Options{Conversations: o.Threads.(*conversation.Store), Models: models{failing},
			DataDir: t.TempDir(), Events: bus}); err != nil {
			t.Fatal(err)
		}
	})
	h.markKnown("web:1")
	h.run()
	if _, err := h.router.Handle(ctx, chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, Text: "hello"}); err == nil {
		t.Fatal("Handle of a turn the model fails returned no error")
	}
	evs, err := bus.Recent(ctx, "", 0, 10)
	if err != nil {
		t.Fatal(err)
	}
	if got := topics(evs); !slices.Equal(got, []string{TopicMessageReceived, agent.TopicTurnFailed, TopicMessageReplied}) {
		t.Errorf("events %q, want message.received, turn.failed, message.replied", got)
	}
}
