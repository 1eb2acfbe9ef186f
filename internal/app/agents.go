package app

import (
	"context"
	"errors"
	"strings"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/tool"
)

// agentArgs are the arguments of an agent exposed as a tool.
type agentArgs struct {
	Task    string `json:"task" jsonschema:"what the agent should do, self-contained"`
	Context string `json:"context,omitempty" jsonschema:"background the agent needs (facts, earlier results)"`
}

// agentTools turns every AgentProvider whose descriptor asks for it
// (AsTool) into a tool of the same name, as the orchestrator of seed 004
// exposes its specialised agents. The call runs on the calling turn's
// thread; the agent's answer is the tool result.
func (a *App) agentTools() []tool.Tool {
	var out []tool.Tool
	for _, ag := range a.Kernel.Agents() {
		d := ag.AgentDescriptor()
		if !d.AsTool {
			continue
		}
		if err := tool.CheckName(d.Name); err != nil {
			a.Logger.Warn("agent not exposed as a tool: bad name", "agent", d.Name, "err", err)
			continue
		}
		desc := strings.TrimSpace(d.Description)
		if desc == "" {
			desc = "Hand a task to the " + d.Name + " agent."
		}
		out = append(out, tool.New(d.Name, desc, func(ctx context.Context, args agentArgs) (any, error) {
			return invokeAgent(ctx, ag, args)
		}))
	}
	return out
}

func invokeAgent(ctx context.Context, ag extension.AgentProvider, args agentArgs) (any, error) {
	task := strings.TrimSpace(args.Task)
	if task == "" {
		return nil, errors.New("task is empty: say what the agent should do")
	}
	inv := extension.AgentInvocation{Task: task, Context: strings.TrimSpace(args.Context)}
	if c, ok := tool.CallFrom(ctx); ok {
		inv.Thread = c.Thread
	}
	res, err := ag.Invoke(ctx, inv)
	if err != nil {
		return nil, err
	}
	return res.Text, nil
}
