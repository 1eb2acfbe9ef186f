package channelkit

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"
)

// Stopping cuts a wait short when the channel stops, and every later wait
// at once; until then a wait lasts its time, or until its context ends.
func TestStopping(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var s Stopping
		start := time.Now()
		if err := s.Sleep(t.Context(), nil, time.Second); err != nil || time.Since(start) != time.Second {
			t.Errorf("a wait before the stop: %v after %s, want nil after 1s", err, time.Since(start))
		}
		ctx, cancel := context.WithCancel(t.Context())
		time.AfterFunc(time.Second, cancel)
		if err := s.Sleep(ctx, nil, time.Minute); !errors.Is(err, context.Canceled) {
			t.Errorf("a wait whose context ends: %v, want context.Canceled", err)
		}

		start = time.Now()
		time.AfterFunc(3*time.Second, s.Stop)
		if err := s.Sleep(t.Context(), nil, time.Hour); !errors.Is(err, ErrStopping) || time.Since(start) != 3*time.Second {
			t.Errorf("a wait when the channel stops: %v after %s, want ErrStopping after 3s", err, time.Since(start))
		}
		s.Stop() // again: nothing
		start = time.Now()
		if err := s.Sleep(t.Context(), nil, time.Hour); !errors.Is(err, ErrStopping) || time.Since(start) != 0 {
			t.Errorf("a wait after the stop: %v after %s, want ErrStopping at once", err, time.Since(start))
		}
	})
}
