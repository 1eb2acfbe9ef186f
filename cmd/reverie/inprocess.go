package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/termtext"
)

// isChannel reports whether info's extension is a channel (its instance is
// an extension.ChannelProvider). Channels are left out when a command runs
// the agent in process: the command is the way in. A constructor that
// panics counts as a channel (left out too).
func isChannel(info extension.Info) (channel bool) {
	defer func() {
		if recover() != nil {
			channel = true
		}
	}()
	_, channel = info.New().(extension.ChannelProvider)
	return channel
}

// inProcess describes an agent a command runs in its own process.
type inProcess struct {
	dir string
	env []string
	// keep selects the registered extensions to load.
	keep func(extension.Info) bool
	// lockedHint is added to the error when another agent holds the data dir.
	lockedHint string
	// oneShot: see app.Options.OneShot (one exchange, then exit).
	oneShot bool
}

// start builds the agent, runs it and waits until it is ready. The agent's
// logs go to stderr with --verbose. stop ends the agent and waits for it.
func (p inProcess) start(ctx context.Context, cmd *cobra.Command, g *globalFlags) (a *app.App, stop func(), err error) {
	logs := io.Discard
	if v, _ := cmd.Flags().GetBool("verbose"); v {
		logs = cmd.ErrOrStderr()
	}
	return p.run(ctx, g.config, logs)
}

// run is start with the configuration file (g.config) and the writer of
// the agent's logs given.
func (p inProcess) run(ctx context.Context, configPath string, logs io.Writer) (a *app.App, stop func(), err error) {
	var registry []extension.Info
	for _, info := range extension.Registered() {
		if p.keep(info) {
			registry = append(registry, info)
		}
	}
	// A one-shot command keeps the start's collector pace until it stops
	// the agent; an agent that stays goes back to the usual pace with its
	// background work (app.BackgroundDelay after ready).
	restoreGC := relaxGC(p.env)
	defer func() {
		if err != nil {
			restoreGC()
		}
	}()
	a, err = app.New(ctx, app.Options{DataDir: p.dir, ConfigPath: configPath, Env: p.env, Console: logs,
		Registry: registry, OneShot: p.oneShot, Settled: restoreGC})
	if err != nil {
		if errors.Is(err, datadir.ErrLocked) {
			return nil, nil, fmt.Errorf("%w\n%s", err, p.lockedHint)
		}
		return nil, nil, err
	}
	runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- a.Run(runCtx) }()
	select {
	case <-a.Ready():
		return a, func() { cancel(); <-done; restoreGC() }, nil
	case err := <-done:
		cancel()
		return nil, nil, err
	}
}

// defaultStartWait bounds how long a one-shot exchange in process (send,
// piped chat) waits for the extensions still starting (the configured MCP
// servers).
const defaultStartWait = 5 * time.Second

// waitStarted waits up to d for every extension still starting after its
// Start (extension.StartWaiter: the MCP servers), since the exchange runs
// once and the tools of a server still starting would be silently missing,
// and says on stderr what is not up.
func waitStarted(ctx context.Context, cmd *cobra.Command, a *app.App, d time.Duration) {
	wctx, cancel := context.WithTimeout(ctx, max(d, 0))
	defer cancel()
	for _, st := range a.Kernel.Status() {
		ext, ok := a.Kernel.Extension(st.ID)
		w, isWaiter := ext.(extension.StartWaiter)
		if !ok || !isWaiter {
			continue
		}
		for _, line := range w.WaitStarted(wctx) {
			fmt.Fprintf(cmd.ErrOrStderr(), "reverie: %s\n", termtext.Line(line))
		}
	}
}
