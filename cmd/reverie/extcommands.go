package main

import (
	"context"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/api/client"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/command"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// commandEnv is what the extensions' commands get (command.Env): the data
// dir of this invocation's flags, the agent running on it, its database.
type commandEnv struct {
	g   *globalFlags
	env []string
}

var _ command.Env = commandEnv{}

func (e commandEnv) DataDir() (string, error) { return e.g.dataDir(e.env) }

func (e commandEnv) Agent(ctx context.Context) (*client.Client, error) {
	dir, err := e.DataDir()
	if err != nil {
		return nil, err
	}
	return runningAgent(ctx, dir)
}

func (e commandEnv) OpenDatabase(ctx context.Context) (*sql.DB, error) {
	dir, err := e.DataDir()
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dir, app.DatabaseFile)
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	return sqlite.Open(ctx, path)
}

func (e commandEnv) RunAgent(ctx context.Context, o command.AgentOptions) (*api.Services, func(), error) {
	dir, err := e.DataDir()
	if err != nil {
		return nil, nil, err
	}
	logs := o.Logs
	if logs == nil {
		logs = io.Discard
	}
	a, stop, err := inProcess{dir: dir, env: e.env, lockedHint: o.LockedHint,
		keep: func(info extension.Info) bool { return !isChannel(info) },
	}.run(ctx, e.g.config, logs)
	if err != nil {
		return nil, nil, err
	}
	return a.API, stop, nil
}

// addExtensionCommands adds the commands the linked extensions registered
// (command.Register) to root. A name that a built-in command already has
// is a programming error: it panics, like a duplicate registration.
func addExtensionCommands(root *cobra.Command, env command.Env) {
	for _, info := range command.Registered() {
		c := info.New(env)
		if c.Name() != info.Name {
			panic(fmt.Sprintf("extension %s registered the command %q but built %q", info.Extension, info.Name, c.Name()))
		}
		for _, have := range root.Commands() {
			if have.Name() == info.Name {
				panic(fmt.Sprintf("extension %s registered the command %q, which reverie already has", info.Extension, info.Name))
			}
		}
		root.AddCommand(c)
	}
}
