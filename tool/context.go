package tool

import (
	"context"

	"github.com/reverie-ai/reverie/chat"
)

type callKey struct{}

// Call describes the turn a tool is called from. The agent puts it into the
// context its tool handlers receive.
type Call struct {
	// Thread is the conversation the turn belongs to ("web:…", "sub_…").
	Thread chat.ThreadID
	// Agent names who is calling: "main", or a sub-session id.
	Agent string
	// Depth is the sub-session nesting depth (0 for the main agent).
	Depth int
	// Background marks work nobody watches as it runs (a scheduled AI
	// task): a call that needs the user's approval is refused, not asked
	// about.
	Background bool
	// Delegate names the agent (an AgentProvider or an agents/NAME.md
	// file) running the call on behalf of the turn of Thread; "" for the
	// turn's own calls. A delegated agent's task message was written by
	// the model, not the user: the approval rule reads it so.
	Delegate string
}

// WithCall returns ctx carrying c.
func WithCall(ctx context.Context, c Call) context.Context {
	return context.WithValue(ctx, callKey{}, c)
}

// CallFrom returns the Call in ctx; ok is false outside a turn (tests, the
// CLI).
func CallFrom(ctx context.Context) (c Call, ok bool) {
	c, ok = ctx.Value(callKey{}).(Call)
	return c, ok
}

type positionKey struct{}

// Position places one tool call in its turn. The tool loop puts it into the
// context of every call it runs, so that a tool whose meaning depends on
// the calls before it (spawn_sub_session's depends_on_previous) can resolve
// "before" from the order the model issued the calls, not from the order
// in which concurrent calls happen to run.
type Position struct {
	// ID is the model's id of the call.
	ID string
	// Round is the 1-based model round that issued the call; 0 for calls
	// run outside a round (toolloop.RunCalls, resuming saved work).
	Round int
	// Index is the call's 0-based place among the calls of its round, in
	// the order the model issued them.
	Index int
}

// Before reports whether p was issued before q in the same turn: an
// earlier round, or the same round and a lower index.
func (p Position) Before(q Position) bool {
	if p.Round != q.Round {
		return p.Round < q.Round
	}
	return p.Index < q.Index
}

// WithPosition returns ctx carrying p.
func WithPosition(ctx context.Context, p Position) context.Context {
	return context.WithValue(ctx, positionKey{}, p)
}

// PositionFrom returns the Position in ctx; ok is false when the call was
// not run by the tool loop.
func PositionFrom(ctx context.Context) (p Position, ok bool) {
	p, ok = ctx.Value(positionKey{}).(Position)
	return p, ok
}
