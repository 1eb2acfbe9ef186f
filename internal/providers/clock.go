package providers

import (
	"context"
	"time"
)

// Clock is the time source of the retry loop and the timeout watchdogs.
// Tests inject a manual clock (providerstest.Clock) so that nothing waits.
type Clock interface {
	Now() time.Time
	// AfterFunc calls f in its own goroutine once d has elapsed.
	AfterFunc(d time.Duration, f func()) Timer
	// Sleep waits d or until ctx ends, returning ctx.Err() in that case.
	Sleep(ctx context.Context, d time.Duration) error
}

// Timer is a pending AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not happened yet and reports whether
	// it did so.
	Stop() bool
}

// SystemClock is the real clock.
type SystemClock struct{}

// Now returns time.Now().
func (SystemClock) Now() time.Time { return time.Now() }

// AfterFunc wraps time.AfterFunc.
func (SystemClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Sleep waits for d or for ctx to end.
func (SystemClock) Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
