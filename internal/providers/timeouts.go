package providers

import (
	"context"
	"net"
	"net/http"
	"time"
)

// Default timeouts (DESIGN §3).
const (
	DefaultConnectTimeout   = 10 * time.Second
	DefaultFirstByteTimeout = 60 * time.Second
	DefaultIdleTimeout      = 60 * time.Second
	DefaultTotalTimeout     = 10 * time.Minute
)

var errDeadline = context.DeadlineExceeded

// Timeouts bound one model call. Zero fields take the defaults.
type Timeouts struct {
	// Connect bounds dialing and the TLS handshake.
	Connect time.Duration
	// FirstByte bounds the wait for the response headers after the request
	// was sent (models may think for a while before answering).
	FirstByte time.Duration
	// Idle is the longest gap allowed between two chunks of a response body;
	// a stream that stalls longer is cancelled.
	Idle time.Duration
	// Total bounds the whole call, retries and backoff included.
	Total time.Duration
}

// WithDefaults returns t with zero fields set to the defaults.
func (t Timeouts) WithDefaults() Timeouts {
	if t.Connect <= 0 {
		t.Connect = DefaultConnectTimeout
	}
	if t.FirstByte <= 0 {
		t.FirstByte = DefaultFirstByteTimeout
	}
	if t.Idle <= 0 {
		t.Idle = DefaultIdleTimeout
	}
	if t.Total <= 0 {
		t.Total = DefaultTotalTimeout
	}
	return t
}

// NewHTTPClient returns an HTTP client whose transport applies the connect
// and first-byte timeouts. The idle and total timeouts are applied per call by
// Policy.Run, which also enforces the first-byte timeout on clients it did not
// build.
func NewHTTPClient(t Timeouts) *http.Client {
	t = t.WithDefaults()
	dialer := &net.Dialer{Timeout: t.Connect, KeepAlive: 30 * time.Second}
	return &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   t.Connect,
		ResponseHeaderTimeout: t.FirstByte,
		ExpectContinueTimeout: time.Second,
		IdleConnTimeout:       90 * time.Second,
		// Every idle connection may be to the one host a model is served
		// from: the router runs up to 8 turns at once and the scheduler 4
		// runs beside them, and over HTTP/1.1 (a local server, any plain
		// OpenAI-compatible one) each call in flight holds a connection.
		// Keeping only 4 closed the others after each burst and dialled
		// again at the next (issue 32: 0.2 connections a turn under 20
		// clients).
		MaxIdleConns:        16,
		MaxIdleConnsPerHost: 16,
	}}
}
