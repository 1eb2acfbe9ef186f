package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/toolloop"
)

type apiChat struct{ r *router.Router }

func (c apiChat) Cancel(_ context.Context, thread chat.ThreadID) bool { return c.r.CancelTurn(thread) }

func (c apiChat) Handle(ctx context.Context, msg chat.Inbound) (api.Reply, error) {
	res, err := c.r.Handle(ctx, msg)
	return replyOf(ctx, msg.Address.Thread, res, err)
}

func (c apiChat) Post(ctx context.Context, msg chat.Inbound) (api.Reply, error) {
	res, err := c.r.Post(ctx, msg)
	return replyOf(ctx, msg.Address.Thread, res, err)
}

// replyOf makes the API reply of a turn, and its error one of the API's.
func replyOf(ctx context.Context, thread chat.ThreadID, res agent.Result, err error) (api.Reply, error) {
	out := api.Reply{Thread: thread, Reply: res.Reply, SeedReply: res.SeedReply,
		Usage:     api.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens},
		ToolCalls: make([]api.ToolCall, len(res.Calls))}
	for i, call := range res.Calls {
		out.ToolCalls[i] = toolCallOf(call)
	}
	if err == nil {
		return out, nil
	}
	switch {
	case errors.Is(err, router.ErrNotEditable), errors.Is(err, router.ErrUnknownAction):
		err = fmt.Errorf("%w: %w", api.ErrInvalid, err)
	case errors.Is(err, router.ErrNothingToRedo), errors.Is(err, router.ErrNotRetryable), errors.Is(err, router.ErrDeleted):
		err = fmt.Errorf("%w: %w", api.ErrConflict, err)
	case errors.Is(err, chat.ErrInvalidThreadID), errors.Is(err, router.ErrEmptyText):
		err = fmt.Errorf("%w: %w", api.ErrInvalid, err)
	case errors.Is(err, router.ErrTooLarge):
		err = fmt.Errorf("%w: %w", api.ErrTooLarge, err)
	case errors.Is(err, router.ErrQueueFull):
		err = fmt.Errorf("%w: %w", api.ErrBusy, err)
	case errors.Is(err, router.ErrStopped):
		err = fmt.Errorf("%w: %w", api.ErrUnavailable, err)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The caller gave up; the turn still completes and is stored.
	default:
		err = fmt.Errorf("%w: %w", api.ErrTurnFailed, err)
	}
	return out, err
}

func toolCallOf(c toolloop.CallRecord) api.ToolCall {
	return api.ToolCall{ID: c.ID, Name: c.Name, Arguments: jsonOrString(c.Arguments), Result: c.Result, IsError: c.IsError}
}
