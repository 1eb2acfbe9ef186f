package app

import (
	"context"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/subagent"
)

type apiInteractions struct{ s *interactions.Store }

// knownActions are the interaction log's action names for the filter.
var knownActions = []interactions.Action{
	interactions.ActionInference, interactions.ActionToolCall, interactions.ActionSystemEvent,
	interactions.ActionSeed, interactions.ActionCompaction, interactions.ActionSupervisorCheck,
	interactions.ActionCondenseRequest, interactions.ActionMemoryHarvest, interactions.ActionReflectionRule,
	interactions.ActionReflectionAnalysis, subagent.ActionAgent,
}

func (i apiInteractions) List(ctx context.Context, q api.InteractionQuery) ([]api.Interaction, error) {
	es, err := i.s.List(ctx, interactions.Filter{Action: interactions.Action(q.Action), Thread: q.Thread,
		Since: q.Since, BeforeID: q.BeforeID, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]api.Interaction, len(es))
	for n, e := range es {
		out[n] = interactionOf(e)
	}
	return out, nil
}

func interactionOf(e interactions.Entry) api.Interaction {
	return api.Interaction{ID: e.ID, At: e.At, Thread: e.Thread, Action: string(e.Action), Summary: e.Summary,
		Detail: e.Detail, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
		DurationMS: e.Duration.Milliseconds(), Error: e.Error}
}

func (i apiInteractions) Actions() []string {
	out := make([]string, len(knownActions))
	for n, a := range knownActions {
		out[n] = string(a)
	}
	return out
}
