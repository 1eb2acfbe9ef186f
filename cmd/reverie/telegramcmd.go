package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/telegram"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/termtext"
)

// newTelegramCmd is `reverie telegram`: the Telegram channel's pairing
// codes. approve goes through the running agent's control socket when one
// runs (its channel tells the person at once); the others, and approve
// without an agent, work on the database (a channel started later tells
// the person).
func newTelegramCmd(g *globalFlags, env []string) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "telegram",
		Short: "Telegram channel: approve pairing codes, list the people waiting",
		Args:  cobra.NoArgs,
	}
	open := func(cmd *cobra.Command) (*telegram.Store, func(), error) {
		dir, err := g.dataDir(env)
		if err != nil {
			return nil, nil, err
		}
		path := filepath.Join(dir, app.DatabaseFile)
		if _, err := os.Stat(path); err != nil {
			return nil, nil, fmt.Errorf("%s: %w (has Reverie run with the Telegram channel on this data dir?)", path, err)
		}
		db, err := sqlite.Open(cmd.Context(), path)
		if err != nil {
			return nil, nil, err
		}
		st, err := telegram.OpenStore(cmd.Context(), db, time.Now)
		if err != nil {
			db.Close()
			return nil, nil, err
		}
		return st, func() { db.Close() }, nil
	}
	approve := &cobra.Command{
		Use:   "approve CODE",
		Short: "Let in the person who got this pairing code from the bot",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := g.dataDir(env)
			if err != nil {
				return err
			}
			c, err := runningAgent(cmd.Context(), dir)
			if err != nil {
				return err
			}
			if c != nil {
				p, err := c.ApprovePairing(cmd.Context(), telegram.ID, args[0])
				if err != nil {
					return fmt.Errorf("%w (an unknown, used or expired code, or no Telegram channel running; the person gets a new code by writing to the bot again)", err)
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Approved: %s (Telegram user %s). The running assistant has told them.\n", termtext.Line(p.Name), termtext.Line(p.UserID))
				return nil
			}
			st, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			p, err := st.Approve(cmd.Context(), args[0])
			if errors.Is(err, extension.ErrPairingCode) {
				return fmt.Errorf("%w (the person gets a new code by writing to the bot again)", err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Approved: %s (Telegram user %s). The assistant tells them when its Telegram channel next runs.\n", termtext.Line(p.Name), termtext.Line(p.UserID))
			return nil
		},
	}
	pending := &cobra.Command{
		Use:   "pending",
		Short: "List the people waiting for their pairing code to be approved",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			reqs, err := st.Pending(cmd.Context())
			if err != nil {
				return err
			}
			if len(reqs) == 0 {
				fmt.Fprintln(cmd.OutOrStdout(), "Nobody is waiting.")
			}
			for _, r := range reqs {
				fmt.Fprintf(cmd.OutOrStdout(), "%s (user %d): asked %s, code valid until %s\n", termtext.Line(r.Name), r.UserID,
					r.Created.Local().Format("2006-01-02 15:04"), r.Expires.Local().Format("15:04"))
			}
			return nil
		},
	}
	clear := &cobra.Command{
		Use:   "clear",
		Short: "Remove every waiting pairing code (after a flood of strangers)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			st, done, err := open(cmd)
			if err != nil {
				return err
			}
			defer done()
			n, err := st.Clear(cmd.Context())
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "Removed %d waiting pairing code(s); those people get a new code by writing to the bot again.\n", n)
			return nil
		},
	}
	cmd.AddCommand(approve, pending, clear)
	return cmd
}
