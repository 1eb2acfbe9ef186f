package modelrouter

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
)

// ErrUnknownBackend is returned by SetThreadBackend for a backend name the
// configuration does not define.
var ErrUnknownBackend = errors.New("unknown model backend")

// BackendInfo describes one configured backend.
type BackendInfo struct {
	Name   string
	Model  string
	Limits Limits
}

// RoleInfo is one role and the backends it resolves to, in order.
type RoleInfo struct {
	Role string
	// Backends are the role's own backends, or those of the role it falls
	// back to (FallsBackTo names it).
	Backends    []string
	FallsBackTo string
}

// Backends lists the configured backends in name order.
func (r *Router) Backends() []BackendInfo {
	out := make([]BackendInfo, 0, len(r.backends))
	for _, n := range r.backendNames() {
		b := r.backends[n]
		out = append(out, BackendInfo{Name: n, Model: b.Model(), Limits: b.limits})
	}
	return out
}

// Roles lists the built-in roles, then those extensions registered, with
// the backends each resolves to.
func (r *Router) Roles() []RoleInfo {
	r.mu.RLock()
	names := slices.Clone(BuiltinRoles)
	var extra []string
	for role := range r.fallback {
		if !slices.Contains(names, role) {
			extra = append(extra, role)
		}
	}
	for role := range r.roles {
		if !slices.Contains(names, role) && !slices.Contains(extra, role) {
			extra = append(extra, role)
		}
	}
	r.mu.RUnlock()
	slices.Sort(extra)
	out := make([]RoleInfo, 0, len(names)+len(extra))
	for _, role := range append(names, extra...) {
		ri := RoleInfo{Role: role, Backends: slices.Clone(r.chain(role))}
		r.mu.RLock()
		if len(r.roles[role]) == 0 {
			ri.FallsBackTo = r.fallback[role]
		}
		r.mu.RUnlock()
		out = append(out, ri)
	}
	return out
}

// ThreadUsage is a conversation's model choice and token use.
type ThreadUsage struct {
	// Backend is the backend chosen for the conversation; "" uses the main
	// role's backends.
	Backend string
	// LastInputTokens is the input of the newest main-role call: how much
	// of the context window the conversation fills.
	LastInputTokens int
	InputTokens     int
	OutputTokens    int
	Calls           int
}

// Thread returns the conversation's choice and token use (zero for a
// conversation without either).
func (r *Router) Thread(ctx context.Context, thread string) (ThreadUsage, error) {
	var u ThreadUsage
	if r.opts.DB == nil {
		return u, nil
	}
	err := r.opts.DB.QueryRowContext(ctx, `SELECT backend, last_input_tokens, input_tokens, output_tokens, calls
		FROM thread_models WHERE thread = ?`, thread).Scan(&u.Backend, &u.LastInputTokens, &u.InputTokens, &u.OutputTokens, &u.Calls)
	if errors.Is(err, sql.ErrNoRows) {
		return ThreadUsage{}, nil
	}
	if err != nil {
		return u, fmt.Errorf("read the model of %s: %w", thread, err)
	}
	if _, ok := r.backends[u.Backend]; !ok {
		u.Backend = "" // removed from the configuration since
	}
	return u, nil
}

// SetThreadBackend chooses backend for the conversation's main-role calls
// ("" goes back to the main role's backends). ErrUnknownBackend for a name
// the configuration does not define.
func (r *Router) SetThreadBackend(ctx context.Context, thread, backend string) error {
	if _, ok := r.backends[backend]; backend != "" && !ok {
		return fmt.Errorf("%w %q (defined: %v)", ErrUnknownBackend, backend, r.backendNames())
	}
	if r.opts.DB == nil {
		return errors.New("choose a model per conversation: no database")
	}
	_, err := r.opts.DB.ExecContext(ctx, `INSERT INTO thread_models (thread, backend, updated_at) VALUES (?, ?, ?)
		ON CONFLICT (thread) DO UPDATE SET backend = excluded.backend, updated_at = excluded.updated_at`,
		thread, backend, r.opts.Now().UnixNano())
	r.prefs.Lock()
	delete(r.prefs.m, thread) // read again (whatever the outcome)
	r.prefs.gen++             // and no read begun before is kept
	r.prefs.Unlock()
	if err != nil {
		return fmt.Errorf("save the model of %s: %w", thread, err)
	}
	return nil
}

// threadBackend is the backend chosen for the conversation ("" for the
// role's), kept in memory once read: SetThreadBackend is its only writer
// (one agent per data dir), and every turn asks.
func (r *Router) threadBackend(ctx context.Context, thread string) string {
	r.prefs.Lock()
	b, ok := r.prefs.m[thread]
	gen := r.prefs.gen
	r.prefs.Unlock()
	if ok {
		return b
	}
	u, err := r.Thread(ctx, thread)
	if err != nil {
		r.log.Warn("could not read the conversation's model; using the role's", "thread", thread, "err", err)
		return ""
	}
	r.prefs.Lock()
	if r.prefs.m == nil {
		r.prefs.m = map[string]string{}
	}
	if r.prefs.gen == gen && len(r.prefs.m) < maxCachedThreadBackends {
		r.prefs.m[thread] = u.Backend
	}
	r.prefs.Unlock()
	return u.Backend
}

// maxCachedThreadBackends bounds the conversations whose chosen backend is
// kept in memory.
const maxCachedThreadBackends = 4096

// ForThread returns role's model for a conversation and the limits of the
// backend it tries first: the conversation's chosen backend first (then
// the role's others as fallbacks) when role is main, and its calls' token
// use recorded for the conversation.
func (r *Router) ForThread(ctx context.Context, role, thread string) (*Model, Limits) {
	m := &Model{r: r, role: role, thread: thread}
	if role == RoleMain {
		m.prefer = r.threadBackend(ctx, thread)
	}
	if m.prefer != "" {
		return m, r.backends[m.prefer].limits
	}
	return m, r.Limits(role)
}

// names is the chain m calls: the preferred backend first.
func (m *Model) names() []string {
	names := m.r.chain(m.role)
	if m.prefer == "" {
		return names
	}
	out := []string{m.prefer}
	for _, n := range names {
		if n != m.prefer {
			out = append(out, n)
		}
	}
	return out
}
