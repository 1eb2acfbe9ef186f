package providers

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// hiding wraps a body as the SDKs do for each attempt: it can be read and
// closed, nothing more. closed is closed once it is (the transport closes
// a body on its own goroutine).
type hiding struct {
	io.ReadCloser
	once   sync.Once
	closed chan struct{}
}

func hide(r io.Reader) *hiding {
	return &hiding{ReadCloser: io.NopCloser(r), closed: make(chan struct{})}
}

func (h *hiding) Close() error {
	h.once.Do(func() { close(h.closed) })
	return h.ReadCloser.Close()
}

func (h *hiding) isClosed() bool {
	select {
	case <-h.closed:
		return true
	default:
		return false
	}
}

// seen is a RoundTripper that keeps the request it is handed and reads its
// body.
type seen struct {
	req  *http.Request
	body string
}

func (s *seen) RoundTrip(req *http.Request) (*http.Response, error) {
	s.req = req
	var b strings.Builder
	if _, err := io.Copy(&b, req.Body); err != nil {
		return nil, err
	}
	s.body = b.String()
	req.Body.Close()
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

// readOnly hides a reader's WriteTo.
type readOnly struct{ io.Reader }

// A body the SDK hid in its own wrapper reaches the transport as a copy
// from GetBody that writes itself out; the hidden one is closed with it and
// the caller's request is left as it was. Other bodies pass as they are.
func TestBodyWriterTo(t *testing.T) {
	const text = "a request body"
	getBody := func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(text)), nil }
	for _, tc := range []struct {
		name    string
		body    func() io.ReadCloser
		getBody func() (io.ReadCloser, error)
		rewound bool
	}{
		{name: "hidden, with GetBody", body: func() io.ReadCloser { return hide(strings.NewReader(text)) },
			getBody: getBody, rewound: true},
		{name: "hidden, without GetBody", body: func() io.ReadCloser { return hide(strings.NewReader(text)) }},
		{name: "GetBody's copy cannot write itself", body: func() io.ReadCloser { return hide(strings.NewReader(text)) },
			getBody: func() (io.ReadCloser, error) { return io.NopCloser(readOnly{strings.NewReader(text)}), nil }},
		{name: "GetBody fails", body: func() io.ReadCloser { return hide(strings.NewReader(text)) },
			getBody: func() (io.ReadCloser, error) { return nil, errors.New("gone") }},
		{name: "writes itself already", body: func() io.ReadCloser { return io.NopCloser(strings.NewReader(text)) }, getBody: getBody},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, "http://model.invalid/v1/chat", nil)
			if err != nil {
				t.Fatal(err)
			}
			given := tc.body()
			req.Body, req.GetBody = given, tc.getBody
			next := &seen{}
			if _, err := (bodyWriterTo{next}).RoundTrip(req); err != nil {
				t.Fatal(err)
			}
			if next.body != text {
				t.Errorf("the transport read %q, want %q", next.body, text)
			}
			if req.Body != given {
				t.Error("the caller's request was changed")
			}
			_, writes := next.req.Body.(io.WriterTo)
			if rewound := next.req.Body != given; rewound != tc.rewound || tc.rewound && !writes {
				t.Errorf("handed another body = %v (writes itself: %v), want %v", rewound, writes, tc.rewound)
			}
			if h, ok := given.(*hiding); ok && !h.isClosed() {
				t.Error("the given body was not closed")
			}
		})
	}
}

// Through the real transport, a hidden body arrives whole.
func TestBodyWriterToThroughHTTP(t *testing.T) {
	body := bytes.Repeat([]byte("tokens "), 20_000) // larger than the copy buffer
	got := make(chan []byte, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		got <- b
	}))
	defer srv.Close()
	req, err := http.NewRequest(http.MethodPost, srv.URL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	given := hide(bytes.NewReader(body))
	req.Body = given
	req.ContentLength = int64(len(body))
	resp, err := NewHTTPClient(Timeouts{}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if b := <-got; !bytes.Equal(b, body) {
		t.Fatalf("the server read %d bytes, want %d", len(b), len(body))
	}
	<-given.closed // closed by the transport once it has written the copy
}

// closesIdle records CloseIdleConnections.
type closesIdle struct {
	http.RoundTripper
	closed bool
}

func (c *closesIdle) CloseIdleConnections() { c.closed = true }

// TestBodyWriterToClosesIdleConnections: the wrapper does not hide the
// transport's CloseIdleConnections from http.Client, which calls it only
// on a transport that has the method.
func TestBodyWriterToClosesIdleConnections(t *testing.T) {
	next := &closesIdle{}
	(&http.Client{Transport: bodyWriterTo{next}}).CloseIdleConnections()
	if !next.closed {
		t.Error("http.Client.CloseIdleConnections did not reach the wrapped transport")
	}
	if _, ok := NewHTTPClient(Timeouts{}).Transport.(interface{ CloseIdleConnections() }); !ok {
		t.Error("NewHTTPClient's transport cannot close its idle connections")
	}
}
