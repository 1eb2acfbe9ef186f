package app

import (
	"context"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/modelrouter"
)

type apiUsage struct{ m *modelrouter.Router }

func (u apiUsage) Usage(ctx context.Context, from, to string) ([]api.UsageRow, error) {
	rows, err := u.m.Usage(ctx, from, to)
	if err != nil {
		return nil, err
	}
	out := make([]api.UsageRow, len(rows))
	for i, r := range rows {
		out[i] = usageRowOf(r)
	}
	return out, nil
}

func usageRowOf(r modelrouter.UsageRow) api.UsageRow {
	return api.UsageRow{Day: r.Day, Role: r.Role, Backend: r.Backend, Model: r.Model, Calls: r.Calls,
		Failures: r.Failures, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
}
