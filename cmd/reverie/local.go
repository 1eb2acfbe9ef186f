package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/api/client"
	"github.com/reverie-ai/reverie/internal/app"
)

// runningAgent is a client of the agent running on dir, through its
// control socket, or nil when no agent runs there.
func runningAgent(ctx context.Context, dir string) (*client.Client, error) {
	c, err := client.Local(ctx, dir)
	if errors.Is(err, client.ErrNoAgent) {
		return nil, nil
	}
	return c, err
}

// services are what the state commands (memory, dream) use: the running
// agent's through its control socket, or the data dir's opened in this
// process when no agent runs.
type services struct {
	memories api.Memories
	dreams   api.Dreams
}

// withServices runs fn with the data dir's services: the running agent's,
// else an agent built in this process without extensions for fn's
// duration.
func withServices(cmd *cobra.Command, g *globalFlags, env []string, fn func(ctx context.Context, s services) error) error {
	dir, err := g.existingDataDir(env)
	if err != nil {
		return err
	}
	c, err := runningAgent(cmd.Context(), dir)
	if err != nil {
		return err
	}
	if c != nil {
		return fn(cmd.Context(), services{memories: c.Memories(), dreams: c.Dreams()})
	}
	return withApp(cmd, g, env, func(ctx context.Context, a *app.App) error {
		s := services{memories: a.API.Memories, dreams: a.API.Dreams}
		if s.memories == nil || s.dreams == nil {
			return errors.New("this data dir's agent has no long-term memory")
		}
		return fn(ctx, s)
	})
}
