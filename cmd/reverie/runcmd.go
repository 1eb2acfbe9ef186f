package main

import (
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/footprint"
	"github.com/reverie-ai/reverie/internal/logging"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/supervisor"
)

// SupervisorEnv selects the supervisor of `reverie run`: SupervisorBuiltin
// keeps it in the reverie process; anything else (or unset) uses the lean
// supervisor executable when it is installed next to reverie.
const (
	SupervisorEnv     = "REVERIE_SUPERVISOR"
	SupervisorBuiltin = "builtin"
)

// leanSupervisor replaces the process with the lean supervisor
// (cmd/reverie-supervisor) running with f, handing it the secret values to
// redact from its logs and env as its environment (and the agent's). It
// returns only when it could not: an error wrapping errNoLeanSupervisor
// when the executable is not installed next to reverie, another error when
// starting it failed. Only main sets it (mainHooks); tests calling run in
// their own process leave it nil and supervise in process.
type leanSupervisor func(f supervisor.Flags, secrets, env []string) error

// errNoLeanSupervisor: the lean supervisor executable is not installed
// next to reverie (as under go run).
var errNoLeanSupervisor = errors.New("lean supervisor not found")

func newRunCmd(g *globalFlags, env []string, lean leanSupervisor) *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Run Reverie under its supervisor (the default)",
		Long: `Run the supervisor: it starts "reverie agent" as a child process, restarts it with
capped backoff when it crashes (and gives up, saying why, when it crash-loops),
restarts it when the assistant asks for a restart, probes /healthz, and forwards
SIGINT/SIGTERM with a grace period.

When reverie-supervisor is installed next to reverie (go install ./cmd/...),
reverie hands over to it once the configuration is read: the same supervisor
in a small executable with under 2 MiB of private memory instead of ~4.5.
Set REVERIE_SUPERVISOR=builtin to supervise in the reverie process instead.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.startingDataDir(env)
			if err != nil {
				return err
			}
			if _, err := datadir.Bootstrap(dir, nil); err != nil {
				return fmt.Errorf("prepare data dir: %w", err)
			}
			cfgPath, err := g.configPath(env)
			if err != nil {
				return err
			}
			cfg, err := loadConfig(cfgPath, env)
			if err != nil {
				return err
			}
			secrets := &redact.Secrets{}
			secrets.Add(cfg.SecretValues()...)
			logger, closer, err := logging.New(logging.Options{
				Level: cfg.Log.Level, Format: cfg.Log.Format, Console: cmd.ErrOrStderr(), Secrets: secrets,
			})
			if err != nil {
				return err
			}
			defer closer.Close()

			exe, err := os.Executable()
			if err != nil {
				return fmt.Errorf("find own executable: %w", err)
			}
			argv := []string{exe, "agent", "--data", dir}
			if g.config != "" {
				argv = append(argv, "--config", g.config)
			}
			healthURL, _ := webHealthURL(cfg)
			opts := supervisor.Options{
				Command:         argv,
				Dir:             dir,
				RestartFile:     filepath.Join(dir, datadir.RestartFile),
				HealthURL:       healthURL,
				Instance:        healthURL != "",
				HealthInterval:  cfg.Supervisor.HealthInterval,
				BackoffMin:      cfg.Supervisor.RestartBackoffMin,
				BackoffMax:      cfg.Supervisor.RestartBackoffMax,
				CrashLoopLimit:  cfg.Supervisor.CrashLoopLimit,
				CrashLoopWindow: cfg.Supervisor.CrashLoopWindow,
				ShutdownGrace:   cfg.Supervisor.ShutdownGrace,
			}
			if lean != nil && lookupEnv(env, SupervisorEnv) != SupervisorBuiltin {
				// Returns only when the lean supervisor could not be started.
				err := lean(supervisor.Flags{Options: opts, LogLevel: cfg.Log.Level, LogFormat: cfg.Log.Format}, cfg.SecretValues(), env)
				if errors.Is(err, errNoLeanSupervisor) {
					logger.Info("supervising in process: the lean supervisor is not installed next to reverie", "looked_for", err)
				} else {
					logger.Warn("could not start the lean supervisor; supervising in process", "err", err)
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			// The supervisor keeps almost nothing of what package
			// initialisation and the configuration allocated: hand the freed
			// heap back before it settles into watching the agent.
			footprint.Release()
			opts.Env = env
			opts.Stdout, opts.Stderr = cmd.OutOrStdout(), cmd.ErrOrStderr()
			opts.Logger = logger.With("component", "supervisor")
			return supervisor.Run(ctx, opts)
		},
	}
}

// loadConfig loads and validates the configuration with every registered
// extension's section known.
func loadConfig(path string, env []string) (*config.Config, error) {
	var ids []string
	for _, info := range extension.Registered() {
		ids = append(ids, info.ID)
	}
	cfg, err := config.Load(path, env, ids)
	if err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return cfg, nil
}
