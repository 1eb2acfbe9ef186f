package main

import (
	"fmt"
	"log/slog"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/internal/datadir"
)

func newInitCmd(g *globalFlags, env []string) *cobra.Command {
	return &cobra.Command{
		Use:   "init",
		Short: "Create the data directory with a commented config.yaml and the default prompts",
		Long: `Create the data directory with a fully commented config.yaml, BASE_PROMPT.txt,
MEMORIES.txt, the prompt templates, starter skills and world_state.json.
Existing files are never overwritten, so it is safe to run again after an upgrade
to add files that a newer version ships.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.dataDir(env)
			if err != nil {
				return err
			}
			created, err := datadir.Bootstrap(dir, slog.New(slog.DiscardHandler))
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if len(created) == 0 {
				fmt.Fprintf(out, "%s is already initialised; nothing was changed.\n", dir)
				return nil
			}
			fmt.Fprintf(out, "Initialised %s:\n", dir)
			for _, f := range created {
				fmt.Fprintf(out, "  created %s\n", f)
			}
			fmt.Fprintf(out, "\nEdit %s, then start Reverie with: reverie --data %s\n",
				filepath.Join(dir, "config.yaml"), shellQuote(dir))
			return nil
		},
	}
}
