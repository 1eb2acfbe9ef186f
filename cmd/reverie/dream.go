package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/api"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/dreaming"
	"github.com/reverie-ai/reverie/termtext"
)

// newDreamCmd is `reverie dream`: consolidate now, list dreams, revert one.
func newDreamCmd(g *globalFlags, env []string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dream",
		Short: "Consolidate memories, pulse and skills now and print the report",
		Long: `Run one dream now (the nightly consolidation): merge duplicate memories, resolve
contradictions, prune stale ones, refresh MEMORIES.txt, review the pulse, tidy the skills.
Every dream can be undone with "reverie dream revert ID". While an agent runs on the data
dir, the dream runs in it (through its control socket); otherwise in this process.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return withServices(cmd, g, env, func(ctx context.Context, s services) error {
				rep, err := s.dreams.Dream(ctx, "cli")
				if err != nil {
					return err
				}
				_, err = fmt.Fprintln(cmd.OutOrStdout(), termtext.Text(formatDream(rep)))
				return err
			})
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "Show the reports of recent dreams",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			n, _ := cmd.Flags().GetInt("limit")
			return withServices(cmd, g, env, func(ctx context.Context, s services) error {
				reps, err := s.dreams.List(ctx, n)
				if err != nil {
					return err
				}
				if len(reps) == 0 {
					_, err := fmt.Fprintln(cmd.OutOrStdout(), "no dreams yet")
					return err
				}
				var b strings.Builder
				for _, r := range reps {
					b.WriteString(termtext.Text(formatDream(r)) + "\n\n")
				}
				_, err = io.WriteString(cmd.OutOrStdout(), b.String())
				return err
			})
		},
	}
	list.Flags().IntP("limit", "n", 5, "how many")
	revert := &cobra.Command{
		Use:   "revert ID",
		Short: "Undo everything a dream changed",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			id, err := strconv.ParseInt(strings.TrimPrefix(args[0], "#"), 10, 64)
			if err != nil {
				return fmt.Errorf("%q is not a dream number", args[0])
			}
			return withServices(cmd, g, env, func(ctx context.Context, s services) error {
				r, err := s.dreams.Revert(ctx, id)
				if err != nil {
					return err
				}
				_, err = fmt.Fprintf(cmd.OutOrStdout(), "dream #%d reverted (%d change(s) undone)\n", id, r.Undone)
				return err
			})
		},
	}
	cmd.AddCommand(list, revert)
	return cmd
}

// formatDream is a dream's report as the terminal shows it: the same
// text as /dream in a chat (dreaming.Report.Format).
func formatDream(d api.Dream) string {
	r := dreaming.Report{ID: d.ID, Trigger: d.Trigger, Started: d.Started, Finished: d.Finished, ModelCalls: d.ModelCalls,
		Revision: d.Revision, Changes: d.Changes, Reverted: d.Reverted, Components: make([]dreaming.ComponentReport, len(d.Components))}
	for i, c := range d.Components {
		r.Components[i] = dreaming.ComponentReport{Name: c.Name, Status: dreaming.Status(c.Status), Detail: c.Detail, Lines: c.Lines}
	}
	return r.Format()
}

// withApp builds the agent in this process without extensions (no
// channels, no listeners) for the duration of fn.
func withApp(cmd *cobra.Command, g *globalFlags, env []string, fn func(ctx context.Context, a *app.App) error) error {
	dir, err := g.existingDataDir(env)
	if err != nil {
		return err
	}
	a, err := openApp(cmd.Context(), dir, g.config, env)
	if err != nil {
		return err
	}
	return errors.Join(fn(cmd.Context(), a), a.Close())
}

// openApp opens the data dir's stores in this process, without the
// extensions and without running the agent; the caller closes it.
func openApp(ctx context.Context, dir, configPath string, env []string) (*app.App, error) {
	a, err := app.New(ctx, app.Options{DataDir: dir, ConfigPath: configPath, Env: env, Console: io.Discard, Registry: []extension.Info{}})
	if err != nil {
		if errors.Is(err, datadir.ErrLocked) {
			return nil, fmt.Errorf("%w\nstop the running agent first (one agent per data dir)", err)
		}
		return nil, err
	}
	return a, nil
}
