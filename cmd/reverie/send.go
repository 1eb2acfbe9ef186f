package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/datadir"
)

// channelExtensions are left out when a command runs the agent in process
// for a single exchange: the command is the channel.
var channelExtensions = map[string]bool{"web": true, "cli": true, "matrix": true, "telegram": true}

func newSendCmd(g *globalFlags, env []string) *cobra.Command {
	var thread string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "send TEXT",
		Short: "Send one message and print the reply",
		Long: `Send one message to the assistant and print its reply. The agent runs in this process
on the data dir (stop a running agent first: one agent per data dir). Slash commands work
too ("reverie send /status"). Exits non-zero when the turn fails.`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			text := strings.Join(args, " ")
			dir, err := g.dataDir(env)
			if err != nil {
				return err
			}
			id := chat.ThreadID(thread)
			if err := id.Validate(); err != nil {
				return fmt.Errorf("--thread: %w", err)
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			var registry []extension.Info
			for _, info := range extension.Registered() {
				if !channelExtensions[info.ID] {
					registry = append(registry, info)
				}
			}
			logs := io.Discard
			if v, _ := cmd.Flags().GetBool("verbose"); v {
				logs = cmd.ErrOrStderr()
			}
			a, err := app.New(ctx, app.Options{DataDir: dir, ConfigPath: g.config, Env: env, Console: logs, Registry: registry})
			if err != nil {
				if errors.Is(err, datadir.ErrLocked) {
					return fmt.Errorf("%w\nstop the running agent first (one agent per data dir)", err)
				}
				return err
			}
			runCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
			done := make(chan error, 1)
			go func() { done <- a.Run(runCtx) }()
			defer func() {
				cancel()
				<-done
			}()
			select {
			case <-a.Ready():
			case err := <-done:
				return err
			}
			tctx, tcancel := context.WithTimeout(ctx, timeout)
			defer tcancel()
			res, err := a.Router.Handle(tctx, chat.Inbound{
				Address:  chat.Address{Channel: id.Channel(), Thread: id},
				Sender:   chat.Sender{ID: "cli", DisplayName: "reverie send"},
				Text:     text,
				Received: time.Now(),
			})
			out := cmd.OutOrStdout()
			if res.SeedReply != "" {
				fmt.Fprintln(cmd.ErrOrStderr(), res.SeedReply)
				fmt.Fprintln(cmd.ErrOrStderr())
			}
			if res.Reply != "" {
				fmt.Fprintln(out, res.Reply)
			}
			if err != nil {
				if res.Reply != "" {
					// The reply already tells the user what went wrong.
					return exitError{code: ExitFailure}
				}
				return exitError{code: ExitFailure, err: fmt.Errorf("the turn failed: %w", err)}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&thread, "thread", string(chat.DefaultThread), "conversation to send to")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up waiting for the reply after this long")
	cmd.Flags().BoolP("verbose", "v", false, "show the agent's logs")
	return cmd
}
