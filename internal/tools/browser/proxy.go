package browser

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reverie-ai/reverie/internal/tools/web"
)

// admitter decides whether the browser may make a request: the session
// checks the SSRF guard, whether a call is running, and the call's
// approval gate. body is the start of a request body ("" for none).
type admitter interface {
	admit(ctx context.Context, method string, u *url.URL, body string) error
	refused(u *url.URL, err error)
}

// proxy is the HTTP proxy every request of one browser goes through
// (Chromium's --proxy-server, with loopback not bypassed). It serves on
// 127.0.0.1 only, forwards plain HTTP requests and tunnels CONNECT, each
// after the admitter allowed it, and dials through the guard, so a name
// that resolves to a refused address is refused at connect time too.
type proxy struct {
	guard     *web.Guard
	admit     admitter
	timeout   time.Duration
	ln        net.Listener
	srv       *http.Server
	transport *http.Transport

	inflight atomic.Int64
	last     atomic.Int64 // unix nanoseconds of the last request's start or end

	wg     sync.WaitGroup // tunnels
	mu     sync.Mutex
	conns  map[net.Conn]struct{} // tunnelled connections, closed by close
	closed bool
	served chan struct{} // closed when Serve returns
}

// maxBodyShown is how much of a request body an approval request shows.
const maxBodyShown = 300

func newProxy(g *web.Guard, a admitter, timeout time.Duration) (*proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the browser's proxy: %w", err)
	}
	p := &proxy{guard: g, admit: a, timeout: timeout, ln: ln, conns: map[net.Conn]struct{}{}, served: make(chan struct{})}
	p.transport = &http.Transport{
		Proxy:                 nil, // never another proxy: it would dial past the guard
		DialContext:           g.DialContext(10 * time.Second),
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: timeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       30 * time.Second,
		DisableCompression:    true, // pass the browser's Accept-Encoding and the body as they are
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 10 * time.Second, ErrorLog: nil}
	go func() {
		defer close(p.served)
		_ = p.srv.Serve(ln)
	}()
	return p, nil
}

// addr is the proxy's "127.0.0.1:port".
func (p *proxy) addr() string { return p.ln.Addr().String() }

// idleFor reports whether no request is in flight and none started or
// ended within d.
func (p *proxy) idleFor(d time.Duration) bool {
	return p.inflight.Load() == 0 && time.Since(time.Unix(0, p.last.Load())) >= d
}

func (p *proxy) begin() func() {
	p.inflight.Add(1)
	p.last.Store(time.Now().UnixNano())
	return func() {
		p.last.Store(time.Now().UnixNano())
		p.inflight.Add(-1)
	}
}

// close stops the proxy: the listener, open tunnels and idle upstream
// connections. It waits for the tunnels' goroutines.
func (p *proxy) close() {
	p.mu.Lock()
	p.closed = true
	for c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	_ = p.srv.Close()
	<-p.served
	p.wg.Wait()
	p.transport.CloseIdleConnections()
}

func (p *proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Host == p.addr() || r.URL.Host == p.addr() {
		// Chromium's own service requests, pointed here (gaia-url…).
		w.WriteHeader(http.StatusNoContent)
		return
	}
	if browserFavicon(r) {
		// Chromium's own request for a site's default icon, made when a
		// page has finished loading, which may be after its call ended
		// and during the next (in a conversation tainted since), where
		// it would be put to the approval gate as if the page had made
		// it. Headless, no icon is shown: it is answered here, leaves
		// nothing and asks nothing.
		http.NotFound(w, r)
		return
	}
	defer p.begin()()
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if !r.URL.IsAbs() || (r.URL.Scheme != "http" && r.URL.Scheme != "https") {
		http.Error(w, "this proxy only forwards absolute http URLs", http.StatusBadRequest)
		return
	}
	p.forward(w, r)
}

// browserFavicon reports whether r is the request Chromium makes for a
// site's default icon: GET http(s)://host/favicon.ico, no query, no body.
// An icon a page names (<link rel="icon">) has its own URL, chosen by the
// page, and goes through the gate like any request of the page.
func browserFavicon(r *http.Request) bool {
	return r.Method == http.MethodGet && r.URL.IsAbs() && (r.URL.Scheme == "http" || r.URL.Scheme == "https") &&
		r.URL.Path == "/favicon.ico" && r.URL.RawQuery == "" && !r.URL.ForceQuery && r.ContentLength == 0
}

// refuse answers a refused request with 403 and a text the page (and a
// snapshot) can show.
func refuse(w http.ResponseWriter, err error) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusForbidden)
	fmt.Fprintf(w, "Reverie refused this request: %v\n", err)
}

func (p *proxy) forward(w http.ResponseWriter, r *http.Request) {
	u := r.URL
	body, preview, err := peekBody(r)
	if err != nil {
		http.Error(w, "read the request body: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := p.check(r.Context(), r.Method, u, preview); err != nil {
		refuse(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), p.timeout)
	defer cancel()
	out, err := http.NewRequestWithContext(ctx, r.Method, u.String(), body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	out.ContentLength = r.ContentLength
	for k, vs := range r.Header {
		if hopByHop(k) {
			continue
		}
		out.Header[k] = vs
	}
	resp, err := p.transport.RoundTrip(out)
	if err != nil {
		if errors.Is(err, web.ErrBlockedAddress) {
			p.admit.refused(u, err)
			refuse(w, err)
			return
		}
		http.Error(w, "Reverie's proxy could not reach "+u.Host+": "+err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, vs := range resp.Header {
		if hopByHop(k) {
			continue
		}
		w.Header()[k] = vs
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = io.Copy(w, resp.Body)
}

// check applies the guard to u, then asks the admitter.
func (p *proxy) check(ctx context.Context, method string, u *url.URL, body string) error {
	if err := p.guard.CheckURL(u); err != nil {
		p.admit.refused(u, err)
		return err
	}
	if err := p.admit.admit(ctx, method, u, body); err != nil {
		p.admit.refused(u, err)
		return err
	}
	return nil
}

// tunnel serves CONNECT host:port (HTTPS, WebSockets): the guard and the
// admitter see the destination as https://host:port/.
func (p *proxy) tunnel(w http.ResponseWriter, r *http.Request) {
	host, port, err := net.SplitHostPort(r.Host)
	if err != nil {
		http.Error(w, "CONNECT needs host:port", http.StatusBadRequest)
		return
	}
	u := &url.URL{Scheme: "https", Host: r.Host, Path: "/"}
	if port == "443" {
		u.Host = host
		if strings.Contains(host, ":") {
			u.Host = "[" + host + "]"
		}
	}
	if err := p.check(r.Context(), http.MethodConnect, u, ""); err != nil {
		refuse(w, err)
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	up, err := p.guard.DialContext(10*time.Second)(ctx, "tcp", r.Host)
	cancel()
	if err != nil {
		if errors.Is(err, web.ErrBlockedAddress) {
			p.admit.refused(u, err)
			refuse(w, err)
			return
		}
		http.Error(w, "Reverie's proxy could not reach "+r.Host+": "+err.Error(), http.StatusBadGateway)
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		_ = up.Close()
		http.Error(w, "cannot tunnel", http.StatusInternalServerError)
		return
	}
	down, rw, err := hj.Hijack()
	if err != nil {
		_ = up.Close()
		return
	}
	if !p.track(up, down) {
		return
	}
	_, _ = down.Write([]byte("HTTP/1.1 200 Connection Established\r\n\r\n"))
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		p.splice(up, down, rw.Reader)
	}()
}

// track registers the two ends of a tunnel so close can end them; false
// (both closed) when the proxy is closing.
func (p *proxy) track(conns ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		for _, c := range conns {
			_ = c.Close()
		}
		return false
	}
	for _, c := range conns {
		p.conns[c] = struct{}{}
	}
	return true
}

// splice copies both ways until either side ends, then closes both.
func (p *proxy) splice(up, down net.Conn, buffered *bufio.Reader) {
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(up, buffered) // what the browser sent, the buffered part first
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(down, up)
		done <- struct{}{}
	}()
	<-done
	_ = up.Close()
	_ = down.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, up)
	delete(p.conns, down)
	p.mu.Unlock()
}

// peekBody returns a reader of r's whole body and its first maxBodyShown
// bytes as text, for the approval request.
func peekBody(r *http.Request) (io.Reader, string, error) {
	if r.Body == nil || r.ContentLength == 0 {
		return nil, "", nil
	}
	head := make([]byte, maxBodyShown)
	n, err := io.ReadFull(r.Body, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, "", err
	}
	head = head[:n]
	return io.MultiReader(strings.NewReader(string(head)), r.Body), string(head), nil
}

// hopByHop reports whether a header is for one connection only.
func hopByHop(k string) bool {
	switch http.CanonicalHeaderKey(k) {
	case "Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
		"Te", "Trailer", "Transfer-Encoding", "Upgrade":
		return true
	}
	return false
}
