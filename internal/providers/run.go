package providers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/llm"
)

// Retry defaults.
const (
	DefaultMaxRetries    = 3
	DefaultBaseDelay     = 500 * time.Millisecond
	DefaultMaxDelay      = 20 * time.Second
	DefaultMaxRetryAfter = 60 * time.Second
)

// Policy says how a provider runs its HTTP calls: retries, backoff and
// timeouts. The zero value (plus Provider) is usable: defaults apply.
type Policy struct {
	// Provider names the backend in errors.
	Provider string
	Timeouts Timeouts
	// MaxRetries is how many times a failed attempt is retried: 0 means
	// DefaultMaxRetries, a negative value disables retries.
	MaxRetries int
	// BaseDelay is the first backoff; it doubles per retry up to MaxDelay.
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter caps a server's Retry-After.
	MaxRetryAfter time.Duration
	// Clock is the time source; nil means SystemClock.
	Clock Clock
	// Jitter returns a number in [0,1) scaling the upper half of each
	// backoff; nil means math/rand. A Retry-After is waited exactly.
	Jitter func() float64
}

func (p Policy) withDefaults() Policy {
	p.Timeouts = p.Timeouts.WithDefaults()
	switch {
	case p.MaxRetries == 0:
		p.MaxRetries = DefaultMaxRetries
	case p.MaxRetries < 0:
		p.MaxRetries = 0
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	if p.Clock == nil {
		p.Clock = SystemClock{}
	}
	if p.Jitter == nil {
		p.Jitter = rand.Float64
	}
	return p
}

// Backoff returns the wait before retry number retry (0 for the first
// retry) when the server gave no Retry-After.
func (p Policy) Backoff(retry int) time.Duration {
	p = p.withDefaults()
	return extension.Backoff{Base: p.BaseDelay, Max: p.MaxDelay, Jitter: p.Jitter}.Delay(retry)
}

// Attempt is one HTTP attempt inside Run. The provider's request function
// installs Middleware into its SDK client and hands stream events to Emit.
type Attempt struct {
	// Number counts attempts from 0.
	Number int

	stream llm.StreamFunc
	wd     *watchdog

	mu       sync.Mutex
	sent     bool
	status   int
	header   http.Header
	apiError string
	streamed bool
}

// Streaming reports whether the caller asked for stream events.
func (a *Attempt) Streaming() bool { return a.stream != nil }

// Emit passes one event to the caller's StreamFunc (a no-op when the call is
// not streaming). After the first Emit the call is never retried. The idle
// watchdog is paused while the caller handles the event.
func (a *Attempt) Emit(ev llm.Event) {
	if a.stream == nil {
		return
	}
	a.mu.Lock()
	a.streamed = true
	a.mu.Unlock()
	a.wd.pause()
	a.stream(ev)
	a.wd.resume()
}

// Middleware has the shape of both SDKs' option.Middleware. It arms the
// first-byte watchdog, records the response status and headers, extracts
// the error message of a failed response, and re-arms the idle watchdog on
// every chunk of the body.
func (a *Attempt) Middleware(req *http.Request, next func(*http.Request) (*http.Response, error)) (*http.Response, error) {
	a.mu.Lock()
	a.sent = true
	a.mu.Unlock()
	a.wd.armFirstByte()
	res, err := next(req)
	if err != nil || res == nil {
		return res, err
	}
	a.wd.armIdle()
	a.mu.Lock()
	a.status = res.StatusCode
	a.header = res.Header.Clone()
	a.mu.Unlock()
	if res.StatusCode >= 400 && res.Body != nil {
		body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
		_ = res.Body.Close()
		a.mu.Lock()
		a.apiError = errorMessage(body)
		a.mu.Unlock()
		res.Body = io.NopCloser(bytes.NewReader(body))
		return res, nil
	}
	if res.Body != nil {
		res.Body = &kickReader{rc: res.Body, wd: a.wd}
	}
	return res, nil
}

// errorMessage pulls the human message out of an OpenAI or Anthropic error
// body ({"error":{"message":…}}), or returns a trimmed prefix of the body.
func errorMessage(body []byte) string {
	var env struct {
		Error json.RawMessage `json:"error"`
		Msg   string          `json:"message"`
	}
	if json.Unmarshal(body, &env) == nil {
		var inner struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		}
		if json.Unmarshal(env.Error, &inner) == nil && inner.Message != "" {
			if inner.Type != "" {
				return inner.Type + ": " + inner.Message
			}
			return inner.Message
		}
		var s string
		if json.Unmarshal(env.Error, &s) == nil && s != "" {
			return s
		}
		if env.Msg != "" {
			return env.Msg
		}
	}
	s := strings.TrimSpace(string(body))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

type kickReader struct {
	rc io.ReadCloser
	wd *watchdog
}

func (k *kickReader) Read(p []byte) (int, error) {
	n, err := k.rc.Read(p)
	if n > 0 {
		k.wd.armIdle()
	}
	return n, err
}

func (k *kickReader) Close() error { return k.rc.Close() }

// watchdog cancels an attempt when the first byte or the next chunk is late.
type watchdog struct {
	clock   Clock
	cancel  context.CancelCauseFunc
	t       Timeouts
	mu      sync.Mutex
	timer   Timer
	gen     uint64
	stopped bool
	paused  bool
}

func (w *watchdog) arm(d time.Duration, cause error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.stopped || w.paused {
		return
	}
	if w.timer != nil {
		w.timer.Stop()
	}
	w.gen++
	gen := w.gen
	w.timer = w.clock.AfterFunc(d, func() {
		w.mu.Lock()
		fire := !w.stopped && !w.paused && w.gen == gen
		w.mu.Unlock()
		if fire {
			w.cancel(cause)
		}
	})
}

func (w *watchdog) armFirstByte() {
	w.arm(w.t.FirstByte, &timeoutError{what: "no response headers in time", d: w.t.FirstByte})
}

func (w *watchdog) armIdle() {
	w.arm(w.t.Idle, &timeoutError{what: "response stalled: no data in time", d: w.t.Idle})
}

func (w *watchdog) pause() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.paused = true
	w.gen++
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

func (w *watchdog) resume() {
	w.mu.Lock()
	w.paused = false
	w.mu.Unlock()
	w.armIdle()
}

func (w *watchdog) stop() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
		w.timer = nil
	}
}

// Run calls fn until it succeeds, fails for good, or retries are exhausted,
// and returns nil or an *Error for model. Before each wait for a retry it
// hands stream (when not nil) an llm.EventWait saying why and how long. fn must make its HTTP request with
// the context it is given and install a.Middleware in the SDK client; it
// returns the SDK's error (or one made with BadResponse, BadRequest or
// Unavailable) unchanged. stream is the caller's StreamFunc (may be nil);
// fn hands events to a.Emit.
func (p Policy) Run(ctx context.Context, model string, stream llm.StreamFunc, fn func(ctx context.Context, a *Attempt) error) error {
	p = p.withDefaults()
	callCtx, cancelCall := context.WithCancelCause(ctx)
	defer cancelCall(nil)
	total := p.Clock.AfterFunc(p.Timeouts.Total, func() {
		cancelCall(&timeoutError{what: "call exceeded its total time", d: p.Timeouts.Total})
	})
	defer total.Stop()

	for n := 0; ; n++ {
		a := &Attempt{Number: n, stream: stream}
		actx, cancel := context.WithCancelCause(callCtx)
		a.wd = &watchdog{clock: p.Clock, cancel: cancel, t: p.Timeouts}
		err := fn(actx, a)
		a.wd.stop()
		cause := context.Cause(actx)
		cancel(nil)
		if err == nil {
			return nil
		}
		e, retryable := p.classify(ctx, callCtx, cause, a, model, err)
		if !retryable || a.streamed || n >= p.MaxRetries {
			if retryable && n > 0 {
				e.Attempts = n + 1
			}
			return e
		}
		delay := e.RetryAfter
		if delay > 0 {
			delay = min(delay, p.MaxRetryAfter)
		} else {
			delay = p.Backoff(n)
		}
		if stream != nil {
			// The caller shows the wait as it happens (a retry is not
			// a hang); nothing of the reply has been emitted.
			w := &llm.Wait{Reason: llm.WaitUnavailable, Delay: delay, Attempt: n + 1}
			if e.Status == http.StatusTooManyRequests {
				w.Reason = llm.WaitRateLimited
			}
			stream(llm.Event{Kind: llm.EventWait, Wait: w})
		}
		if err := p.Clock.Sleep(callCtx, delay); err != nil {
			if ctx.Err() != nil {
				return &Error{Provider: p.Provider, Model: model, Err: fmt.Errorf("waiting to retry: %w", ctx.Err())}
			}
			e.Err = fmt.Errorf("%w (no time left to retry: %v)", e.Err, context.Cause(callCtx))
			return e
		}
	}
}

// classify turns the outcome of one attempt into an *Error and says whether
// another attempt may succeed.
func (p Policy) classify(parent, callCtx context.Context, attemptCause error, a *Attempt, model string, err error) (*Error, bool) {
	a.mu.Lock()
	sent, status, header, apiErr := a.sent, a.status, a.header, a.apiError
	a.mu.Unlock()
	e := &Error{Provider: p.Provider, Model: model, Status: status}

	if parent.Err() != nil {
		e.Err = parent.Err()
		if status < 400 {
			e.Status = 0
		}
		return e, false
	}
	if callCause := context.Cause(callCtx); callCause != nil && callCtx.Err() != nil {
		e.Err = fmt.Errorf("%w: %w", ErrUnavailable, callCause)
		return e, false
	}
	var te *timeoutError
	if errors.As(attemptCause, &te) {
		e.Err = fmt.Errorf("%w: %w", ErrUnavailable, te)
		return e, true
	}
	var ke *kindError
	if errors.As(err, &ke) {
		e.Err = ke
		return e, errors.Is(ke.kind, ErrUnavailable)
	}
	if status >= 400 {
		detail := apiErr
		if detail == "" {
			detail = http.StatusText(status)
		}
		e.RetryAfter = retryAfter(header, p.Clock.Now())
		switch {
		case status == http.StatusUnauthorized || status == http.StatusForbidden:
			e.Err = fmt.Errorf("%w: %s", ErrAuth, detail)
			return e, false
		case status == http.StatusNotFound:
			e.Err = fmt.Errorf("%w: %s", ErrNotFound, detail)
			return e, false
		case status == http.StatusRequestTimeout || status == http.StatusTooEarly ||
			status == http.StatusTooManyRequests || status >= 500:
			e.Err = fmt.Errorf("%w: %s", ErrUnavailable, detail)
			return e, true
		default:
			e.Err = fmt.Errorf("%w: %s", ErrBadRequest, detail)
			return e, false
		}
	}
	if !sent {
		e.Err = fmt.Errorf("%w: building the request: %w", ErrBadRequest, err)
		return e, false
	}
	if status == 0 {
		if unreachable(err) {
			e.Err = fmt.Errorf("%w: %w: %w", ErrUnavailable, ErrUnreachable, err)
		} else {
			e.Err = fmt.Errorf("%w: %w", ErrUnavailable, err)
		}
		return e, true
	}
	e.Err = fmt.Errorf("%w: %w", ErrBadResponse, err)
	return e, false
}

// retryAfter reads retry-after-ms or Retry-After (delta seconds or an HTTP
// date) from h; 0 when absent or unparsable.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := h.Get("Retry-After-Ms"); v != "" {
		if ms, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if s, err := strconv.ParseFloat(v, 64); err == nil {
		if s <= 0 {
			return 0
		}
		return time.Duration(s * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}
