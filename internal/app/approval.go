package app

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/approval"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// buildApprovals opens the approval service (tools.approval): it holds
// back the tool calls that need the user's approval and shows the requests
// in the channel of the turn's thread. It is built before the agent, whose
// tool loop asks it about every call.
func (a *App) buildApprovals(ctx context.Context) error {
	cfg := a.Config.Tools
	policies := make(map[string]approval.Policy, len(cfg.Approval))
	for name, p := range cfg.Approval {
		policies[name] = approval.Policy(p)
	}
	s, err := approval.New(ctx, approval.Options{
		Migrations:   a.migrations,
		DB:           a.DB,
		Policies:     policies,
		Timeout:      cfg.ApprovalTimeout,
		Deliver:      approval.DeliverFunc(a.deliverApproval),
		CanAsk:       a.canAsk,
		Shared:       a.sharedThread,
		Tool:         a.findTool,
		History:      a.history,
		AppWritten:   func(text string) bool { return agent.AppWritten(a.opts.DataDir, a.Config.Language, text) },
		FromUser:     agent.WrittenByUser,
		Events:       a.Bus,
		Secrets:      a.Secrets,
		LeaveOverdue: a.opts.OneShot,
		Now:          a.opts.Now,
		Logger:       a.Logger.With("component", "approval"),
	})
	if err != nil {
		return fmt.Errorf("set up tool approvals: %w", err)
	}
	a.Approvals = s
	a.API.Approvals = apiApprovals{s}
	return nil
}

// loopOptions are the tool-loop options every inference shares: the
// approvals, and the secrets redacted from every tool result as it leaves
// the tool (before the model, the live frames and the journal see it).
func (a *App) loopOptions() toolloop.Options {
	return toolloop.Options{Approver: a.Approvals, Redact: a.Secrets.Redact}
}

// deliverApproval shows an approval request (or its outcome) on the
// channel named in its address, without storing it in the conversation.
func (a *App) deliverApproval(ctx context.Context, out chat.Outbound) error {
	ch, ok := a.Kernel.Channel(out.Address.Channel)
	if !ok {
		return fmt.Errorf("no channel %q is running", out.Address.Channel)
	}
	return ch.Send(ctx, out)
}

// canAsk reports whether approval requests can be shown on channel: a
// running channel. MCP clients' conversations ("mcp:…") have none, so
// their calls that need approval are refused at once, never left waiting.
func (a *App) canAsk(channel string) bool {
	_, ok := a.Kernel.Channel(channel)
	return ok
}

// sharedThread asks the thread's channel whether others read it (a
// Telegram group) and where its owner is asked privately instead.
func (a *App) sharedThread(thread chat.ThreadID) (chat.ThreadID, bool) {
	ch, ok := a.Kernel.Channel(thread.Channel())
	if !ok {
		return "", false
	}
	if st, ok := ch.(extension.SharedThreads); ok {
		return st.SharedThread(thread)
	}
	return "", false
}

// history returns a thread's stored messages.
func (a *App) history(ctx context.Context, thread chat.ThreadID) ([]llm.Message, error) {
	stored, err := a.Conversations.History(ctx, thread)
	if err != nil {
		return nil, err
	}
	out := make([]llm.Message, len(stored))
	for i, m := range stored {
		out[i] = m.Message
	}
	return out, nil
}

// findTool returns the tool called name among the current tools.
func (a *App) findTool(name string) (tool.Tool, bool) {
	a.toolsMu.RLock()
	defer a.toolsMu.RUnlock()
	for _, t := range a.tools {
		if t.Name() == name {
			return t, true
		}
	}
	return nil, false
}

// apiApprovals serves the approval requests to the HTTP API.
type apiApprovals struct{ s *approval.Service }

func (p apiApprovals) Pending(ctx context.Context, thread chat.ThreadID) ([]api.Approval, error) {
	recs, err := p.s.Pending(ctx, thread)
	if err != nil {
		return nil, err
	}
	out := make([]api.Approval, len(recs))
	for i, r := range recs {
		out[i] = approvalDTO(r)
	}
	return out, nil
}

func (p apiApprovals) Answer(ctx context.Context, id string, approve bool, via string) (api.Approval, error) {
	rec, err := p.s.Answer(ctx, id, approve, via)
	switch {
	case errors.Is(err, approval.ErrNotFound):
		return api.Approval{}, fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, approval.ErrDecided):
		return approvalDTO(rec), fmt.Errorf("%w: %w", api.ErrConflict, err)
	case err != nil:
		return api.Approval{}, err
	}
	return approvalDTO(rec), nil
}

func approvalDTO(r approval.Record) api.Approval {
	return api.Approval{ID: r.ID, Thread: r.Thread, Tool: r.Tool, Arguments: json.RawMessage(r.Arguments), Reason: r.Reason,
		State: string(r.State), CreatedAt: r.CreatedAt, Deadline: r.Deadline, DecidedAt: api.TimePtr(r.DecidedAt)}
}

var (
	_ api.Approvals      = apiApprovals{}
	_ router.Interceptor = (*approval.Service)(nil)
)
