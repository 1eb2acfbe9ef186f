package app

import (
	"context"

	"github.com/reverie-ai/reverie/internal/footprint"
)

// keepFootprint returns freed heap to the OS once start-up has settled and
// again whenever use has grown the private memory (see package footprint).
func (a *App) keepFootprint(ctx context.Context) error {
	k := &footprint.Keeper{Logger: a.Logger}
	return k.Run(ctx)
}
