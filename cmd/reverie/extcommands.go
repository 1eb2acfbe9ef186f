package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

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

// DataDir refuses a data dir that does not exist: no extension command
// creates one.
func (e commandEnv) DataDir() (string, error) { return e.g.existingDataDir(e.env) }

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

func (e commandEnv) DecodeConfig(id string, v any) error {
	path, err := e.g.configPath(e.env)
	if err != nil {
		return err
	}
	cfg, err := loadConfig(path, e.env)
	if err != nil {
		return err
	}
	return cfg.DecodeExtension(id, v)
}

func (e commandEnv) Memories(ctx context.Context) (api.Memories, func() error, error) {
	c, err := e.Agent(ctx)
	if err != nil {
		return nil, nil, err
	}
	if c != nil {
		return c.Memories(), func() error { return nil }, nil
	}
	dir, err := e.DataDir()
	if err != nil {
		return nil, nil, err
	}
	a, err := openApp(ctx, dir, e.g.config, e.env)
	if err != nil {
		return nil, nil, err
	}
	if a.API.Memories == nil {
		return nil, nil, errors.Join(errors.New("this data dir's agent has no long-term memory"), a.Close())
	}
	return a.API.Memories, a.Close, nil
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
		parent := root
		if info.Parent != "" {
			i := slices.IndexFunc(root.Commands(), func(c *cobra.Command) bool { return c.Name() == info.Parent })
			if i < 0 {
				panic(fmt.Sprintf("extension %s registered the command %q under %q, which reverie does not have", info.Extension, info.Name, info.Parent))
			}
			parent = root.Commands()[i]
		}
		for _, have := range parent.Commands() {
			if have.Name() == info.Name {
				panic(fmt.Sprintf("extension %s registered the command %q, which reverie already has", info.Extension, strings.TrimSpace(info.Parent+" "+info.Name)))
			}
		}
		parent.AddCommand(c)
	}
}
