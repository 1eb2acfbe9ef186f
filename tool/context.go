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
