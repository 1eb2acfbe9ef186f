package app

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/tool"
)

// buildWorkflows opens the workflow manager (sub-sessions on the
// sub_sessions model role, results delivered through the router) and
// offers its workflows to the HTTP API. The router and the prompt sources
// must exist; the scheduler is built afterwards so that its sub_session
// tasks run here.
func (a *App) buildWorkflows(ctx context.Context) error {
	cfg := a.Config.Workflow
	continuations := cfg.MaxContinuations
	if continuations == 0 {
		continuations = -1 // configured off (the manager's zero value is its default)
	}
	opts := workflow.Options{
		Migrations:       a.migrations,
		DB:               a.DB,
		Model:            a.Models.Model(modelrouter.RoleSubSessions),
		Tools:            a.workerTools(),
		Profiles:         tool.Profiles(cfg.Profiles),
		Deliver:          a.Router,
		Events:           a.Bus,
		Interactions:     a.Interactions,
		DataDir:          a.opts.DataDir,
		Location:         a.Config.Location(),
		MaxConcurrent:    cfg.MaxConcurrent,
		DefaultTimeout:   cfg.DefaultTimeout,
		MaxContinuations: continuations,
		MaxDepth:         cfg.MaxDepth,
		Loop:             a.loopOptions(),
		Now:              a.opts.Now,
		Logger:           a.Logger.With("component", "workflow"),
	}
	if a.Sources != nil {
		opts.Sources = a.Sources
	}
	opts.ProjectStatus = a.projectStatusText
	m, err := workflow.Open(ctx, opts)
	if err != nil {
		return fmt.Errorf("open workflows: %w", err)
	}
	a.Workflows = m
	a.API.Workflows = apiWorkflows{m}
	return nil
}

// projectStatusText is the project status of thread as workers read it.
func (a *App) projectStatusText(ctx context.Context, thread chat.ThreadID) (string, error) {
	if a.API == nil || a.API.Project == nil {
		return "", nil
	}
	st, err := a.API.Project.Status(ctx, thread)
	if err != nil {
		return "", err
	}
	return st.Text, nil
}

// checkProfiles warns about tool profiles naming tools this build does not
// have (an extension may be disabled); run once the tool set is final.
func (a *App) checkProfiles() {
	set, err := tool.NewSet(a.turnTools()...)
	if err != nil {
		return
	}
	if err := tool.Profiles(a.Config.Workflow.Profiles).Check(set); err != nil {
		a.Logger.Warn("workflow tool profiles name unavailable tools (they are left out)", "err", err)
	}
	all := a.turnTools()
	if a.Workflows != nil {
		all = append(all, a.Workflows.Tools("")...) // only their names are read
	}
	for key, entries := range map[string][]string{"tools.allow": a.Config.Tools.Allow, "tools.deny": a.Config.Tools.Deny} {
		for _, e := range entries {
			if !slices.ContainsFunc(all, func(t tool.Tool) bool { return matchesTool(t, []string{e}) }) {
				a.Logger.Warn("a tool setting names no available tool", "key", key, "entry", e)
			}
		}
	}
}

// mainTools applies tools.allow and tools.deny to the main assistant's
// tools (ts is changed in place).
func (a *App) mainTools(ts []tool.Tool) []tool.Tool {
	allow, deny := a.Config.Tools.Allow, a.Config.Tools.Deny
	if len(allow) == 0 && len(deny) == 0 {
		return ts
	}
	out := ts[:0]
	for _, t := range ts {
		if (len(allow) == 0 || matchesTool(t, allow)) && !matchesTool(t, deny) {
			out = append(out, t)
		}
	}
	return out
}

// matchesTool reports whether t is named by one of entries: a tool name or
// "@category".
func matchesTool(t tool.Tool, entries []string) bool { return tool.Matches(t, entries) }

// threadTools are the tools of one turn in thread: the shared tool set and
// spawn_sub_session, cancel_sub_session and list_sub_sessions bound to the
// thread.
// workerTools returns the tools background workers may be given: the
// turn's, plus harvest_memory (the memory harvest's append_memory, storing
// with source harvest), which the main agent never sees.
func (a *App) workerTools() func() []tool.Tool {
	if a.Memory == nil {
		return a.turnTools
	}
	harvest := memory.HarvestTool(a.Memory)
	return func() []tool.Tool { return append(a.turnTools(), harvest) }
}

func (a *App) threadTools(thread chat.ThreadID) []tool.Tool {
	ts := a.turnTools()
	if a.Workflows != nil {
		ts = append(ts, a.Workflows.Tools(thread)...)
	}
	return a.mainTools(ts)
}

// scheduledSubSessions runs the scheduler's sub_session tasks as full-mode
// sub-sessions (nil before the workflow manager exists).
func (a *App) scheduledSubSessions() scheduler.SubSessions {
	if a.Workflows == nil {
		return nil
	}
	return schedulerSubSessions{a}
}

type schedulerSubSessions struct{ a *App }

func (s schedulerSubSessions) SpawnScheduled(ctx context.Context, req scheduler.SubSessionRequest) (string, error) {
	thread := req.Thread
	if thread == "" {
		thread = s.a.mainThread(ctx)
	}
	res, err := s.a.Workflows.Spawn(ctx, workflow.SpawnRequest{
		Objective: req.Objective, Mode: prompt.ModeFull, Parent: thread, TaskID: req.TaskID, Taint: req.Taint,
	})
	if err != nil {
		return "", err
	}
	return res.ID, nil
}

// apiWorkflows serves workflows to the HTTP API.
type apiWorkflows struct{ m *workflow.Manager }

func (w apiWorkflows) List(ctx context.Context, q api.WorkflowQuery) ([]api.Workflow, error) {
	ws, err := w.m.ListWorkflows(ctx, workflow.ListOptions{Active: q.Active, Thread: q.Thread, Limit: q.Limit})
	if err != nil {
		return nil, apiWorkflowError(err)
	}
	out := make([]api.Workflow, len(ws))
	for i, wf := range ws {
		out[i] = apiWorkflow(wf)
	}
	return out, nil
}

func (w apiWorkflows) Get(ctx context.Context, id string) (api.Workflow, error) {
	wf, err := w.m.GetWorkflow(ctx, id)
	if err != nil {
		return api.Workflow{}, apiWorkflowError(err)
	}
	return apiWorkflow(wf), nil
}

func (w apiWorkflows) Cancel(ctx context.Context, id string) ([]string, error) {
	ids, err := w.m.Cancel(ctx, id, "cancelled by the user")
	if err != nil {
		return nil, apiWorkflowError(err)
	}
	return ids, nil
}

func apiWorkflowError(err error) error {
	switch {
	case errors.Is(err, workflow.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, workflow.ErrFinished):
		return fmt.Errorf("%w: %w", api.ErrConflict, err)
	case errors.Is(err, workflow.ErrInvalid):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func apiWorkflow(w workflow.Workflow) api.Workflow {
	out := api.Workflow{ID: w.ID, RootThread: w.RootThread, State: string(w.State), CreatedAt: w.CreatedAt,
		FinishedAt: w.FinishedAt, MergedFrom: w.MergedFrom, Nodes: make([]api.WorkflowNode, len(w.Nodes))}
	for i, n := range w.Nodes {
		out.Nodes[i] = api.WorkflowNode{
			ID: n.ID, Workflow: n.Workflow, Parent: n.Parent, Depth: n.Depth, Objective: n.Objective, Mode: n.Mode,
			Profile: n.Profile, DependsOn: n.DependsOn, NotBefore: n.NotBefore, TimeoutSeconds: n.TimeoutSeconds,
			State: string(n.State), Waiting: n.Waiting, Result: n.Result, Error: n.Error, Hop: n.Hop,
			ContinuationOf: n.ContinuationOf, ContinuedBy: n.ContinuedBy, ToolCalls: n.ToolCalls,
			Usage:     api.Usage{InputTokens: n.Usage.InputTokens, OutputTokens: n.Usage.OutputTokens},
			CreatedAt: n.CreatedAt, StartedAt: n.StartedAt, FinishedAt: n.FinishedAt,
		}
	}
	return out
}
