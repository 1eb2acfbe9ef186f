package main

import (
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/mcp"
)

func newMCPCmd(g *globalFlags, env []string) *cobra.Command {
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
			dir, err := g.dataDir(env)
			if err != nil {
				return err
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			c, err := runningAgent(ctx, dir)
			if err != nil {
				return err
			}
			if c != nil {
				return mcp.BridgeStdio(ctx, c.MCPEndpoint(), c.HTTPClient(), cmd.InOrStdin(), cmd.OutOrStdout())
			}
			a, stopAgent, err := inProcess{dir: dir, env: env,
				keep:       func(info extension.Info) bool { return !channelExtensions[info.ID] },
				lockedHint: "an agent is running on this data dir: use its streamable HTTP endpoint (/mcp on the web listener) instead",
			}.start(ctx, cmd, g)
			if err != nil {
				return err
			}
			defer stopAgent()
			return mcp.ServeStdio(ctx, a.API, dir, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().BoolP("verbose", "v", false, "show the agent's logs on standard error")
	return cmd
}
