package kernel

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// panicError is a recovered panic, with the stack where it happened.
type panicError struct {
	value any
	stack []byte
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// safely runs fn, turning a panic into a *panicError.
func safely(fn func() error) (err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: debug.Stack()}
		}
	}()
	return fn()
}

// bounded runs fn (recovering panics) and waits for it until ctx is done.
// A call still running then is abandoned: its goroutine finishes on its own
// and its result is dropped.
func bounded(ctx context.Context, fn func() error) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("not called: %w", context.Cause(ctx))
	}
	done := make(chan error, 1)
	go func() { done <- safely(fn) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("abandoned: %w", context.Cause(ctx))
	}
}

// Init initialises every created extension in dependency order. An
// extension whose Init fails or panics is recorded as failed and its
// dependents as skipped; the others carry on. The error is non-nil only when
// ctx ends first (the rest are left uninitialised) or Init was already
// called (ErrLifecycle), when Options.Fatal selects an extension's error, or
// when an essential extension failed (*EssentialError); the extensions
// initialised so far are then left for Shutdown.
func (k *Kernel) Init(ctx context.Context) error {
	k.mu.Lock()
	if k.phase != phaseNew {
		k.mu.Unlock()
		return fmt.Errorf("init extensions: %w", ErrLifecycle)
	}
	if err := k.essentialFailure(); err != nil { // a constructor failed
		k.phase = phaseInitialised
		k.mu.Unlock()
		return err
	}
	k.mu.Unlock()
	for _, e := range k.order {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("init extensions: stopped before %q: %w", e.info.ID, err)
		}
		k.mu.RLock()
		st := e.state
		k.mu.RUnlock()
		if st != StatePending {
			continue
		}
		t := time.Now()
		err := safely(func() error { return e.ext.Init(ctx, e.host) })
		k.mu.Lock()
		if err != nil && k.opts.Fatal != nil && k.opts.Fatal(err) {
			k.fail(e, fmt.Errorf("init: %w", err))
			k.phase = phaseInitialised
			k.mu.Unlock()
			return fmt.Errorf("extension %q: %w", e.info.ID, err)
		}
		if err != nil {
			k.fail(e, fmt.Errorf("init: %w", err))
			k.skipDependents(e)
			if err := k.essentialFailure(); err != nil {
				k.phase = phaseInitialised
				k.mu.Unlock()
				return err
			}
		} else {
			e.state = StateInitialised
			e.inited = true
			k.log.Debug("extension initialised", "ext", e.info.ID, "took", time.Since(t).String())
		}
		k.mu.Unlock()
	}
	k.mu.Lock()
	k.phase = phaseInitialised
	k.mu.Unlock()
	k.index()
	return nil
}

// Start starts every initialised extension in dependency order (Starter, if
// implemented). Failures are isolated as in Init. The error is non-nil only
// when ctx ends first, Start is called out of order (ErrLifecycle) or an
// essential extension failed (*EssentialError; what started so far is left
// for Shutdown).
func (k *Kernel) Start(ctx context.Context) error {
	k.mu.Lock()
	if k.phase != phaseInitialised {
		k.mu.Unlock()
		return fmt.Errorf("start extensions: %w", ErrLifecycle)
	}
	k.mu.Unlock()
	for _, e := range k.order {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("start extensions: stopped before %q: %w", e.info.ID, err)
		}
		k.mu.Lock()
		st := e.state
		if st == StateInitialised {
			e.startAttempted = true
		}
		k.mu.Unlock()
		if st != StateInitialised {
			continue
		}
		var err error
		t := time.Now()
		if s, ok := e.ext.(extension.Starter); ok {
			err = safely(func() error { return s.Start(ctx) })
		}
		k.mu.Lock()
		if err != nil {
			k.fail(e, fmt.Errorf("start: %w", err))
			k.skipDependents(e)
			if err := k.essentialFailure(); err != nil {
				k.phase = phaseStarted
				k.mu.Unlock()
				return err
			}
		} else if e.state == StateInitialised {
			e.state = StateStarted
			k.log.Debug("extension started", "ext", e.info.ID, "took", time.Since(t).String())
		}
		k.mu.Unlock()
	}
	k.mu.Lock()
	k.phase = phaseStarted
	k.mu.Unlock()
	k.index()
	return nil
}

// Ready tells every started ReadyListener, once, that the agent takes
// messages. Later calls do nothing.
func (k *Kernel) Ready(ctx context.Context) {
	k.readyOnce.Do(func() {
		for _, e := range k.order {
			k.mu.RLock()
			st := e.state
			k.mu.RUnlock()
			if st != StateStarted && st != StateRunning {
				continue
			}
			l, ok := e.ext.(extension.ReadyListener)
			if !ok {
				continue
			}
			if err := safely(func() error { l.OnReady(ctx); return nil }); err != nil {
				k.mu.Lock()
				k.fail(e, fmt.Errorf("ready: %w", err))
				k.mu.Unlock()
			}
		}
	})
}

// Run runs the ServiceProvider.Run of every started extension, each in its
// own goroutine, until ctx is done and every service has returned. A
// service that returns an error or panics is logged and marked failed; the
// others keep running. Run returns nil then, or ErrLifecycle when called
// before Start, a second time, or after Shutdown.
func (k *Kernel) Run(ctx context.Context) error {
	k.runMu.Lock()
	k.mu.RLock()
	ph := k.phase
	k.mu.RUnlock()
	if ph != phaseStarted || k.runDone != nil {
		k.runMu.Unlock()
		return fmt.Errorf("run extension services: %w", ErrLifecycle)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	k.runCancel, k.runDone = cancel, done
	k.runMu.Unlock()
	defer func() {
		cancel()
		close(done)
	}()

	var wg sync.WaitGroup
	for _, e := range k.order {
		svc, ok := e.ext.(extension.ServiceProvider)
		if !ok {
			continue
		}
		k.mu.Lock()
		if e.state != StateStarted {
			k.mu.Unlock()
			continue
		}
		e.state = StateRunning
		k.mu.Unlock()
		wg.Go(func() {
			err := safely(func() error { return svc.Run(rctx) })
			if err != nil && rctx.Err() != nil && errors.Is(err, context.Canceled) {
				err = nil
			}
			k.mu.Lock()
			defer k.mu.Unlock()
			switch {
			case err != nil:
				k.fail(e, fmt.Errorf("service: %w", err))
			case e.state == StateRunning:
				e.state = StateStarted
				if rctx.Err() == nil {
					k.log.Warn("service returned before shutdown", "ext", e.info.ID)
				}
			}
		})
	}
	<-rctx.Done()
	wg.Wait()
	return nil
}

// Shutdown cancels a Run in progress and waits for its services, then
// calls Stop on every extension whose Start was attempted and Destroy on
// every extension whose Init succeeded, both in reverse dependency order.
// Every call is bounded by ctx: once ctx is done, a call in progress is
// abandoned and the remaining ones are not made. The errors (each naming
// its extension) are joined. Shutdown is idempotent; it can be called after
// a failed or partial Init or Start.
func (k *Kernel) Shutdown(ctx context.Context) error {
	k.mu.Lock()
	if k.phase == phaseShutdown {
		k.mu.Unlock()
		return nil
	}
	k.phase = phaseShutdown
	k.mu.Unlock()

	var errs []error
	k.runMu.Lock()
	cancel, done := k.runCancel, k.runDone
	k.runMu.Unlock()
	if cancel != nil {
		cancel()
		select {
		case <-done:
		case <-ctx.Done():
			errs = append(errs, fmt.Errorf("wait for extension services: %w", context.Cause(ctx)))
		}
	}

	type step struct {
		verb string
		owed func(e *entry) bool
		call func(e *entry) func() error
	}
	steps := []step{
		{"stop", func(e *entry) bool { return e.startAttempted }, func(e *entry) func() error {
			if s, ok := e.ext.(extension.Stopper); ok {
				return func() error { return s.Stop(ctx) }
			}
			return nil
		}},
		{"destroy", func(e *entry) bool { return e.inited }, func(e *entry) func() error {
			if d, ok := e.ext.(extension.Destroyer); ok {
				return func() error { return d.Destroy(ctx) }
			}
			return nil
		}},
	}
	for _, st := range steps {
		for i := len(k.order) - 1; i >= 0; i-- {
			e := k.order[i]
			k.mu.RLock()
			owed := st.owed(e)
			k.mu.RUnlock()
			if !owed {
				continue
			}
			fn := st.call(e)
			var err error
			if fn != nil {
				err = bounded(ctx, fn)
			}
			k.mu.Lock()
			if err != nil {
				err = fmt.Errorf("%s extension %q: %w", st.verb, e.info.ID, err)
				errs = append(errs, err)
				k.log.Error("extension shutdown failed", "ext", e.info.ID, "step", st.verb, "err", err)
			}
			if st.verb == "stop" && (e.state == StateStarted || e.state == StateRunning) {
				e.state = StateStopped
			}
			k.mu.Unlock()
		}
	}
	return errors.Join(errs...)
}

// Health runs every live extension's health check concurrently, each bounded
// by Options.HealthTimeout (2s by default), records the outcome and returns
// the resulting Status of every extension. A check that does not return in
// time is abandoned and reported as failing.
func (k *Kernel) Health(ctx context.Context) []Status {
	var wg sync.WaitGroup
	for _, e := range k.order {
		k.mu.RLock()
		st := e.state
		k.mu.RUnlock()
		if st != StateInitialised && st != StateStarted && st != StateRunning {
			continue
		}
		hc, ok := e.ext.(extension.HealthChecker)
		if !ok {
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, k.opts.HealthTimeout)
			defer cancel()
			err := bounded(cctx, func() error { return hc.Health(cctx) })
			k.mu.Lock()
			defer k.mu.Unlock()
			e.checkedAt = k.opts.Now()
			if err != nil {
				e.health, e.healthErr = HealthFailing, err.Error()
				k.log.Warn("extension unhealthy", "ext", e.info.ID, "err", err)
				return
			}
			e.health, e.healthErr = HealthOK, ""
		})
	}
	wg.Wait()
	return k.Status()
}
