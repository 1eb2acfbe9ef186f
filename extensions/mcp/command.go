package mcp

import (
	"io"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/extension/command"
)

func init() {
	command.Register(command.Info{Extension: ID, Name: "mcp", New: newCommand})
}

// newCommand is `reverie mcp`: Reverie as an MCP server on standard input
// and output. Beside a running agent it is a bridge to the agent's /mcp
// endpoint through the control socket; otherwise the agent runs in this
// process, without its channels.
func newCommand(env command.Env) *cobra.Command {
	var verbose bool
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve Reverie's memory, pulse and reminders to an MCP client over stdio",
		Long: `Run Reverie as an MCP server on standard input and output, for Claude Desktop, Claude Code,
Cursor or another agent: tools search_memory, remember, list_pulse, add_pulse_item, set_reminder,
list_reminders and send_message; resources MEMORIES.txt, the world state and each skill. While an
agent runs on the data dir, this is a bridge to its /mcp endpoint through its control socket (so a
client that launches "reverie mcp" works beside the service); otherwise the agent runs in this
process. Logs go to standard error with --verbose.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := env.DataDir()
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			c, err := env.Agent(ctx)
			if err != nil {
				return err
			}
			if c != nil {
				return BridgeStdio(ctx, c.MCPEndpoint(), c.HTTPClient(), cmd.InOrStdin(), cmd.OutOrStdout())
			}
			var logs io.Writer
			if verbose {
				logs = cmd.ErrOrStderr()
			}
			svc, stopAgent, err := env.RunAgent(ctx, command.AgentOptions{Logs: logs,
				LockedHint: "an agent is running on this data dir: use its streamable HTTP endpoint (/mcp on the web listener) instead"})
			if err != nil {
				return err
			}
			defer stopAgent()
			return ServeStdio(ctx, svc, dir, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolVarP(&verbose, "verbose", "v", false, "show the agent's logs on standard error")
	return cmd
}
