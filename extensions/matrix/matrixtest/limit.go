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
// 429 M_LIMIT_EXCEEDED with retry_after_ms = cooloff. Dendrite v0.15.2
// does not limit /send itself (Synapse does, rc_message); everything else
// passes through untouched. One budget covers every client of the proxy.
type SendLimiter struct {
	srv       *httptest.Server
	threshold int
	cooloff   time.Duration

	mu      sync.Mutex
	used    int
	timers  []*time.Timer
	limited atomic.Int64
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
	l := &SendLimiter{threshold: threshold, cooloff: cooloff}
	proxy := httputil.NewSingleHostReverseProxy(target)
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPut && strings.Contains(r.URL.Path, "/send/") && strings.Contains(r.URL.Path, "/rooms/") {
			if !l.take() {
				l.limited.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusTooManyRequests)
				_, _ = w.Write([]byte(`{"errcode":"M_LIMIT_EXCEEDED","error":"You are sending too many requests too quickly!","retry_after_ms":` +
					strconv.FormatInt(cooloff.Milliseconds(), 10) + `}`))
				return
			}
			l.sends.Add(1)
		}
		proxy.ServeHTTP(w, r)
	}))
	tb.Cleanup(l.close)
	return l
}

// take reserves a slot for cooloff, as Dendrite's limiter does.
func (l *SendLimiter) take() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
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

// Sent is how many sends passed to the homeserver.
func (l *SendLimiter) Sent() int64 { return l.sends.Load() }
