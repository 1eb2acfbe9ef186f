package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension/command"
	"github.com/reverie-ai/reverie/termtext"
)

func init() {
	command.Register(command.Info{Extension: ID, Parent: "memory", Name: "import", New: newImportCommand})
}

// newImportCommand is `reverie memory import --from-mcp SERVER`: copy an
// external MCP memory store into Reverie's own.
func newImportCommand(env command.Env) *cobra.Command {
	var server, toolName, args string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "import --from-mcp SERVER",
		Short: "Copy the memories of an MCP memory server (OpenMemory, server-memory…) into Reverie's store",
		Long: `Start the MCP server SERVER of the mcp.servers section, call its listing tool (--tool, default
list_memories as OpenMemory names it; read_graph for @modelcontextprotocol/server-memory) and add
every memory it returns to Reverie's long-term store (source "import"; equal memories are not
duplicated). Knowledge-graph results become one memory per observation, "<entity>: <observation>".
While an agent runs on the data dir the memories are added through its control socket; otherwise
the store is opened in this process.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if server == "" {
				return errors.New("--from-mcp SERVER is required (a server of the mcp.servers section)")
			}
			if !json.Valid([]byte(args)) {
				return fmt.Errorf("--arguments %q is not JSON", args)
			}
			dir, err := env.DataDir()
			if err != nil {
				return err
			}
			cfg := ParseConfig()
			if err := env.DecodeConfig(ID, &cfg); err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			texts, err := ReadMemories(ctx, cfg, dir, server, toolName, json.RawMessage(args))
			if err != nil {
				return err
			}
			svc, done, err := env.Memories(cmd.Context())
			if err != nil {
				return err
			}
			keep := false
			added, existing, refused := 0, 0, 0
			for _, t := range texts {
				m, err := svc.Add(cmd.Context(), api.MemoryInput{Text: t, Kind: "fact", Source: "import", Keep: &keep})
				switch {
				case err != nil:
					refused++
					// The server's text is shown escaped: it cannot drive the terminal.
					fmt.Fprintf(cmd.ErrOrStderr(), "not imported (%s): %s\n", termtext.Line(err.Error()), termtext.Line(preview(t)))
				case m.Existing:
					existing++
				default:
					added++
				}
			}
			fmt.Fprintf(cmd.OutOrStdout(), "imported %d memories from MCP server %s (%d already known, %d refused)\n",
				added, server, existing, refused)
			return done()
		},
	}
	cmd.Flags().StringVar(&server, "from-mcp", "", "the MCP server to read (a name under mcp.servers)")
	cmd.Flags().StringVar(&toolName, "tool", "list_memories", "the server's tool that lists its memories (read_graph for server-memory)")
	cmd.Flags().StringVar(&args, "arguments", "{}", "the tool's arguments, a JSON object")
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Minute, "give up on the MCP server after this long")
	return cmd
}

// preview is the start of a memory's text for a line on stderr: its first
// 80 characters, "…" when it goes on.
func preview(s string) string {
	if utf8.RuneCountInString(s) <= 80 {
		return s
	}
	return string([]rune(s)[:80]) + "…"
}
