package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/pulse"
)

// apiPulse serves the working memory from the pulse store.
type apiPulse struct{ s *pulse.Store }

func pulseError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pulse.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, pulse.ErrEmpty), errors.Is(err, pulse.ErrTooLong), errors.Is(err, pulse.ErrSecret),
		errors.Is(err, pulse.ErrPriority), errors.Is(err, pulse.ErrStatus), errors.Is(err, pulse.ErrNoChange):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func pulseItemOf(it pulse.Item) api.PulseItem {
	return api.PulseItem{ID: it.ID, Text: it.Text, Priority: it.Priority, Status: string(it.Status), Thread: string(it.Thread),
		Source: string(it.Source), CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, CompletedAt: api.TimePtr(it.CompletedAt)}
}

func (p apiPulse) List(ctx context.Context, status string) ([]api.PulseItem, error) {
	f := pulse.Filter{}
	switch status {
	case "all":
	case "":
		f.Status = pulse.StatusActive
	default:
		st, err := pulse.ParseStatus(status)
		if err != nil {
			return nil, pulseError(err)
		}
		f.Status = st
	}
	items, err := p.s.List(ctx, f)
	if err != nil {
		return nil, pulseError(err)
	}
	out := make([]api.PulseItem, len(items))
	for i, it := range items {
		out[i] = pulseItemOf(it)
	}
	return out, nil
}

func (p apiPulse) Add(ctx context.Context, in api.PulseInput) (api.PulseItem, error) {
	n := pulse.NewItem{Source: pulse.SourceUser}
	if in.Text != nil {
		n.Text = *in.Text
	}
	if in.Priority != nil {
		n.Priority = *in.Priority
	}
	if in.Thread != nil {
		n.Thread = chat.ThreadID(*in.Thread)
	}
	it, err := p.s.Add(ctx, n)
	if err != nil {
		return api.PulseItem{}, pulseError(err)
	}
	if in.Status != nil && *in.Status != string(pulse.StatusActive) {
		return p.Update(ctx, it.ID, api.PulseInput{Status: in.Status})
	}
	return pulseItemOf(it), nil
}

func (p apiPulse) Update(ctx context.Context, id int64, in api.PulseInput) (api.PulseItem, error) {
	patch := pulse.Patch{Text: in.Text, Priority: in.Priority}
	if in.Status != nil {
		st, err := pulse.ParseStatus(*in.Status)
		if err != nil {
			return api.PulseItem{}, pulseError(err)
		}
		patch.Status = &st
	}
	if in.Thread != nil {
		t := chat.ThreadID(*in.Thread)
		patch.Thread = &t
	}
	it, err := p.s.Update(ctx, id, patch)
	if err != nil {
		return api.PulseItem{}, pulseError(err)
	}
	return pulseItemOf(it), nil
}

func (p apiPulse) Delete(ctx context.Context, id int64) error { return pulseError(p.s.Delete(ctx, id)) }
