package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/dreaming"
)

// apiDreams serves the dream reports, their revert and a dream now.
type apiDreams struct {
	d *dreaming.Dreamer
	// configured reports whether a language model is configured.
	configured func() bool
}

func (s apiDreams) Dream(ctx context.Context, trigger string) (api.Dream, error) {
	if !s.configured() {
		return api.Dream{}, fmt.Errorf("%w: dreaming needs a language model; none is configured (see reverie doctor)", api.ErrConflict)
	}
	rep, err := s.d.Dream(ctx, trigger)
	if err != nil {
		return api.Dream{}, dreamError(err)
	}
	return dreamOf(rep), nil
}

func dreamError(err error) error {
	switch {
	case errors.Is(err, dreaming.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, dreaming.ErrReverted):
		return fmt.Errorf("%w: %w", api.ErrConflict, err)
	case errors.Is(err, dreaming.ErrBusy):
		return fmt.Errorf("%w: %w", api.ErrBusy, err)
	}
	return err
}

func (s apiDreams) List(ctx context.Context, limit int) ([]api.Dream, error) {
	reps, err := s.d.Reports(ctx, limit)
	if err != nil {
		return nil, err
	}
	out := make([]api.Dream, len(reps))
	for i, r := range reps {
		out[i] = dreamOf(r)
	}
	return out, nil
}

func dreamOf(r dreaming.Report) api.Dream {
	d := api.Dream{ID: r.ID, Trigger: r.Trigger, Started: r.Started, Finished: r.Finished, ModelCalls: r.ModelCalls,
		Usage:    api.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens},
		Revision: r.Revision, Changes: r.Changes, Reverted: r.Reverted, Components: make([]api.DreamComponent, len(r.Components))}
	for i, c := range r.Components {
		lines := c.Lines
		if lines == nil {
			lines = []string{}
		}
		d.Components[i] = api.DreamComponent{Name: c.Name, Status: string(c.Status), Detail: c.Detail, Lines: lines}
	}
	return d
}

func (s apiDreams) Revert(ctx context.Context, id int64) (api.DreamRevert, error) {
	n, err := s.d.Revert(ctx, id)
	if err != nil {
		return api.DreamRevert{}, dreamError(err)
	}
	return api.DreamRevert{ID: id, Undone: n}, nil
}
