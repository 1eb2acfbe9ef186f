package app

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/skills"
	"github.com/reverie-ai/reverie/internal/tools"
	"github.com/reverie-ai/reverie/internal/tools/channels"
	"github.com/reverie-ai/reverie/internal/tools/shell"
	"github.com/reverie-ai/reverie/internal/world"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// Retention of housekeeping (archived messages: the seeds' 30 days).
const (
	archivedMessageRetention = conversation.DefaultPurgeAge
	interactionRetention     = 90 * 24 * time.Hour
	housekeepingInterval     = 6 * time.Hour
	// housekeepingDelay is the wait before the first pass: its purges are
	// write transactions that nobody waits for, so they stay out of the
	// start (where they held the write lock while the event bus, the
	// scheduler and the first requests opened further connections).
	housekeepingDelay = time.Minute
)

// buildRuntime creates the agent runtime: model router, conversation store,
// interaction log, core tools, the agent and the router. The kernel must
// exist (the router looks channels up through it); extensions are
// initialised afterwards.
func (a *App) buildRuntime(ctx context.Context) error {
	cfg := a.Config
	models, desc, err := modelrouter.FromConfig(ctx, modelrouter.Setup{
		Migrations: a.migrations,
		Models:     cfg.Models, Env: a.opts.Env, DB: a.DB, Commits: a.commits, Logger: a.Logger.With("component", "models"), Now: a.opts.Now,
		Probe: a.opts.ProbeClient, Secrets: a.Secrets, Clock: a.opts.ModelClock,
	})
	if err != nil {
		return fmt.Errorf("set up models: %w", err)
	}
	a.Models = models
	if models.Configured() {
		a.Logger.Info(desc)
	} else {
		a.Logger.Warn("no language model is configured: replies will explain how to configure one")
	}

	counter := prompt.NewCounter(models.ModelName(modelrouter.RoleMain))
	conv, err := conversation.Open(ctx, a.DB, conversation.Options{Migrations: a.migrations, Now: a.opts.Now, Counter: counter, Secrets: a.Secrets, Commits: a.commits})
	if err != nil {
		return fmt.Errorf("open conversations: %w", err)
	}
	a.Conversations = conv
	ilog, err := interactions.Open(ctx, a.DB, interactions.Options{Migrations: a.migrations, Now: a.opts.Now, Secrets: a.Secrets, Commits: a.commits})
	if err != nil {
		return fmt.Errorf("open interaction log: %w", err)
	}
	a.Interactions = ilog
	if err := a.buildMemory(ctx, counter.Count); err != nil {
		return err
	}

	workspace := cfg.Tools.Workspace
	if !filepath.IsAbs(workspace) {
		workspace = filepath.Join(a.opts.DataDir, workspace)
	}
	// Skill folders' scripts run from where they are: the sandbox may
	// read (not write) the skills directory.
	skillsDir, err := filepath.Abs(filepath.Join(a.opts.DataDir, skills.DirName))
	if err != nil {
		return fmt.Errorf("set up core tools: %w", err)
	}
	core, err := tools.New(tools.Config{
		Workspace: workspace,
		Files:     tools.FilesConfig{MaxFileBytes: cfg.Tools.MaxFileBytes},
		Shell: tools.ShellConfig{Sandbox: cfg.Tools.Shell.Sandbox, Network: cfg.Tools.Shell.Network,
			DefaultTimeout: cfg.Tools.Shell.Timeout, MaxTimeout: cfg.Tools.Shell.MaxTimeout,
			MaxOutput: cfg.Tools.Shell.MaxOutputBytes,
			Limits: shell.Limits{Processes: cfg.Tools.Shell.Limits.Processes, Memory: int64(cfg.Tools.Shell.Limits.Memory),
				FileSize: int64(cfg.Tools.Shell.Limits.FileSize), CPUSeconds: cfg.Tools.Shell.Limits.CPUSeconds},
			ReadOnly: []string{skillsDir}},
		Fetch: tools.FetchConfig{AllowPrivate: cfg.Tools.Fetch.AllowPrivate, AllowHosts: cfg.Tools.Fetch.AllowHosts,
			Timeout: cfg.Tools.Fetch.Timeout, MaxBytes: cfg.Tools.Fetch.MaxBytes},
		Search: tools.SearchConfig{SearXNGURL: cfg.Tools.Search.SearXNGURL, Timeout: cfg.Tools.Search.Timeout},
		Browser: tools.BrowserConfig{Disabled: !cfg.Tools.Browser.Enabled, Path: cfg.Tools.Browser.Path,
			Timeout: cfg.Tools.Browser.Timeout, IdleTimeout: cfg.Tools.Browser.IdleTimeout,
			MaxBrowsers: cfg.Tools.Browser.MaxBrowsers, MaxMemory: int64(cfg.Tools.Browser.MaxMemory),
			MaxDownload: int64(cfg.Tools.Browser.MaxDownload)},
	}, a.Logger.With("component", "tools"))
	if err != nil {
		return fmt.Errorf("set up core tools: %w", err)
	}
	a.core = core
	a.onClose("browsers", core.Close)
	a.coreTools = append(core.All(), memory.Tools(a.Memory)...)
	// Channels save recordings in the data dir's workspace (whatever
	// tools.workspace says), and the web page plays speech from there.
	if err := a.buildVoice(ctx, filepath.Join(a.opts.DataDir, "workspace")); err != nil {
		return err
	}
	if err := a.buildPulseAndSkills(ctx); err != nil {
		return err
	}

	if err := a.buildApprovals(ctx); err != nil {
		return err
	}
	if err := a.buildAgents(); err != nil {
		return err
	}
	loc := cfg.Location()
	// One writer stores answered turns (the agent) and overheard group-room
	// messages (the router), through memory.Ingest.
	var episodes agent.Episodes
	var listener router.Listener
	if ew, ok := a.episodes(loc); ok {
		episodes, listener = ew, ew
	}
	ag, err := agent.New(agent.Options{
		Secrets:       a.Secrets,
		Conversations: conv,
		Models:        agent.RouterModels(models),
		Tools:         a.threadTools,
		DataDir:       a.opts.DataDir,
		Location:      loc,
		Language:      cfg.Language,
		Counter:       counter,
		Sources:       a.Sources,
		Sizes:         a.Sources,
		HistoryTokens: historyTokens(cfg.Conversations.HistoryTokens),
		Limits: prompt.Limits{MemoriesChars: cfg.Limits.MemoriesChars, PulseChars: cfg.Limits.PulseChars,
			SkillsChars: cfg.Limits.SkillsChars},
		Interactions:     ilog,
		ContextProviders: a.contextProviders(),
		MoreContext:      a.Kernel.ContextProviders,
		Events:           a.Bus,
		Episodes:         episodes,
		Loop:             a.loopOptions(),
		Now:              a.opts.Now,
		Logger:           a.Logger.With("component", "agent"),
	})
	if err != nil {
		return fmt.Errorf("set up agent: %w", err)
	}
	a.Agent = ag

	a.prompts = newPromptRecorder(&sharedQueryVector{ag}, a.opts.Now)
	rt, err := router.New(ctx, router.Options{
		Grace:      turnGrace(a.Config.Supervisor.ShutdownGrace),
		Migrations: a.migrations,
		DB:         a.DB,
		Commits:    a.commits,
		Agent:      a.prompts,
		PanelURL:   a.panelURL,
		Threads:    conv,
		Channels:   a.Kernel,
		Roles:      modelrouter.BuiltinRoles,
		Describe:   models.Describe,
		UsageToday: func(ctx context.Context) (llm.Usage, error) {
			day := a.opts.Now().UTC().Format(time.DateOnly)
			rows, err := models.Usage(ctx, day, day)
			var u llm.Usage
			for _, r := range rows {
				u = u.Add(llm.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens})
			}
			return u, err
		},
		Extensions: a.extensionHealth,
		Memory:     a.memoryStatus,
		UsageByRole: func(ctx context.Context) ([]router.RoleUsage, error) {
			day := a.opts.Now().UTC().Format(time.DateOnly)
			rows, err := models.Usage(ctx, day, day)
			if err != nil {
				return nil, err
			}
			var out []router.RoleUsage
			idx := map[string]int{}
			for _, r := range rows {
				i, ok := idx[r.Role]
				if !ok {
					i = len(out)
					idx[r.Role] = i
					out = append(out, router.RoleUsage{Role: r.Role})
				}
				out[i].Calls += r.Calls
				out[i].Usage = out[i].Usage.Add(llm.Usage{InputTokens: r.InputTokens, OutputTokens: r.OutputTokens})
			}
			return out, nil
		},
		Events:   a.Bus,
		Answers:  a.Approvals,
		Titles:   a.titler(cfg.Conversations, conv, models),
		Listener: listener,
		Voice:    a.Voice,
		Now:      a.opts.Now,
		Logger:   a.Logger.With("component", "router"),
	})
	if err != nil {
		return fmt.Errorf("set up router: %w", err)
	}
	a.Router = rt
	if err := a.registerPulseCommand(rt); err != nil {
		return fmt.Errorf("set up router: %w", err)
	}
	if err := a.registerVoiceCommand(rt); err != nil {
		return fmt.Errorf("set up router: %w", err)
	}
	a.runtimeTools = []tool.Tool{
		channels.ListChannels(a.Kernel, conv),
		channels.SendToChannel(rt, a.Kernel, conv),
		channels.RequestRestart(a.opts.DataDir, a.opts.Now),
		world.ApplyOpsTool(a.World),
	}
	return nil
}

// collectTools fixes the tool set once every extension has started: core
// tools, the runtime's channel and restart tools, then extension tools.
// Names already taken are dropped with a warning.
func (a *App) collectTools() {
	seen := map[string]bool{}
	var all []tool.Tool
	add := func(owner string, ts []tool.Tool) {
		for _, t := range ts {
			if seen[t.Name()] {
				a.Logger.Warn("duplicate tool name dropped", "tool", t.Name(), "from", owner)
				continue
			}
			seen[t.Name()] = true
			all = append(all, t)
		}
	}
	add("core", a.coreTools)
	add("runtime", a.runtimeTools)
	add("extensions", a.Kernel.Tools())
	add("agents", a.agentTools())
	a.toolsMu.Lock()
	a.tools = all
	a.toolsMu.Unlock()
}

// turnTools are the tools of a turn: the fixed set, the tools the dynamic
// providers (MCP servers that are up) offer now, then the agents of
// <data>/agents/ and the built-in ones (agent_NAME), each name once.
func (a *App) turnTools() []tool.Tool {
	ts := a.fixedAndDynamicTools()
	if a.agentOffer == nil {
		return ts
	}
	return appendUntaken(ts, a.agentOffer.Tools())
}

// appendUntaken appends the tools of more whose names ts does not have.
func appendUntaken(ts, more []tool.Tool) []tool.Tool {
	if len(more) == 0 {
		return ts
	}
	taken := make(map[string]bool, len(ts))
	for _, t := range ts {
		taken[t.Name()] = true
	}
	for _, t := range more {
		if !taken[t.Name()] {
			taken[t.Name()] = true
			ts = append(ts, t)
		}
	}
	return ts
}

// fixedAndDynamicTools are the fixed set, then the tools the dynamic
// providers offer now, each name once: what agents choose their tools
// from.
func (a *App) fixedAndDynamicTools() []tool.Tool {
	a.toolsMu.RLock()
	ts := slices.Clone(a.tools)
	a.toolsMu.RUnlock()
	return appendUntaken(ts, a.Kernel.DynamicTools())
}

// housekeeping prunes delivered events, archived messages past their
// retention and old interaction log entries: housekeepingDelay after
// start, then every housekeepingInterval. It returns when ctx ends.
func (a *App) housekeeping(ctx context.Context) error {
	if extension.Sleep(ctx, housekeepingDelay) != nil {
		return nil
	}
	t := time.NewTicker(housekeepingInterval)
	defer t.Stop()
	for {
		if n, err := a.Bus.Prune(ctx); err != nil {
			a.Logger.Warn("prune events", "err", err)
		} else if n > 0 {
			a.Logger.Info("pruned delivered events", "count", n)
		}
		if n, err := a.Conversations.Purge(ctx, archivedMessageRetention); err != nil {
			a.Logger.Warn("purge archived messages", "err", err)
		} else if n > 0 {
			a.Logger.Info("purged archived messages", "count", n)
		}
		if n, err := a.Interactions.Purge(ctx, interactionRetention); err != nil {
			a.Logger.Warn("purge interaction log", "err", err)
		} else if n > 0 {
			a.Logger.Info("purged interaction log entries", "count", n)
		}
		a.purgePulseAndSkillLoads(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// extensionHealth runs the extensions' health checks (each bounded by the
// kernel's health timeout) for /status.
func (a *App) extensionHealth(ctx context.Context) []router.ExtensionHealth {
	sts := a.Kernel.Health(ctx)
	out := make([]router.ExtensionHealth, 0, len(sts))
	for _, st := range sts {
		detail := st.Error
		if st.HealthError != "" {
			detail = st.HealthError
		}
		out = append(out, router.ExtensionHealth{ID: st.ID, State: string(st.State), Health: string(st.Health), Detail: detail})
	}
	return out
}

// historyTokens is agent.Options.HistoryTokens for conversations.history_tokens
// (where 0 means no budget).
func historyTokens(n int) int {
	if n == 0 {
		return -1
	}
	return n
}

// turnGrace is how long turns in progress may finish when the agent stops:
// half of supervisor.shutdown_grace, the time the agent has after SIGTERM
// (the supervisor SIGKILLs it then), so that a turn still running is
// cancelled by the router and stored as interrupted, with the other half
// left for the extensions and the database to close. 0 (unset) is the
// configuration's default of 10 s.
func turnGrace(shutdown time.Duration) time.Duration {
	if shutdown <= 0 {
		shutdown = config.Default().Supervisor.ShutdownGrace
	}
	return shutdown / 2
}
