package main

import (
	"os/signal"
	"runtime"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/internal/app"
)

func newAgentCmd(g *globalFlags, env []string) *cobra.Command {
	return &cobra.Command{
		Use:   "agent",
		Short: "Run the agent in the foreground (what the supervisor starts)",
		Long: `Run the agent process in the foreground: load the configuration, open the database,
start every enabled extension and serve until SIGINT or SIGTERM, then shut down gracefully.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.startingDataDir(env)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			// The collector's usual pace comes back with the background
			// work, after the first requests (app.BackgroundDelay), and
			// a collection then clears the start's garbage first: the
			// background work's objects fill the slots it leaves instead
			// of fresh spans, and the idle heap is denser.
			restoreGC := relaxGC(env)
			defer restoreGC()
			settle := func() {
				restoreGC()
				runtime.GC()
			}
			a, err := app.New(ctx, app.Options{
				DataDir:    dir,
				ConfigPath: g.config,
				Env:        env,
				Console:    cmd.ErrOrStderr(),
				Settled:    settle,
			})
			if err != nil {
				return err
			}
			return a.Run(ctx)
		},
	}
}
