package world

import (
	"context"
	"fmt"

	"github.com/reverie-ai/reverie/tool"
)

// ToolName is the name of the tool that changes the world state.
const ToolName = "world_apply_ops"

// applyArgs are world_apply_ops's arguments.
type applyArgs struct {
	Ops []OpSpec `json:"ops" jsonschema:"the changes, applied in order, all or nothing"`
}

// applyResult is world_apply_ops's answer.
type applyResult struct {
	// Applied counts the ops; Changed says whether the state differs.
	Applied int  `json:"applied"`
	Changed bool `json:"changed"`
	// State is the world state after the ops, as the prompt shows it.
	State string `json:"state"`
}

// ApplyOpsTool is the world_apply_ops tool: typed changes to the world
// state, validated together and applied all or nothing.
func ApplyOpsTool(s *Store) tool.Tool {
	return tool.New(ToolName,
		"Change the durable world state shown in your prompt: the user's name, location and time zone, your name, "+
			"the current project, the topics in play, the user's goals and standing rules. Give every change as one op; "+
			"they are checked together and applied all or nothing. Use it when the user tells you one of these facts "+
			"or asks you to keep or drop a goal or rule.",
		func(ctx context.Context, a applyArgs) (any, error) {
			ops, err := ParseOps(a.Ops)
			if err != nil {
				return nil, err
			}
			after, changed, err := s.applyOps(ctx, ops)
			if err != nil {
				return nil, fmt.Errorf("world state: %w", err)
			}
			summary := after.Summary()
			if summary == "" {
				summary = "(nothing known yet)"
			}
			return applyResult{Applied: len(ops), Changed: changed, State: summary}, nil
		}, tool.WithCategories("memory"))
}
