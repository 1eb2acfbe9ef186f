package extension

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

func TestBackoffDelay(t *testing.T) {
	for _, tc := range []struct {
		name          string
		b             Backoff
		n             int
		jitter        float64
		want, wantMax time.Duration
	}{
		{name: "first retry, least jitter", b: Backoff{Base: time.Second, Max: time.Minute}, n: 0, jitter: 0, want: 500 * time.Millisecond},
		{name: "first retry, most jitter", b: Backoff{Base: time.Second, Max: time.Minute}, n: 0, jitter: 0.999999, want: time.Second - time.Microsecond, wantMax: time.Second},
		{name: "doubles", b: Backoff{Base: time.Second, Max: time.Minute}, n: 3, jitter: 0, want: 4 * time.Second},
		{name: "capped", b: Backoff{Base: time.Second, Max: time.Minute}, n: 10, jitter: 0, want: 30 * time.Second},
		{name: "no overflow far out", b: Backoff{Base: time.Second, Max: time.Minute}, n: 1 << 20, jitter: 0.5, want: 45 * time.Second},
		{name: "uncapped", b: Backoff{Base: time.Millisecond}, n: 10, jitter: 0, want: 512 * time.Millisecond},
		{name: "zero base", b: Backoff{Max: time.Minute}, n: 5, jitter: 0.5, want: 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.b
			b.Jitter = func() float64 { return tc.jitter }
			got := b.Delay(tc.n)
			hi := max(tc.wantMax, tc.want)
			if got < tc.want || got > hi {
				t.Errorf("Delay(%d) = %v, want %v (at most %v)", tc.n, got, tc.want, hi)
			}
		})
	}
	t.Run("default jitter stays in [d/2, d]", func(t *testing.T) {
		b := Backoff{Base: time.Second, Max: 8 * time.Second}
		for n := range 6 {
			d := min(time.Second<<n, 8*time.Second)
			for range 50 {
				if got := b.Delay(n); got < d/2 || got > d {
					t.Fatalf("Delay(%d) = %v, want within [%v, %v]", n, got, d/2, d)
				}
			}
		}
	})
}

func TestSleep(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		start := time.Now()
		if err := Sleep(t.Context(), time.Minute); err != nil || time.Since(start) != time.Minute {
			t.Fatalf("Sleep(1m) = %v after %v, want nil after 1m", err, time.Since(start))
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		start = time.Now()
		if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) != time.Second {
			t.Fatalf("Sleep(1h) cancelled after 1s = %v after %v, want context.Canceled after 1s", err, time.Since(start))
		}
	})
}
