package main

import (
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/web"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/footprint"
	"github.com/reverie-ai/reverie/internal/logging"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/supervisor"
)

func newRunCmd(g *globalFlags, env []string) *cobra.Command {
	return &cobra.Command{
		Use:   "run",
		Short: "Run Reverie under its supervisor (the default)",
		Long: `Run the supervisor: it starts "reverie agent" as a child process, restarts it with
capped backoff when it crashes (and gives up, saying why, when it crash-loops),
restarts it when the assistant asks for a restart, probes /healthz, and forwards
SIGINT/SIGTERM with a grace period.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.dataDir(env)
			if err != nil {
				return err
			}
			if _, err := datadir.Bootstrap(dir, nil); err != nil {
				return fmt.Errorf("prepare data dir: %w", err)
			}
			cfgPath := g.config
			if cfgPath == "" {
				cfgPath = filepath.Join(dir, "config.yaml")
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
			healthURL := ""
			wc := web.Config{Listen: web.DefaultListen}
			if cfg.ExtensionEnabled("web", true) && cfg.DecodeExtension("web", &wc) == nil {
				if _, port, err := net.SplitHostPort(wc.Listen); err == nil && port != "0" {
					healthURL = "http://" + wc.Listen + "/healthz"
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			// The supervisor keeps almost nothing of what package
			// initialisation and the configuration allocated: hand the freed
			// heap back before it settles into watching the agent.
			footprint.Release()
			return supervisor.Run(ctx, supervisor.Options{
				Command:         argv,
				Env:             env,
				Dir:             dir,
				Stdout:          cmd.OutOrStdout(),
				Stderr:          cmd.ErrOrStderr(),
				RestartFile:     filepath.Join(dir, datadir.RestartFile),
				HealthURL:       healthURL,
				Instance:        healthURL != "",
				HealthInterval:  cfg.Supervisor.HealthInterval,
				BackoffMin:      cfg.Supervisor.RestartBackoffMin,
				BackoffMax:      cfg.Supervisor.RestartBackoffMax,
				CrashLoopLimit:  cfg.Supervisor.CrashLoopLimit,
				CrashLoopWindow: cfg.Supervisor.CrashLoopWindow,
				ShutdownGrace:   cfg.Supervisor.ShutdownGrace,
				Logger:          logger.With("component", "supervisor"),
			})
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
