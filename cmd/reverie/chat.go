package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/reverie-ai/reverie/api/client"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/cli"
)

func newChatCmd(g *globalFlags, env []string) *cobra.Command {
	var remote, token, thread string
	cmd := &cobra.Command{
		Use:   "chat",
		Short: "Chat with the assistant in the terminal",
		Long: `Chat with the assistant in the terminal: replies stream as they are written and are
rendered as markdown, tool calls are shown, slash commands work (/help lists them).

Keys:
  ` + strings.ReplaceAll(cli.Keys, " · ", "\n  ") + `
The input history is kept in <data>/cli_history.

While an agent runs on the data dir, chat attaches to it through its control socket (the
conversation is then the thread web:cli-$USER, as with --remote). Otherwise the agent runs
in this process (the web page and the other channels do not run meanwhile) and the
conversation is the thread cli:$USER; piped input first waits a few seconds for the
configured MCP servers and says which are not up. (A thread belongs to the channel that delivers
to it, reminders included: web threads where the web channel runs, cli threads where this
process is the channel; README "Terminal chat".) With --remote URL it attaches to a
server elsewhere through its WebSocket API (token from --token, $REVERIE_TOKEN or
<data>/secrets/web_token).

When standard input is not a terminal, chat reads one message per line (a trailing backslash
continues the message on the next line), prints each reply to standard output and exits at
the end of the input; greetings, notifications and errors go to standard error, and the exit
status is non-zero when a message failed.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if token == "" {
				token = lookupEnv(env, "REVERIE_TOKEN")
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
			defer stop()
			dir, err := g.dataDir(env)
			if err != nil {
				return err
			}
			if remote != "" {
				c, err := remoteClient(dir, remote, token)
				if err != nil {
					return err
				}
				return chatRemote(ctx, cmd, dir, c, thread, env)
			}
			c, err := runningAgent(ctx, dir)
			if err != nil {
				return err
			}
			if c != nil {
				return chatRemote(ctx, cmd, dir, c, thread, env)
			}
			return chatInProcess(ctx, cmd, g, dir, thread, env)
		},
	}
	cmd.Flags().StringVar(&remote, "remote", "", "attach to a running server at this URL (http://host:8420) instead of running the agent here")
	cmd.Flags().StringVar(&token, "token", "", "access token of the --remote server (default $REVERIE_TOKEN, else <data>/secrets/web_token)")
	cmd.Flags().StringVar(&thread, "thread", "", "conversation (default cli:$USER in process, web:cli-$USER with --remote)")
	cmd.Flags().BoolP("verbose", "v", false, "show the agent's logs (in process)")
	return cmd
}

// chatUser is the terminal user's name for the thread id.
func chatUser(env []string) string {
	for _, k := range []string{"USER", "LOGNAME"} {
		if u := strings.TrimSpace(lookupEnv(env, k)); u != "" {
			return u
		}
	}
	return "local"
}

// webSession makes s a web session id: letters, digits, - and _, at most
// 64 characters.
func webSession(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '-' || r == '_' || (r < 128 && (unicode.IsLetter(r) || unicode.IsDigit(r))) {
			return r
		}
		return '_'
	}, s)
	if len(s) > 64 {
		s = s[:64]
	}
	return s
}

func lookupEnv(env []string, key string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], key+"="); ok {
			return v
		}
	}
	return ""
}

func chatInProcess(ctx context.Context, cmd *cobra.Command, g *globalFlags, dir, thread string, env []string) error {
	if g.namedDataDir(env) {
		if err := checkDataDir(dir); err != nil {
			return err
		}
	}
	user := chatUser(env)
	id := chat.NewThreadID(cli.ChannelName, user)
	if thread != "" {
		id = chat.ThreadID(thread)
	}
	if err := id.Validate(); err != nil {
		return fmt.Errorf("thread: %w", err)
	}
	if id.Channel() != cli.ChannelName {
		return fmt.Errorf("--thread %q: in process the chat uses cli:… threads (other channels' threads are theirs)", id)
	}
	// The command is the channel: the other channels stay off, the cli
	// channel (disabled by default) is switched on.
	a, stop, err := inProcess{dir: dir, env: append(append([]string(nil), env...), "REVERIE_CLI__ENABLED=true"),
		keep:       func(info extension.Info) bool { return !isChannel(info) || info.ID == cli.ID },
		lockedHint: "stop the running agent first (one agent per data dir), or attach to it with --remote",
	}.start(ctx, cmd, g)
	if err != nil {
		return err
	}
	defer stop()
	if !isTerminal(cmd.InOrStdin()) {
		waitStarted(ctx, cmd, a, defaultStartWait)
	}
	ext, ok := a.Kernel.Extension(cli.ID)
	c, isCLI := ext.(*cli.CLI)
	if !ok || !isCLI {
		return errors.New("the cli channel did not start (see the logs with --verbose)")
	}
	b, err := cli.NewLocal(c, a.Router, id, chat.Sender{ID: user, DisplayName: user})
	if err != nil {
		return err
	}
	defer b.Close()
	return converse(ctx, cmd, b, dir, env)
}

// remoteClient is a client of the server at url, with token, else the
// data dir's web token.
func remoteClient(dir, url, token string) (*client.Client, error) {
	if token == "" {
		if b, err := os.ReadFile(filepath.Join(dir, "secrets", "web_token")); err == nil {
			token = strings.TrimSpace(string(b))
		}
	}
	return client.New(url, token)
}

// chatRemote chats with the agent c reaches, on thread (default
// web:cli-$USER).
func chatRemote(ctx context.Context, cmd *cobra.Command, dir string, c *client.Client, thread string, env []string) error {
	id := chat.NewThreadID("web", webSession("cli-"+chatUser(env)))
	if thread != "" {
		id = chat.ThreadID(thread)
	}
	if err := id.Validate(); err != nil {
		return fmt.Errorf("thread: %w", err)
	}
	b, err := cli.DialRemote(ctx, c, id)
	if err != nil {
		return err
	}
	defer b.Close()
	return converse(ctx, cmd, b, dir, env)
}

// converse runs the interactive chat when both ends are a terminal, the
// plain one otherwise.
func converse(ctx context.Context, cmd *cobra.Command, b cli.Backend, dir string, env []string) error {
	in, out := cmd.InOrStdin(), cmd.OutOrStdout()
	if isTerminal(in) && isTerminal(out) {
		path := ""
		if st, err := os.Stat(dir); err == nil && st.IsDir() {
			path = filepath.Join(dir, cli.HistoryFile)
		}
		hist, err := cli.OpenHistory(path, 0)
		if err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "reverie: %v (history kept in memory only)\n", err)
			hist, _ = cli.OpenHistory("", 0)
		}
		err = cli.RunInteractive(ctx, b, cli.InteractiveOptions{In: in, Out: out, Env: env, History: hist})
		if err != nil && ctx.Err() != nil {
			return nil // a signal ended the chat
		}
		return err
	}
	err := cli.RunPlain(ctx, b, in, out, cmd.ErrOrStderr())
	switch {
	case errors.Is(err, cli.ErrFailed):
		return exitError{code: ExitFailure} // each failure was explained
	case err != nil && ctx.Err() != nil:
		return exitError{code: ExitFailure, err: errors.New("interrupted")}
	}
	return err
}

func isTerminal(v any) bool {
	f, ok := v.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(f.Fd()))
}
