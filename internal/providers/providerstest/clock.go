// Package providerstest provides a manual clock for testing the model
// providers' retries and timeouts without waiting.
package providerstest

import (
	"context"
	"slices"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/internal/providers"
)

// Clock is a providers.Clock that only moves when told to. Sleep records
// the requested duration and advances the clock by it at once; Advance moves
// the clock and runs the AfterFunc callbacks that fall due, synchronously, in
// deadline order. It is safe for concurrent use.
type Clock struct {
	mu     sync.Mutex
	cond   *sync.Cond
	now    time.Time
	timers []*timer
	sleeps []time.Duration
}

type timer struct {
	c        *Clock
	d        time.Duration
	deadline time.Time
	f        func()
	done     bool
}

// NewClock returns a clock set to 2026-01-01T00:00:00Z.
func NewClock() *Clock {
	c := &Clock{now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	c.cond = sync.NewCond(&c.mu)
	return c
}

var _ providers.Clock = (*Clock)(nil)

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc registers f to run when the clock has advanced by d.
func (c *Clock) AfterFunc(d time.Duration, f func()) providers.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &timer{c: c, d: d, deadline: c.now.Add(d), f: f}
	c.timers = append(c.timers, t)
	c.cond.Broadcast()
	return t
}

func (t *timer) Stop() bool {
	t.c.mu.Lock()
	defer t.c.mu.Unlock()
	if t.done {
		return false
	}
	t.done = true
	t.c.timers = slices.DeleteFunc(t.c.timers, func(x *timer) bool { return x == t })
	t.c.cond.Broadcast()
	return true
}

// Sleep records d, advances the clock by d and returns, or returns ctx.Err()
// when ctx has already ended.
func (c *Clock) Sleep(ctx context.Context, d time.Duration) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.mu.Lock()
	c.sleeps = append(c.sleeps, d)
	c.mu.Unlock()
	c.Advance(d)
	return ctx.Err()
}

// Sleeps returns every duration passed to Sleep, in order.
func (c *Clock) Sleeps() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.sleeps)
}

// Advance moves the clock forward by d and runs the callbacks that fall due.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	var due []*timer
	for _, t := range c.timers {
		if !t.deadline.After(c.now) {
			t.done = true
			due = append(due, t)
		}
	}
	c.timers = slices.DeleteFunc(c.timers, func(x *timer) bool { return x.done })
	c.cond.Broadcast()
	c.mu.Unlock()
	slices.SortStableFunc(due, func(a, b *timer) int { return a.deadline.Compare(b.deadline) })
	for _, t := range due {
		t.f()
	}
}

// Armed returns the durations of the pending timers, in creation order.
func (c *Clock) Armed() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]time.Duration, len(c.timers))
	for i, t := range c.timers {
		out[i] = t.d
	}
	return out
}

// BlockUntilArmed waits until a timer created with duration d is pending.
func (c *Clock) BlockUntilArmed(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for !slices.ContainsFunc(c.timers, func(t *timer) bool { return t.d == d }) {
		c.cond.Wait()
	}
}
