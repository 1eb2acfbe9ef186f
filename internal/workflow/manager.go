package workflow

import (
	"container/heap"
	"context"
	"crypto/rand"
	"database/sql"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Why a pending node has not started (Node.Waiting).
const (
	waitDeps        = "dependencies"
	waitNotBefore   = "not_before"
	waitConcurrency = "concurrency"
)

// saveTimeout bounds database writes made outside a caller's context.
const saveTimeout = 10 * time.Second

type phase int

const (
	phaseIdle phase = iota
	phaseRunning
	phaseStopping
)

// wf is a workflow in memory.
type wf struct {
	id         string
	root       chat.ThreadID
	createdAt  time.Time
	finishedAt time.Time
	nodes      []string
}

// delivery is a system event waiting to be handed to the Deliverer.
type delivery struct {
	thread chat.ThreadID
	text   string
	nodes  []string // marked delivered once accepted
}

// event is a bus event to publish after the lock is released.
type event struct {
	topic   string
	payload any
}

// effects are what a transition asks to happen outside the lock.
type effects struct {
	events []event
	wake   bool
}

func (fx *effects) publish(topic string, payload any) {
	fx.events = append(fx.events, event{topic, payload})
}

// Manager owns the workflows and their workers. See the package
// documentation for its guarantees.
type Manager struct {
	o   Options
	log *slog.Logger

	spawnTool, cancelTool, listTool tool.Tool
	feedbackStmt                    *sql.Stmt

	// mu guards everything below. It is a channel rather than a
	// sync.Mutex so that a goroutine waiting for it counts as durably
	// blocked under testing/synctest (SQLite's busy handler sleeps on the
	// clock while the holder writes).
	mu         chanMutex
	nodes      map[string]*node
	wfs        map[string]*wf
	merged     map[string]string   // merged workflow → the one it went into
	children   map[string][]string // spawning session → the sessions it spawned
	lineages   map[string][]string // spawner lineage → first hops it spawned
	aggregated map[string]bool     // de-duplication set: children already aggregated
	ready      []string
	gates      gateHeap
	running    int
	outbox     []*delivery
	phase      phase

	wake chan struct{}
	wg   sync.WaitGroup
}

// Open migrates the schema on opts.DB, loads every workflow that is not
// finished and delivered, and returns a Manager. Nothing runs before Run;
// Spawn, Cancel and the views work at once.
func Open(ctx context.Context, opts Options) (*Manager, error) {
	switch {
	case opts.DB == nil:
		return nil, errors.New("workflow: no database")
	case opts.Model == nil:
		return nil, errors.New("workflow: no model")
	}
	if opts.Sources == nil {
		opts.Sources = agent.DataDirSources{Dir: opts.DataDir}
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = DefaultMaxConcurrent
	}
	if opts.DefaultTimeout <= 0 {
		opts.DefaultTimeout = DefaultTimeout
	}
	if opts.MaxContinuations < 0 {
		opts.MaxContinuations = 0
	} else if opts.MaxContinuations == 0 {
		opts.MaxContinuations = DefaultMaxContinuations
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = DefaultMaxDepth
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if err := opts.Migrations.Migrate(ctx, opts.DB, Component, migrations, "migrations"); err != nil {
		return nil, err
	}
	m := &Manager{
		o: opts, log: opts.Logger,
		nodes: map[string]*node{}, wfs: map[string]*wf{}, merged: map[string]string{},
		children: map[string][]string{}, lineages: map[string][]string{}, aggregated: map[string]bool{},
		wake: make(chan struct{}, 1), mu: make(chanMutex, 1),
	}
	m.buildTools()
	// Prepared once: preparing a full-text query costs more than running it.
	var err error
	if m.feedbackStmt, err = opts.DB.PrepareContext(ctx, feedbackQuery); err != nil {
		return nil, fmt.Errorf("prepare feedback query: %w", err)
	}
	ids, err := sqlite.Rows(ctx, opts.DB, sqlite.Scan1[string], `SELECT DISTINCT workflow_id FROM workflow_nodes
		WHERE state IN ('pending','running') OR delivered = 0`)
	if err != nil {
		return nil, fmt.Errorf("load workflows: %w", err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, id := range ids {
		if _, err := m.loadWorkflowLocked(ctx, id); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Manager) now() time.Time { return m.o.Now() }

// dbctx is the context of writes made by transitions: detached from any
// caller (a finished worker still records its outcome) but bounded.
func dbctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), saveTimeout)
}

// commitLocked writes a transition's batch. A failed write is logged: the
// in-memory state is ahead of the database until the next transition of
// the same node writes it again.
func (m *Manager) commitLocked(b *batch) {
	ctx, cancel := dbctx()
	defer cancel()
	if err := commit(ctx, m.o.DB, b); err != nil {
		m.log.Error("could not save workflow state", "statements", len(b.stmts), "err", err)
	}
}

// loadWorkflowLocked loads workflow id and all its nodes into memory
// (nothing when it already is) and indexes them.
func (m *Manager) loadWorkflowLocked(ctx context.Context, id string) (*wf, error) {
	if w, ok := m.wfs[id]; ok {
		return w, nil
	}
	rows, err := queryWorkflows(ctx, m.o.DB, `WHERE id = ?`, id)
	if err != nil {
		return nil, fmt.Errorf("load workflow %s: %w", id, err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("workflow %s %w", id, ErrNotFound)
	}
	r := rows[0]
	if r.mergedInto != "" {
		into, err := resolveWorkflowID(ctx, m.o.DB, id)
		if err != nil {
			return nil, err
		}
		m.merged[id] = into
		return m.loadWorkflowLocked(ctx, into)
	}
	nodes, err := queryNodes(ctx, m.o.DB, `WHERE workflow_id = ? ORDER BY created_at, rowid`, id)
	if err != nil {
		return nil, fmt.Errorf("load nodes of workflow %s: %w", id, err)
	}
	w := &wf{id: r.id, root: r.root, createdAt: r.createdAt, finishedAt: r.finishedAt}
	m.wfs[id] = w
	for _, n := range nodes {
		w.nodes = append(w.nodes, n.id)
		m.nodes[n.id] = n
		if n.delivered && n.parent.IsSubSession() && n.state.Terminal() {
			m.aggregated[n.id] = true
		}
	}
	for _, n := range nodes {
		m.indexLocked(n)
	}
	return w, nil
}

// indexLocked adds n to the children, lineage and dependents indexes.
func (m *Manager) indexLocked(n *node) {
	if n.parent.IsSubSession() {
		m.children[string(n.parent)] = append(m.children[string(n.parent)], n.id)
	}
	if n.hop == 0 && n.lineage != "" {
		m.lineages[n.lineage] = append(m.lineages[n.lineage], n.id)
	}
	// Dependencies are always in the same workflow (spawning merges the
	// workflows of all of them), so they are loaded together.
	for _, d := range n.deps {
		if dn := m.nodes[d]; dn != nil {
			dn.dependents = append(dn.dependents, n.id) // deps are distinct
		}
	}
}

// lookupLocked returns the node id, loading its workflow from the
// database when it was evicted; nil when no such session exists.
func (m *Manager) lookupLocked(ctx context.Context, id string) *node {
	if n := m.nodes[id]; n != nil {
		return n
	}
	if !strings.HasPrefix(id, SessionPrefix) {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	var wfID string
	err := m.o.DB.QueryRowContext(ctx, `SELECT workflow_id FROM workflow_nodes WHERE id = ?`, id).Scan(&wfID)
	if err != nil {
		return nil
	}
	if _, err := m.loadWorkflowLocked(ctx, wfID); err != nil {
		m.log.Warn("could not load a workflow", "workflow", wfID, "err", err)
		return nil
	}
	return m.nodes[id]
}

// finalLocked follows continuation links to the session that carries id's
// work now.
func (m *Manager) finalLocked(ctx context.Context, id string) *node {
	n := m.lookupLocked(ctx, id)
	for i := 0; n != nil && n.continuedBy != "" && i < 64; i++ {
		next := m.lookupLocked(ctx, n.continuedBy)
		if next == nil {
			break
		}
		n = next
	}
	return n
}

// lineageOf is the spawner identity of a session: the first hop of its
// continuation chain.
func (m *Manager) lineageOf(ctx context.Context, n *node) string {
	for i := 0; n.continuation != "" && i < 64; i++ {
		prev := m.lookupLocked(ctx, n.continuation)
		if prev == nil {
			break
		}
		n = prev
	}
	return n.id
}

func (m *Manager) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// emit publishes fx's events (outside the lock) and wakes Run.
func (m *Manager) emit(fx *effects) {
	if fx.wake {
		m.signal()
	}
	if m.o.Events == nil || len(fx.events) == 0 {
		return
	}
	ctx, cancel := dbctx()
	defer cancel()
	for _, e := range fx.events {
		if err := m.o.Events.Publish(ctx, e.topic, e.payload); err != nil {
			m.log.Warn("could not publish a workflow event", "topic", e.topic, "err", err)
		}
	}
}

func newID(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + hex.EncodeToString(b[:])
}

func appendUnique(list []string, s string) []string {
	if slices.Contains(list, s) {
		return list
	}
	return append(list, s)
}

// Spawn registers a sub-session and returns at once. See SpawnRequest and
// the package documentation for the rules. Errors are for requests that
// cannot be honoured at all (no objective, unknown profile, depth limit,
// a database failure); dropped dependency ids and tool names are
// SpawnResult.Warnings.
func (m *Manager) Spawn(ctx context.Context, req SpawnRequest) (SpawnResult, error) {
	req.Objective = strings.TrimSpace(req.Objective)
	req.Context = strings.TrimSpace(req.Context)
	switch {
	case req.Objective == "":
		return SpawnResult{}, fmt.Errorf("%w: objective is empty", ErrInvalid)
	case len([]rune(req.Objective)) > MaxObjectiveChars:
		return SpawnResult{}, fmt.Errorf("%w: objective is longer than %d characters; put details into context", ErrInvalid, MaxObjectiveChars)
	case len([]rune(req.Context)) > MaxContextChars:
		return SpawnResult{}, fmt.Errorf("%w: context is longer than %d characters", ErrInvalid, MaxContextChars)
	case req.Timeout < 0 || req.Timeout > MaxTimeout:
		return SpawnResult{}, fmt.Errorf("%w: timeout %s is outside 0..%s", ErrInvalid, req.Timeout, MaxTimeout)
	case req.MaxRounds < 0:
		return SpawnResult{}, fmt.Errorf("%w: max_rounds must not be negative", ErrInvalid)
	}
	mode, err := prompt.ParseMode(string(req.Mode))
	if err != nil || mode == prompt.ModeMain {
		return SpawnResult{}, fmt.Errorf("%w: system_prompt_mode %q: want minimal, full, base_only or none", ErrInvalid, req.Mode)
	}
	if req.Timeout == 0 {
		req.Timeout = m.o.DefaultTimeout
	}
	if req.Parent != "" {
		if err := req.Parent.Validate(); err != nil {
			return SpawnResult{}, fmt.Errorf("%w: parent: %v", ErrInvalid, err)
		}
	}
	toolNames, profile, warnings, err := m.checkTools(mode, req.ToolNames, req.Profile)
	if err != nil {
		return SpawnResult{}, err
	}
	feedback := m.feedback(ctx, req.Objective)

	m.mu.Lock()
	res, fx, err := m.spawnLocked(ctx, req, mode, toolNames, profile, feedback)
	m.mu.Unlock()
	if err != nil {
		return SpawnResult{}, err
	}
	m.emit(&fx)
	res.Warnings = append(warnings, res.Warnings...)
	return res, nil
}

func (m *Manager) spawnLocked(ctx context.Context, req SpawnRequest, mode prompt.Mode, toolNames []string, profile, feedback string) (SpawnResult, effects, error) {
	var warnings []string
	var fx effects
	now := m.now()
	n := &node{
		id: newID(SessionPrefix), parent: req.Parent, depth: 1, objective: req.Objective, context: req.Context,
		mode: mode, profile: profile, toolNames: toolNames, notBefore: req.NotBefore, timeout: req.Timeout,
		taskID: req.TaskID, feedback: feedback, maxRounds: req.MaxRounds, taint: req.Taint, createdAt: now, state: StatePending,
	}
	var spawner *node
	switch {
	case req.Parent.IsSubSession():
		spawner = m.lookupLocked(ctx, string(req.Parent))
		if spawner == nil {
			return SpawnResult{}, fx, fmt.Errorf("parent session %q %w", req.Parent, ErrNotFound)
		}
		if spawner.mode != prompt.ModeFull {
			return SpawnResult{}, fx, fmt.Errorf("%w: %s runs in %s mode; only full-mode workers may spawn", ErrNotAllowed, spawner.id, spawner.mode)
		}
		n.depth = spawner.depth + 1
		n.root = spawner.root
		n.lineage = m.lineageOf(ctx, spawner)
	case req.Parent != "":
		n.root, n.lineage = req.Parent, string(req.Parent)
	}
	if n.depth > m.o.MaxDepth {
		return SpawnResult{}, fx, fmt.Errorf("%w: a session at depth %d cannot spawn (the limit is %d levels)", ErrDepth, n.depth-1, m.o.MaxDepth)
	}
	if spawner != nil && spawner.state != StateRunning {
		return SpawnResult{}, fx, fmt.Errorf("%w: %s is %s, not running", ErrNotAllowed, spawner.id, spawner.state)
	}

	// Dependencies: unknown ids are stripped, so that a hallucinated id can
	// never deadlock the workflow.
	want := slices.Clone(req.DependsOn)
	if req.DependsOnPrevious {
		want = append(want, m.previousLocked(ctx, n.lineage, spawner != nil)...)
	}
	for _, d := range want {
		d = strings.TrimSpace(d)
		if d == "" || slices.Contains(n.deps, d) {
			continue
		}
		if m.lookupLocked(ctx, d) == nil {
			warnings = append(warnings, fmt.Sprintf("unknown dependency id %q dropped (no such sub-session)", d))
			m.log.Warn("unknown dependency id dropped", "dependency", d, "objective", prompt.MidTruncate(req.Objective, 80))
			continue
		}
		n.deps = append(n.deps, d)
	}

	// The workflow: the dependencies' (and a nested spawner's) workflows,
	// merged when there are several; a new one when there are none.
	var b batch
	var cands []*wf
	if spawner != nil {
		cands = append(cands, m.wfs[spawner.workflow])
	}
	for _, d := range n.deps {
		if w := m.wfs[m.nodes[d].workflow]; !slices.Contains(cands, w) {
			cands = append(cands, w)
		}
	}
	var w *wf
	switch len(cands) {
	case 0:
		w = &wf{id: newID(WorkflowPrefix), root: n.root, createdAt: now}
		b.add(`INSERT INTO workflows (id, root_thread, created_at) VALUES (?,?,?)`, w.id, string(w.root), unixNano(now))
		fx.publish(TopicWorkflowCreated, workflowPayload{Workflow: w.id, RootThread: string(w.root)})
	case 1:
		w = cands[0]
	default:
		w = m.mergePlanLocked(cands, &b, &fx)
	}
	n.workflow = w.id
	if !w.finishedAt.IsZero() {
		w.finishedAt = time.Time{}
		b.add(`UPDATE workflows SET finished_at = 0 WHERE id = ?`, w.id)
	}
	b.insertNode(n)
	b.appendMessage(n.id, 0, llm.UserText(startNote))
	ctxw, cancel := context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
	defer cancel()
	if err := commit(ctxw, m.o.DB, &b); err != nil {
		return SpawnResult{}, fx, fmt.Errorf("save sub-session: %w", err)
	}
	if len(cands) > 1 {
		m.mergeApplyLocked(w, cands)
	}
	if _, ok := m.wfs[w.id]; !ok {
		m.wfs[w.id] = w
	}
	w.nodes = append(w.nodes, n.id)
	m.nodes[n.id] = n
	m.indexLocked(n)

	var b2 batch
	m.evaluateLocked(ctx, n, &b2, &fx)
	m.sweepLocked(w.id, &b2, &fx)
	m.commitLocked(&b2)
	m.log.Info("sub-session spawned", "session", n.id, "workflow", n.workflow, "parent", n.parent, "depth", n.depth,
		"mode", n.mode, "depends_on", n.deps, "state", n.state, "waiting", n.waiting)
	res := SpawnResult{ID: n.id, Workflow: n.workflow, State: n.state, Waiting: n.waiting, Depth: n.depth,
		DependsOn: slices.Clone(n.deps), Warnings: warnings}
	if n.waiting == waitConcurrency {
		res.Waiting = ""
	}
	if n.state.Terminal() {
		res.Waiting = ""
		res.Warnings = append(res.Warnings, "not started: "+n.errText)
	}
	return res, fx, nil
}

// startNote is the first message of every worker's list.
const startNote = "Start working on the task described in the system prompt now. When you are done, reply with your final report."

// previousLocked returns the sessions depends_on_previous adds: every
// session a worker lineage spawned, or, for a user thread, those it
// spawned that have not finished yet.
func (m *Manager) previousLocked(ctx context.Context, lineage string, worker bool) []string {
	if lineage == "" {
		return nil
	}
	var out []string
	for _, id := range m.lineages[lineage] {
		if worker {
			out = append(out, id)
			continue
		}
		if f := m.finalLocked(ctx, id); f != nil && !f.state.Terminal() {
			out = append(out, id)
		}
	}
	return out
}

// mergePlanLocked picks the oldest of cands as the survivor and records
// the merge in b; mergeApplyLocked applies it in memory once committed.
func (m *Manager) mergePlanLocked(cands []*wf, b *batch, fx *effects) *wf {
	survivor := cands[0]
	for _, w := range cands[1:] {
		if w.createdAt.Before(survivor.createdAt) || w.createdAt.Equal(survivor.createdAt) && w.id < survivor.id {
			survivor = w
		}
	}
	var from []string
	for _, w := range cands {
		if w == survivor {
			continue
		}
		from = append(from, w.id)
		b.add(`UPDATE workflow_nodes SET workflow_id = ? WHERE workflow_id = ?`, survivor.id, w.id)
		b.add(`UPDATE workflows SET merged_into = ? WHERE id = ? OR merged_into = ?`, survivor.id, w.id, w.id)
	}
	fx.publish(TopicWorkflowMerged, workflowPayload{Workflow: survivor.id, RootThread: string(survivor.root), MergedFrom: from})
	m.log.Info("workflows merged", "into", survivor.id, "from", from)
	return survivor
}

func (m *Manager) mergeApplyLocked(survivor *wf, cands []*wf) {
	for _, w := range cands {
		if w == survivor {
			continue
		}
		for _, id := range w.nodes {
			if n := m.nodes[id]; n != nil {
				n.workflow = survivor.id
			}
			survivor.nodes = append(survivor.nodes, id)
		}
		delete(m.wfs, w.id)
		m.merged[w.id] = survivor.id
		for k, v := range m.merged {
			if v == w.id {
				m.merged[k] = survivor.id
			}
		}
	}
}

// checkTools validates the tool names or profile of a spawn against the
// tools a worker of mode may have. It returns the names to store (nil for
// the mode's default set), the profile, and warnings for what was dropped.
func (m *Manager) checkTools(mode prompt.Mode, names []string, profile string) ([]string, string, []string, error) {
	profile = strings.TrimSpace(profile)
	if profile == "" && names == nil {
		return nil, "", nil, nil
	}
	allowed := m.allowedTools(mode)
	set, err := tool.NewSet(allowed...)
	if err != nil {
		return nil, "", nil, fmt.Errorf("worker tools: %w", err)
	}
	var warnings []string
	own := func(n string) bool { return n == ToolSpawn || n == ToolCancel || n == ToolList }
	drop := func(unknown []string) {
		for _, u := range unknown {
			if own(u) {
				if mode != prompt.ModeFull {
					warnings = append(warnings, fmt.Sprintf("tool %q dropped: only full-mode workers get orchestration tools", u))
				}
				continue
			}
			warnings = append(warnings, fmt.Sprintf("tool %q dropped: not available to a %s-mode worker", u, mode))
		}
	}
	if profile != "" {
		got, err := m.o.Profiles.Resolve(profile, set)
		var ute *tool.UnknownToolsError
		switch {
		case errors.Is(err, tool.ErrUnknownProfile):
			return nil, "", nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		case errors.As(err, &ute):
			drop(ute.Unknown)
		case err != nil:
			return nil, "", nil, fmt.Errorf("%w: %v", ErrInvalid, err)
		}
		out := got.Names()
		if names != nil {
			warnings = append(warnings, "tool_names ignored: profile "+profile+" chose the tools")
		}
		return out, profile, warnings, nil
	}
	var clean []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			clean = append(clean, n)
		}
	}
	got, err := set.Select(clean)
	var ute *tool.UnknownToolsError
	if errors.As(err, &ute) {
		drop(ute.Unknown)
	}
	out := got.Names()
	if out == nil {
		out = []string{}
	}
	return out, "", warnings, nil
}

// orchestrationOnly are tools only full-mode workers (and the main agent)
// may have, besides those in the "orchestration" category.
var orchestrationOnly = []string{"request_restart", "send_to_channel", "list_channels"}

// defaultCategories are the tools a non-full worker gets by default:
// execution and research (seed 001).
var defaultCategories = []string{"execution", "research"}

// allowedTools are the tools a worker of mode may be given (without this
// package's own tools).
func (m *Manager) allowedTools(mode prompt.Mode) []tool.Tool {
	if m.o.Tools == nil {
		return nil
	}
	var out []tool.Tool
	for _, t := range m.o.Tools() {
		name := t.Name()
		if name == ToolSpawn || name == ToolCancel || name == ToolList {
			continue
		}
		if mode != prompt.ModeFull && (slices.Contains(orchestrationOnly, name) || slices.Contains(tool.CategoriesOf(t), "orchestration")) {
			continue
		}
		out = append(out, t)
	}
	return out
}

// chanMutex is a mutual-exclusion lock built on a channel of capacity 1.
type chanMutex chan struct{}

func (c chanMutex) Lock()   { c <- struct{}{} }
func (c chanMutex) Unlock() { <-c }

// gate is a time-gated node.
type gate struct {
	at time.Time
	id string
}

type gateHeap []gate

func (h gateHeap) Len() int           { return len(h) }
func (h gateHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h gateHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *gateHeap) Push(x any)        { *h = append(*h, x.(gate)) }
func (h *gateHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

var _ heap.Interface = (*gateHeap)(nil)
