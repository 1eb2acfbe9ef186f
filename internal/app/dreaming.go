package app

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/reverie-ai/reverie/internal/dreaming"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/router"
)

// buildDreaming creates the Dreamer (nightly consolidation) and its /dream
// command. It runs after the runtime is built (it needs the memory, pulse and
// router).
func (a *App) buildDreaming(ctx context.Context) error {
	cfg := a.Config.Dreaming
	set := dreaming.DefaultSettings()
	set.DedupThreshold, set.ContradictionFloor, set.MaxContradictions = cfg.DedupThreshold, cfg.ContradictionFloor, cfg.MaxContradictions
	set.StaleDays, set.StaleMinAccess, set.ExportTop, set.MaxDropShare = cfg.StaleDays, cfg.StaleMinAccess, cfg.ExportTop, cfg.MaxDropShare
	set.EpisodeDays = cfg.EpisodeDays
	set.SkillMaxChars = a.Config.Limits.SkillsChars // the skill store's own limit
	o := dreaming.Options{
		Migrations: a.migrations,
		DB:         a.DB, DataDir: a.opts.DataDir, Memory: a.Memory, Model: a.Models.Model(modelrouter.RoleDreaming),
		Settings: set, Now: a.opts.Now, Logger: a.Logger.With("component", "dreaming"),
		Commit: func(ctx context.Context, message string, paths ...string) (string, error) {
			if a.commitFiles == nil {
				return "", nil
			}
			return a.commitFiles(ctx, message, paths...)
		},
	}
	if a.Pulse != nil {
		o.Pulse = a.Pulse
	}
	d, err := dreaming.New(ctx, o)
	if err != nil {
		return fmt.Errorf("set up dreaming: %w", err)
	}
	a.Dreamer = d
	return a.Router.Register(router.Command{
		Name: "dream",
		Help: "consolidate memories, pulse and skills now (/dream last: the last report; /dream revert N)",
		Run:  a.cmdDream,
	})
}

func (a *App) cmdDream(ctx context.Context, cc router.CommandContext) (string, error) {
	args := strings.Fields(cc.Args)
	switch {
	case len(args) == 0:
		if !a.Models.Configured() {
			return "Dreaming needs a language model; none is configured.", nil
		}
		rep, err := a.Dreamer.Dream(ctx, "command")
		if errors.Is(err, dreaming.ErrBusy) {
			return "A dream is already running; try /dream last in a moment.", nil
		}
		if err != nil {
			return "", err
		}
		return rep.Format(), nil
	case args[0] == "last":
		reps, err := a.Dreamer.Reports(ctx, 1)
		if err != nil {
			return "", err
		}
		if len(reps) == 0 {
			return "No dream yet.", nil
		}
		return reps[0].Format(), nil
	case args[0] == "revert" && len(args) == 2:
		id, err := strconv.ParseInt(strings.TrimPrefix(args[1], "#"), 10, 64)
		if err != nil {
			return "Usage: /dream revert N (the dream's number)", nil
		}
		n, err := a.Dreamer.Revert(ctx, id)
		switch {
		case errors.Is(err, dreaming.ErrBusy):
			return "A dream is running; try /dream revert again when it has finished.", nil
		case errors.Is(err, dreaming.ErrNotFound):
			return fmt.Sprintf("Dream #%d not found.", id), nil
		case errors.Is(err, dreaming.ErrReverted):
			return fmt.Sprintf("Dream #%d was already reverted.", id), nil
		case err != nil:
			return "", err
		}
		return fmt.Sprintf("Dream #%d reverted (%d change(s) undone).", id, n), nil
	}
	return "Usage: /dream, /dream last, /dream revert N", nil
}
