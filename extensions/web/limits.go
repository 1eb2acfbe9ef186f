package web

import (
	"container/list"
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

// maxTrackedClients bounds the per-client table; beyond it the least
// recently seen client is forgotten (its next request starts with a full
// bucket). The table is never cleared as a whole: a flood of new clients
// evicts each other, not every client at once.
const maxTrackedClients = 10000

// limiter rate-limits requests per client key (clientKey: an IPv4
// address or an IPv6 /64). Safe for concurrent use.
//
// golang.org/x/time/rate was considered: its Limiter is the same token
// bucket, and bucket takes the host's clock (tests advance it) and is
// shared with the per-connection WebSocket limit, so no dependency is added.
type limiter struct {
	rate, burst float64
	now         func() time.Time

	mu      sync.Mutex
	clients map[string]*list.Element // of *client
	lru     list.List                // front: most recently seen
}

type client struct {
	key string
	b   bucket
}

func newLimiter(rate float64, burst int, now func() time.Time) *limiter {
	return &limiter{rate: rate, burst: float64(max(burst, 1)), now: now, clients: map[string]*list.Element{}}
}

// get returns key's bucket, marking it recently seen; mu is held.
func (l *limiter) getLocked(key string) *bucket {
	if e := l.clients[key]; e != nil {
		l.lru.MoveToFront(e)
		return &e.Value.(*client).b
	}
	if len(l.clients) >= maxTrackedClients {
		oldest := l.lru.Back()
		l.lru.Remove(oldest)
		delete(l.clients, oldest.Value.(*client).key)
	}
	c := &client{key: key}
	l.clients[key] = l.lru.PushFront(c)
	return &c.b
}

// allow spends a token of key's bucket.
func (l *limiter) allow(key string) (bool, time.Duration) {
	if l == nil || l.rate <= 0 {
		return true, 0
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.getLocked(key).take(now, l.rate, l.burst)
}

// exhausted reports whether key's bucket has no token left, without
// spending one.
func (l *limiter) exhausted(key string) bool {
	if l == nil || l.rate <= 0 {
		return false
	}
	now := l.now()
	l.mu.Lock()
	defer l.mu.Unlock()
	e := l.clients[key]
	if e == nil {
		return false
	}
	b := e.Value.(*client).b // a copy: peeking spends nothing
	ok, _ := b.take(now, l.rate, l.burst)
	return !ok
}

// clientIP is the request's remote IP (the port dropped), for log lines.
// Reverse proxies are not trusted for X-Forwarded-For: behind one, every
// client shares the proxy's bucket.
func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}
