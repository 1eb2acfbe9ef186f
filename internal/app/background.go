package app

import (
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/reverie-ai/reverie/internal/eventbus"
	"github.com/reverie-ai/reverie/internal/harvest"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/reflection"
	"github.com/reverie-ai/reverie/internal/world"
)

// buildBackground creates the memory harvest and the reflection cycle; both
// need the workflow manager (their workers are sub-sessions).
func (a *App) buildBackground(ctx context.Context) error {
	if a.Workflows == nil {
		return nil
	}
	if hc := a.Config.Harvest; hc.Enabled {
		h, err := harvest.New(ctx, harvest.Options{
			Migrations: a.migrations,
			DB:         a.DB, Threads: a.Conversations, Spawner: a.Workflows, Log: a.Interactions, Watch: a.Bus.Watch,
			Memories: a.Memory.WorkingSet,
			World:    a.worldSummary(), WorldTool: world.ToolName,
			MessageThreshold: hc.MessageThreshold, IdleTimeout: hc.IdleTimeout, IdleMinMessages: hc.IdleMinMessages,
			MaxMessageChars: hc.MaxMessageChars, MaxTranscriptChars: hc.MaxTranscriptChars,
			Now: a.opts.Now, Logger: a.Logger.With("component", "harvest"),
		})
		if err != nil {
			return fmt.Errorf("set up the memory harvest: %w", err)
		}
		a.Harvester = h
	}
	if rc := a.Config.Reflection; rc.Enabled {
		set := reflection.DefaultSettings()
		set.ConsecutiveFailures, set.BatchThreshold, set.Fallback = rc.ConsecutiveFailures, rc.BatchThreshold, rc.Fallback
		o := reflection.Options{
			Migrations: a.migrations,
			DB:         a.DB, DataDir: a.opts.DataDir, Outcomes: a.Workflows, Spawner: a.Workflows,
			Model: a.Models.Model(modelrouter.RoleReflection), Events: a.Bus, Log: a.Interactions, Subscribe: a.Bus.Subscribe,
			Settings: set, Now: a.opts.Now, Logger: a.Logger.With("component", "reflection"),
		}
		if a.Scheduler != nil {
			o.Tasks = a.Scheduler
		}
		r, err := reflection.New(ctx, o)
		if err != nil {
			return fmt.Errorf("set up reflection: %w", err)
		}
		a.Reflector = r
	} else if err := a.Bus.Forget(ctx, reflection.SubscriberName); err != nil && !errors.Is(err, eventbus.ErrNotFound) {
		// A cursor left from when reflection was on would hold events back from Prune.
		a.Logger.Warn("could not drop the reflection event cursor", "err", err)
	}
	return nil
}

// runBackground runs the harvest and the reflection cycle until ctx ends.
// Without a configured model they would only start workers that fail, so
// they stay off.
func (a *App) runBackground(ctx context.Context) error {
	if !a.Models.Configured() {
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	if a.Harvester != nil {
		g.Go(func() error { return a.Harvester.Run(gctx) })
	}
	if a.Reflector != nil {
		g.Go(func() error { return a.Reflector.Run(gctx) })
	}
	return g.Wait()
}

// worldSummary is the harvest's view of the world state (nil without one).
func (a *App) worldSummary() func(context.Context) string {
	if a.World == nil {
		return nil
	}
	return func(context.Context) string { return a.World.Get().Summary() }
}
