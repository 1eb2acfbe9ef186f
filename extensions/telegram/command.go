package telegram

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/command"
	"github.com/reverie-ai/reverie/termtext"
)

func init() {
	command.Register(command.Info{Extension: ID, Name: "telegram", New: newCommand})
}

// newCommand is `reverie telegram`: the channel's pairing codes. approve
// goes through the running agent's control socket when one runs (its
// channel tells the person at once); the others, and approve without an
// agent, work on the database (a channel started later tells the person).
func newCommand(env command.Env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "telegram",
		Short: "Telegram channel: approve pairing codes, list the people waiting",
		Args:  cobra.NoArgs,
	}
	approve := &cobra.Command{
		Use:   "approve CODE",
		Short: "Let in the person who got this pairing code from the bot",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := env.Agent(cmd.Context())
			if err != nil {
				return err
			}
			if c != nil {
				p, err := c.ApprovePairing(cmd.Context(), ID, args[0])
				if err != nil {
					return err // the agent's reason: the channel is not running, or the code is refused
				}
				printApproved(cmd.OutOrStdout(), p.Name, p.UserID, "The running assistant has told them.")
				return nil
			}
			return withStore(cmd.Context(), env, func(ctx context.Context, st *Store) error {
				p, err := st.Approve(ctx, args[0])
				if errors.Is(err, extension.ErrPairingCode) {
					return fmt.Errorf("%w; the person gets a new code by writing to the bot again", err)
				}
				if err != nil {
					return err
				}
				printApproved(cmd.OutOrStdout(), p.Name, p.UserID, "The assistant tells them when its Telegram channel next runs.")
				return nil
			})
		},
	}
	pending := &cobra.Command{
		Use:   "pending",
		Short: "List the people waiting for their pairing code to be approved",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd.Context(), env, func(ctx context.Context, st *Store) error {
				reqs, err := st.Pending(ctx)
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
			})
		},
	}
	clearCodes := &cobra.Command{
		Use:   "clear",
		Short: "Remove every waiting pairing code (after a flood of strangers)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return withStore(cmd.Context(), env, func(ctx context.Context, st *Store) error {
				n, err := st.Clear(ctx)
				if err != nil {
					return err
				}
				fmt.Fprintf(cmd.OutOrStdout(), "Removed %d waiting pairing code(s); those people get a new code by writing to the bot again.\n", n)
				return nil
			})
		},
	}
	cmd.AddCommand(approve, pending, clearCodes)
	return cmd
}

// withStore runs fn with the pairing store of the data dir's database,
// opened in this process (the channel's tables migrated first).
func withStore(ctx context.Context, env command.Env, fn func(ctx context.Context, st *Store) error) error {
	// A data dir that does not exist is refused as it is, without the
	// question below.
	if _, err := env.DataDir(); err != nil {
		return err
	}
	db, err := env.OpenDatabase(ctx)
	if err != nil {
		return fmt.Errorf("%w (has Reverie run with the Telegram channel on this data dir?)", err)
	}
	defer db.Close()
	st, err := OpenStore(ctx, db, time.Now)
	if err != nil {
		return err
	}
	return fn(ctx, st)
}

// printApproved says who a code let in (their name escaped: a stranger
// chose it) and when they are told.
func printApproved(w io.Writer, name, userID, told string) {
	fmt.Fprintf(w, "Approved: %s (Telegram user %s). %s\n", termtext.Line(name), termtext.Line(userID), told)
}
