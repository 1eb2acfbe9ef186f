package channelkit

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// ErrStopping ends a wait that Stopping cut short: the channel stops.
var ErrStopping = errors.New("the channel is stopping")

// Stopping ends a channel's retry waits once the channel stops (its Run
// returned): a reply being delivered then (a stream's Close delivers with
// a context of its own) gets the attempt it is in, not minutes of backoff
// that would hold up the shutdown. The zero value is ready; safe for
// concurrent use.
type Stopping struct {
	once sync.Once
	ch   chan struct{}
	stop sync.Once
}

func (s *Stopping) done() chan struct{} {
	s.once.Do(func() { s.ch = make(chan struct{}) })
	return s.ch
}

// Stop ends the waits, those running and those to come; calling it again
// does nothing.
func (s *Stopping) Stop() {
	ch := s.done()
	s.stop.Do(func() { close(ch) })
}

// Sleep waits d with sleep (nil: extension.Sleep), or until ctx ends (its
// error) or the channel stops (ErrStopping).
func (s *Stopping) Sleep(ctx context.Context, sleep func(ctx context.Context, d time.Duration) error, d time.Duration) error {
	if sleep == nil {
		sleep = extension.Sleep
	}
	stopped := s.done()
	select {
	case <-stopped:
		return ErrStopping
	default:
	}
	ctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-stopped:
			cancel(ErrStopping)
		case <-ctx.Done():
		}
	})
	err := sleep(ctx, d)
	cancel(nil)
	wg.Wait()
	if err != nil && errors.Is(context.Cause(ctx), ErrStopping) {
		return ErrStopping
	}
	return err
}
