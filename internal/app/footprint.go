package app

import (
	"context"
	"time"

	"github.com/reverie-ai/reverie/internal/footprint"
)

// settleDelay is how long after "agent ready" start-up work (recovery,
// catch-up runs, the first housekeeping) is given before the pages only
// start-up needed are released.
const settleDelay = 5 * time.Second

// trimWhenSettled releases start-up-only memory once (see package
// footprint).
func (a *App) trimWhenSettled(ctx context.Context) error {
	t := time.NewTimer(settleDelay)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return nil
	case <-t.C:
	}
	res, err := footprint.Trim()
	if err != nil {
		a.Logger.Debug("could not release start-up pages", "err", err)
		return nil
	}
	a.Logger.Debug("released start-up pages", "segments", res.Segments, "mapped_mib", res.Bytes>>20)
	return nil
}
