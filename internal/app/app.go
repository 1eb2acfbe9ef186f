// Package app is Reverie's composition root: it builds every component of
// the agent process from the configuration, in the start-up order of the
// specification (data dir → config → logging → lock → data dir history →
// database → world state → event bus → extensions → ready), runs them under
// one owner, and closes them in reverse order. Only this package (and the
// whole-app tests) sees the whole dependency graph.
package app

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/approval"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/dreaming"
	"github.com/reverie-ai/reverie/internal/eventbus"
	"github.com/reverie-ai/reverie/internal/harvest"
	"github.com/reverie-ai/reverie/internal/heartbeat"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/kernel"
	"github.com/reverie-ai/reverie/internal/logging"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/reflection"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/skills"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/supervisor"
	"github.com/reverie-ai/reverie/internal/versioning"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/internal/world"
	"github.com/reverie-ai/reverie/tool"
)

// DatabaseFile is the name of the SQLite database inside the data dir.
const DatabaseFile = "reverie.db"

// Options configure an App.
type Options struct {
	// DataDir is the resolved data directory (see datadir.Resolve).
	DataDir string
	// ConfigPath overrides <DataDir>/config.yaml.
	ConfigPath string
	// Env is the environment (os.Environ() format) for overrides and
	// secrets; supervisor.InstanceEnv in it becomes api.Services.Instance
	// (echoed by /healthz).
	Env []string
	// Console receives console logs; nil means os.Stderr.
	Console io.Writer
	// Registry overrides the registered extensions (tests).
	Registry []extension.Info
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ProbeClient is used to probe for a local Ollama (nil: a default with
	// short timeouts).
	ProbeClient *http.Client
}

// App is a running agent process.
type App struct {
	opts   Options
	Config *config.Config
	Logger *slog.Logger
	DB     *sql.DB
	Bus    *eventbus.Bus
	Kernel *kernel.Kernel
	World  *world.Store
	// The agent runtime.
	Models        *modelrouter.Router
	Conversations *conversation.Store
	Interactions  *interactions.Store
	Agent         *agent.Agent
	Router        *router.Router
	// Memory is the long-term memory with MEMORIES.txt.
	Memory *memory.Service
	// Versions is the history of the data dir's editable files (nil when
	// it could not be opened: changes are then not versioned).
	Versions *versioning.Repo
	// Pulse is the working memory (pulse items).
	Pulse *pulse.Store
	// Skills are the learned procedures (skills/*.md).
	Skills *skills.Store
	// Sources supply the agent's memories, pulse and skills sections.
	Sources *Sources

	// Dreamer is the nightly consolidation.
	Dreamer *dreaming.Dreamer
	// Scheduler runs reminders, AI tasks and the extensions' jobs.
	Scheduler *scheduler.Scheduler
	// Workflows runs sub-sessions and their workflows.
	Workflows *workflow.Manager
	// Harvester mines conversations for memories; Reflector watches
	// background work (nil when disabled).
	Harvester *harvest.Harvester
	Reflector *reflection.Reflector
	// Heartbeat is the periodic review (nil when off or without a model).
	Heartbeat *heartbeat.Heartbeat
	// Approvals holds back tool calls until the user approves them.
	Approvals *approval.Service

	memoryContext *memory.RecallContext
	// commitFiles records changed data-dir files in its history and returns
	// the short revision (nil while versioning is off).
	commitFiles func(ctx context.Context, message string, paths ...string) (string, error)
	// onDataChange is told about changes to the data dir's versioned files.
	onDataChange func(ctx context.Context, message string, paths ...string)

	coreTools    []tool.Tool
	runtimeTools []tool.Tool
	toolsMu      sync.RWMutex
	tools        []tool.Tool
	started      time.Time
	ready        chan struct{}

	// Secrets are every secret value of the configuration, the
	// environment's model keys and the extensions' credentials
	// (Host.RegisterSecret): redacted from every log line, stored record
	// and error reply.
	Secrets *redact.Secrets

	// API are the services the HTTP API serves (extensions reach them
	// through api.ServicesFrom); filled before the extensions start.
	API     *api.Services
	prompts *promptRecorder // the last system prompts, for the debug panel

	closers []namedCloser // closed in reverse order
}

type namedCloser struct {
	name  string
	close func() error
}

func (a *App) onClose(name string, f func() error) {
	a.closers = append(a.closers, namedCloser{name, f})
}

// New builds the agent: it bootstraps the data dir, loads and validates the
// configuration, sets up logging, takes the data dir lock, opens the database
// and the event bus, and initialises and starts every enabled extension. A
// *config.Error is returned unwrapped-compatible (errors.As) for bad
// configuration. On error everything opened so far is closed again.
//
// Start-up errors that restarting would not fix are recognisable with
// errors.Is and errors.As, so that the command line can exit with a code
// the supervisor does not retry: *config.Error and
// extension.ErrInvalidConfig (the configuration), ErrPromptFiles (a
// template), datadir.ErrLocked (another agent runs on the data dir),
// datadir.ErrUnusable (the data dir cannot be written or its files read)
// and a full disk (api.IsDiskFull; the message then says so).
func New(ctx context.Context, opts Options) (*App, error) {
	a := &App{}
	built, err := a.build(ctx, opts)
	if err != nil {
		_ = a.close()
		if api.IsDiskFull(err) {
			err = datadir.Unusable(fmt.Errorf("the disk holding the data dir %s is full: free some space and start again: %w", opts.DataDir, err))
		}
		return nil, err
	}
	return built, nil
}

// ErrPromptFiles is wrapped by New's error when a prompt template or
// BASE_PROMPT.txt has an unknown or missing placeholder or a bad
// conditional marker: a configuration error like a bad config.yaml.
var ErrPromptFiles = errors.New("invalid prompt files")

// isTemplateError reports whether a prompt.ValidateDir error is about the
// files' content (rather than reading them).
func isTemplateError(err error) bool {
	return errors.Is(err, prompt.ErrUnknownPlaceholder) || errors.Is(err, prompt.ErrMissingPlaceholder) ||
		errors.Is(err, prompt.ErrMarker)
}

// classified marks err as kind without changing its message.
type classified struct{ err, kind error }

func (c classified) Error() string   { return c.err.Error() }
func (c classified) Unwrap() []error { return []error{c.err, c.kind} }

func (a *App) build(ctx context.Context, opts Options) (*App, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Console == nil {
		opts.Console = os.Stderr
	}
	if opts.Registry == nil {
		opts.Registry = extension.Registered()
	}
	a.opts, a.started, a.ready = opts, opts.Now(), make(chan struct{})

	if err := datadir.CheckCreatable(opts.DataDir); err != nil {
		return nil, err
	}
	created, err := datadir.Bootstrap(opts.DataDir, slog.New(slog.DiscardHandler))
	if err != nil {
		return nil, fmt.Errorf("prepare data dir: %w", err)
	}
	if err := datadir.CheckWritable(opts.DataDir); err != nil {
		return nil, err
	}

	cfgPath := opts.ConfigPath
	if cfgPath == "" {
		cfgPath = filepath.Join(opts.DataDir, "config.yaml")
	}
	// Sections of every extension built in are known, also those this
	// process does not load (reverie memory, dream: no extensions), so a
	// config.yaml with a web: or mcp: section still loads.
	ids := make([]string, 0, len(opts.Registry))
	for _, infos := range [][]extension.Info{opts.Registry, extension.Registered()} {
		for _, info := range infos {
			if !slices.Contains(ids, info.ID) {
				ids = append(ids, info.ID)
			}
		}
	}
	cfg, err := config.Load(cfgPath, opts.Env, ids)
	if err != nil {
		return nil, err
	}
	cfg.SetDataDir(opts.DataDir)
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	a.Config = cfg
	// Every secret the configuration holds is known before the first log
	// line; the model keys of the environment and the extensions' own are
	// added as they are resolved (modelrouter.FromConfig, Host).
	a.Secrets = &redact.Secrets{}
	a.Secrets.Add(cfg.SecretValues()...)
	// Every template and BASE_PROMPT.txt's markers are checked now, so that
	// a typo fails the start naming the file and the token instead of a
	// dream or a compaction at night.
	if err := prompt.ValidateDir(opts.DataDir, datadir.Placeholders()); err != nil {
		err = fmt.Errorf("prompt files in %s: %w (fix the file, or delete it to get the shipped default back)", opts.DataDir, err)
		if isTemplateError(err) {
			return nil, classified{err, ErrPromptFiles}
		}
		return nil, datadir.Unusable(err)
	}

	logFile := ""
	if cfg.Log.File {
		logFile = filepath.Join(opts.DataDir, "logs", "reverie.log")
	}
	logger, logCloser, err := logging.New(logging.Options{
		Level: cfg.Log.Level, Format: cfg.Log.Format, File: logFile,
		MaxSizeMB: cfg.Log.MaxSizeMB, MaxBackups: cfg.Log.MaxBackups, Console: opts.Console,
		Secrets: a.Secrets,
	})
	if err != nil {
		return nil, fmt.Errorf("set up logging: %w", err)
	}
	a.onClose("logging", logCloser.Close)
	a.Logger = logger
	for _, f := range created {
		logger.Debug("created default file", "path", f)
	}
	if len(created) > 0 {
		logger.Info("data dir initialised", "dir", opts.DataDir, "files", len(created))
	}

	release, err := datadir.Lock(opts.DataDir)
	if err != nil {
		return nil, err
	}
	a.onClose("data dir lock", release)
	a.openVersions(ctx)

	db, err := sqlite.Open(ctx, filepath.Join(opts.DataDir, DatabaseFile))
	if err != nil {
		return nil, datadir.Unusable(err)
	}
	a.onClose("database", db.Close)
	a.DB = db

	ws, err := world.OpenStore(opts.DataDir, world.StoreOptions{
		Now: opts.Now, Logger: logger.With("component", "world"), Changed: a.dataChangeHook,
	})
	if err != nil {
		return nil, datadir.Unusable(fmt.Errorf("load world state: %w", err))
	}
	a.World = ws

	bus, err := eventbus.Open(ctx, db, eventbus.Options{
		Logger:      logger.With("component", "eventbus"),
		MaxAttempts: cfg.Bus.MaxAttempts,
		BaseBackoff: cfg.Bus.BaseBackoff,
		MaxBackoff:  cfg.Bus.MaxBackoff,
		Retention:   cfg.Bus.Retention,
		Now:         opts.Now,
		Secrets:     a.Secrets,
	})
	if err != nil {
		return nil, fmt.Errorf("open event bus: %w", err)
	}
	a.Bus = bus

	a.API = &api.Services{Instance: envValue(opts.Env, supervisor.InstanceEnv)}
	k, err := kernel.New(kernel.Options{
		Config:   cfg,
		DataDir:  opts.DataDir,
		DB:       db,
		Bus:      bus,
		Logger:   logger,
		Console:  opts.Console,
		Receive:  a.receive,
		Now:      opts.Now,
		Registry: opts.Registry,
		// A bad extension section stops start-up (exit code 2) instead of
		// leaving that feature silently off.
		Fatal: func(err error) bool {
			var cerr *config.Error
			return errors.As(err, &cerr) || errors.Is(err, extension.ErrInvalidConfig)
		},
		// An extension the user configured, and the only channel, must
		// work: a web channel that cannot bind its port stops start-up
		// instead of leaving an agent nobody can reach that says "ready".
		Essential:   cfg.ExtensionConfigured,
		APIServices: a.API,
		Secrets:     a.Secrets,
	})
	if err != nil {
		return nil, fmt.Errorf("load extensions: %w", err)
	}
	a.Kernel = k
	a.onClose("extensions", func() error {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.Supervisor.ShutdownGrace)
		defer cancel()
		return k.Shutdown(sctx)
	})
	if err := a.buildRuntime(ctx); err != nil {
		return nil, err
	}
	a.runtimeTools = append(a.runtimeTools, world.ApplyOpsTool(a.World))
	if err := a.buildDreaming(ctx); err != nil {
		return nil, err
	}
	if err := a.buildWorkflows(ctx); err != nil {
		return nil, err
	}
	if err := a.buildScheduler(ctx); err != nil {
		return nil, err
	}
	if err := a.buildBackground(ctx); err != nil {
		return nil, err
	}
	a.fillAPIServices(a.API)
	if err := k.Init(ctx); err != nil {
		return nil, fmt.Errorf("initialise extensions: %w", err)
	}
	// Extensions decode their own sections in Init, so warnings about them
	// (inline secrets) are known only now.
	for _, w := range cfg.Warnings() {
		logger.Warn(w)
	}
	if err := k.Start(ctx); err != nil {
		return nil, fmt.Errorf("start extensions: %w", err)
	}
	if err := a.registerApprove(); err != nil {
		return nil, err
	}
	a.collectTools()
	a.checkProfiles()
	a.registerJobs(ctx)
	return a, nil
}

// receive is where channels hand user messages: the router persists them
// in its inbox and runs the turn.
func (a *App) receive(ctx context.Context, msg chat.Inbound) error {
	return a.Router.Receive(ctx, msg)
}

// Run runs the event bus and every extension service until ctx is
// cancelled, then shuts everything down in reverse order. It tells
// ReadyListeners (the /healthz endpoint) once everything runs.
func (a *App) Run(ctx context.Context) error {
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return a.Bus.Run(gctx) })
	g.Go(func() error { return a.Router.Run(gctx) })
	g.Go(func() error { return a.Kernel.Run(gctx) })
	g.Go(func() error { return a.housekeeping(gctx) })
	g.Go(func() error { return a.reembed(gctx) })
	g.Go(func() error { return a.runDreaming(gctx) })
	g.Go(func() error { return a.Scheduler.Run(gctx) })
	g.Go(func() error { return a.Workflows.Run(gctx) })
	g.Go(func() error { return a.runBackground(gctx) })
	g.Go(func() error { return a.Approvals.Run(gctx) })
	a.Kernel.Ready(gctx)
	close(a.ready)
	g.Go(func() error { return a.keepFootprint(gctx) })
	a.Logger.Info("agent ready", "startup", time.Since(a.started).Round(time.Millisecond).String(),
		"data", a.opts.DataDir)
	<-gctx.Done()
	a.Logger.Info("shutting down")
	err := g.Wait()
	a.Logger.Info("services stopped; closing", "uptime", time.Since(a.started).Round(time.Second).String())
	cerr := a.close()
	if err != nil && !errors.Is(err, context.Canceled) {
		return errors.Join(err, cerr)
	}
	return cerr
}

// Ready is closed once Run has started everything and /healthz answers 200.
func (a *App) Ready() <-chan struct{} { return a.ready }

// Close releases everything New opened without running. It is only needed
// when Run is never called.
func (a *App) Close() error { return a.close() }

func (a *App) close() error {
	var errs []error
	for i := len(a.closers) - 1; i >= 0; i-- {
		c := a.closers[i]
		if err := c.close(); err != nil {
			errs = append(errs, fmt.Errorf("close %s: %w", c.name, err))
			if a.Logger != nil {
				a.Logger.Error("close failed", "component", c.name, "err", err)
			}
		}
	}
	a.closers = nil
	return errors.Join(errs...)
}

// envValue returns the last value of name in env (os.Environ() format).
func envValue(env []string, name string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if k, v, ok := strings.Cut(env[i], "="); ok && k == name {
			return v
		}
	}
	return ""
}
