package web

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
)

// The conversation endpoints (docs/api.md, "Conversations"): rename,
// delete and restore a thread, archived parts, search, and regenerate,
// retry and edit, served from api.Conversations.

func (w *Web) renameThread(rw http.ResponseWriter, r *http.Request) {
	t, err := threadParam(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	var req api.RenameRequest
	if err := decodeBody(r, &req); err != nil {
		w.serviceError(rw, r, err)
		return
	}
	th, err := w.svc.Conversations.Rename(r.Context(), t, req.Title)
	w.reply(rw, r, th, err)
}

func (w *Web) archiveThread(rw http.ResponseWriter, r *http.Request) {
	t, err := threadParam(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	th, err := w.svc.Conversations.Archive(r.Context(), t)
	if err == nil {
		w.hub.broadcast(&api.ServerFrame{Type: api.FrameThread, Thread: t, State: api.ThreadDeleted})
	}
	w.reply(rw, r, th, err)
}

func (w *Web) restoreThread(rw http.ResponseWriter, r *http.Request) {
	t, err := threadParam(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	th, err := w.svc.Conversations.Restore(r.Context(), t)
	if err == nil {
		w.hub.broadcast(&api.ServerFrame{Type: api.FrameThread, Thread: t, State: api.ThreadRestored})
	}
	w.reply(rw, r, th, err)
}

func (w *Web) listSegments(rw http.ResponseWriter, r *http.Request) {
	q := query{r: r}
	sq := api.SegmentQuery{Thread: chat.ThreadID(q.str("thread")), Kind: q.str("kind"), Limit: int(q.int("limit", 100, 1, 1000))}
	switch sq.Kind {
	case "", "conversation", "branch":
	default:
		q.fail("kind %q: use conversation or branch", sq.Kind)
	}
	if sq.Thread != "" {
		if err := sq.Thread.Validate(); err != nil {
			q.fail("%v", err)
		}
	}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	segs, err := w.svc.Conversations.Segments(r.Context(), sq)
	w.reply(rw, r, api.SegmentList{Segments: nonNil(segs)}, err)
}

func (w *Web) getSegment(rw http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	seg, err := w.svc.Conversations.Segment(r.Context(), id)
	seg.Messages = nonNil(seg.Messages)
	w.reply(rw, r, seg, err)
}

func (w *Web) search(rw http.ResponseWriter, r *http.Request) {
	q := query{r: r}
	text, limit := q.str("q"), int(q.int("limit", 50, 1, 200))
	if strings.TrimSpace(text) == "" {
		q.fail("q is empty")
	}
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	hits, err := w.svc.Conversations.Search(r.Context(), text, limit)
	w.reply(rw, r, api.SearchResults{Hits: nonNil(hits)}, err)
}

// redo serves POST …/regenerate, …/retry and …/messages/{id}/edit: the
// new reply comes back as with POST …/messages.
func (w *Web) redo(action string) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		t, err := webThread(r.PathValue("thread"))
		if err != nil {
			w.serviceError(rw, r, fmt.Errorf("%w: %v", api.ErrInvalid, err))
			return
		}
		req := api.RedoRequest{Action: action, Thread: t}
		if action == api.RedoEdit {
			if req.MessageID, err = pathID(r); err != nil {
				w.serviceError(rw, r, err)
				return
			}
			var body api.EditRequest
			if err := decodeBody(r, &body); err != nil {
				w.serviceError(rw, r, err)
				return
			}
			if strings.TrimSpace(body.Text) == "" {
				writeError(rw, http.StatusBadRequest, "text is empty")
				return
			}
			req.Text = body.Text
		}
		w.runTurn(rw, r, t, func(ctx context.Context) (api.Reply, error) {
			return w.svc.Conversations.Redo(ctx, req)
		})
	}
}
