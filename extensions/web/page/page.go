// Package page serves Reverie's web page: the chat, the debug panel and the
// setup screen. The page is hand-written HTML, CSS and JavaScript modules
// embedded in the binary (no build step, no CDN, no run-time download), so it
// works fully offline. It talks to the server only through the documented
// HTTP API (docs/api.md).
//
// Handler serves
//
//	GET /               the app shell (index.html)
//	GET /static/<path>  the embedded assets
//
// with explicit content types, an ETag per asset (a SHA-256 prefix of its
// content; If-None-Match answers 304), gzip when the client accepts it, and
// security headers on every answer: a strict Content-Security-Policy
// (script-src 'self', no inline script or style, Trusted Types enforced so
// that no string can reach innerHTML), X-Content-Type-Options: nosniff,
// Referrer-Policy: no-referrer and frame-ancestors 'none'. The shell refers to
// its stylesheet and entry module with ?v=<hash>; such versioned URLs are
// cached for a year, everything else is revalidated on every load.
//
// Concurrency: the handler is immutable after construction and safe for
// concurrent use.
package page

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"
)

//go:embed static
var staticFS embed.FS

// ContentSecurityPolicy is sent with every response of the handler.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; media-src blob:; " +
	"connect-src 'self'; font-src 'self'; manifest-src 'self'; base-uri 'none'; form-action 'self'; " +
	"frame-ancestors 'none'; require-trusted-types-for 'script'; trusted-types 'none'"

// contentTypes maps file extensions to content types. The table is explicit
// so that a minimal system without a mime database serves the same types.
var contentTypes = map[string]string{
	".html":        "text/html; charset=utf-8",
	".js":          "text/javascript; charset=utf-8",
	".css":         "text/css; charset=utf-8",
	".svg":         "image/svg+xml",
	".png":         "image/png",
	".json":        "application/json",
	".webmanifest": "application/manifest+json",
	".txt":         "text/plain; charset=utf-8",
}

// asset is one embedded file, ready to serve.
type asset struct {
	ctype string
	body  []byte
	hash  string // first 16 hex digits of the SHA-256 of body
	// gz is the gzipped body, compressed when first asked for (nil when
	// compression does not pay or the type is not compressible).
	gz func() []byte
}

// site is the immutable set of assets.
type site struct {
	index  *asset
	static map[string]*asset // by path under static/, e.g. "js/app.js"
	mod    time.Time
}

var defaultSite = sync.OnceValues(func() (*site, error) { return build(staticFS) })

// Handler returns the page handler. Mount it at "/" on the server's mux; the
// API's more specific patterns take precedence. The assets are read and
// hashed on the first request, and each is compressed the first time a
// client asks for it gzipped, so that neither costs the agent's start-up
// (nor its memory while nobody opens the page).
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s, err := defaultSite()
		if err != nil {
			// The assets are embedded at compile time: this is a build
			// defect, caught by the package's tests.
			panic(fmt.Sprintf("page: load embedded assets: %v", err))
		}
		s.ServeHTTP(w, r)
	})
}

// build reads every asset under static/, hashes and compresses it, and
// prepares the shell with versioned asset URLs.
func build(fsys fs.FS) (*site, error) {
	s := &site{static: map[string]*asset{}, mod: time.Now().UTC().Truncate(time.Second)}
	err := fs.WalkDir(fsys, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(fsys, p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		ctype, ok := contentTypes[path.Ext(p)]
		if !ok {
			return fmt.Errorf("%s: no content type for %q", p, path.Ext(p))
		}
		s.static[strings.TrimPrefix(p, "static/")] = newAsset(ctype, body)
		return nil
	})
	if err != nil {
		return nil, err
	}
	shell, ok := s.static["index.html"]
	if !ok {
		return nil, fmt.Errorf("static/index.html is missing")
	}
	html := string(shell.body)
	for name, a := range s.static {
		if name == "index.html" {
			continue
		}
		ref := `"/static/` + name + `"`
		html = strings.ReplaceAll(html, ref, `"/static/`+name+`?v=`+a.hash+`"`)
	}
	s.index = newAsset(shell.ctype, []byte(html))
	return s, nil
}

func newAsset(ctype string, body []byte) *asset {
	sum := sha256.Sum256(body)
	a := &asset{ctype: ctype, body: body, hash: hex.EncodeToString(sum[:8]), gz: func() []byte { return nil }}
	if strings.HasPrefix(ctype, "text/") || strings.Contains(ctype, "json") || strings.Contains(ctype, "svg") {
		a.gz = sync.OnceValue(func() []byte {
			var b bytes.Buffer
			zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
			_, _ = zw.Write(body)
			_ = zw.Close()
			if b.Len() < len(body)*9/10 {
				return b.Bytes()
			}
			return nil
		})
	}
	return a
}

// setSecurityHeaders adds the headers every answer carries.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", ContentSecurityPolicy)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	// The microphone records voice messages from this page only.
	h.Set("Permissions-Policy", "camera=(), microphone=(self), geolocation=(), payment=()")
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	setSecurityHeaders(w.Header())
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	switch p := r.URL.Path; {
	case p == "/" || p == "/index.html":
		s.serve(w, r, s.index, false)
	case strings.HasPrefix(p, "/static/"):
		name := strings.TrimPrefix(p, "/static/")
		a, ok := s.static[name]
		if !ok || name == "index.html" {
			http.NotFound(w, r)
			return
		}
		s.serve(w, r, a, r.URL.Query().Get("v") == a.hash)
	default:
		http.NotFound(w, r)
	}
}

// serve writes one asset, compressed when the client accepts gzip, and
// answers conditional requests through http.ServeContent.
func (s *site) serve(w http.ResponseWriter, r *http.Request, a *asset, versioned bool) {
	h := w.Header()
	h.Set("Content-Type", a.ctype)
	h.Add("Vary", "Accept-Encoding")
	if versioned {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	body, etag := a.body, `"`+a.hash+`"`
	if acceptsGzip(r.Header.Get("Accept-Encoding")) {
		if gz := a.gz(); gz != nil {
			body, etag = gz, `"`+a.hash+`-gz"`
			h.Set("Content-Encoding", "gzip")
		}
	}
	h.Set("ETag", etag)
	http.ServeContent(w, r, "", s.mod, bytes.NewReader(body))
}

// acceptsGzip reports whether an Accept-Encoding header allows gzip
// ("gzip;q=0" refuses it).
func acceptsGzip(header string) bool {
	for part := range strings.SplitSeq(header, ",") {
		name, params, _ := strings.Cut(strings.TrimSpace(part), ";")
		if !strings.EqualFold(strings.TrimSpace(name), "gzip") {
			continue
		}
		q := strings.ReplaceAll(strings.TrimSpace(params), " ", "")
		return q != "q=0" && q != "q=0.0" && q != "q=0.00" && q != "q=0.000"
	}
	return false
}
