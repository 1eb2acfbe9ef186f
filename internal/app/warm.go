package app

import (
	"context"
	"slices"

	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/tool"
)

// warmTools builds, on a goroutine of its own, what the first turn would
// otherwise build on its path: the tools' JSON schemas and descriptions
// (every request carries them, and a tool builds its schema by reflection
// on first use: ~4 ms for the core set) and the supervisor's claim
// patterns (checked on every reply). A one-shot command warms them while
// the rest of the agent is built, on the core the start leaves idle; a
// long-running agent once it is ready (warmTurnTools). Close waits for the
// goroutine.
func (a *App) warmTools(tools []tool.Tool) {
	a.warming.Go(func() { warm(tools) })
}

// warm asks each tool for what a request carries, then compiles the claim
// patterns.
func warm(tools []tool.Tool) {
	for _, t := range tools {
		_ = t.Schema()
		_ = t.Description()
	}
	_ = agent.DefaultClaimRules()
}

// without returns the tools of ts that are not in done (by name).
func without(ts, done []tool.Tool) []tool.Tool {
	names := make(map[string]bool, len(done))
	for _, t := range done {
		names[t.Name()] = true
	}
	return slices.DeleteFunc(ts, func(t tool.Tool) bool { return names[t.Name()] })
}

// warmableTools are the tools of a turn: the shared set and the
// sub-session tools (their schemas are shared by every thread's binding).
func (a *App) warmableTools() []tool.Tool {
	ts := a.turnTools()
	if a.Workflows != nil {
		ts = append(ts, a.Workflows.Tools("")...)
	}
	return ts
}

// warmTurnTools is warmTools for the tools of a turn, for Run's errgroup.
func (a *App) warmTurnTools(context.Context) error {
	warm(a.warmableTools())
	return nil
}
