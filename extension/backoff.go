package extension

import (
	"context"
	"math"
	"math/rand/v2"
	"time"
)

// Backoff is a capped exponential backoff with jitter, for anything that
// retries (a channel's polling, event deliveries, model calls): the wait
// before retry n (from 0) is a random duration in [d/2, d], where d is Base
// doubled n times and capped at Max. The jitter keeps many retriers from
// waking together; the lower half bound keeps the wait growing.
type Backoff struct {
	Base, Max time.Duration
	// Jitter returns a number in [0,1) that places the wait in the upper
	// half; nil means math/rand/v2. Tests pass a constant.
	Jitter func() float64
}

// Delay returns the wait before retry n (0 for the first retry). A zero
// Max means Base is not capped below; a zero Base waits nothing.
func (b Backoff) Delay(n int) time.Duration {
	d := b.Base
	for i := 0; i < n && (b.Max <= 0 || d < b.Max) && d > 0 && d <= math.MaxInt64/2; i++ {
		d *= 2
	}
	if b.Max > 0 {
		d = min(d, b.Max)
	}
	jitter := b.Jitter
	if jitter == nil {
		jitter = rand.Float64
	}
	half := d / 2
	return half + time.Duration(jitter()*float64(d-half))
}

// Sleep waits d, or less when ctx ends first, and returns ctx's error then
// (nil when d passed). Retry loops and delayed starts use it between
// attempts.
func Sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
