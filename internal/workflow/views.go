package workflow

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

// Views are read from the database (every transition is committed before
// the lock is released, so a view is a consistent snapshot per query), with
// the in-memory reason a pending node waits added.

// GetWorkflow returns workflow id (a merged workflow's id resolves to the
// workflow it went into) with its nodes in creation order.
func (m *Manager) GetWorkflow(ctx context.Context, id string) (Workflow, error) {
	wfID, err := resolveWorkflowID(ctx, m.o.DB, id)
	if err != nil {
		return Workflow{}, err
	}
	ws, err := m.workflowViews(ctx, []string{wfID})
	if err != nil {
		return Workflow{}, err
	}
	if len(ws) == 0 {
		return Workflow{}, fmt.Errorf("workflow %q %w", id, ErrNotFound)
	}
	return ws[0], nil
}

// ListWorkflows returns workflows newest first (see ListOptions).
func (m *Manager) ListWorkflows(ctx context.Context, opts ListOptions) ([]Workflow, error) {
	limit := opts.Limit
	if limit <= 0 {
		limit = 50
	}
	limit = min(limit, 500)
	where := []string{"merged_into = ''"}
	var args []any
	if opts.Thread != "" {
		where, args = append(where, "root_thread = ?"), append(args, string(opts.Thread))
	}
	if opts.Active {
		where = append(where, "EXISTS (SELECT 1 FROM workflow_nodes n WHERE n.workflow_id = workflows.id AND n.state IN ('pending','running'))")
	}
	ids, err := sqlite.Rows(ctx, m.o.DB, sqlite.Scan1[string], `SELECT id FROM workflows WHERE `+strings.Join(where, " AND ")+
		` ORDER BY created_at DESC, id LIMIT ?`, append(args, limit)...)
	if err != nil {
		return nil, fmt.Errorf("list workflows: %w", err)
	}
	return m.workflowViews(ctx, ids)
}

// workflowViews builds the views of ids, in that order.
func (m *Manager) workflowViews(ctx context.Context, ids []string) ([]Workflow, error) {
	if len(ids) == 0 {
		return []Workflow{}, nil
	}
	ph := strings.TrimSuffix(strings.Repeat("?,", len(ids)), ",")
	args := make([]any, len(ids))
	for i, id := range ids {
		args[i] = id
	}
	wrows, err := queryWorkflows(ctx, m.o.DB, `WHERE id IN (`+ph+`)`, args...)
	if err != nil {
		return nil, fmt.Errorf("read workflows: %w", err)
	}
	nodes, err := queryNodes(ctx, m.o.DB, `WHERE workflow_id IN (`+ph+`) ORDER BY created_at, rowid`, args...)
	if err != nil {
		return nil, fmt.Errorf("read workflow nodes: %w", err)
	}
	merged := map[string][]string{}
	mrows, err := m.o.DB.QueryContext(ctx, `SELECT id, merged_into FROM workflows WHERE merged_into IN (`+ph+`) ORDER BY created_at`, args...)
	if err != nil {
		return nil, fmt.Errorf("read merged workflows: %w", err)
	}
	for mrows.Next() {
		var from, into string
		if err := mrows.Scan(&from, &into); err != nil {
			mrows.Close()
			return nil, err
		}
		merged[into] = append(merged[into], from)
	}
	mrows.Close()

	byID := map[string]*Workflow{}
	for _, r := range wrows {
		w := &Workflow{ID: r.id, RootThread: string(r.root), CreatedAt: r.createdAt, MergedFrom: merged[r.id], Nodes: []Node{}}
		if !r.finishedAt.IsZero() {
			t := r.finishedAt
			w.FinishedAt = &t
		}
		byID[r.id] = w
	}
	m.mu.Lock()
	for _, n := range nodes {
		if w := byID[n.workflow]; w != nil {
			v := view(n)
			if live := m.nodes[n.id]; live != nil && live.state == StatePending {
				v.Waiting = live.waiting
				if m.phase != phaseRunning {
					v.Waiting = "stopped"
				}
			}
			w.Nodes = append(w.Nodes, v)
		}
	}
	m.mu.Unlock()
	out := make([]Workflow, 0, len(ids))
	for _, id := range ids {
		if w := byID[id]; w != nil {
			w.State = workflowState(w.Nodes)
			out = append(out, *w)
		}
	}
	return out, nil
}

// workflowState derives a workflow's state from its nodes.
func workflowState(nodes []Node) State {
	var failed, cancelled bool
	for _, n := range nodes {
		if !n.State.Terminal() {
			return StateRunning
		}
		if n.ContinuedBy != "" {
			continue
		}
		failed = failed || n.State == StateFailed || n.State == StateTimeout
		cancelled = cancelled || n.State == StateCancelled
	}
	switch {
	case failed:
		return StateFailed
	case cancelled:
		return StateCancelled
	}
	return StateCompleted
}

// GetNode returns one sub-session.
func (m *Manager) GetNode(ctx context.Context, id string) (Node, error) {
	nodes, err := queryNodes(ctx, m.o.DB, `WHERE id = ?`, id)
	if err != nil {
		return Node{}, fmt.Errorf("read sub-session %s: %w", id, err)
	}
	if len(nodes) == 0 {
		return Node{}, fmt.Errorf("sub-session %q %w", id, ErrNotFound)
	}
	v := view(nodes[0])
	m.mu.Lock()
	if live := m.nodes[id]; live != nil && live.state == StatePending {
		v.Waiting = live.waiting
	}
	m.mu.Unlock()
	return v, nil
}

// Messages returns a sub-session's saved message list.
func (m *Manager) Messages(ctx context.Context, id string) ([]llm.Message, error) {
	var one int
	err := m.o.DB.QueryRowContext(ctx, `SELECT 1 FROM workflow_nodes WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sub-session %q %w", id, ErrNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("read sub-session %s: %w", id, err)
	}
	return loadMessages(ctx, m.o.DB, id)
}

func view(n *node) Node {
	v := Node{
		ID: n.id, Workflow: n.workflow, Parent: string(n.parent), RootThread: string(n.root), Depth: n.depth,
		Objective: n.objective, Context: n.context, Mode: string(n.mode), Profile: n.profile, Tools: n.toolNames,
		DependsOn: n.deps, TimeoutSeconds: n.timeout.Seconds(), TaskID: n.taskID, State: n.state,
		Result: n.result, Error: n.errText, Hop: n.hop, ContinuationOf: n.continuation, ContinuedBy: n.continuedBy,
		ToolCalls: n.toolCalls, Usage: n.usage, Verdict: n.verdict, Delivered: n.delivered, CreatedAt: n.createdAt,
	}
	if v.DependsOn == nil {
		v.DependsOn = []string{}
	}
	if !n.notBefore.IsZero() {
		t := n.notBefore
		v.NotBefore = &t
	}
	if !n.startedAt.IsZero() {
		t := n.startedAt
		v.StartedAt = &t
	}
	if !n.finishedAt.IsZero() {
		t := n.finishedAt
		v.FinishedAt = &t
	}
	return v
}
