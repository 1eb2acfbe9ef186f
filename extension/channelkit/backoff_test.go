package channelkit

import (
	"context"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// The waits of a run of failures grow to the cap; a success starts them
// again from the base; a server's own wait is taken as it is and still
// counts as a failure. The real timer runs under synctest's fake clock.
func TestBackoff(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		b := &Backoff{Delays: extension.Backoff{Base: time.Second, Max: 8 * time.Second, Jitter: func() float64 { return 0.999999 }}}
		waited := func(wait time.Duration) time.Duration {
			start := time.Now()
			if err := b.Fail(t.Context(), wait); err != nil {
				t.Fatal(err)
			}
			return time.Since(start).Round(time.Second)
		}
		var got []time.Duration
		for range 5 {
			got = append(got, waited(0))
		}
		if b.Failures() != 5 {
			t.Errorf("Failures() = %d, want 5", b.Failures())
		}
		got = append(got, waited(30*time.Second)) // retry_after
		if !b.Succeeded() {
			t.Error("Succeeded() after failures = false")
		}
		if b.Succeeded() {
			t.Error("Succeeded() twice in a row = true")
		}
		got = append(got, waited(0))
		want := []time.Duration{1, 2, 4, 8, 8, 30, 1}
		for i := range want {
			want[i] *= time.Second
		}
		if len(got) != len(want) {
			t.Fatalf("waits %v, want %v", got, want)
		}
		for i := range want {
			if got[i] != want[i] {
				t.Fatalf("waits %v, want %v", got, want)
			}
		}
	})
}

// The zero Backoff waits one second doubling to a minute; Fail returns
// when ctx ends.
func TestBackoffDefaultsAndCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var b Backoff
		for i, want := range []time.Duration{time.Second, 2 * time.Second} {
			if d := b.Next(); d < want/2 || d > want {
				t.Errorf("wait %d = %s, want within [%s, %s]", i, d, want/2, want)
			}
			b.failures++
		}
		b.failures = 20
		if d := b.Next(); d < 30*time.Second || d > time.Minute {
			t.Errorf("capped wait = %s, want within [30s, 1m]", d)
		}
		ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
		defer cancel()
		start := time.Now()
		if err := b.Fail(ctx, time.Hour); err == nil {
			t.Error("Fail returned nil after its context ended")
		}
		if d := time.Since(start); d != 10*time.Second {
			t.Errorf("Fail waited %s after its context ended at 10s", d)
		}
	})
}
