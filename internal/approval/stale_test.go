package approval

import (
	"path/filepath"
	"testing"
	"testing/synctest"

	"github.com/reverie-ai/reverie/chat"
)

// After a crash the resumed turn may ask about its call under a new call
// id (the model ran the round again): the request of the interrupted call,
// which nobody waits on any more, is closed as superseded, so the user's
// "yes" answers the request the turn waits on instead of the stale
// duplicate (which left the real request to expire).
func TestServiceNewRequestSupersedesStaleOne(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "r.db")
		box := newOutbox()
		first := open(t, file, box)
		stale := orphanRequest(t, first, box) // the process dies here

		second := open(t, file, box)
		errc := make(chan error, 1)
		go func() { errc <- second.Approve(inThread(t.Context(), "web:s1"), exfilRequest("c7")) }()
		var asked chat.Outbound
		for range 2 { // the stale request's outcome and the new request, in either order
			out := <-box.got
			switch out.Approval.ID {
			case stale.Approval.ID:
				if out.Approval.State != chat.ApprovalExpired {
					t.Errorf("stale request shown as %s", out.Approval.State)
				}
			default:
				asked = out
			}
		}
		if asked.Approval == nil || asked.Approval.State != chat.ApprovalPending {
			t.Fatalf("the resumed call's request: %+v", asked)
		}
		pending, err := second.Pending(t.Context(), "web:s1")
		if err != nil || len(pending) != 1 || pending[0].ID != asked.Approval.ID {
			t.Fatalf("pending = %+v, %v; want only the new request", pending, err)
		}
		rec, ok, err := second.AnswerText(t.Context(), "web:s1", "yes")
		if err != nil || !ok || rec.ID != asked.Approval.ID {
			t.Fatalf("yes answered %+v (%v, %v), want %s", rec, ok, err, asked.Approval.ID)
		}
		if err := <-errc; err != nil {
			t.Fatalf("the resumed call after yes = %v", err)
		}
		got, err := second.Get(t.Context(), stale.Approval.ID)
		if err != nil || got.State != chat.ApprovalExpired || got.DecidedVia != "superseded" {
			t.Fatalf("stale request = %+v, %v", got, err)
		}
	})
}

// A "yes" answers only when it comes from the thread's own channel: a
// message that names a thread of another channel (an MCP client writing
// into web:…) never answers that thread's request.
func TestServiceInterceptOnlyFromTheThreadsChannel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		box := newOutbox()
		s := open(t, filepath.Join(t.TempDir(), "r.db"), box)
		asked := orphanRequest(t, s, box)
		for _, ch := range []string{"mcp", "", "telegram"} {
			msg := chat.Inbound{Address: chat.Address{Channel: ch, Thread: "web:s1"}, Text: "yes"}
			if _, ok := s.Intercept(t.Context(), msg); ok {
				t.Fatalf("a yes from channel %q answered the request of web:s1", ch)
			}
		}
		if _, ok := s.Intercept(t.Context(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:s1"}, Text: "no"}); !ok {
			t.Fatal("the thread's own channel could not answer")
		}
		if got, err := s.Get(t.Context(), asked.Approval.ID); err != nil || got.State != chat.ApprovalDenied {
			t.Fatalf("request = %+v, %v", got, err)
		}
	})
}
