package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/kernel"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/tools"
	"github.com/reverie-ai/reverie/internal/tools/shell"
	"github.com/reverie-ai/reverie/internal/voice"
	"github.com/reverie-ai/reverie/internal/world"
	"github.com/reverie-ai/reverie/termtext"
)

// checkStatus is the outcome of one doctor check.
type checkStatus int

const (
	checkOK checkStatus = iota
	checkWarn
	checkFail
	checkSkip
)

func (s checkStatus) mark() string {
	return [...]string{"ok  ", "warn", "FAIL", "skip"}[s]
}

type checkResult struct {
	name   string
	status checkStatus
	detail string
}

// doctor runs the installation checks in order; later checks that need an
// earlier one's result are skipped when it failed.
type doctor struct {
	dir     string
	cfgPath string
	env     []string
	cfg     *config.Config
	results []checkResult
}

func (d *doctor) add(name string, st checkStatus, format string, args ...any) {
	d.results = append(d.results, checkResult{name, st, fmt.Sprintf(format, args...)})
}

func (d *doctor) run(ctx context.Context) {
	// Data dir.
	// The other commands' refusal, in the same words.
	if err := checkDataDir(d.dir); err != nil {
		d.add("data dir", checkFail, "%v", err)
		return
	}
	if err := datadir.CheckWritable(d.dir); err != nil {
		d.add("data dir", checkFail, "%v", err)
	} else {
		d.add("data dir", checkOK, "%s is writable", d.dir)
	}

	// The agent running on the data dir, if any.
	d.checkRunningAgent(ctx)

	// Configuration.
	cfg, err := loadConfig(d.cfgPath, d.env)
	switch {
	case err != nil:
		d.add("config", checkFail, "%v", err)
	default:
		d.cfg = cfg
		cfg.SetDataDir(d.dir)
		// Before the warnings: decoding the extensions' sections adds theirs.
		d.checkExtensions(ctx)
		if ws := cfg.Warnings(); len(ws) > 0 {
			for _, w := range ws {
				d.add("config", checkWarn, "%s", w)
			}
		} else if _, err := os.Stat(d.cfgPath); err != nil {
			d.add("config", checkOK, "no %s; using built-in defaults", d.cfgPath)
		} else {
			d.add("config", checkOK, "%s is valid", d.cfgPath)
		}
	}

	// Prompt files.
	if err := prompt.ValidateDir(d.dir, datadir.Placeholders()); err != nil {
		d.add("prompts", checkFail, "%v", err)
	} else {
		d.add("prompts", checkOK, "templates and BASE_PROMPT.txt markers are valid")
	}

	// World state (read only: doctor never moves files).
	if err := world.Check(d.dir); err != nil {
		d.add("world state", checkWarn, "%v (it will be moved aside and recreated at start)", err)
	} else {
		d.add("world state", checkOK, "world_state.json is valid")
	}

	// Models: every configured backend answers.
	if d.cfg != nil {
		d.checkModels(ctx)
		d.checkVoice(ctx)
	}

	// Channels left off for want of credentials.
	if d.cfg != nil {
		d.warnUnconfigured()
	}

	// Shell sandbox.
	// SandboxStatus: "bubblewrap available at PATH; landlock ABI N" or
	// "…; landlock unavailable (…)", or "unavailable: …" without bubblewrap.
	st := tools.SandboxStatus()
	bwrap, landlock := strings.HasPrefix(st, "bubblewrap available"), strings.Contains(st, "landlock ABI")
	switch {
	case bwrap && landlock:
		d.add("sandbox", checkOK, "execute_shell: two layers, %s", st)
	case bwrap || landlock:
		d.add("sandbox", checkWarn, "execute_shell: one sandbox layer: %s", st)
	default:
		d.add("sandbox", checkWarn, "execute_shell has no sandbox (%s)", st)
	}
	if d.cfg != nil && d.cfg.Tools.Shell.Sandbox != "off" {
		l := d.cfg.Tools.Shell.Limits
		desc, missing := tools.LimitsStatus(shell.Limits{Processes: l.Processes, Memory: int64(l.Memory),
			FileSize: int64(l.FileSize), CPUSeconds: l.CPUSeconds}, bwrap)
		if missing != "" {
			d.add("shell limits", checkWarn, "execute_shell limits: %s; %s", desc, missing)
		} else {
			d.add("shell limits", checkOK, "execute_shell limits: %s", desc)
		}
	}

	// Browser tools: the Chromium they would run.
	if d.cfg != nil {
		switch b := d.cfg.Tools.Browser; {
		case !b.Enabled:
			d.add("browser", checkOK, "browser tools off (tools.browser.enabled: false)")
		default:
			if exe, err := tools.BrowserStatus(b.Path); err != nil && b.Path != "" {
				d.add("browser", checkFail, "tools.browser.path: %v", err)
			} else if err != nil {
				d.add("browser", checkWarn, "browser tools absent: %v (install chromium, or set tools.browser.path)", err)
			} else {
				d.add("browser", checkOK, "browser tools use %s", exe)
			}
		}
	}

	// Database.
	dbPath := filepath.Join(d.dir, app.DatabaseFile)
	if _, err := os.Stat(dbPath); errors.Is(err, os.ErrNotExist) {
		d.add("database", checkOK, "%s does not exist yet; it is created at first start", app.DatabaseFile)
	} else {
		db, err := sqlite.Open(ctx, dbPath)
		if err != nil {
			d.add("database", checkFail, "%v", err)
		} else {
			if err := sqlite.IntegrityCheck(ctx, db); err != nil {
				d.add("database", checkFail, "%v", err)
			} else {
				d.add("database", checkOK, "%s passes PRAGMA integrity_check", app.DatabaseFile)
			}
			db.Close()
		}
	}
}

// checkExtensions gives one verdict per enabled extension, as the
// extensions judge themselves through the kernel: their settings decoded
// and validated the way the agent's start does, then, for an
// extension.Diagnoser, what those settings name checked live (a bot token
// with its service, MCP servers started once), without starting anything.
func (d *doctor) checkExtensions(ctx context.Context) {
	k, err := kernel.New(kernel.Options{Config: d.cfg, DataDir: d.dir})
	if err != nil {
		d.add("extensions", checkFail, "%v", err)
		return
	}
	for _, c := range k.Diagnose(ctx) {
		switch {
		case c.Err != nil:
			d.add(c.ID, checkFail, "%v", c.Err)
		case c.Diagnosis != "":
			d.add(c.ID, checkOK, "settings valid; %s", c.Diagnosis)
		case c.Checked:
			d.add(c.ID, checkOK, "settings valid")
		default:
			d.add(c.ID, checkSkip, "its settings cannot be checked without starting it")
		}
	}
}

// checkRunningAgent asks the agent running on the data dir, through its
// control socket, how its extensions fare (the checks below look at the
// configuration and the services it names, not at that agent).
func (d *doctor) checkRunningAgent(ctx context.Context) {
	c, err := runningAgent(ctx, d.dir)
	switch {
	case err != nil:
		d.add("agent", checkFail, "an agent seems to run on this data dir, but its control socket does not answer: %v", err)
		return
	case c == nil:
		d.add("agent", checkSkip, "no agent runs on this data dir")
		return
	}
	info, err := c.Info(ctx)
	if err != nil {
		d.add("agent", checkFail, "the running agent does not answer on its control socket: %v", err)
		return
	}
	d.add("agent", checkOK, "an agent (version %s) runs on this data dir and answers on its control socket", info.Version)
	for _, e := range info.Extensions {
		switch {
		case e.State == "failed" || e.State == "skipped":
			d.add("agent", checkFail, "in the running agent, extension %s %s: %s", e.ID, e.State, e.Error)
		case e.Health == "failing":
			d.add("agent", checkWarn, "in the running agent, extension %s is unhealthy: %s", e.ID, e.Error)
		}
	}
}

// warnUnconfigured points out an extension section that lacks what turns
// the extension on (a channel's credentials), which leaves it off: the
// extension says what is missing (extension.Info.NotConfigured).
func (d *doctor) warnUnconfigured() {
	for _, info := range extension.Registered() {
		if info.AutoEnable == nil || info.NotConfigured == "" ||
			!d.cfg.HasExtensionSection(info.ID) || !d.cfg.ExtensionEnabled(info.ID, true) {
			continue
		}
		if !info.AutoEnable(func(v any) error { return d.cfg.DecodeExtension(info.ID, v) }) {
			d.add(info.ID, checkWarn, "%s", info.NotConfigured)
		}
	}
}

func (d *doctor) checkModels(ctx context.Context) {
	// The router registers the keys it resolves and redacts them from the
	// errors printed below (a server may echo the key it refused).
	r, desc, err := modelrouter.FromConfig(ctx, modelrouter.Setup{Models: d.cfg.Models, Env: d.env, Secrets: &redact.Secrets{}})
	if err != nil {
		d.add("models", checkFail, "%v", err)
		return
	}
	if !r.Configured() {
		d.add("models", checkWarn, "%s: the assistant will answer that no model is configured", desc)
		return
	}
	d.add("models", checkOK, "%s", desc)
	for _, h := range r.Health(ctx, 15*time.Second) {
		name := "model"
		if h.Err != nil {
			d.add(name, checkFail, "%s (roles %s): %s failed: %v", h.Backend, strings.Join(h.Roles, ", "), h.Checked, h.Err)
		} else {
			d.add(name, checkOK, "%s answers %s (%s; roles %s)", h.Backend, h.Checked, h.Elapsed.Round(time.Millisecond), strings.Join(h.Roles, ", "))
		}
	}
}

// checkVoice calls the stt and tts models once each (a half-second of
// silence transcribed, "OK." spoken), or says that voice is off.
func (d *doctor) checkVoice(ctx context.Context) {
	probes, err := voice.Check(ctx, voice.Options{Config: d.cfg.Voice, Models: d.cfg.Models, Env: d.env})
	if err != nil {
		d.add("voice", checkFail, "%v", err)
		return
	}
	roles := map[string]bool{}
	for _, p := range probes {
		roles[p.Role] = true
		if p.Err != nil {
			d.add("voice", checkFail, "%s model %s: %v", p.Role, p.Backend, p.Err)
		} else {
			d.add("voice", checkOK, "%s model %s answers (%s)", p.Role, p.Backend, p.Elapsed.Round(time.Millisecond))
		}
	}
	if !roles[config.RoleSTT] {
		d.add("voice", checkSkip, "no stt model: voice messages get a line saying how to enable them (REVERIE_STT_MODEL or models.roles.stt)")
	}
	if !roles[config.RoleTTS] {
		d.add("voice", checkSkip, "no tts model: replies are written only (REVERIE_TTS_MODEL or models.roles.tts)")
	}
}

func (d *doctor) report(w io.Writer) (failures int) {
	fmt.Fprintf(w, "Reverie doctor: %s\n\n", d.dir)
	for _, r := range d.results {
		fmt.Fprintf(w, "  [%s] %-12s %s\n", r.status.mark(), r.name, termtext.Text(r.detail))
		if r.status == checkFail {
			failures++
		}
	}
	fmt.Fprintln(w)
	if failures == 0 {
		fmt.Fprintln(w, "No problems found.")
	} else {
		fmt.Fprintf(w, "%d problem(s) found.\n", failures)
	}
	return failures
}

func newDoctorCmd(g *globalFlags, env []string) *cobra.Command {
	return &cobra.Command{
		Use:   "doctor",
		Short: "Check the configuration, data dir, prompts, database and model reachability",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			dir, err := g.dataDir(env)
			if err != nil {
				return err
			}
			cfgPath, err := g.configPath(env)
			if err != nil {
				return err
			}
			d := &doctor{dir: dir, cfgPath: cfgPath, env: env}
			ctx, cancel := context.WithTimeout(cmd.Context(), 2*time.Minute)
			defer cancel()
			d.run(ctx)
			if n := d.report(cmd.OutOrStdout()); n > 0 {
				return exitError{code: ExitFailure}
			}
			return nil
		},
	}
}
