// Package command lets an extension add subcommands to the reverie command
// line, the way Caddy modules call caddycmd.RegisterCommand: the extension
// registers a constructor from init, and the binary (cmd/reverie) adds
// every registered command to its root when it builds it, with an Env that
// reaches the data dir and the agent running on it. Extensions selected by
// the bundle (extensions/standard) thus bring their commands with them and
// cmd/reverie names none of them:
//
//	func init() {
//		command.Register(command.Info{
//			Extension: "telegram",
//			Name:      "telegram",
//			New:       newCommand,
//		})
//	}
//
// A command that changes what a running agent holds goes through the
// agent's control socket (Env.Agent) when one runs, and works on the data
// dir in its own process only when none does.
package command

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/api/client"
)

// Env is what the command line gives an extension's commands while they
// run. Its methods honour the global flags (--data) of the invocation.
type Env interface {
	// DataDir is the data directory the command works on (--data,
	// $REVERIE_HOME, else the default). One that does not exist is an
	// error that says how to create it (no command of an extension
	// creates a data dir), and so are the methods below for it.
	DataDir() (string, error)
	// Agent is a client of the agent running on the data dir, through its
	// control socket, or nil (and no error) when no agent runs there.
	Agent(ctx context.Context) (*client.Client, error)
	// OpenDatabase opens the data dir's database in this process, as the
	// agent does; the caller closes it. A database that does not exist
	// yet is not created: the error wraps fs.ErrNotExist. Extensions
	// migrate their own tables before using them.
	OpenDatabase(ctx context.Context) (*sql.DB, error)
	// RunAgent runs the agent in this process, with every enabled
	// extension but the channels (the command is the way in), and returns
	// its services once it is ready; stop ends it and waits for it. Use it
	// only when Agent found none: the data dir takes one agent at a time
	// (the error then says another holds it, with o.LockedHint).
	RunAgent(ctx context.Context, o AgentOptions) (svc *api.Services, stop func(), err error)
	// DecodeConfig decodes the configuration section of extension id
	// (the data dir's config.yaml or --config, with REVERIE_<ID>__…
	// overrides) into v, strictly, as the agent's host does; a missing
	// section leaves v unchanged.
	DecodeConfig(id string, v any) error
	// Memories is the long-term memory of the data dir: the running
	// agent's through its control socket, else the store opened in this
	// process (without starting the agent); done releases it.
	Memories(ctx context.Context) (m api.Memories, done func() error, err error)
}

// AgentOptions adjust Env.RunAgent.
type AgentOptions struct {
	// Logs receives the agent's log lines (nil: discarded).
	Logs io.Writer
	// LockedHint is added to the error when another agent holds the data
	// dir (what to do instead).
	LockedHint string
}

// Info registers one subcommand: top-level, or under one of reverie's
// own commands (Parent).
type Info struct {
	// Extension is the id of the extension adding the command.
	Extension string
	// Parent is the built-in command the command goes under ("memory"
	// for `reverie memory import`); empty for a top-level one.
	Parent string
	// Name is the command's name (the first word of the cobra command's
	// Use): lower-case letters, digits and -, unique among the commands
	// of its parent.
	Name string
	// New builds the command (with its subcommands and flags). It is
	// called once per invocation of the command line, before arguments
	// are parsed: it must not do any work beyond building the command.
	New func(env Env) *cobra.Command
}

var (
	mu        sync.RWMutex
	registry  = map[string]Info{}
	validName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9-]*$`) })
)

// Register adds a command. It is meant to be called from init and panics
// on an invalid or duplicate name, a missing extension id or a nil
// constructor.
func Register(info Info) {
	switch {
	case !validName().MatchString(info.Name):
		panic(fmt.Sprintf("command.Register: invalid name %q", info.Name))
	case info.Parent != "" && !validName().MatchString(info.Parent):
		panic(fmt.Sprintf("command.Register: %q: invalid parent %q", info.Name, info.Parent))
	case info.Extension == "":
		panic(fmt.Sprintf("command.Register: %q names no extension", info.Name))
	case info.New == nil:
		panic(fmt.Sprintf("command.Register: %q has no constructor", info.Name))
	}
	mu.Lock()
	defer mu.Unlock()
	key := strings.TrimSpace(info.Parent + " " + info.Name)
	if prev, dup := registry[key]; dup {
		panic(fmt.Sprintf("command.Register: %q registered twice (by %s and %s)", key, prev.Extension, info.Extension))
	}
	registry[key] = info
}

// Registered returns every registered command, sorted by parent and name.
func Registered() []Info {
	mu.RLock()
	defer mu.RUnlock()
	out := make([]Info, 0, len(registry))
	for _, info := range registry {
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Parent != out[j].Parent {
			return out[i].Parent < out[j].Parent
		}
		return out[i].Name < out[j].Name
	})
	return out
}
