package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/internal/atomicfile"
	"github.com/reverie-ai/reverie/internal/supervisor"
)

// serviceName is the systemd user unit `reverie service install` writes.
const serviceName = "reverie.service"

// systemctlTimeout bounds each systemctl call.
const systemctlTimeout = 30 * time.Second

// serviceUnit is what the unit runs: the binary and the data dir, both
// absolute.
type serviceUnit struct {
	Binary  string
	DataDir string
	// Config is --config when one was given ("": <data>/config.yaml).
	Config string
}

// render writes the systemd unit: `reverie run` (the supervisor) restarted
// by systemd only when it fails in a way a new start can fix — never on
// the exit codes the supervisor itself does not retry
// (supervisor.NoRestartExitCodes: bad config, data dir locked or
// unusable, port taken), where the same start would fail again.
func (u serviceUnit) render() string {
	codes := make([]string, len(supervisor.NoRestartExitCodes))
	for i, c := range supervisor.NoRestartExitCodes {
		codes[i] = strconv.Itoa(c)
	}
	args := []string{u.Binary, "run", "--data", u.DataDir}
	if u.Config != "" {
		args = append(args, "--config", u.Config)
	}
	quoted := make([]string, len(args))
	for i, a := range args {
		quoted[i] = unitQuote(a)
	}
	var b strings.Builder
	b.WriteString("# Written by `reverie service install`; `reverie service install --print` shows what it\n")
	b.WriteString("# would write now. Secrets (OPENAI_API_KEY, …) go in the optional environment file\n")
	b.WriteString("# below (mode 0600), never in this unit.\n")
	b.WriteString("[Unit]\n")
	b.WriteString("Description=Reverie, a personal AI assistant\n")
	b.WriteString("Wants=network-online.target\n")
	b.WriteString("After=network-online.target\n\n")
	b.WriteString("[Service]\n")
	b.WriteString("Type=exec\n")
	fmt.Fprintf(&b, "ExecStart=%s\n", strings.Join(quoted, " "))
	// A path value is taken literally (spaces too): only '%' needs escaping.
	fmt.Fprintf(&b, "EnvironmentFile=-%s\n", strings.ReplaceAll(filepath.Join(u.DataDir, "reverie.env"), "%", "%%"))
	b.WriteString("Restart=on-failure\n")
	b.WriteString("RestartSec=5\n")
	b.WriteString("# Exit codes the supervisor never retries (README \"Exit codes\"): restarting\n")
	b.WriteString("# would fail the same way.\n")
	fmt.Fprintf(&b, "RestartPreventExitStatus=%s\n", strings.Join(codes, " "))
	b.WriteString("# The supervisor forwards the stop to the agent and waits for it.\n")
	b.WriteString("KillMode=mixed\n")
	b.WriteString("TimeoutStopSec=45\n")
	b.WriteString("UMask=0077\n\n")
	b.WriteString("[Install]\n")
	b.WriteString("WantedBy=default.target\n")
	return b.String()
}

// unitQuote quotes one word of a unit file's command line or path value:
// '%' is doubled (specifiers), and a word with spaces, quotes or
// backslashes is double-quoted with C escapes (systemd.syntax).
func unitQuote(s string) string {
	s = strings.ReplaceAll(s, "%", "%%")
	if !strings.ContainsAny(s, " \t\"'\\;") {
		return s
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`)
	return `"` + r.Replace(s) + `"`
}

// unitDir is where systemd looks for the user's units:
// $XDG_CONFIG_HOME/systemd/user, else ~/.config/systemd/user.
func unitDir(env []string) (string, error) {
	if x := lookupEnv(env, "XDG_CONFIG_HOME"); filepath.IsAbs(x) {
		return filepath.Join(x, "systemd", "user"), nil
	}
	home := lookupEnv(env, "HOME")
	if home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return "", fmt.Errorf("find the home directory for the unit file: %w", err)
		}
	}
	return filepath.Join(home, ".config", "systemd", "user"), nil
}

// systemctl runs `systemctl --user ARGS…` and returns its output.
type systemctl func(ctx context.Context, args ...string) (string, error)

func realSystemctl(ctx context.Context, args ...string) (string, error) {
	path, err := exec.LookPath("systemctl")
	if err != nil {
		return "", errors.New("systemctl is not installed (no systemd here)")
	}
	ctx, cancel := context.WithTimeout(ctx, systemctlTimeout)
	defer cancel()
	var out bytes.Buffer
	cmd := exec.CommandContext(ctx, path, append([]string{"--user"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	text := strings.TrimSpace(out.String())
	if err != nil {
		if text == "" {
			text = err.Error()
		}
		return text, fmt.Errorf("systemctl --user %s: %s", strings.Join(args, " "), text)
	}
	return text, nil
}

func newServiceCmd(g *globalFlags, env []string) *cobra.Command {
	return newServiceCmdWith(g, env, realSystemctl)
}

func newServiceCmdWith(g *globalFlags, env []string, ctl systemctl) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "service",
		Short: "Run Reverie as a systemd user service: install, uninstall, status",
		Long: "Writes, removes or checks the systemd user unit " + serviceName + " that runs `reverie run` " +
			"(the supervisor) on this data dir at login, restarted on failure except on the exit codes the " +
			"supervisor never retries. To keep it running without a login session: loginctl enable-linger $USER.",
	}
	unit := func() (serviceUnit, string, error) {
		dir, err := g.dataDir(env)
		if err != nil {
			return serviceUnit{}, "", err
		}
		if dir, err = filepath.Abs(dir); err != nil {
			return serviceUnit{}, "", fmt.Errorf("data dir: %w", err)
		}
		bin, err := os.Executable()
		if err != nil {
			return serviceUnit{}, "", fmt.Errorf("find this program's path for the unit: %w", err)
		}
		if resolved, err := filepath.EvalSymlinks(bin); err == nil {
			bin = resolved
		}
		u := serviceUnit{Binary: bin, DataDir: dir}
		if g.config != "" {
			if u.Config, err = filepath.Abs(g.config); err != nil {
				return serviceUnit{}, "", fmt.Errorf("config: %w", err)
			}
		}
		udir, err := unitDir(env)
		if err != nil {
			return serviceUnit{}, "", err
		}
		return u, filepath.Join(udir, serviceName), nil
	}

	var printOnly, noStart bool
	install := &cobra.Command{
		Use:   "install",
		Short: "Write the systemd user unit and start it (--print: only print it)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, path, err := unit()
			if err != nil {
				return err
			}
			text := u.render()
			out := cmd.OutOrStdout()
			if printOnly {
				_, err := io.WriteString(out, text)
				return err
			}
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
			}
			if err := atomicfile.Write(path, []byte(text), 0o644); err != nil {
				return fmt.Errorf("write the unit: %w", err)
			}
			fmt.Fprintf(out, "Wrote %s (runs %s on %s).\n", path, u.Binary, u.DataDir)
			if noStart {
				fmt.Fprintln(out, "Start it with: systemctl --user daemon-reload && systemctl --user enable --now "+serviceName)
				return nil
			}
			ctx := cmd.Context()
			if _, err := ctl(ctx, "daemon-reload"); err != nil {
				return fmt.Errorf("%w\nThe unit is written; start it with: systemctl --user enable --now %s", err, serviceName)
			}
			if _, err := ctl(ctx, "enable", "--now", serviceName); err != nil {
				return fmt.Errorf("%w\nThe unit is written; see: journalctl --user -u %s", err, serviceName)
			}
			fmt.Fprintf(out, "Enabled and started %s. Logs: journalctl --user -u %s. To keep it running after you log out: loginctl enable-linger $USER\n", serviceName, serviceName)
			return nil
		},
	}
	install.Flags().BoolVar(&printOnly, "print", false, "print the unit instead of writing it")
	install.Flags().BoolVar(&noStart, "no-start", false, "write the unit without enabling or starting it")

	uninstall := &cobra.Command{
		Use:   "uninstall",
		Short: "Stop and disable the service and remove its unit (the data dir stays)",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, path, err := unit()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
				fmt.Fprintf(out, "No unit at %s: nothing to remove.\n", path)
				return nil
			}
			ctx := cmd.Context()
			if _, err := ctl(ctx, "disable", "--now", serviceName); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v (removing the unit anyway)\n", err)
			}
			if err := os.Remove(path); err != nil {
				return fmt.Errorf("remove the unit: %w", err)
			}
			if _, err := ctl(ctx, "daemon-reload"); err != nil {
				fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v\n", err)
			}
			fmt.Fprintf(out, "Removed %s. The data dir is untouched.\n", path)
			return nil
		},
	}

	status := &cobra.Command{
		Use:   "status",
		Short: "Say whether the unit is installed, up to date, enabled and running",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			u, path, err := unit()
			if err != nil {
				return err
			}
			out := cmd.OutOrStdout()
			have, err := os.ReadFile(path)
			switch {
			case errors.Is(err, os.ErrNotExist):
				fmt.Fprintf(out, "unit:    not installed (%s); reverie service install writes it\n", path)
				return nil
			case err != nil:
				return fmt.Errorf("read the unit: %w", err)
			case string(have) != u.render():
				fmt.Fprintf(out, "unit:    %s (differs from what install writes now for this binary and data dir: run reverie service install again)\n", path)
			default:
				fmt.Fprintf(out, "unit:    %s (up to date)\n", path)
			}
			ctx := cmd.Context()
			enabled, _ := ctl(ctx, "is-enabled", serviceName)
			active, _ := ctl(ctx, "is-active", serviceName)
			fmt.Fprintf(out, "enabled: %s\nactive:  %s\n", orUnknown(enabled), orUnknown(active))
			return nil
		},
	}
	cmd.AddCommand(install, uninstall, status)
	return cmd
}

// orUnknown is systemctl's one-word answer, or "unknown" when it gave none
// (no systemd, no user session).
func orUnknown(s string) string {
	if s = strings.TrimSpace(s); s == "" || strings.ContainsAny(s, "\n") || len(s) > 40 {
		return "unknown (systemctl --user did not say)"
	}
	return s
}
