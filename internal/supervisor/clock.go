package supervisor

import "time"

// Clock is the supervisor's source of time: every wait it performs (restart
// backoff, restart-file polls, health probes, shutdown grace) is a Timer from
// it, and uptime and crash windows are measured with Now. Tests inject a fake.
type Clock interface {
	Now() time.Time
	NewTimer(d time.Duration) Timer
}

// Timer is a one-shot timer, like *time.Timer.
type Timer interface {
	// C delivers the time once the timer fires.
	C() <-chan time.Time
	// Stop prevents the timer from firing; it reports whether it did so.
	Stop() bool
}

// realClock is the wall clock.
type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) NewTimer(d time.Duration) Timer { return realTimer{time.NewTimer(d)} }

type realTimer struct{ t *time.Timer }

func (r realTimer) C() <-chan time.Time { return r.t.C }
func (r realTimer) Stop() bool          { return r.t.Stop() }
