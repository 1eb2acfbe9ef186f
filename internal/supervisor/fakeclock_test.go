package supervisor

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"
)

// fakeClock is a Clock whose timers fire only when the test advances it.
// Tests observe the pending timers to know what the supervisor waits for.
type fakeClock struct {
	mu      sync.Mutex
	now     time.Time
	timers  map[*fakeTimer]struct{}
	changed chan struct{} // closed and replaced whenever the pending set changes
}

func newFakeClock() *fakeClock {
	return &fakeClock{
		now:     time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
		timers:  make(map[*fakeTimer]struct{}),
		changed: make(chan struct{}),
	}
}

type fakeTimer struct {
	clock *fakeClock
	at    time.Time
	ch    chan time.Time
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) NewTimer(d time.Duration) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	t := &fakeTimer{clock: c, at: c.now.Add(d), ch: make(chan time.Time, 1)}
	if d <= 0 {
		t.ch <- c.now
		return t
	}
	c.timers[t] = struct{}{}
	c.notifyLocked()
	return t
}

func (t *fakeTimer) C() <-chan time.Time { return t.ch }

func (t *fakeTimer) Stop() bool {
	c := t.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.timers[t]; !ok {
		return false
	}
	delete(c.timers, t)
	c.notifyLocked()
	return true
}

// Advance moves the clock forward and fires every timer now due.
func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
	for t := range c.timers {
		if !t.at.After(c.now) {
			t.ch <- c.now
			delete(c.timers, t)
		}
	}
	c.notifyLocked()
}

func (c *fakeClock) notifyLocked() {
	close(c.changed)
	c.changed = make(chan struct{})
}

// pending returns the remaining durations of the pending timers, sorted, and
// a channel closed at the next change.
func (c *fakeClock) pending() ([]time.Duration, <-chan struct{}) {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []time.Duration
	for t := range c.timers {
		out = append(out, t.at.Sub(c.now))
	}
	slices.Sort(out)
	return out, c.changed
}

// waitPending blocks until the pending timers are exactly want.
func (c *fakeClock) waitPending(ctx context.Context, t *testing.T, want ...time.Duration) {
	t.Helper()
	for {
		got, changed := c.pending()
		if slices.Equal(got, want) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("timed out waiting for pending timers %v; have %v", want, got)
		}
	}
}

func TestFakeClock(t *testing.T) {
	c := newFakeClock()
	start := c.Now()
	a := c.NewTimer(time.Second)
	b := c.NewTimer(3 * time.Second)
	if got, _ := c.pending(); !slices.Equal(got, []time.Duration{time.Second, 3 * time.Second}) {
		t.Fatalf("pending = %v", got)
	}
	c.Advance(time.Second)
	select {
	case at := <-a.C():
		if at.Sub(start) != time.Second {
			t.Errorf("fired at %v", at.Sub(start))
		}
	default:
		t.Fatal("timer a did not fire")
	}
	if !b.Stop() || b.Stop() {
		t.Error("Stop should report true once, then false")
	}
	select {
	case <-c.NewTimer(0).C():
	default:
		t.Error("a zero timer should fire at once")
	}
	if got, _ := c.pending(); len(got) != 0 {
		t.Errorf("pending after stop = %v", got)
	}
}
