package apptest

import (
	"context"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extensions/telegram/telegramtest"
)

// An approval request from a Telegram group goes only to the owner's
// private chat (the first of allowed_users): the group sees that an action
// waits, never the tool, its arguments or the data in them, and another
// member's "yes" in the group answers nothing; the owner's "yes" in their
// private chat does.
func TestTelegramGroupApprovalGoesToTheOwnerPrivately(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	in := newInjection(t)
	h, _ := startTelegram(t, srv, WithEnv("REVERIE_TOOLS__FETCH__ALLOW_PRIVATE=true"))
	h.Model.Handle(in.model)
	if _, err := h.App.API.Memories.Add(context.Background(), api.MemoryInput{Text: "The door code is 4711.", Kind: "fact"}); err != nil {
		t.Fatal(err)
	}
	group := telegramtest.Group(-100600, "family")
	text, ents := telegramtest.Mention("please summarise " + in.page.URL + "/recipes")
	srv.Send(telegramtest.Incoming{From: bob, Chat: group, Text: text, Entities: ents})
	srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool {
		return hasPlain(ms, "Reply yes to allow it") && hasPlain(ms, "127.0.0.2") && hasPlain(ms, "only you see this")
	})
	srv.WaitMessages(t, group.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "sent to the owner privately") })

	// Bob, in the group, cannot answer it.
	text, ents = telegramtest.Mention("yes")
	srv.Send(telegramtest.Incoming{From: bob, Chat: group, Text: text, Entities: ents})
	// Not taken as an answer, it waits in the group's queue behind the
	// held turn.
	srv.WaitFor(t, "bob's yes to be queued as a message", func() bool { return h.App.Router.QueueDepth() == 1 })
	if pending, err := h.App.Approvals.Pending(context.Background(), ""); err != nil || len(pending) != 1 {
		t.Fatalf("after the group's yes: %d pending (%v), want the request still pending", len(pending), err)
	}
	if n := in.exfilHits.Load(); n != 0 {
		t.Fatalf("a group member's yes let the call run (%d hits)", n)
	}

	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "yes"})
	srv.WaitMessages(t, group.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "The owner approved") })
	srv.WaitFor(t, "the approved call to run", func() bool { return in.exfilHits.Load() == 1 })
	// The turn's own reply comes last; it quotes the fetched result, which
	// the owner allowed. Wait for it so that no message of the turn arrives
	// after the check, then check everything else the group saw.
	srv.WaitMessages(t, group.ID, 3, func(ms []telegramtest.Message) bool { return hasPlain(ms, "Pancakes need flour") })
	for _, m := range srv.Messages(group.ID) {
		if strings.HasPrefix(m.Plain, "Pancakes need flour") {
			continue
		}
		if strings.Contains(m.Plain, "127.0.0.2") || strings.Contains(m.Plain, "fetch_url") || strings.Contains(m.Plain, "Approval needed") {
			t.Errorf("the group saw the request's data: %q", m.Plain)
		}
	}
}

// 50 throwaway accounts fill the pairing table: the next stranger gets no
// code, and the owners are told once, in their private chats, what
// happened and how to clear it.
func TestTelegramPairingFloodTellsTheOwner(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	startTelegram(t, srv)
	const flood = 50
	for i := range flood {
		u := telegramtest.User{ID: int64(700000 + i), FirstName: "Spam"}
		srv.Send(telegramtest.Incoming{From: u, Chat: telegramtest.Private(u), Text: "hi"})
		srv.WaitMessages(t, u.ID, 1, nil)
	}
	late := telegramtest.User{ID: 799999, FirstName: "Late"}
	for range 2 {
		srv.Send(telegramtest.Incoming{From: late, Chat: telegramtest.Private(late), Text: "hello?"})
	}
	for _, owner := range []telegramtest.User{alice, bob} {
		srv.WaitMessages(t, owner.ID, 1, func(ms []telegramtest.Message) bool {
			return hasPlain(ms, "Pairing is full: 50 people") && hasPlain(ms, "reverie telegram clear")
		})
	}
	// One more stranger: the owners are not told twice.
	srv.Send(telegramtest.Incoming{From: mallory, Chat: telegramtest.Private(mallory), Text: "hi"})
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "/status"})
	ms := srv.WaitMessages(t, alice.ID, 2, nil)
	n := 0
	for _, m := range ms {
		if strings.Contains(m.Plain, "Pairing is full") {
			n++
		}
	}
	if n != 1 {
		t.Errorf("the owner was told %d times", n)
	}
	if ms := srv.Messages(late.ID); len(ms) != 0 {
		t.Errorf("a stranger got a code from a full table: %+v", ms)
	}
}
