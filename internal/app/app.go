// Package app is Reverie's composition root: it builds every component of
// the agent process from the configuration, in the start-up order of the
// specification (data dir → config → logging → lock → data dir history →
// database → world state → event bus → extensions → ready), runs them under
// one owner, and closes them in reverse order. Only this package (and the
// whole-app tests) sees the whole dependency graph.
package app

import (
	"github.com/reverie-ai/reverie/internal/providers"

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
	"github.com/reverie-ai/reverie/internal/subagent"
	"github.com/reverie-ai/reverie/internal/supervisor"
	"github.com/reverie-ai/reverie/internal/tools"
	"github.com/reverie-ai/reverie/internal/versioning"
	"github.com/reverie-ai/reverie/internal/voice"
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
	// ModelClock drives the model providers' retry waits and timeouts
	// (nil: the real clock); tests inject one so that a 429's wait takes
	// no time.
	ModelClock providers.Clock
	// ProbeClient is used to probe for a local Ollama (nil: a default with
	// short timeouts).
	ProbeClient *http.Client
	// OneShot is for a process that runs one exchange and exits (reverie
	// send). It starts only what the exchange may need: the router, the
	// extensions' services, approvals (for this exchange's requests: the
	// ones already overdue are left to the next agent) and workflows (a
	// turn may start a sub-session). The shell sandbox's self-test is
	// left to the first shell command (which waits for it; execute_shell's
	// description names the layers present meanwhile), so the process
	// neither waits for the test at exit nor pays for it when the turn runs
	// no command. Not started, because they are the agent's background work
	// and the next agent does it: event delivery to subscribers (events
	// stay stored and are delivered at least once later), housekeeping
	// (pruning and purges), re-embedding, dreaming, the scheduler (its
	// catch-up delivers through channels, which a one-shot process does
	// not load), the harvest and reflection,
	// and the footprint keeper.
	OneShot bool
	// Settled, when set, is called once the background work starts
	// (BackgroundDelay after ready; never for a one-shot process or when
	// the agent stops before). The agent command sets the collector back
	// to its usual pace there, so that the cycle this starts does not
	// compete with the first requests either.
	Settled func()
}

// BackgroundDelay is how long after ready an agent starts its background
// work: event delivery, the scheduler, housekeeping, re-embedding,
// dreaming, the harvest and reflection, the memory index load, the shell
// sandbox's self-test, the footprint keeper and the tools' warm-up. None
// of it is needed to answer a request, and on a small machine it would
// compete for the cores with the first ones (the supervisor's health
// probe, a browser reconnecting). A turn that comes sooner builds what it
// needs itself: its tools' schemas, the memory index (at first recall),
// the sandbox's test (at the first shell command).
const BackgroundDelay = 50 * time.Millisecond

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
	Models *modelrouter.Router
	// Voice hears voice messages and speaks replies (the stt and tts
	// roles).
	Voice         *voice.Service
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
	// Agents are the specialised agents offered as agent_NAME tools
	// (built-in and <data>/agents/NAME.md).
	Agents     *subagent.Library
	agentOffer *subagent.Offer

	memoryContext *memory.RecallContext
	// embedFallback is set when the configured embedding model could not
	// be used at start: nothing is re-embedded until a start where it can.
	embedFallback bool
	// loadMemoryIndex starts loading the memory store's in-memory index
	// (nil: the backend has none); see memory.VectorStore.LoadIndex.
	loadMemoryIndex func()
	// memoryIndexLoaded is closed when that load has finished (nil: no
	// index); the footprint keeper's first release waits for it.
	memoryIndexLoaded <-chan struct{}
	// trimMemoryIndex drops the index's vector pages from the resident
	// memory (nil: no index); the footprint keeper's releases call it.
	trimMemoryIndex func()
	// commitFiles records changed data-dir files in its history and returns
	// the short revision (nil while versioning is off).
	commitFiles func(ctx context.Context, message string, paths ...string) (string, error)
	// onDataChange is told about changes to the data dir's versioned files.
	onDataChange func(ctx context.Context, message string, paths ...string)

	core         *tools.Tools // the core tools; their sandbox is tested after ready
	coreTools    []tool.Tool
	runtimeTools []tool.Tool
	toolsMu      sync.RWMutex
	tools        []tool.Tool
	started      time.Time
	// migrations is the start's record of the components' applied
	// migrations, read once for all of them.
	migrations *sqlite.Migrations
	// commits is the database's shared group commit (sqlite.Committer):
	// the event bus, the interaction log, the models' accounting, the
	// router's inbox and the conversations' appends write through it.
	commits *sqlite.Committer
	// warming is the goroutine of warmTools; close waits for it.
	warming sync.WaitGroup
	ready   chan struct{}
	created []string    // default files the data dir got at this start
	trace   *startTrace // start-up phase durations (nil: not traced)

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

// startPhase is one step of New, in order.
type startPhase struct {
	name string
	run  func(ctx context.Context) error
}

// build runs the start-up phases in the specification's order. With
// REVERIE_DEBUG_START=1 in the environment, the time each phase took is
// logged once the agent is ready (see Run).
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
	a.trace = newStartTrace(opts.Env)
	phases := []startPhase{
		{"data dir", a.prepareDataDir},
		{"lock, config and history beside the database", a.configBesideDatabase},
		{"world state", a.openWorld},
		{"event bus", a.openBus},
		{"kernel", a.loadKernel},
		{"runtime", a.buildRuntime},
		{"dreaming", a.buildDreaming},
		{"workflows", a.buildWorkflows},
		{"scheduler", a.buildScheduler},
		{"background", a.buildBackground},
		{"extensions init", a.initExtensions},
		{"extensions start", a.startExtensions},
		{"tools and jobs", a.finishTools},
	}
	for _, p := range phases {
		if err := a.tracePhase(ctx, p.name, p.run); err != nil {
			return nil, err
		}
	}
	return a, nil
}

// tracePhase runs one start-up phase and records how long it took.
func (a *App) tracePhase(ctx context.Context, name string, run func(context.Context) error) error {
	t := time.Now()
	if err := run(ctx); err != nil {
		return err
	}
	a.trace.phase(name, time.Since(t))
	return nil
}

// prepareDataDir creates the data dir's missing default files and checks
// that it can be written.
func (a *App) prepareDataDir(context.Context) error {
	dir := a.opts.DataDir
	if err := datadir.CheckCreatable(dir); err != nil {
		return err
	}
	created, err := datadir.Bootstrap(dir, slog.New(slog.DiscardHandler))
	if err != nil {
		return fmt.Errorf("prepare data dir: %w", err)
	}
	a.created = created
	return datadir.CheckWritable(dir)
}

// extensionIDs are the ids of the extensions built in and registered.
func (a *App) extensionIDs() []string {
	ids := make([]string, 0, len(a.opts.Registry))
	for _, infos := range [][]extension.Info{a.opts.Registry, extension.Registered()} {
		for _, info := range infos {
			if !slices.Contains(ids, info.ID) {
				ids = append(ids, info.ID)
			}
		}
	}
	return ids
}

// loadConfig loads and validates the configuration. Sections of every
// extension built in are known, also those this process does not load
// (reverie memory, dream: no extensions), so a config.yaml with a web: or
// mcp: section still loads.
func (a *App) loadConfig(context.Context) error {
	cfgPath := a.opts.ConfigPath
	if cfgPath == "" {
		cfgPath = filepath.Join(a.opts.DataDir, "config.yaml")
	}
	cfg, err := config.Load(cfgPath, a.opts.Env, a.extensionIDs())
	if err != nil {
		return err
	}
	cfg.SetDataDir(a.opts.DataDir)
	if err := cfg.Validate(); err != nil {
		return err
	}
	a.Config = cfg
	// Every secret the configuration holds is known before the first log
	// line; the model keys of the environment and the extensions' own are
	// added as they are resolved (modelrouter.FromConfig, Host).
	a.Secrets = &redact.Secrets{}
	a.Secrets.Add(cfg.SecretValues()...)
	return nil
}

// validatePromptFiles checks every template and BASE_PROMPT.txt's markers
// now, so that a typo fails the start naming the file and the token instead
// of a dream or a compaction at night.
func (a *App) validatePromptFiles(context.Context) error {
	dir := a.opts.DataDir
	if err := prompt.ValidateDir(dir, datadir.Placeholders()); err != nil {
		err = fmt.Errorf("prompt files in %s: %w (fix the file, or delete it to get the shipped default back)", dir, err)
		if isTemplateError(err) {
			return classified{err, ErrPromptFiles}
		}
		return datadir.Unusable(err)
	}
	return nil
}

// setUpLogging starts the logger (console, and the log file when on).
func (a *App) setUpLogging(context.Context) error {
	cfg := a.Config
	logFile := ""
	if cfg.Log.File {
		logFile = filepath.Join(a.opts.DataDir, "logs", "reverie.log")
	}
	logger, logCloser, err := logging.New(logging.Options{
		Level: cfg.Log.Level, Format: cfg.Log.Format, File: logFile,
		MaxSizeMB: cfg.Log.MaxSizeMB, MaxBackups: cfg.Log.MaxBackups, Console: a.opts.Console,
		Secrets: a.Secrets,
	})
	if err != nil {
		return fmt.Errorf("set up logging: %w", err)
	}
	a.onClose("logging", logCloser.Close)
	a.Logger = logger
	for _, f := range a.created {
		logger.Debug("created default file", "path", f)
	}
	if len(a.created) > 0 {
		logger.Info("data dir initialised", "dir", a.opts.DataDir, "files", len(a.created))
	}
	return nil
}

// oneShotConnections is how many database connections a one-shot process
// opens beside its configuration.
const oneShotConnections = 2

// idleConnectionLife is how long a database connection stays open unused
// (sqlite.Options.CloseIdleAfter). The footprint keeper closes the idle
// ones when it releases memory, but whatever runs after that release (the
// WAL checkpoint ~10 s after the last write, background reads) opens one
// again, and it would keep ~250 KiB of SQLite's heap until the next
// release, which only comes once use has grown the private memory again.
// Turns closer together than this keep their connections; the first turn
// after a quiet spell opens one again (~1.5 ms parsing the schema, and its
// statements are prepared again as they run).
const idleConnectionLife = 15 * time.Second

// configBesideDatabase takes the data dir lock, then opens the database on
// another goroutine while this one loads the configuration, checks the
// prompt files, sets up logging and records the data dir's history
// (openVersions): each side takes a few milliseconds of CPU and needs
// nothing of the other. It waits for both. The errors come in the order
// of a start that ran these one after the other: the configuration's
// first, then the lock's (another agent runs on the data dir), then the
// database's. The lock and the database are closed after logging, as
// before (closers run in reverse).
func (a *App) configBesideDatabase(ctx context.Context) error {
	start := time.Now()
	release, lockErr := datadir.Lock(a.opts.DataDir)
	a.trace.phase("lock", time.Since(start))
	type opened struct {
		db   *sql.DB
		took time.Duration
		err  error
	}
	dbc := make(chan opened, 1)
	if lockErr == nil {
		go func() {
			start := time.Now()
			// The WAL is checkpointed by the committer's Run (see Run),
			// not by whichever write's commit crosses the threshold.
			db, err := sqlite.OpenWith(ctx, filepath.Join(a.opts.DataDir, DatabaseFile), sqlite.Options{ManualCheckpoint: true, CloseIdleAfter: idleConnectionLife})
			if err != nil {
				err = datadir.Unusable(err)
			} else if a.opts.OneShot {
				// The turn reads from two goroutines at once (its context
				// blocks, the memory index load): open the second
				// connection here, beside the configuration, rather than
				// on the turn's path (each parses the whole schema).
				sqlite.Ready(ctx, db, oneShotConnections)
			}
			dbc <- opened{db, time.Since(start), err}
		}()
	} else {
		dbc <- opened{err: lockErr}
	}
	err := a.tracePhase(ctx, "config", a.loadConfig)
	if err == nil {
		err = a.tracePhase(ctx, "prompt files", a.validatePromptFiles)
	}
	if err == nil {
		err = a.tracePhase(ctx, "logging", a.setUpLogging)
	}
	if err == nil && lockErr == nil {
		err = a.tracePhase(ctx, "data dir history", a.openVersions) // logs its failures; never fails
	}
	o := <-dbc
	if release != nil {
		a.onClose("data dir lock", release)
	}
	if o.db != nil {
		a.onClose("database", o.db.Close)
		var dbLog *slog.Logger // nil when logging failed to start: the start fails then
		if a.Logger != nil {
			dbLog = a.Logger.With("component", "database")
		}
		a.DB, a.migrations, a.commits = o.db, sqlite.NewMigrations(o.db), sqlite.NewCommitter(o.db, dbLog)
		a.trace.phase("database (beside)", o.took)
	}
	if err != nil {
		return err
	}
	return o.err
}

// openWorld loads world_state.json.
func (a *App) openWorld(context.Context) error {
	ws, err := world.OpenStore(a.opts.DataDir, world.StoreOptions{
		Now: a.opts.Now, Logger: a.Logger.With("component", "world"), Changed: a.dataChangeHook,
	})
	if err != nil {
		return datadir.Unusable(fmt.Errorf("load world state: %w", err))
	}
	a.World = ws
	return nil
}

// openBus opens the durable event bus.
func (a *App) openBus(ctx context.Context) error {
	cfg := a.Config
	bus, err := eventbus.Open(ctx, a.DB, eventbus.Options{
		Migrations:  a.migrations,
		Logger:      a.Logger.With("component", "eventbus"),
		MaxAttempts: cfg.Bus.MaxAttempts,
		BaseBackoff: cfg.Bus.BaseBackoff,
		MaxBackoff:  cfg.Bus.MaxBackoff,
		Retention:   cfg.Bus.Retention,
		Now:         a.opts.Now,
		Secrets:     a.Secrets,
		Commits:     a.commits,
	})
	if err != nil {
		return fmt.Errorf("open event bus: %w", err)
	}
	a.Bus = bus
	return nil
}

// loadKernel creates the extension kernel (extensions are initialised and
// started once the runtime they use exists).
func (a *App) loadKernel(context.Context) error {
	cfg := a.Config
	a.API = &api.Services{Instance: envValue(a.opts.Env, supervisor.InstanceEnv)}
	k, err := kernel.New(kernel.Options{
		Migrations:  a.migrations,
		Config:      cfg,
		DataDir:     a.opts.DataDir,
		DB:          a.DB,
		Bus:         a.Bus,
		Logger:      a.Logger,
		Console:     a.opts.Console,
		Receive:     a.receive,
		WasReceived: a.wasReceived,
		Now:         a.opts.Now,
		Registry:    a.opts.Registry,
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
		return fmt.Errorf("load extensions: %w", err)
	}
	a.Kernel = k
	a.onClose("extensions", func() error {
		sctx, cancel := context.WithTimeout(context.Background(), cfg.Supervisor.ShutdownGrace)
		defer cancel()
		return k.Shutdown(sctx)
	})
	return nil
}

// initExtensions fills the API services the extensions reach and
// initialises them.
func (a *App) initExtensions(ctx context.Context) error {
	a.fillAPIServices(a.API)
	if err := a.Kernel.Init(ctx); err != nil {
		return fmt.Errorf("initialise extensions: %w", err)
	}
	// Extensions decode their own sections in Init, so warnings about them
	// (inline secrets) are known only now.
	for _, w := range a.Config.Warnings() {
		a.Logger.Warn(w)
	}
	return nil
}

// startExtensions starts every initialised extension.
func (a *App) startExtensions(ctx context.Context) error {
	if err := a.Kernel.Start(ctx); err != nil {
		return fmt.Errorf("start extensions: %w", err)
	}
	return nil
}

// finishTools fixes the tool set once every extension has started and
// registers the scheduled jobs.
func (a *App) finishTools(ctx context.Context) error {
	if err := a.registerApprove(); err != nil {
		return err
	}
	a.collectTools()
	if a.opts.OneShot {
		// The extensions', the agents' and the sub-session tools: the
		// core and runtime ones are warming since the scheduler was built.
		a.warmTools(without(a.warmableTools(), slices.Concat(a.coreTools, a.runtimeTools)))
	}
	a.checkProfiles()
	a.registerJobs(ctx)
	return nil
}

// receive is where channels hand user messages: the router persists them
// in its inbox and runs the turn.
func (a *App) receive(ctx context.Context, msg chat.Inbound) error {
	return a.Router.Receive(ctx, msg)
}

// wasReceived reports whether the router accepted msg before.
func (a *App) wasReceived(ctx context.Context, msg chat.Inbound) (bool, error) {
	return a.Router.WasReceived(ctx, msg)
}

// startBackground starts the agent's background work, each part on a
// goroutine that run starts (see BackgroundDelay).
func (a *App) startBackground(ctx context.Context, run func(func() error)) {
	if a.loadMemoryIndex != nil {
		a.loadMemoryIndex() // on the store's own goroutine
	}
	run(func() error { return a.Bus.Run(ctx) })
	run(func() error { return a.housekeeping(ctx) })
	run(func() error { return a.reembed(ctx) })
	run(func() error { return a.Scheduler.Run(ctx) })
	run(func() error { return a.runBackground(ctx) })
	// The shell sandbox's self-test starts child processes; the first
	// shell command waits for it. Its failure (sandbox required but not
	// working) is logged by the shell and refuses every command; it does
	// not stop the agent.
	run(func() error { _ = a.core.Prepare(ctx); return nil })
	run(func() error { return a.keepFootprint(ctx) })
	run(func() error { return a.warmTurnTools(ctx) })
}

// Run runs the event bus and every extension service until ctx is
// cancelled, then shuts everything down in reverse order. It tells
// ReadyListeners (the /healthz endpoint) once everything a request needs
// runs, and starts the background work BackgroundDelay later.
func (a *App) Run(ctx context.Context) error {
	runStart := time.Now()
	g, gctx := errgroup.WithContext(ctx)
	if a.commits != nil {
		g.Go(func() error { return a.commits.Run(gctx) })
	}
	g.Go(func() error { return a.Router.Run(gctx) })
	g.Go(func() error { return a.Kernel.Run(gctx) })
	g.Go(func() error { return a.Approvals.Run(gctx) })
	g.Go(func() error { return a.Workflows.Run(gctx) })
	a.Kernel.Ready(gctx)
	close(a.ready)
	startup := time.Since(a.started)
	a.trace.phase("run to ready", time.Since(runStart))
	a.trace.log(a.Logger)
	if !a.opts.OneShot {
		g.Go(func() error {
			if extension.Sleep(gctx, BackgroundDelay) != nil {
				return nil
			}
			if a.opts.Settled != nil {
				a.opts.Settled()
			}
			a.startBackground(gctx, g.Go)
			return nil
		})
	}
	a.Logger.Info("agent ready", "startup", startup.Round(100*time.Microsecond).String(), "data", a.opts.DataDir)
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
	a.warming.Wait()
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
