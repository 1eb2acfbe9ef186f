package modelrouter

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// The built-in roles.
const (
	RoleMain        = "main"
	RoleCompaction  = "compaction"
	RoleSubSessions = "sub_sessions"
	RoleDreaming    = "dreaming"
	RoleReflection  = "reflection"
	RoleScout       = "scout"
	RoleSupervisor  = "supervisor"
)

// BuiltinRoles lists the roles every Reverie has, each falling back to main.
var BuiltinRoles = []string{RoleMain, RoleCompaction, RoleSubSessions, RoleDreaming, RoleReflection, RoleScout, RoleSupervisor}

// DefaultCooldown is how long a backend that was unavailable is skipped.
const DefaultCooldown = 30 * time.Second

// ErrNoModel is returned by Generate when no backend is configured for the
// role (nor for main). Its message tells the user how to configure one.
var ErrNoModel = errors.New(NoModelMessage)

// NoModelMessage is the reply the assistant gives while no model is
// configured.
const NoModelMessage = "No language model is configured yet, so I cannot answer. " +
	"Configure one on the setup screen of the web page, or set OPENAI_BASE_URL/OPENAI_API_KEY " +
	"(and REVERIE_MODEL) for an OpenAI-compatible server, ANTHROPIC_API_KEY for Anthropic, " +
	"or start Ollama (OLLAMA_HOST), then restart Reverie. " +
	"A `models:` section in config.yaml gives full control (see `reverie init`)."

// Backend is one configured model endpoint.
type Backend interface {
	Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error)
	// Name is the backend's configured name (unique in a Router).
	Name() string
	// Model is the model it calls.
	Model() string
	// Ping checks reachability and the credentials with the smallest
	// authenticated call the provider offers, and says which call it made
	// (for `reverie doctor`).
	Ping(ctx context.Context) (checked string, err error)
}

// Limits describe what a backend's model accepts: its context window (for
// compaction) and whether it sees images.
type Limits struct {
	ContextSize int // tokens the model accepts in total
	MaxTokens   int // tokens reserved for the reply
	// Vision: the model accepts image parts. Off unless configured
	// (models.backends.<name>.vision, or REVERIE_MODEL_VISION for the
	// model from the environment); a backend without it gets each image
	// as a short note naming the file.
	Vision bool
}

// NoVisionNote is why an image reaches a model as text.
const NoVisionNote = "this model cannot see images"

// withoutImages returns req with every image part replaced by its note
// (req itself when it holds none).
func withoutImages(req llm.Request) llm.Request {
	has := false
	for _, m := range req.Messages {
		for _, p := range m.Parts {
			if _, ok := p.(llm.Image); ok {
				has = true
			}
		}
	}
	if !has {
		return req
	}
	msgs := make([]llm.Message, len(req.Messages))
	for i, m := range req.Messages {
		parts := make([]llm.Part, len(m.Parts))
		for j, p := range m.Parts {
			if img, ok := p.(llm.Image); ok {
				p = img.Note(NoVisionNote)
			}
			parts[j] = p
		}
		msgs[i] = llm.Message{Role: m.Role, Parts: parts}
	}
	req.Messages = msgs
	return req
}

// Options configure a Router.
type Options struct {
	// Backends by name, in no particular order.
	Backends []Backend
	// Limits per backend name; missing entries get DefaultLimits.
	Limits map[string]Limits
	// Roles maps a role to its ordered backend names.
	Roles map[string][]string
	// PoolRoles spread calls over their backends (default: sub_sessions).
	PoolRoles []string
	// DB records usage; nil disables accounting.
	DB *sql.DB
	// Commits, when set, is the database's shared group commit: each
	// call's accounting is written in a transaction shared with the other
	// stores' concurrent writes. nil: calls share transactions only with
	// one another.
	Commits  *sqlite.Committer
	Logger   *slog.Logger
	Now      func() time.Time
	Cooldown time.Duration
	// Secrets are redacted from every error the Router returns or logs
	// (a provider error may echo the request's API key); nil: none.
	Secrets *redact.Secrets
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// DefaultLimits apply to backends without configured limits.
var DefaultLimits = Limits{ContextSize: 32768, MaxTokens: 4096}

// Router resolves roles to backends. Create it with New.
type Router struct {
	opts     Options
	log      *slog.Logger
	backends map[string]*backendState
	mu       sync.RWMutex
	roles    map[string][]string // configured role → backend names
	fallback map[string]string   // role → role it falls back to
	pool     map[string]bool
	usage    sqlite.GroupCommit[*usageRecord]
	// prefs caches each conversation's chosen backend (threadBackend).
	prefs struct {
		sync.Mutex
		m   map[string]string
		gen uint64 // SetThreadBackend calls so far
	}
}

type backendState struct {
	Backend
	limits Limits

	mu        sync.Mutex
	inFlight  int
	downUntil time.Time
	lastErr   error
}

// New builds a Router. Roles naming unknown backends are an error.
func New(ctx context.Context, opts Options) (*Router, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Cooldown == 0 {
		opts.Cooldown = DefaultCooldown
	}
	if opts.PoolRoles == nil {
		opts.PoolRoles = []string{RoleSubSessions}
	}
	r := &Router{
		opts:     opts,
		log:      opts.Logger,
		backends: map[string]*backendState{},
		roles:    map[string][]string{},
		fallback: map[string]string{},
		pool:     map[string]bool{},
	}
	for _, b := range opts.Backends {
		if _, dup := r.backends[b.Name()]; dup {
			return nil, fmt.Errorf("model backends: %q defined twice", b.Name())
		}
		lim, ok := opts.Limits[b.Name()]
		if !ok {
			lim = DefaultLimits
		}
		r.backends[b.Name()] = &backendState{Backend: b, limits: lim}
	}
	for role, names := range opts.Roles {
		for _, n := range names {
			if _, ok := r.backends[n]; !ok {
				return nil, fmt.Errorf("model role %q: unknown backend %q (defined: %s)", role, n, strings.Join(r.backendNames(), ", "))
			}
		}
		r.roles[role] = append([]string(nil), names...)
	}
	for _, role := range BuiltinRoles {
		if role != RoleMain {
			r.fallback[role] = RoleMain
		}
	}
	for _, role := range opts.PoolRoles {
		r.pool[role] = true
	}
	if opts.DB != nil {
		sub, err := fs.Sub(migrationFiles, "migrations")
		if err != nil {
			return nil, err
		}
		if err := opts.Migrations.Migrate(ctx, opts.DB, "modelrouter", sub, "."); err != nil {
			return nil, err
		}
	}
	return r, nil
}

func (r *Router) backendNames() []string {
	names := make([]string, 0, len(r.backends))
	for n := range r.backends {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// RegisterRole adds a role an extension uses, falling back to another role
// (usually main) when the configuration gives it no backends.
func (r *Router) RegisterRole(role, fallback string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if role != fallback {
		r.fallback[role] = fallback
	}
}

// Configured reports whether the main role has at least one backend.
func (r *Router) Configured() bool { return len(r.chain(RoleMain)) > 0 }

// chain resolves role to its backend names, following fallbacks.
func (r *Router) chain(role string) []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	seen := map[string]bool{}
	for role != "" && !seen[role] {
		seen[role] = true
		if names := r.roles[role]; len(names) > 0 {
			return names
		}
		role = r.fallback[role]
	}
	return nil
}

// Model returns the model for role. Unknown roles behave like main.
func (r *Router) Model(role string) *Model { return &Model{r: r, role: role} }

// Limits returns the limits of role's first backend (DefaultLimits when
// none is configured).
func (r *Router) Limits(role string) Limits {
	if names := r.chain(role); len(names) > 0 {
		return r.backends[names[0]].limits
	}
	return DefaultLimits
}

// Describe names role's first backend and its model ("openai/gpt-4.1-mini"),
// or "none".
func (r *Router) Describe(role string) string {
	names := r.chain(role)
	if len(names) == 0 {
		return "none"
	}
	b := r.backends[names[0]]
	if strings.HasSuffix(b.Name(), "/"+b.Model()) {
		return b.Name()
	}
	return b.Name() + "/" + b.Model()
}

// ModelName is the model role's first backend calls ("" when none), for
// choosing a token counter.
func (r *Router) ModelName(role string) string {
	if names := r.chain(role); len(names) > 0 {
		return r.backends[names[0]].Model()
	}
	return ""
}

// Model is a role's view of the router; it satisfies the one-method model
// interfaces consumers declare.
type Model struct {
	r    *Router
	role string
	// thread and prefer are set by ForThread: the conversation whose
	// token use is recorded, and its chosen backend, tried first.
	thread string
	prefer string
}

// Role is the role this model serves.
func (m *Model) Role() string { return m.role }

// Generate calls the role's backends in order (or least-loaded first for a
// pool role), moving on only when a backend is unavailable.
func (m *Model) Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error) {
	r := m.r
	names := m.names()
	if len(names) == 0 {
		return llm.Response{}, ErrNoModel
	}
	order := r.order(m.role, names)
	var errs []error
	for _, b := range order {
		emitted := false
		var wrapped llm.StreamFunc
		if stream != nil {
			wrapped = func(ev llm.Event) {
				if ev.Kind == llm.EventTextDelta || ev.Kind == llm.EventThinkingDelta || ev.Kind == llm.EventToolCallDelta {
					emitted = true
				}
				stream(ev)
			}
		}
		b.mu.Lock()
		b.inFlight++
		b.mu.Unlock()
		start := r.opts.Now()
		breq := req
		if !b.limits.Vision {
			breq = withoutImages(req)
		}
		resp, err := b.Generate(ctx, breq, wrapped)
		err = r.opts.Secrets.RedactError(err)
		b.mu.Lock()
		b.inFlight--
		if err != nil && errors.Is(err, providers.ErrUnavailable) {
			b.downUntil = r.opts.Now().Add(r.opts.Cooldown)
			b.lastErr = err
		} else if err == nil {
			b.downUntil = time.Time{}
			b.lastErr = nil
		}
		b.mu.Unlock()
		r.record(ctx, m.role, m.thread, b, resp.Usage, err)
		if err == nil {
			return resp, nil
		}
		r.log.Warn("model call failed", "role", m.role, "backend", b.Name(), "model", b.Model(),
			"elapsed", r.opts.Now().Sub(start).Round(time.Millisecond).String(), "err", err)
		if !errors.Is(err, providers.ErrUnavailable) || emitted || ctx.Err() != nil {
			return resp, fmt.Errorf("role %s: %w", m.role, err)
		}
		errs = append(errs, err)
	}
	return llm.Response{}, fmt.Errorf("role %s: every backend is unavailable: %w", m.role, errors.Join(errs...))
}

// order puts the role's backends in the order to try: healthy before
// cooling-down ones; for pool roles, fewest in-flight calls first.
func (r *Router) order(role string, names []string) []*backendState {
	now := r.opts.Now()
	type cand struct {
		b        *backendState
		pos      int
		down     bool
		inFlight int
	}
	cands := make([]cand, len(names))
	for i, n := range names {
		b := r.backends[n]
		b.mu.Lock()
		cands[i] = cand{b: b, pos: i, down: now.Before(b.downUntil), inFlight: b.inFlight}
		b.mu.Unlock()
	}
	r.mu.RLock()
	pool := r.pool[role]
	r.mu.RUnlock()
	sort.SliceStable(cands, func(i, j int) bool {
		a, c := cands[i], cands[j]
		if a.down != c.down {
			return !a.down
		}
		if pool && a.inFlight != c.inFlight {
			return a.inFlight < c.inFlight
		}
		return a.pos < c.pos
	})
	out := make([]*backendState, len(cands))
	for i, c := range cands {
		out[i] = c.b
	}
	return out
}

// record accounts for one call: the day's usage of its role and backend,
// and the conversation's token use (ThreadUsage) when it has a thread and
// tokens. Concurrent calls' records share one transaction (group commit).
// Through the database's shared group commit (Options.Commits) the caller
// does not wait for it: it is deferred (Committer.Defer) to the next
// shared transaction, which the turn's next write (its reply, its log
// entry) commits, so that the usage is stored before the turn ends; a
// crash before that loses this call's accounting. Otherwise the caller
// returns once its record is committed.
func (r *Router) record(ctx context.Context, role, thread string, b *backendState, u llm.Usage, callErr error) {
	if r.opts.DB == nil {
		return
	}
	rec := &usageRecord{role: role, backend: b.Name(), model: b.Model(), usage: u, thread: thread}
	if callErr != nil {
		rec.failed = 1
	}
	// Accounting must not fail a turn, and must happen even when the turn
	// was cancelled after the tokens were spent.
	actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if r.opts.Commits != nil {
		day, at := r.opts.Now().UTC().Format(time.DateOnly), r.opts.Now().UnixNano()
		r.opts.Commits.Defer(actx, "model usage", func(ctx context.Context, tx *sql.Tx) error {
			return writeUsageRecord(ctx, tx, rec, day, at)
		}, nil)
		return
	}
	r.usage.Write(rec, func(batch []*usageRecord) { r.writeUsage(actx, batch) })
	if rec.err != nil {
		r.log.Error("record model usage", "role", role, "backend", b.Name(), "thread", thread, "err", rec.err)
	}
}

// usageRecord is one call's accounting waiting to be written, then its
// outcome.
type usageRecord struct {
	role, backend, model string
	failed               int
	usage                llm.Usage
	thread               string
	err                  error
}

// writeUsage writes a batch of records in one transaction, each in a
// savepoint of its own when there are several (one's failure is its own).
func (r *Router) writeUsage(ctx context.Context, batch []*usageRecord) {
	now := r.opts.Now()
	day := now.UTC().Format(time.DateOnly)
	err := sqlite.Tx(ctx, r.opts.DB, func(tx *sql.Tx) error {
		for _, rec := range batch {
			write := func() error { return writeUsageRecord(ctx, tx, rec, day, now.UnixNano()) }
			if len(batch) == 1 {
				rec.err = write()
				return rec.err
			}
			rec.err = sqlite.Savepoint(ctx, tx, write)
		}
		return nil
	})
	if err != nil {
		for _, rec := range batch {
			rec.err = cmp.Or(rec.err, err)
		}
	}
}

// writeUsageRecord adds rec to the day's usage and to its conversation's.
func writeUsageRecord(ctx context.Context, tx *sql.Tx, rec *usageRecord, day string, at int64) error {
	u := rec.usage
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO model_usage (day, role, backend, model, calls, failures, input_tokens, output_tokens)
		VALUES (?, ?, ?, ?, 1, ?, ?, ?)
		ON CONFLICT (day, role, backend, model) DO UPDATE SET
			calls = calls + 1,
			failures = failures + excluded.failures,
			input_tokens = input_tokens + excluded.input_tokens,
			output_tokens = output_tokens + excluded.output_tokens`,
		day, rec.role, rec.backend, rec.model, rec.failed, u.InputTokens, u.OutputTokens); err != nil {
		return fmt.Errorf("day's usage: %w", err)
	}
	if rec.thread == "" || (u.InputTokens == 0 && u.OutputTokens == 0) {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `
		INSERT INTO thread_models (thread, last_input_tokens, input_tokens, output_tokens, calls, updated_at)
		VALUES (?, ?, ?, ?, 1, ?)
		ON CONFLICT (thread) DO UPDATE SET
			last_input_tokens = excluded.last_input_tokens,
			input_tokens = input_tokens + excluded.input_tokens,
			output_tokens = output_tokens + excluded.output_tokens,
			calls = calls + 1,
			updated_at = excluded.updated_at`,
		rec.thread, u.InputTokens, u.InputTokens, u.OutputTokens, at); err != nil {
		return fmt.Errorf("conversation's token use: %w", err)
	}
	return nil
}

// UsageRow is the usage of one role on one backend on one day.
type UsageRow struct {
	Day          string `json:"day"`
	Role         string `json:"role"`
	Backend      string `json:"backend"`
	Model        string `json:"model"`
	Calls        int    `json:"calls"`
	Failures     int    `json:"failures"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
}

// Usage returns recorded usage for days in [from, to] (UTC dates,
// YYYY-MM-DD; empty means unbounded), newest day first.
func (r *Router) Usage(ctx context.Context, from, to string) ([]UsageRow, error) {
	if r.opts.DB == nil {
		return nil, nil
	}
	if to == "" {
		to = "9999-12-31"
	}
	out, err := sqlite.Rows(ctx, r.opts.DB, func(row sqlite.Scanner) (UsageRow, error) {
		var u UsageRow
		err := row.Scan(&u.Day, &u.Role, &u.Backend, &u.Model, &u.Calls, &u.Failures, &u.InputTokens, &u.OutputTokens)
		return u, err
	}, `
		SELECT day, role, backend, model, calls, failures, input_tokens, output_tokens
		FROM model_usage WHERE day >= ? AND day <= ?
		ORDER BY day DESC, role, backend`, from, to)
	if err != nil {
		return nil, fmt.Errorf("read model usage: %w", err)
	}
	return out, nil
}

// BackendHealth is the result of pinging one backend.
type BackendHealth struct {
	Backend string
	Model   string
	Roles   []string
	Err     error
	Elapsed time.Duration
	// Checked says what the ping asked ("a 1-token completion of … with
	// the API key").
	Checked string
}

// Health pings every backend (each bounded by timeout) concurrently and
// reports them in name order.
func (r *Router) Health(ctx context.Context, timeout time.Duration) []BackendHealth {
	names := r.backendNames()
	out := make([]BackendHealth, len(names))
	roleOf := map[string][]string{}
	r.mu.RLock()
	for role, bs := range r.roles {
		for _, b := range bs {
			roleOf[b] = append(roleOf[b], role)
		}
	}
	r.mu.RUnlock()
	var wg sync.WaitGroup
	for i, n := range names {
		b := r.backends[n]
		roles := roleOf[n]
		sort.Strings(roles)
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			start := time.Now()
			checked, err := b.Ping(pctx)
			out[i] = BackendHealth{Backend: n, Model: b.Model(), Roles: roles, Err: r.opts.Secrets.RedactError(err),
				Elapsed: time.Since(start), Checked: checked}
		})
	}
	wg.Wait()
	return out
}
