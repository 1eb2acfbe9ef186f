package web

import (
	"net"
	"net/http"
	"sync"
	"time"
)

// bucket is a token bucket: it holds up to burst tokens and gains rate
// tokens per second. The zero value is empty; not safe for concurrent use.
type bucket struct {
	tokens float64
	last   time.Time
}

// take spends one token if there is one; otherwise it reports how long
// until there will be.
func (b *bucket) take(now time.Time, rate, burst float64) (bool, time.Duration) {
	if b.last.IsZero() {
		b.tokens, b.last = burst, now
	}
	if el := now.Sub(b.last); el > 0 {
		b.tokens = min(burst, b.tokens+el.Seconds()*rate)
		b.last = now
	}
	if b.tokens >= 1 {
		b.tokens--
		return true, 0
	}
	if rate <= 0 {
		return false, time.Minute
	}
	return false, time.Duration((1 - b.tokens) / rate * float64(time.Second))
}

// full reports whether the bucket has refilled completely by now (its
// entry can be forgotten without changing any decision).
func (b *bucket) full(now time.Time, rate, burst float64) bool {
	return b.tokens+now.Sub(b.last).Seconds()*rate >= burst
}

// maxTrackedClients bounds the per-client table; beyond it, idle entries
// are swept (and, if every entry is busy, the table is reset, which only
// ever errs on the side of letting requests through).
const maxTrackedClients = 10000

// limiter rate-limits requests per client IP. Safe for concurrent use.
type limiter struct {
	rate, burst float64
	now         func() time.Time

	mu      sync.Mutex
	clients map[string]*bucket
}

func newLimiter(rate float64, burst int, now func() time.Time) *limiter {
	return &limiter{rate: rate, burst: float64(max(burst, 1)), now: now, clients: map[string]*bucket{}}
}

// allow spends a token of key's bucket.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l == nil || l.rate <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	b := l.clients[key]
	if b == nil {
		if len(l.clients) >= maxTrackedClients {
			l.sweepLocked(now)
		}
		b = &bucket{}
		l.clients[key] = b
	}
	return b.take(now, l.rate, l.burst)
}

func (l *limiter) sweepLocked(now time.Time) {
	for k, b := range l.clients {
		if b.full(now, l.rate, l.burst) {
			delete(l.clients, k)
		}
	}
	if len(l.clients) >= maxTrackedClients {
		clear(l.clients)
	}
}

// clientIP is the request's remote IP (the port dropped). Reverse proxies
// are not trusted for X-Forwarded-For: behind one, every client shares the
// proxy's bucket.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
