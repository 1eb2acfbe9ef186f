package main

import (
	"context"
	"fmt"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/termtext"
)

func newSendCmd(g *globalFlags, env []string) *cobra.Command {
	var thread string
	var timeout, mcpWait time.Duration
	cmd := &cobra.Command{
		Use:   "send TEXT",
		Short: "Send one message and print the reply",
		Long: `Send one message to the assistant and print its reply. While an agent runs on the data
dir the message goes to it through its control socket; otherwise the agent runs in this
process for the one exchange, after waiting (up to --mcp-wait) for the configured MCP
servers, and says which are not up. Slash commands work too ("reverie send /status").
Exits non-zero when the turn fails.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := strings.Join(args, " ")
			dir, err := g.existingDataDir(env)
			if err != nil {
				return err
			}
			id := chat.ThreadID(thread)
			if err := id.Validate(); err != nil {
				return fmt.Errorf("--thread: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			c, err := runningAgent(ctx, dir)
			if err != nil {
				return err
			}
			if c != nil {
				tctx, tcancel := context.WithTimeout(ctx, timeout)
				defer tcancel()
				res, err := c.Send(tctx, id, text)
				return printReply(cmd, res.SeedReply, res.Reply, err)
			}
			a, stop, err := inProcess{dir: dir, env: env,
				keep:       func(info extension.Info) bool { return !isChannel(info) },
				lockedHint: "stop the running agent first (one agent per data dir)",
				oneShot:    true,
			}.start(ctx, cmd, g)
			if err != nil {
				return err
			}
			defer stop()
			waitStarted(ctx, cmd, a, mcpWait)
			tctx, tcancel := context.WithTimeout(ctx, timeout)
			defer tcancel()
			// The user speaks: their name in the world state is the
			// speaker memory stores ("" when none is set).
			sender := chat.Sender{ID: "cli"}
			if a.World != nil {
				sender.DisplayName = a.World.Get().Identity.UserName
			}
			res, err := a.Router.Handle(tctx, chat.Inbound{
				Address:  chat.Address{Channel: id.Channel(), Thread: id},
				Sender:   sender,
				Text:     text,
				Received: time.Now(),
			})
			return printReply(cmd, res.SeedReply, res.Reply, err)
		},
	}
	cmd.Flags().StringVar(&thread, "thread", string(chat.DefaultThread), "conversation to send to")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up waiting for the reply after this long")
	cmd.Flags().BoolP("verbose", "v", false, "show the agent's logs")
	cmd.Flags().DurationVar(&mcpWait, "mcp-wait", defaultStartWait, "in process: wait this long for the configured MCP servers (extensions still starting) before sending")
	return cmd
}

// printReply prints a turn's seed reply (to stderr), its reply and the
// exit status of a failed turn.
func printReply(cmd *cobra.Command, seed, reply string, err error) error {
	if seed != "" {
		fmt.Fprintln(cmd.ErrOrStderr(), termtext.Text(seed))
		fmt.Fprintln(cmd.ErrOrStderr())
	}
	if reply != "" {
		fmt.Fprintln(cmd.OutOrStdout(), termtext.Text(reply))
	}
	if err != nil {
		if reply != "" {
			// The reply already tells the user what went wrong.
			return exitError{code: ExitFailure}
		}
		return exitError{code: ExitFailure, err: fmt.Errorf("the turn failed: %w", err)}
	}
	return nil
}
