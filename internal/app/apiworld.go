package app

import (
	"context"
	"fmt"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/world"
)

// apiWorld serves the world state document from the world store.
type apiWorld struct{ s *world.Store }

func (w apiWorld) Get(context.Context) (api.WorldState, error) {
	b, err := world.Encode(w.s.Get())
	if err != nil {
		return nil, fmt.Errorf("encode the world state: %w", err)
	}
	return b, nil
}

func (w apiWorld) Put(ctx context.Context, doc api.WorldState) (api.WorldState, error) {
	next, err := world.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	st, err := w.s.Replace(ctx, next, "world: edit on the web page")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	b, err := world.Encode(st)
	if err != nil {
		return nil, fmt.Errorf("encode the world state: %w", err)
	}
	return b, nil
}
