package matrixtest

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// SendLimiter is a reverse proxy to the homeserver that rate-limits
// message sends (PUT /rooms/{room}/send/{type}/{txn}) the way Dendrite
// limits its other endpoints: threshold sends per cooloff, more answered
// 429 M_LIMIT_EXCEEDED with retry_after_ms = cooloff (threshold 0: no
// limit). Dendrite v0.15.2 does not limit /send itself (Synapse does,
// rc_message). FailNext makes it answer sends HTTP 500 for a while.
// Everything else passes through untouched. One budget covers every
// client of the proxy.
type SendLimiter struct {
	srv       *httptest.Server
	threshold int
	cooloff   time.Duration

	mu      sync.Mutex
	used    int
	timers  []*time.Timer
	fail    int           // sends still to answer 500
	changed chan struct{} // closed (and replaced) when a send is answered
	limited atomic.Int64
	failed  atomic.Int64
	sends   atomic.Int64
}

// LimitSends starts a SendLimiter in front of s; it stops when the test
// ends.
func (s *Server) LimitSends(tb testing.TB, threshold int, cooloff time.Duration) *SendLimiter {
	tb.Helper()
	target, err := url.Parse(s.URL())
	if err != nil {
		tb.Fatal(err)
	}
	l := &SendLimiter{threshold: threshold, cooloff: cooloff, changed: make(chan struct{})}
	proxy := httputil.NewSingleHostReverseProxy(target)
	// A client that goes away (a long poll cut at the end of a test) is
	// not an error worth a line on the test's output ("http: proxy error:
	// context canceled" in every CI log).
	proxy.ErrorHandler = func(w http.ResponseWriter, r *http.Request, err error) {
		if r.Context().Err() == nil {
			tb.Logf("matrixtest: send limiter: %s %s: %v", r.Method, r.URL.Path, err)
		}
		w.WriteHeader(http.StatusBadGateway)
	}
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/send/") && strings.Contains(r.URL.Path, "/rooms/") {
			if l.failing() {
				// The homeserver stores the event, then the answer is
				// lost: only a retry with the same transaction id
				// keeps the room from getting it twice.
				l.failed.Add(1)
				proxy.ServeHTTP(httptest.NewRecorder(), r)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusInternalServerError)
				_, _ = w.Write([]byte(`{"errcode":"M_UNKNOWN","error":"Internal Server Error"}`))
				return
			}
			if !l.take() {
				l.limited.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"errcode":"M_LIMIT_EXCEEDED","error":"You are sending too many requests too quickly!","retry_after_ms":` +
					strconv.FormatInt(cooloff.Milliseconds(), 10) + `}`))
				return
			}
			proxy.ServeHTTP(w, r)
			l.sends.Add(1)
			l.mu.Lock()
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
			return
		}
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(l.close)
	return l
}

// FailNext makes the next n sends reach the homeserver, which stores
// them, and be answered HTTP 500 all the same, as when a homeserver
// fails after storing an event or its answer is lost.
func (l *SendLimiter) FailNext(n int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.fail = n
}

// failing takes one of the sends FailNext asked to fail.
func (l *SendLimiter) failing() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.fail <= 0 {
		return false
	}
	l.fail--
	return true
}

// take reserves a slot for cooloff, as Dendrite's limiter does.
func (l *SendLimiter) take() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.threshold <= 0 {
		return true
	}
	if l.used >= l.threshold {
		return false
	}
	l.used++
	l.timers = append(l.timers, time.AfterFunc(l.cooloff, func() {
		l.mu.Lock()
		l.used--
		l.mu.Unlock()
	}))
	return true
}

func (l *SendLimiter) close() {
	l.srv.CloseClientConnections()
	l.srv.Close()
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, t := range l.timers {
		t.Stop()
	}
}

// URL is the proxy's base URL (give it to the client to limit).
func (l *SendLimiter) URL() string { return l.srv.URL }

// Limited is how many sends were answered 429.
func (l *SendLimiter) Limited() int64 { return l.limited.Load() }

// Failed is how many sends were answered 500 (FailNext).
func (l *SendLimiter) Failed() int64 { return l.failed.Load() }

// Sent is how many sends passed to the homeserver and were answered.
func (l *SendLimiter) Sent() int64 { return l.sends.Load() }

// WaitSent waits until n sends have passed to the homeserver and were
// answered (at most WaitTimeout).
func (l *SendLimiter) WaitSent(tb testing.TB, n int64) {
	tb.Helper()
	deadline := time.After(WaitTimeout)
	for {
		l.mu.Lock()
		ch := l.changed
		l.mu.Unlock()
		if got := l.Sent(); got >= n {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			tb.Fatalf("waited %s for %d sends to be answered; %d were", WaitTimeout, n, l.Sent())
		}
	}
}
