package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
)

// approvalTimeout bounds answering or listing approval requests from the
// WebSocket, which has no request context.
const approvalTimeout = 10 * time.Second

// approvalNeedsToken refuses an answer from a client without the token
// (web.auth: none): any local process — a sandboxed command among them —
// could otherwise approve the assistant's own requests.
const approvalNeedsToken = "answering an approval request needs the access token, also with web.auth: none: " +
	"sign in with the token kept in " + TokenFile + " in the data dir"

// approvalFrame is the "approval" frame of a request or its outcome.
func approvalFrame(t chat.ThreadID, a chat.Approval) *api.ServerFrame {
	f := &api.ServerFrame{Type: api.FrameApproval, Thread: t, Approval: a.ID, Name: a.Tool,
		Arguments: validJSON(a.Arguments), Text: a.Reason, State: string(a.State)}
	if !a.Deadline.IsZero() {
		d := a.Deadline.UTC()
		f.Deadline = &d
	}
	return f
}

// sendPending sends c the requests waiting on thread t, so that a page
// opened (or reloaded, or reconnected after a restart) while a call waits
// shows its buttons.
func (w *Web) sendPending(c *wsConn, t chat.ThreadID) {
	if w.svc.Approvals == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), approvalTimeout)
	defer cancel()
	pending, err := w.svc.Approvals.Pending(ctx, t)
	if err != nil {
		w.log.Warn("could not list pending approval requests", "thread", t, "err", err)
		return
	}
	for _, p := range pending {
		c.send(approvalFrame(t, chat.Approval{ID: p.ID, Tool: p.Tool, Arguments: p.Arguments, Reason: p.Reason,
			State: chat.ApprovalState(p.State), Deadline: p.Deadline}))
	}
}

// answerFrame answers an approval request from a client frame
// {"type":"approval","approval":"ap_…","approve":true}. The outcome reaches
// every page following the thread as an "approval" frame.
func (w *Web) answerFrame(c *wsConn, f api.ClientFrame, fail func(string)) {
	if w.svc.Approvals == nil {
		fail("approvals are not enabled")
		return
	}
	if !c.withToken {
		fail(approvalNeedsToken)
		return
	}
	if f.Approval == "" || f.Approve == nil {
		fail(`an approval frame needs "approval" (the request id) and "approve" (true or false)`)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), approvalTimeout)
	defer cancel()
	if _, err := w.svc.Approvals.Answer(ctx, f.Approval, *f.Approve, ChannelName); err != nil {
		fail(err.Error())
	}
}

// GET /api/v1/approvals[?thread=…]: the pending requests, oldest first.
func (w *Web) listApprovals(rw http.ResponseWriter, r *http.Request) {
	var thread chat.ThreadID
	if s := r.URL.Query().Get("thread"); s != "" {
		thread = chat.ThreadID(s)
		if err := thread.Validate(); err != nil {
			w.serviceError(rw, r, fmt.Errorf("%w: %w", api.ErrInvalid, err))
			return
		}
	}
	list, err := w.svc.Approvals.Pending(r.Context(), thread)
	if list == nil {
		list = []api.Approval{}
	}
	w.reply(rw, r, api.ApprovalList{Approvals: list}, err)
}

// POST /api/v1/approvals/{id} {"approve":true|false}: answers a request.
func (w *Web) answerApproval(rw http.ResponseWriter, r *http.Request) {
	var body struct {
		Approve *bool `json:"approve"`
	}
	if err := decodeBody(r, &body); err != nil {
		w.serviceError(rw, r, err)
		return
	}
	if body.Approve == nil {
		w.serviceError(rw, r, fmt.Errorf(`%w: "approve" (true or false) is required`, api.ErrInvalid))
		return
	}
	a, err := w.svc.Approvals.Answer(r.Context(), r.PathValue("id"), *body.Approve, "http")
	w.reply(rw, r, a, err)
}
