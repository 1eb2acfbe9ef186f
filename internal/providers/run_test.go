package providers_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/providers/providerstest"
	"github.com/reverie-ai/reverie/llm"
)

// respond returns a request function that answers through the attempt's
// middleware with the given statuses in turn (0: a transport error).
func respond(statuses []int, headers ...http.Header) func(ctx context.Context, a *providers.Attempt) error {
	n := 0
	return func(ctx context.Context, a *providers.Attempt) error {
		status := statuses[n]
		h := http.Header{}
		if n < len(headers) && headers[n] != nil {
			h = headers[n]
		}
		n++
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://backend.test/v1/x", nil)
		res, err := a.Middleware(req, func(*http.Request) (*http.Response, error) {
			if status == 0 {
				return nil, errors.New("dial tcp 127.0.0.1:1: connect: connection refused")
			}
			body := `{"ok":true}`
			if status >= 400 {
				body = `{"error":{"type":"test_error","message":"status ` + http.StatusText(status) + `"}}`
			}
			return &http.Response{StatusCode: status, Header: h, Body: io.NopCloser(strings.NewReader(body))}, nil
		})
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if res.StatusCode >= 400 {
			return errors.New("sdk: " + string(b))
		}
		return nil
	}
}

func TestRunClassifies(t *testing.T) {
	ra := http.Header{"Retry-After": []string{"4"}}
	tests := []struct {
		name       string
		statuses   []int
		headers    []http.Header
		want       error
		wantStatus int
		wantSleeps []time.Duration
	}{
		{name: "success", statuses: []int{200}},
		{name: "401", statuses: []int{401}, want: providers.ErrAuth, wantStatus: 401},
		{name: "403", statuses: []int{403}, want: providers.ErrAuth, wantStatus: 403},
		{name: "404", statuses: []int{404}, want: providers.ErrNotFound, wantStatus: 404},
		{name: "400", statuses: []int{400}, want: providers.ErrBadRequest, wantStatus: 400},
		{name: "413", statuses: []int{413}, want: providers.ErrBadRequest, wantStatus: 413},
		{name: "422", statuses: []int{422}, want: providers.ErrBadRequest, wantStatus: 422},
		{name: "429 then ok", statuses: []int{429, 200}, headers: []http.Header{ra}, wantSleeps: []time.Duration{4 * time.Second}},
		{name: "408 then ok", statuses: []int{408, 200}, wantSleeps: []time.Duration{500 * time.Millisecond}},
		{name: "529 then ok", statuses: []int{529, 200}, wantSleeps: []time.Duration{500 * time.Millisecond}},
		{name: "refused then ok", statuses: []int{0, 200}, wantSleeps: []time.Duration{500 * time.Millisecond}},
		{
			name: "5xx exhausted", statuses: []int{500, 502, 503}, want: providers.ErrUnavailable, wantStatus: 503,
			wantSleeps: []time.Duration{500 * time.Millisecond, time.Second},
		},
		{
			name: "refused exhausted", statuses: []int{0, 0, 0}, want: providers.ErrUnavailable,
			wantSleeps: []time.Duration{500 * time.Millisecond, time.Second},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clock := providerstest.NewClock()
			p := providers.Policy{Provider: "prov", MaxRetries: 2, BaseDelay: time.Second, Clock: clock, Jitter: func() float64 { return 0 }}
			// Each wait is announced before it starts, with its reason.
			var waits []llm.Wait
			stream := func(ev llm.Event) {
				if ev.Kind == llm.EventWait {
					waits = append(waits, *ev.Wait)
				}
			}
			err := p.Run(context.Background(), "mod", stream, respond(tc.statuses, tc.headers...))
			if got := clock.Sleeps(); !reflect.DeepEqual(got, tc.wantSleeps) && (len(got)+len(tc.wantSleeps) > 0) {
				t.Errorf("sleeps = %v, want %v", got, tc.wantSleeps)
			}
			if len(waits) != len(tc.wantSleeps) {
				t.Fatalf("waits announced = %+v, want one per sleep %v", waits, tc.wantSleeps)
			}
			for i, w := range waits {
				reason := llm.WaitUnavailable
				if tc.statuses[i] == http.StatusTooManyRequests {
					reason = llm.WaitRateLimited
				}
				if w.Delay != tc.wantSleeps[i] || w.Attempt != i+1 || w.Reason != reason {
					t.Errorf("wait %d = %+v, want %v after attempt %d (%s)", i, w, tc.wantSleeps[i], i+1, reason)
				}
			}
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Run: %v", err)
				}
				return
			}
			var pe *providers.Error
			if !errors.As(err, &pe) || !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if pe.Status != tc.wantStatus || pe.Provider != "prov" || pe.Model != "mod" {
				t.Errorf("error = %+v", pe)
			}
			if tc.wantStatus >= 400 && !strings.Contains(err.Error(), "test_error: status") {
				t.Errorf("error %q lacks the API message", err)
			}
		})
	}
}

func TestRunOwnErrors(t *testing.T) {
	clock := providerstest.NewClock()
	p := providers.Policy{Provider: "prov", Clock: clock}
	t.Run("bad response is not retried", func(t *testing.T) {
		calls := 0
		err := p.Run(context.Background(), "m", nil, func(ctx context.Context, a *providers.Attempt) error {
			calls++
			return providers.BadResponse(nil, "no choices")
		})
		if !errors.Is(err, providers.ErrBadResponse) || calls != 1 {
			t.Fatalf("err = %v after %d calls", err, calls)
		}
	})
	t.Run("failure before sending is a bad request", func(t *testing.T) {
		err := p.Run(context.Background(), "m", nil, func(ctx context.Context, a *providers.Attempt) error {
			return errors.New("marshal params: unsupported value")
		})
		if !errors.Is(err, providers.ErrBadRequest) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("unavailable is retried", func(t *testing.T) {
		calls := 0
		err := p.Run(context.Background(), "m", nil, func(ctx context.Context, a *providers.Attempt) error {
			calls++
			if calls < 2 {
				return providers.Unavailable(nil, "error event")
			}
			return nil
		})
		if err != nil || calls != 2 {
			t.Fatalf("err = %v after %d calls", err, calls)
		}
	})
}

func TestRunTotalTimeout(t *testing.T) {
	clock := providerstest.NewClock()
	p := providers.Policy{Provider: "prov", Clock: clock, Timeouts: providers.Timeouts{Total: time.Minute, FirstByte: time.Hour}}
	started := make(chan struct{})
	done := make(chan error, 1)
	go func() {
		done <- p.Run(context.Background(), "m", nil, func(ctx context.Context, a *providers.Attempt) error {
			req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://x.test/", nil)
			_, err := a.Middleware(req, func(r *http.Request) (*http.Response, error) {
				close(started)
				<-r.Context().Done()
				return nil, r.Context().Err()
			})
			return err
		})
	}()
	<-started
	clock.Advance(time.Minute)
	err := <-done
	if !errors.Is(err, providers.ErrUnavailable) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want an unavailable timeout", err)
	}
	if len(clock.Sleeps()) != 0 {
		t.Errorf("retried after the total timeout")
	}
}

func TestRunCallerCancel(t *testing.T) {
	clock := providerstest.NewClock()
	p := providers.Policy{Provider: "prov", Clock: clock}
	ctx, cancel := context.WithCancel(context.Background())
	err := p.Run(ctx, "m", nil, func(ctx context.Context, a *providers.Attempt) error {
		cancel()
		return respond([]int{0})(ctx, a)
	})
	if !errors.Is(err, context.Canceled) || errors.Is(err, providers.ErrUnavailable) {
		t.Fatalf("err = %v, want context.Canceled without ErrUnavailable", err)
	}
	var pe *providers.Error
	if !errors.As(err, &pe) || pe.Provider != "prov" {
		t.Errorf("err = %#v, want a *providers.Error", err)
	}
}

func TestEmitPausesIdleWatchdog(t *testing.T) {
	clock := providerstest.NewClock()
	p := providers.Policy{Provider: "prov", Clock: clock, Timeouts: providers.Timeouts{Idle: time.Second, Total: 48 * time.Hour}}
	var events []llm.Event
	err := p.Run(context.Background(), "m", func(ev llm.Event) {
		events = append(events, ev)
		clock.Advance(time.Hour) // a slow consumer must not trip the idle timeout
	}, func(ctx context.Context, a *providers.Attempt) error {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://x.test/", nil)
		res, err := a.Middleware(req, func(*http.Request) (*http.Response, error) {
			return &http.Response{StatusCode: 200, Body: io.NopCloser(strings.NewReader("data"))}, nil
		})
		if err != nil {
			return err
		}
		_, _ = io.ReadAll(res.Body)
		a.Emit(llm.Event{Kind: llm.EventTextDelta, Text: "x"})
		return ctx.Err()
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(events) != 1 {
		t.Errorf("events = %v", events)
	}
}

func TestBackoff(t *testing.T) {
	tests := []struct {
		jitter float64
		retry  int
		want   time.Duration
	}{
		{0, 0, 250 * time.Millisecond},
		{0, 1, 500 * time.Millisecond},
		{0, 2, time.Second},
		{0.5, 2, 1500 * time.Millisecond},
		{0, 20, 10 * time.Second},
	}
	for _, tc := range tests {
		p := providers.Policy{Jitter: func() float64 { return tc.jitter }}
		if got := p.Backoff(tc.retry); got != tc.want {
			t.Errorf("Backoff(%d) with jitter %v = %v, want %v", tc.retry, tc.jitter, got, tc.want)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	e := &providers.Error{Provider: "openrouter", Model: "x/y", Status: 429, Err: providers.ErrUnavailable}
	if got, want := e.Error(), "openrouter model x/y: HTTP 429: backend unavailable"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !errors.Is(e, providers.ErrUnavailable) {
		t.Error("errors.Is through *Error failed")
	}
}
