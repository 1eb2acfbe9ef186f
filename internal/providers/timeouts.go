package providers

import (
	"context"
	"io"
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
	return &http.Client{Transport: bodyWriterTo{&http.Transport{
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
	}}}
}

// bodyWriterTo gives the transport a request body it can write at once.
// The SDKs wrap the body of every attempt in a reader of their own that
// hides the bytes.Reader under it (openai-go's close-once wrapper), so an
// HTTP/1.1 transport copied it through a 32 KiB buffer allocated for each
// request (a tenth of the bytes a turn allocated, under 20 clients). When
// the request can give its body again (GetBody, as the SDKs set it for
// retries) and that copy writes itself out (io.WriterTo), the transport is
// handed that copy; the caller's body is closed with it, unread.
type bodyWriterTo struct{ next http.RoundTripper }

func (t bodyWriterTo) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Body == nil || req.Body == http.NoBody || req.GetBody == nil {
		return t.next.RoundTrip(req)
	}
	if _, ok := req.Body.(io.WriterTo); ok {
		return t.next.RoundTrip(req)
	}
	again, err := req.GetBody()
	if err != nil {
		return t.next.RoundTrip(req)
	}
	if _, ok := again.(io.WriterTo); !ok {
		again.Close()
		return t.next.RoundTrip(req)
	}
	r := *req // a RoundTripper must not change the caller's request
	r.Body = &rewoundBody{ReadCloser: again, given: req.Body}
	return t.next.RoundTrip(&r)
}

// CloseIdleConnections closes the wrapped transport's idle connections:
// http.Client.CloseIdleConnections reaches a transport only through this
// method.
func (t bodyWriterTo) CloseIdleConnections() {
	if c, ok := t.next.(interface{ CloseIdleConnections() }); ok {
		c.CloseIdleConnections()
	}
}

// rewoundBody is a request body from GetBody, which writes itself out, and
// the body the request was given, closed with it.
type rewoundBody struct {
	io.ReadCloser
	given io.Closer
}

func (b *rewoundBody) WriteTo(w io.Writer) (int64, error) {
	return b.ReadCloser.(io.WriterTo).WriteTo(w)
}

func (b *rewoundBody) Close() error {
	err := b.ReadCloser.Close()
	if gerr := b.given.Close(); err == nil {
		err = gerr
	}
	return err
}
