package apptest

import (
	"context"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extensions/matrix/matrixtest"
)

// An approval request from a Matrix group room goes only to the owner's
// private room (the first of allowed_users, with the bot alone): the group
// sees that an action waits, never the tool, its arguments or the data in
// them, and another member's "yes" in the group answers nothing; the
// owner's "yes" in the private room does.
func TestMatrixGroupApprovalGoesToTheOwnerPrivately(t *testing.T) {
	w := newMatrixWorld(t)
	in := newInjection(t)
	h := startMatrix(t, w, WithEnv("REVERIE_MATRIX__ENCRYPTION=false", "REVERIE_TOOLS__FETCH__ALLOW_PRIVATE=true"))
	h.Model.Handle(in.model)
	if _, err := h.App.API.Memories.Add(context.Background(), api.MemoryInput{Text: "The door code is 4711.", Kind: "fact"}); err != nil {
		t.Fatal(err)
	}
	alice := w.srv.Login(t, "alice", mxAlicePass)
	bob := w.srv.Login(t, "bob", mxBobPass)

	dm := alice.CreateRoom(t, false, w.bot)
	alice.Wait(t, "the bot to join the private room", joined(dm, w.bot))
	group := alice.CreateRoom(t, false, w.bot, w.bob)
	alice.Wait(t, "the bot to join the group", joined(group, w.bot))
	if _, err := bob.Client.JoinRoomByID(context.Background(), group); err != nil {
		t.Fatal(err)
	}
	alice.Wait(t, "bob to join", joined(group, w.bob))

	bob.Send(t, group, "reverie: please summarise "+in.page.URL+"/recipes")
	alice.Wait(t, "the request in alice's private room", func(evs []*event.Event) bool {
		return botSaid(evs, dm, w.bot, "127.0.0.2") && botSaid(evs, dm, w.bot, "only you see this")
	})
	bob.Wait(t, "the group told the request went to the owner", func(evs []*event.Event) bool {
		return botSaid(evs, group, w.bot, "sent to the owner privately")
	})

	// Bob, in the group, cannot answer it.
	yes := bob.Send(t, group, "reverie: yes")
	// The bot marks a message read once the router has taken it.
	bob.Wait(t, "the bot to take bob's yes", func(evs []*event.Event) bool { return readBy(evs, w.bot, yes) })
	if n := h.App.Router.QueueDepth(); n != 1 {
		t.Fatalf("bob's yes: queue depth %d, want it queued as a message behind the held turn", n)
	}
	if pending, err := h.App.Approvals.Pending(context.Background(), ""); err != nil || len(pending) != 1 {
		t.Fatalf("after the group's yes: %d pending (%v), want the request still pending", len(pending), err)
	}
	if n := in.exfilHits.Load(); n != 0 {
		t.Fatalf("a group member's yes let the call run (%d hits)", n)
	}

	alice.Send(t, dm, "yes")
	bob.Wait(t, "the group told the owner approved, then the answer", func(evs []*event.Event) bool {
		return botSaid(evs, group, w.bot, "The owner approved") && botSaid(evs, group, w.bot, "Pancakes need flour")
	})
	if n := in.exfilHits.Load(); n != 1 {
		t.Fatalf("the approved call reached the listener %d times, want once", n)
	}
	for _, e := range matrixtest.Messages(bob.Events(), group, id.UserID(w.bot)) {
		// The model's own answer quotes what it fetched (the scripted
		// model's doing); the notes about the request must not.
		b := e.Content.AsMessage().Body
		if strings.Contains(b, "Pancakes need flour") {
			continue
		}
		if strings.Contains(b, "127.0.0.2") || strings.Contains(b, "fetch_url") || strings.Contains(b, "Approval needed") {
			t.Errorf("the group saw the request's data: %q", b)
		}
	}
}

// readBy reports whether user sent a read receipt for the event ev.
func readBy(evs []*event.Event, user string, ev id.EventID) bool {
	for _, e := range evs {
		if e.Type != event.EphemeralEventReceipt {
			continue
		}
		for evID, byType := range *e.Content.AsReceipt() {
			for _, users := range byType {
				if _, ok := users[id.UserID(user)]; ok && evID == ev {
					return true
				}
			}
		}
	}
	return false
}
