package router

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

func inboxRows(t *testing.T, h *harness) int {
	t.Helper()
	var n int
	if err := h.db.QueryRow(`SELECT count(*) FROM router_inbox`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// A message a channel hands over again with the same id (chat.Inbound.ID)
// is accepted once: before its turn ran, across a crash (a new router on
// the same database), and after it was answered. Another channel's message
// with the same id, and messages without one, are separate messages.
func TestRedeliveredMessageIsAcceptedOnce(t *testing.T) {
	ctx := context.Background()
	msg := chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, ID: "42/7", Text: "hello"}
	first := newHarness(t, echo("never"), nil, nil)
	first.markKnown("web:1")
	for range 2 {
		if err := first.router.Receive(ctx, msg); err != nil {
			t.Fatal(err)
		}
	}
	if n := inboxRows(t, first); n != 1 {
		t.Fatalf("%d inbox rows after the message came twice, want 1", n)
	}
	if _, err := first.router.Handle(ctx, msg); !errors.Is(err, ErrDuplicate) {
		t.Errorf("Handle of a message received before: %v, want ErrDuplicate", err)
	}
	if _, err := first.router.Submit(ctx, msg); !errors.Is(err, ErrDuplicate) {
		t.Errorf("Submit of a message received before: %v, want ErrDuplicate", err)
	}

	// The process dies before the channel confirmed the message (Telegram's
	// offset, Matrix's sync token): the next start gets it again.
	second := newHarnessOn(t, first.db, t.TempDir(), echo("reply"), nil, nil)
	if err := second.router.Receive(ctx, msg); err != nil {
		t.Fatal(err)
	}
	second.run()
	if got := recv(t, second.web.out); got != (sent{chat.Reply, "web:1", "reply: hello"}) {
		t.Errorf("sent %+v", got)
	}
	if err := second.router.Receive(ctx, msg); err != nil {
		t.Fatal(err)
	}
	if n := inboxRows(t, second); n != 0 {
		t.Errorf("an answered message handed over again was queued (%d rows)", n)
	}
	if got := roles(t, second.store, "web:1"); len(got) != 3 {
		t.Errorf("conversation %q, want the message and one reply", got)
	}

	other := msg
	other.Address, other.Text = chat.Address{Channel: "live", Thread: "live:1"}, "same id, other channel"
	second.markKnown("live:1")
	if err := second.router.Receive(ctx, other); err != nil {
		t.Fatal(err)
	}
	recv(t, second.live.streams)
	noID := chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, Text: "again"}
	for range 2 {
		if err := second.router.Receive(ctx, noID); err != nil {
			t.Fatal(err)
		}
		recv(t, second.web.out)
	}
}

// interceptAll takes every message as an answer.
type interceptAll struct{ n int }

func (i *interceptAll) Intercept(context.Context, chat.Inbound) (string, bool) {
	i.n++
	return "taken", true
}

// Messages handled without an inbox row (overheard ones, answers to an
// approval) are recorded too, so a redelivery is not handled again; an id
// over the limit is refused; ids older than chat.MaxSeenAge are forgotten.
func TestSeenWithoutInboxRow(t *testing.T) {
	now := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	l := &listened{}
	answers := &interceptAll{}
	h := newHarness(t, echo("never"), nil, func(o *Options) {
		o.Listener = l
		o.Answers = answers
		o.Now = func() time.Time { return now }
	})
	ctx := context.Background()
	heard := chat.Inbound{Address: chat.Address{Thread: "web:room"}, ID: "ev1", Text: "see you at the lake", Overheard: true}
	answer := chat.Inbound{Address: chat.Address{Thread: "web:room"}, ID: "ev2", Text: "yes"}
	for range 2 {
		if err := h.router.Receive(ctx, heard); err != nil {
			t.Fatal(err)
		}
		if err := h.router.Receive(ctx, answer); err != nil {
			t.Fatal(err)
		}
	}
	if len(l.msgs) != 1 || answers.n != 1 {
		t.Errorf("overheard %d times, intercepted %d times; want once each", len(l.msgs), answers.n)
	}
	long := chat.Inbound{Address: chat.Address{Thread: "web:room"}, ID: string(make([]byte, chat.MaxInboundIDLen+1)), Text: "x"}
	if err := h.router.Receive(ctx, long); !errors.Is(err, ErrTooLarge) {
		t.Errorf("an oversized id: %v, want ErrTooLarge", err)
	}

	now = now.Add(chat.MaxSeenAge + 2*time.Hour)
	if err := h.router.Receive(ctx, chat.Inbound{Address: chat.Address{Thread: "web:room"}, ID: "ev3", Text: "later", Overheard: true}); err != nil {
		t.Fatal(err)
	}
	ids, err := sqlite.Rows(ctx, h.db, sqlite.Scan1[string], `SELECT message_id FROM router_seen ORDER BY message_id`)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != "ev3" {
		t.Errorf("ids remembered after %s: %q, want only the new one", chat.MaxSeenAge, ids)
	}
}

// WasReceived tells a channel, before it downloads a message's files,
// whether Receive would drop the message as one accepted before.
func TestWasReceived(t *testing.T) {
	ctx := context.Background()
	h := newHarness(t, echo("never"), nil, nil)
	h.markKnown("web:1")
	msg := chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, ID: "42/7", Text: "hello"}
	if err := h.router.Receive(ctx, msg); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		msg  chat.Inbound
		want bool
	}{
		{"the same message", msg, true},
		{"the same id and thread, no text or files yet", chat.Inbound{Address: chat.Address{Thread: "web:1"}, ID: "42/7"}, true},
		{"another id", chat.Inbound{Address: msg.Address, ID: "42/8"}, false},
		{"no id", chat.Inbound{Address: msg.Address, Text: "hello"}, false},
		{"the same id on another channel", chat.Inbound{Address: chat.Address{Channel: "live", Thread: "live:1"}, ID: "42/7"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := h.router.WasReceived(ctx, c.msg)
			if err != nil || got != c.want {
				t.Errorf("WasReceived = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}
