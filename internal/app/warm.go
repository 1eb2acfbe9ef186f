package app

import (
	"context"

	"github.com/reverie-ai/reverie/tool"
)

// warmTools builds the tools' JSON schemas and descriptions on a goroutine
// of its own. Every request sends them, and a tool builds its schema by
// reflection on first use (~4 ms for the core set): a one-shot command
// warms them while the rest of the agent is built, on the core the start
// leaves idle, and a long-running agent once it is ready, so that the
// first turn does not pay for them. Close waits for the goroutine.
func (a *App) warmTools(tools []tool.Tool) {
	a.warming.Go(func() { warm(tools) })
}

// warm asks each tool for what a request carries.
func warm(tools []tool.Tool) {
	for _, t := range tools {
		_ = t.Schema()
		_ = t.Description()
	}
}

// warmTurnTools is warmTools for the tools of a turn, for Run's errgroup.
func (a *App) warmTurnTools(context.Context) error {
	warm(a.turnTools())
	return nil
}
