package web

import (
	"fmt"
	"mime"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
)

// The request checks every answer under /api/ passes, whatever web.auth
// says (docs/api.md, "Access rules"). They close CSRF and DNS rebinding:
// with web.auth: none on loopback any web page the user visits can reach
// the port, so what keeps it out is that browsers say where a request comes
// from (Origin, Sec-Fetch-Site) and which name they resolved (Host), and
// that a cross-site page cannot send a JSON body without a CORS preflight
// (which is never answered).

// hostAllowed reports whether host (a Host header) names this server: the
// listen address, localhost or a loopback address with the bound port, any
// IP address with the bound port when the listener binds every interface,
// or web.public_url's host. A DNS-rebinding page reaches the port under its
// own name, which is none of these.
func (w *Web) hostAllowed(host string) bool {
	if host == "" {
		return false
	}
	if ph := publicHost(w.cfg.PublicURL); ph != "" && sameHostPort(host, ph, defaultPort(w.cfg.PublicURL)) {
		return true
	}
	name, port, err := net.SplitHostPort(host)
	if err != nil {
		// No port: the scheme's default (the API is plain HTTP here; TLS
		// ends at a reverse proxy, whose name is web.public_url).
		name, port = strings.Trim(host, "[]"), "80"
	}
	if port != w.boundPort() {
		return false
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if name == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(name)
	if err != nil {
		// A name other than localhost: only the listen address's own.
		lh, _, _ := net.SplitHostPort(w.cfg.Listen)
		return strings.EqualFold(strings.TrimSuffix(lh, "."), name)
	}
	ip = ip.Unmap()
	if ip.IsLoopback() {
		return true
	}
	lh, _, _ := net.SplitHostPort(w.listenAddr())
	lip, err := netip.ParseAddr(lh)
	if err != nil {
		return false
	}
	// An IP literal cannot be rebound: with a wildcard listener every
	// address of the machine is this server.
	return lip.IsUnspecified() || lip.Unmap() == ip
}

// listenAddr is the bound address (the configured one before Start).
func (w *Web) listenAddr() string {
	if w.ln != nil {
		return w.ln.Addr().String()
	}
	return w.cfg.Listen
}

func (w *Web) boundPort() string {
	_, port, _ := net.SplitHostPort(w.listenAddr())
	return port
}

// sameHostPort compares two host[:port] values, filling in def for a
// missing port.
func sameHostPort(a, b, def string) bool {
	norm := func(s string) string {
		s = strings.ToLower(s)
		if _, _, err := net.SplitHostPort(s); err != nil {
			s = net.JoinHostPort(strings.Trim(s, "[]"), def)
		}
		return s
	}
	return norm(a) == norm(b)
}

// defaultPort is the default port of a URL's scheme.
func defaultPort(rawURL string) string {
	if strings.HasPrefix(rawURL, "https://") {
		return "443"
	}
	return "80"
}

// misdirected answers 421 for a Host that is not this server.
func misdirected(rw http.ResponseWriter, host string) {
	writeError(rw, http.StatusMisdirectedRequest, fmt.Sprintf(
		"Host %q is not this server's address: use the address Reverie prints at start "+
			"(or localhost), or set web.public_url to the name you reach it under", host))
}

// unsafeMethod reports whether a request may change something.
func unsafeMethod(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return false
	}
	return true
}

// Values of Sec-Fetch-Site (Fetch Metadata).
const (
	fetchSameOrigin = "same-origin"
	fetchNone       = "none" // typed by the user, a bookmark
)

// crossSite says why a request that may change something (an unsafe
// method or a WebSocket upgrade) comes from another site, or "" when it
// does not. Browsers send Origin on every cross-origin POST, PUT, PATCH,
// DELETE and WebSocket upgrade, and Sec-Fetch-Site on every request; a
// request with neither comes from a program, not from a web page.
// same-site (another port of localhost, a sibling subdomain) is another
// site here: only the page itself may write.
func crossSite(r *http.Request, publicHost string) string {
	switch s := r.Header.Get("Sec-Fetch-Site"); s {
	case "", fetchSameOrigin, fetchNone:
	default:
		return "Sec-Fetch-Site: " + s
	}
	if !sameOrigin(r, publicHost) {
		return "Origin " + strconv.Quote(r.Header.Get("Origin"))
	}
	return ""
}

// browserVouched reports whether a browser said the request comes from
// the page itself: an Origin header (checked by crossSite) or
// Sec-Fetch-Site same-origin or none. Writes authenticated by the cookie,
// and the sign-in that sets it, need this: without it the request's origin
// is unknown.
func browserVouched(r *http.Request) bool {
	if r.Header.Get("Origin") != "" {
		return true
	}
	s := r.Header.Get("Sec-Fetch-Site")
	return s == fetchSameOrigin || s == fetchNone
}

// sameOrigin reports whether r's Origin header, when present, names the host
// r was sent to, or publicHost (web.public_url's host, when a reverse proxy
// changes Host). "null" (sandboxed frames, some redirects) is never the
// same origin.
func sameOrigin(r *http.Request, publicHost string) bool {
	origin := r.Header.Get("Origin")
	if origin == "" {
		return true
	}
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	return strings.EqualFold(u.Host, r.Host) || (publicHost != "" && strings.EqualFold(u.Host, publicHost))
}

// jsonBody reports whether a request that may change something carries
// no body, or a body declared as application/json. A cross-site form or
// a "simple" fetch can send text/plain, form data or no type at all
// without a CORS preflight, never application/json.
func jsonBody(r *http.Request) bool {
	ct := r.Header.Get("Content-Type")
	if ct == "" {
		return r.ContentLength == 0
	}
	mt, _, err := mime.ParseMediaType(ct)
	return err == nil && mt == "application/json"
}

// clientKey is the rate-limit key of a request: its IPv4 address, or the
// /64 network of its IPv6 address (one host usually holds a whole /64, so
// keying by address would give it 2^64 buckets).
func clientKey(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	ip, err := netip.ParseAddr(host)
	if err != nil {
		return host
	}
	ip = ip.Unmap()
	if ip.Is4() {
		return ip.String()
	}
	p, _ := ip.WithZone("").Prefix(64)
	return p.String()
}
