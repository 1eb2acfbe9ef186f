package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/router"
)

// apiConversations serves api.Conversations from the store and the router
// (the router runs regenerations, retries and edits in the thread's order).
type apiConversations struct {
	c *conversation.Store
	r *router.Router
}

// convError maps the store's sentinels to the API's.
func convError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, conversation.ErrNoThread), errors.Is(err, conversation.ErrNoSegment), errors.Is(err, conversation.ErrNoMessage):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, conversation.ErrEmptyTitle), errors.Is(err, conversation.ErrEmptyQuery), errors.Is(err, chat.ErrInvalidThreadID):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func (c apiConversations) Rename(ctx context.Context, thread chat.ThreadID, title string) (api.Thread, error) {
	th, err := c.c.Rename(ctx, thread, title)
	return threadOf(th), convError(err)
}

func (c apiConversations) Archive(ctx context.Context, thread chat.ThreadID) (api.Thread, error) {
	th, err := c.c.ArchiveThread(ctx, thread)
	return threadOf(th), convError(err)
}

func (c apiConversations) Restore(ctx context.Context, thread chat.ThreadID) (api.Thread, error) {
	th, err := c.c.RestoreThread(ctx, thread)
	return threadOf(th), convError(err)
}

func segmentOf(s conversation.Segment) api.Segment {
	return api.Segment{ID: s.ID, Thread: s.Thread, Kind: string(s.Kind), Title: s.Title,
		AfterMessageID: s.AfterMessageID, CreatedAt: s.CreatedAt, Messages: s.Messages}
}

func (c apiConversations) Segments(ctx context.Context, q api.SegmentQuery) ([]api.Segment, error) {
	segs, err := c.c.Segments(ctx, conversation.SegmentQuery{Thread: q.Thread, Kind: conversation.SegmentKind(q.Kind), Limit: q.Limit})
	if err != nil {
		return nil, convError(err)
	}
	out := make([]api.Segment, len(segs))
	for i, s := range segs {
		out[i] = segmentOf(s)
	}
	return out, nil
}

func (c apiConversations) Segment(ctx context.Context, id int64) (api.SegmentMessages, error) {
	seg, msgs, err := c.c.Segment(ctx, id)
	if err != nil {
		return api.SegmentMessages{}, convError(err)
	}
	out := api.SegmentMessages{Segment: segmentOf(seg), Messages: make([]api.Message, len(msgs))}
	for i, m := range msgs {
		out.Messages[i] = messageOf(m)
	}
	return out, nil
}

func (c apiConversations) Search(ctx context.Context, q string, limit int) ([]api.SearchHit, error) {
	hits, err := c.c.Search(ctx, conversation.SearchQuery{Text: q, Limit: limit})
	if err != nil {
		return nil, convError(err)
	}
	out := make([]api.SearchHit, len(hits))
	for i, h := range hits {
		out[i] = api.SearchHit{Thread: h.Thread, Title: h.ThreadTitle, ThreadArchived: h.ThreadArchived, MessageID: h.MessageID,
			Role: string(h.Role), Segment: h.Segment, Snippet: h.Snippet, At: h.At}
	}
	return out, nil
}

func redoAction(r api.RedoRequest, channel string) router.Action {
	return router.Action{Kind: router.ActionKind(r.Action), Thread: r.Thread, Channel: channel, MessageID: r.MessageID, Text: r.Text}
}

func (c apiConversations) Redo(ctx context.Context, r api.RedoRequest) (api.Reply, error) {
	res, err := c.r.PostRedo(ctx, redoAction(r, ""))
	return replyOf(ctx, r.Thread, res, err)
}

func (c apiConversations) Submit(ctx context.Context, r api.RedoRequest) (<-chan error, error) {
	done, err := c.r.Redo(ctx, redoAction(r, ""))
	if err != nil {
		_, err = replyOf(ctx, r.Thread, agent.Result{}, err)
		return nil, err
	}
	return done, nil
}
