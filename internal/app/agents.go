package app

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/subagent"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/tool"
)

// buildAgents sets up the specialised agents offered to the main agent as
// agent_NAME tools: the built-in ones and <data>/agents/NAME.md (reloaded
// when they change), run on their model role with the approvals of every
// inference. The models, the interaction log and the approvals must exist.
func (a *App) buildAgents() error {
	lib := subagent.NewLibrary(subagent.Options{
		Dir: filepath.Join(a.opts.DataDir, subagent.DirName), Builtin: subagent.Builtin(), Now: a.opts.Now,
		Logger: a.Logger.With("component", "agents"),
	})
	run, err := subagent.NewRunner(subagent.RunnerOptions{
		Model: func(role string) toolloop.Model { return a.Models.Model(role) },
		// The tools agents choose from: the turn's (Select never gives an
		// agent the agents).
		Tools: a.fixedAndDynamicTools, Loop: a.loopOptions(), Events: a.Bus, Interactions: a.Interactions,
		Location: a.Config.Location(), Now: a.opts.Now, Logger: a.Logger.With("component", "agents"),
	})
	if err != nil {
		return fmt.Errorf("set up agents: %w", err)
	}
	a.Agents = lib
	a.agentOffer = subagent.NewOffer(lib, run)
	return nil
}

// agentTools turns every AgentProvider whose descriptor asks for it
// (AsTool) into the tool agent_NAME, as the orchestrator of seed 004
// exposes its specialised agents. The call carries the calling turn's
// thread; the agent's answer and calls are the tool result.
func (a *App) agentTools() []tool.Tool {
	var out []tool.Tool
	for _, ag := range a.Kernel.Agents() {
		d := ag.AgentDescriptor()
		if !d.AsTool {
			continue
		}
		if err := tool.CheckName(subagent.ToolPrefix + d.Name); err != nil {
			a.Logger.Warn("agent not exposed as a tool: bad name", "agent", d.Name, "err", err)
			continue
		}
		out = append(out, subagent.NewTool(d.Name, d.Description, 0, func(ctx context.Context, t subagent.Task) (subagent.Output, error) {
			return invokeAgent(ctx, d.Name, ag, t)
		}))
	}
	return out
}

func invokeAgent(ctx context.Context, name string, ag extension.AgentProvider, t subagent.Task) (subagent.Output, error) {
	inv := extension.AgentInvocation{Task: t.Task, Context: t.Context}
	if c, ok := tool.CallFrom(ctx); ok {
		inv.Thread = c.Thread
		c.Delegate, c.Agent = name, subagent.ToolPrefix+name
		ctx = tool.WithCall(ctx, c)
	}
	res, err := ag.Invoke(ctx, inv)
	if err != nil {
		return subagent.Output{}, err
	}
	out := subagent.Output{Agent: name, Result: res.Text, ToolCalls: []subagent.CallInfo{}}
	for _, c := range res.ToolCalls {
		out.ToolCalls = append(out.ToolCalls, subagent.CallInfo{Name: c.Name, Arguments: c.Arguments, OK: c.Error == "", Error: c.Error})
	}
	return out, nil
}
