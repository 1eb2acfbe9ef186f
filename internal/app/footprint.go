package app

import (
	"context"

	"github.com/reverie-ai/reverie/internal/footprint"
)

// keepFootprint releases start-up-only memory once start-up has settled and
// again whenever use has brought many pages back (see package footprint).
func (a *App) keepFootprint(ctx context.Context) error {
	k := &footprint.Keeper{Logger: a.Logger}
	return k.Run(ctx)
}
