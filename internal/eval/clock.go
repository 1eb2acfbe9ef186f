package eval

import (
	"sync/atomic"
	"time"
)

// Clock is a store's clock in an evaluation, standing where the evaluation
// puts it, as a live store's clock stands when a message is said: at the
// time of the session being told while it is stored, at the question's
// time while it is asked. Both evaluations give it to the store and the
// memory service (Now), so that what is created, accessed, recent or
// retained is read on the conversation's own clock, not the machine's. The
// zero value stands at the Unix epoch; it is safe for concurrent use.
type Clock struct{ ns atomic.Int64 }

// Set stands the clock at t.
func (c *Clock) Set(t time.Time) { c.ns.Store(t.UnixNano()) }

// Now returns where the clock stands, in UTC.
func (c *Clock) Now() time.Time { return time.Unix(0, c.ns.Load()).UTC() }
