package kernel

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/redact"
)

// DefaultHealthTimeout bounds each health check when Options.HealthTimeout
// is zero.
const DefaultHealthTimeout = 2 * time.Second

// Sentinel errors.
var (
	// ErrNoRouter is returned by Host.Receive when the kernel was built
	// without Options.Receive.
	ErrNoRouter = errors.New("no router to receive messages")
	// ErrNoBus is returned by the Bus methods of a Host when the kernel was
	// built without Options.Bus.
	ErrNoBus = errors.New("no event bus")
	// ErrLifecycle is returned (wrapped) when a lifecycle method is called
	// out of order: Init twice, Start before Init, Run before Start or
	// twice, anything after Shutdown.
	ErrLifecycle = errors.New("kernel lifecycle method called out of order")
	// ErrEssential is wrapped by the *EssentialError Init and Start return
	// when an essential extension failed.
	ErrEssential = errors.New("an essential extension failed")
)

// EssentialError is Init's or Start's error when an essential extension
// (Options.Essential, or the only channel) failed to be created,
// initialised or started, or was skipped because a dependency failed. It
// wraps the extension's own error and ErrEssential.
type EssentialError struct {
	ID string
	// Why it is essential: "configured explicitly" or "the only channel".
	Why string
	Err error
}

func (e *EssentialError) Error() string {
	return fmt.Sprintf("extension %q (%s) failed: %v", e.ID, e.Why, e.Err)
}

// Unwrap returns the extension's error and ErrEssential.
func (e *EssentialError) Unwrap() []error { return []error{e.Err, ErrEssential} }

// Config is what the kernel needs from the configuration; *config.Config
// implements it.
type Config interface {
	// ExtensionEnabled reports whether extension id runs, given its
	// default (true unless the extension is opt-in).
	ExtensionEnabled(id string, defaultOn bool) bool
	// DecodeExtension decodes the configuration section of extension id
	// into v, strictly; a missing section leaves v unchanged.
	DecodeExtension(id string, v any) error
}

// Options configure a Kernel.
type Options struct {
	// Config selects and configures extensions; nil runs every extension
	// that is on by default, with no configuration.
	Config Config
	// DataDir is the absolute path of the data directory.
	DataDir string
	// DB is the shared database.
	DB *sql.DB
	// Migrations is the start's shared record of applied migrations, for
	// extension.Host.Migrate (nil: each extension reads its own).
	Migrations *extension.Migrations
	// Bus is the durable event bus; nil makes the hosts' Bus methods
	// return ErrNoBus.
	Bus extension.Bus
	// Logger is the parent logger; nil discards.
	Logger *slog.Logger
	// Console is the terminal the agent was started from, for what must
	// be shown once and never reach the log file (the generated web
	// token); nil means none (hosts' Console returns io.Discard).
	Console io.Writer
	// Receive hands inbound messages to the router; nil rejects them
	// with ErrNoRouter.
	Receive func(ctx context.Context, msg chat.Inbound) error
	// WasReceived reports whether the router accepted a message with
	// the same channel and ID before (hosts' WasReceived); nil means it
	// never did.
	WasReceived func(ctx context.Context, msg chat.Inbound) (bool, error)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Registry is the set of extensions to choose from; nil means
	// extension.Registered().
	Registry []extension.Info
	// HealthTimeout bounds each health check; zero means
	// DefaultHealthTimeout.
	HealthTimeout time.Duration
	// Fatal, when set, picks the Init errors that must stop start-up rather
	// than be isolated (the app uses it for configuration errors: a typo in
	// an extension's section must not leave that feature silently off).
	Fatal func(error) bool
	// Essential, when set, picks extensions (by id) the agent must not run
	// without (the app: those configured explicitly). The only enabled
	// channel is essential too. An essential extension that fails to be
	// created, initialised or started, or is skipped because a dependency
	// failed, makes Init or Start return an *EssentialError instead of
	// carrying on without it (a web channel that cannot bind its port must
	// not leave an agent that nobody can reach reporting ready).
	Essential func(id string) bool
	// APIServices are offered to extensions through the hosts'
	// api.Provider method (api.ServicesFrom); nil offers none. The
	// pointer is handed out as is: fill it before Init.
	APIServices *api.Services
	// Secrets is the set extensions add to with Host.RegisterSecret and
	// redact with Host.Redact (nil: registering does nothing and Redact
	// returns its text).
	Secrets *redact.Secrets
}

// State is where an extension is in its lifecycle.
type State string

// States reported by Status.
const (
	// StatePending: created, Init not called yet.
	StatePending State = "pending"
	// StateInitialised: Init succeeded.
	StateInitialised State = "initialised"
	// StateStarted: Start succeeded (or there was nothing to start).
	StateStarted State = "started"
	// StateRunning: its ServiceProvider.Run is running.
	StateRunning State = "running"
	// StateFailed: its constructor, Init, Start or service failed; see
	// Status.Error.
	StateFailed State = "failed"
	// StateSkipped: not initialised or started because a dependency
	// failed; see Status.Error.
	StateSkipped State = "skipped"
	// StateStopped: shut down.
	StateStopped State = "stopped"
	// StateDisabled: registered but not enabled by the configuration.
	StateDisabled State = "disabled"
)

// Health is the outcome of an extension's last health check.
type Health string

// Health values reported by Status.
const (
	// HealthNone: the extension has no health check.
	HealthNone Health = "none"
	// HealthUnknown: not checked yet.
	HealthUnknown Health = "unknown"
	// HealthOK: the last check passed.
	HealthOK Health = "ok"
	// HealthFailing: the last check failed or timed out; see
	// Status.HealthError.
	HealthFailing Health = "failing"
)

// Status describes one extension.
type Status struct {
	ID          string    `json:"id"`
	Description string    `json:"description,omitempty"`
	State       State     `json:"state"`
	Error       string    `json:"error,omitempty"` // why it failed or was skipped
	Health      Health    `json:"health"`
	HealthError string    `json:"health_error,omitempty"`
	CheckedAt   time.Time `json:"checked_at,omitzero"` // time of the last health check
}

// ScopedJob is a scheduled job with the extension that provides it.
type ScopedJob struct {
	Extension string
	Job       extension.Job
}

type phase int

const (
	phaseNew phase = iota
	phaseInitialised
	phaseStarted
	phaseShutdown
)

// entry is one enabled extension.
type entry struct {
	info     extension.Info
	ext      extension.Extension // nil when the constructor failed
	host     *host
	children []*entry // extensions that depend on this one

	// Guarded by Kernel.mu.
	state          State
	err            string
	cause          error // the failure behind err
	onlyChannel    bool  // the only enabled channel (essential)
	health         Health
	healthErr      string
	checkedAt      time.Time
	inited         bool // Init succeeded: Destroy is owed
	startAttempted bool // Start was called: Stop is owed
}

// Kernel owns the enabled extensions.
type Kernel struct {
	opts     Options
	log      *slog.Logger
	order    []*entry // dependency order
	byID     map[string]*entry
	disabled []extension.Info

	mu    sync.RWMutex
	phase phase
	caps  capabilities

	runMu     sync.Mutex
	runCancel context.CancelFunc // non-nil while Run is active
	runDone   chan struct{}      // closed when Run returns
	readyOnce sync.Once
}

// New selects the enabled extensions, orders them by dependency and creates
// one instance of each. A dependency that is not registered or not enabled,
// a dependency cycle, and an invalid registry (empty or duplicate id, nil
// constructor) are errors naming the ids; nothing has been initialised then.
// A constructor that panics or returns nil only fails its own extension.
func New(opts Options) (*Kernel, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.HealthTimeout <= 0 {
		opts.HealthTimeout = DefaultHealthTimeout
	}
	if opts.Registry == nil {
		opts.Registry = extension.Registered()
	}
	k := &Kernel{opts: opts, log: opts.Logger.With("component", "kernel"), byID: map[string]*entry{}}

	registered := map[string]extension.Info{}
	for _, info := range opts.Registry {
		switch {
		case info.ID == "":
			return nil, errors.New("extension with an empty id in the registry")
		case info.New == nil:
			return nil, fmt.Errorf("extension %q has no constructor", info.ID)
		}
		if _, dup := registered[info.ID]; dup {
			return nil, fmt.Errorf("extension %q registered twice", info.ID)
		}
		registered[info.ID] = info
	}
	ids := make([]string, 0, len(registered))
	for id := range registered {
		ids = append(ids, id)
	}
	slices.Sort(ids)

	enabled := map[string]extension.Info{}
	for _, id := range ids {
		info := registered[id]
		on := !info.Disabled
		if opts.Config != nil {
			if info.AutoEnable != nil {
				on = autoEnabled(opts.Config, info)
			}
			on = opts.Config.ExtensionEnabled(id, on)
		}
		if on {
			enabled[id] = info
		} else {
			k.disabled = append(k.disabled, info)
		}
	}
	var errs []error
	for _, id := range ids {
		info, ok := enabled[id]
		if !ok {
			continue
		}
		for _, dep := range info.DependsOn {
			if _, ok := enabled[dep]; ok {
				continue
			}
			if _, ok := registered[dep]; ok {
				errs = append(errs, fmt.Errorf("extension %q depends on %q, which is disabled", id, dep))
			} else {
				errs = append(errs, fmt.Errorf("extension %q depends on %q, which is not registered", id, dep))
			}
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	order, err := sortByDependency(enabled)
	if err != nil {
		return nil, err
	}
	for _, id := range order {
		e := &entry{info: enabled[id], state: StatePending, health: HealthUnknown}
		k.order = append(k.order, e)
		k.byID[id] = e
	}
	for _, e := range k.order {
		for _, dep := range uniq(e.info.DependsOn) {
			p := k.byID[dep]
			p.children = append(p.children, e)
		}
		e.host = newHost(k, e.info.ID)
		ext, err := construct(e.info)
		if err != nil {
			k.fail(e, err)
			continue
		}
		e.ext = ext
		if _, ok := ext.(extension.HealthChecker); !ok {
			e.health = HealthNone
		}
	}
	var channels []*entry
	for _, e := range k.order {
		if _, ok := e.ext.(extension.ChannelProvider); ok {
			channels = append(channels, e)
		}
	}
	if len(channels) == 1 {
		channels[0].onlyChannel = true
	}
	for _, e := range k.order {
		if e.state == StateFailed {
			k.skipDependents(e)
		}
	}
	return k, nil
}

// essentialFailure returns an *EssentialError for the first essential
// extension that failed or was skipped, or nil. Callers hold k.mu or own the
// kernel exclusively.
func (k *Kernel) essentialFailure() error {
	for _, e := range k.order {
		if e.state != StateFailed && e.state != StateSkipped {
			continue
		}
		why := ""
		switch {
		case k.opts.Essential != nil && k.opts.Essential(e.info.ID):
			why = "configured explicitly"
		case e.onlyChannel:
			why = "the only channel"
		default:
			continue
		}
		cause := e.cause
		if cause == nil {
			cause = errors.New(e.err)
		}
		return &EssentialError{ID: e.info.ID, Why: why, Err: cause}
	}
	return nil
}

func construct(info extension.Info) (ext extension.Extension, err error) {
	err = safely(func() error {
		ext = info.New()
		if ext == nil {
			return errors.New("constructor returned nil")
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	return ext, nil
}

func uniq(ids []string) []string {
	out := slices.Clone(ids)
	slices.Sort(out)
	return slices.Compact(out)
}

// sortByDependency orders ids so that dependencies come first, ties broken
// by id (Kahn's algorithm over a sorted ready set). Every dependency is in
// infos.
func sortByDependency(infos map[string]extension.Info) ([]string, error) {
	indegree := map[string]int{}
	dependents := map[string][]string{}
	for id, info := range infos {
		deps := uniq(info.DependsOn)
		indegree[id] = len(deps)
		for _, d := range deps {
			dependents[d] = append(dependents[d], id)
		}
	}
	var ready []string
	for id, n := range indegree {
		if n == 0 {
			ready = append(ready, id)
		}
	}
	order := make([]string, 0, len(infos))
	for len(ready) > 0 {
		slices.Sort(ready)
		id := ready[0]
		ready = ready[1:]
		order = append(order, id)
		for _, d := range dependents[id] {
			indegree[d]--
			if indegree[d] == 0 {
				ready = append(ready, d)
			}
		}
	}
	if len(order) == len(infos) {
		return order, nil
	}
	return nil, findCycle(infos, order)
}

// findCycle describes one dependency cycle among the ids that could not be
// ordered, as "dependency cycle: a → b → a".
func findCycle(infos map[string]extension.Info, ordered []string) error {
	done := map[string]bool{}
	for _, id := range ordered {
		done[id] = true
	}
	var rest []string
	for id := range infos {
		if !done[id] {
			rest = append(rest, id)
		}
	}
	slices.Sort(rest)
	const (
		white = iota
		grey
		black
	)
	colour := map[string]int{}
	var stack []string
	var cycle []string
	var visit func(id string) bool
	visit = func(id string) bool {
		colour[id] = grey
		stack = append(stack, id)
		for _, d := range uniq(infos[id].DependsOn) {
			if done[d] {
				continue
			}
			switch colour[d] {
			case grey:
				i := slices.Index(stack, d)
				cycle = append(slices.Clone(stack[i:]), d)
				return true
			case white:
				if visit(d) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		colour[id] = black
		return false
	}
	for _, id := range rest {
		if colour[id] == white && visit(id) {
			return fmt.Errorf("dependency cycle: %s", strings.Join(cycle, " → "))
		}
	}
	// Unreachable: ids left out by Kahn's algorithm always contain a cycle.
	return fmt.Errorf("dependency cycle among %s", strings.Join(rest, ", "))
}

// fail records e as failed and logs why (with the stack for a panic).
// Callers hold k.mu or own the kernel exclusively.
func (k *Kernel) fail(e *entry, err error) {
	e.state = StateFailed
	e.err, e.cause = err.Error(), err
	attrs := []any{"ext", e.info.ID, "err", err}
	var p *panicError
	if errors.As(err, &p) {
		attrs = append(attrs, "stack", string(p.stack))
	}
	k.log.Error("extension failed", attrs...)
}

// skipDependents marks every transitive dependent of e that has not failed
// already as skipped. Callers hold k.mu or own the kernel exclusively.
func (k *Kernel) skipDependents(e *entry) {
	for _, c := range e.children {
		if c.state == StateFailed || c.state == StateSkipped || c.state == StateStopped {
			continue
		}
		verb := "failed"
		if e.state == StateSkipped {
			verb = "was skipped"
		}
		c.state = StateSkipped
		c.err = fmt.Sprintf("dependency %q %s", e.info.ID, verb)
		c.cause = fmt.Errorf("%s: %w", c.err, e.cause)
		k.log.Warn("extension skipped", "ext", c.info.ID, "reason", c.err)
		k.skipDependents(c)
	}
}

// ConfigCheck is the outcome of checking one enabled extension's
// configuration without initialising it.
type ConfigCheck struct {
	ID string
	// Checked is false when the extension has no way to check its
	// configuration apart from Init (it is not an extension.ConfigChecker)
	// or its constructor failed (Err says so).
	Checked bool
	Err     error
	// Diagnosis is what the extension's Diagnose found ("" when it is no
	// extension.Diagnoser, or was not diagnosed).
	Diagnosis string
}

// CheckConfig checks the configuration of every enabled extension that is an
// extension.ConfigChecker, in dependency order, as Init would decode and
// validate it but without initialising anything (`reverie doctor`). It
// can be called on a kernel that is never initialised; a panic in a check
// is reported as that extension's error.
func (k *Kernel) CheckConfig() []ConfigCheck {
	out := make([]ConfigCheck, 0, len(k.order))
	for _, e := range k.order {
		c := ConfigCheck{ID: e.info.ID}
		if e.ext == nil {
			k.mu.RLock()
			c.Err = errors.New(e.err)
			k.mu.RUnlock()
			out = append(out, c)
			continue
		}
		if cc, ok := e.ext.(extension.ConfigChecker); ok {
			c.Checked = true
			c.Err = safely(func() error { return cc.CheckConfig(e.host.DecodeConfig) })
		}
		out = append(out, c)
	}
	return out
}

// Diagnose checks every enabled extension as CheckConfig does and then,
// for each whose configuration passed and that is an
// extension.Diagnoser, that what its settings name works (`reverie
// doctor`: one verdict per extension). The extensions are diagnosed
// concurrently; a panic is that extension's error.
func (k *Kernel) Diagnose(ctx context.Context) []ConfigCheck {
	out := k.CheckConfig()
	var wg sync.WaitGroup
	for i := range out {
		e := k.byID[out[i].ID]
		d, ok := e.ext.(extension.Diagnoser)
		if out[i].Err != nil || !ok {
			continue
		}
		wg.Go(func() {
			var what string
			out[i].Err = safely(func() (err error) {
				what, err = d.Diagnose(ctx, e.host.DecodeConfig, k.opts.DataDir)
				return err
			})
			out[i].Diagnosis = what
		})
	}
	wg.Wait()
	return out
}

// Extension returns the instance of extension id, if it is enabled and was
// created.
func (k *Kernel) Extension(id string) (extension.Extension, bool) {
	e, ok := k.byID[id]
	if !ok || e.ext == nil {
		return nil, false
	}
	return e.ext, true
}

// Status reports every enabled extension in dependency order, followed by
// the disabled ones sorted by id.
func (k *Kernel) Status() []Status {
	k.mu.RLock()
	defer k.mu.RUnlock()
	out := make([]Status, 0, len(k.order)+len(k.disabled))
	for _, e := range k.order {
		out = append(out, e.status())
	}
	for _, info := range k.disabled {
		out = append(out, Status{ID: info.ID, Description: info.Description, State: StateDisabled, Health: HealthNone})
	}
	return out
}

func (e *entry) status() Status {
	return Status{
		ID:          e.info.ID,
		Description: e.info.Description,
		State:       e.state,
		Error:       e.err,
		Health:      e.health,
		HealthError: e.healthErr,
		CheckedAt:   e.checkedAt,
	}
}

// autoEnabled asks info.AutoEnable with the extension's section; a panic or
// a section that does not decode enables the extension, so that its Init
// reports the problem.
func autoEnabled(cfg Config, info extension.Info) (on bool) {
	defer func() {
		if recover() != nil {
			on = true
		}
	}()
	var bad bool
	on = info.AutoEnable(func(v any) error {
		err := cfg.DecodeExtension(info.ID, v)
		bad = bad || err != nil
		return err
	})
	return on || bad
}
