package channelkit

import (
	"context"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// Run-loop backoff defaults: one second doubling to a minute.
const (
	DefaultBackoffBase = time.Second
	DefaultBackoffMax  = time.Minute
)

// Backoff is the stateful backoff of a channel's run loop (polling,
// syncing, connecting): each failure in a row waits longer, from Base
// doubling to Max (jittered into the upper half, extension.Backoff), and a
// success resets it. The zero value waits DefaultBackoffBase doubling to
// DefaultBackoffMax with a real timer. One goroutine uses it (the run
// loop's).
type Backoff struct {
	// Delays are the waits; zero Base and Max mean the defaults.
	Delays extension.Backoff
	// Sleep waits d or until ctx ends (nil: extension.Sleep); tests inject
	// one, or run under testing/synctest.
	Sleep func(ctx context.Context, d time.Duration) error

	failures int
}

// Failures is the number of failures since the last success.
func (b *Backoff) Failures() int { return b.failures }

// Next is the wait the next Fail takes when the server does not say.
func (b *Backoff) Next() time.Duration {
	d := b.Delays
	if d.Base == 0 && d.Max == 0 {
		d.Base, d.Max = DefaultBackoffBase, DefaultBackoffMax
	}
	return d.Delay(b.failures)
}

// Fail counts a failure and waits before the next attempt: wait when it is
// positive (what the server asked, a retry-after), else Next. It returns
// ctx's error when ctx ends first.
func (b *Backoff) Fail(ctx context.Context, wait time.Duration) error {
	if wait <= 0 {
		wait = b.Next()
	}
	b.failures++
	sleep := b.Sleep
	if sleep == nil {
		sleep = extension.Sleep
	}
	return sleep(ctx, wait)
}

// Succeeded resets the backoff after a success and reports whether it
// ended a run of failures (for a "works again" log line).
func (b *Backoff) Succeeded() bool {
	recovered := b.failures > 0
	b.failures = 0
	return recovered
}
