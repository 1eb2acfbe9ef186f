package page

import (
	"bytes"
	"compress/gzip"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"testing/fstest"
)

func get(t *testing.T, path string, header ...string) *http.Response {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, path, nil)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	rec := httptest.NewRecorder()
	Handler().ServeHTTP(rec, req)
	return rec.Result()
}

func body(t *testing.T, resp *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestShell(t *testing.T) {
	for _, path := range []string{"/", "/index.html"} {
		resp := get(t, path)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d", path, resp.StatusCode)
		}
		checkSecurityHeaders(t, resp)
		if ct := resp.Header.Get("Content-Type"); ct != "text/html; charset=utf-8" {
			t.Errorf("GET %s: Content-Type %q", path, ct)
		}
		if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
			t.Errorf("GET %s: Cache-Control %q, want no-cache (the shell names versioned assets)", path, cc)
		}
		html := body(t, resp)
		refs := regexp.MustCompile(`"(/static/[^"?]+)\?v=([0-9a-f]{16})"`).FindAllStringSubmatch(html, -1)
		if len(refs) < 3 {
			t.Fatalf("the shell should reference its assets with ?v=<hash>, found %v", refs)
		}
		for _, ref := range refs {
			r := get(t, ref[1]+"?v="+ref[2])
			if r.StatusCode != http.StatusOK {
				t.Errorf("%s: %d", ref[1], r.StatusCode)
			}
			if cc := r.Header.Get("Cache-Control"); !strings.Contains(cc, "immutable") {
				t.Errorf("%s?v=<current hash>: Cache-Control %q, want immutable", ref[1], cc)
			}
		}
	}
}

func checkSecurityHeaders(t *testing.T, resp *http.Response) {
	t.Helper()
	csp := resp.Header.Get("Content-Security-Policy")
	for _, want := range []string{"default-src 'none'", "script-src 'self'", "style-src 'self'", "frame-ancestors 'none'", "require-trusted-types-for 'script'"} {
		if !strings.Contains(csp, want) {
			t.Errorf("CSP %q lacks %q", csp, want)
		}
	}
	if strings.Contains(csp, "unsafe-inline") || strings.Contains(csp, "unsafe-eval") {
		t.Errorf("CSP allows unsafe sources: %q", csp)
	}
	if v := resp.Header.Get("X-Content-Type-Options"); v != "nosniff" {
		t.Errorf("X-Content-Type-Options %q", v)
	}
	if v := resp.Header.Get("Referrer-Policy"); v != "no-referrer" {
		t.Errorf("Referrer-Policy %q", v)
	}
}

func TestAssets(t *testing.T) {
	tests := []struct {
		name  string
		path  string
		ctype string
	}{
		{"stylesheet", "/static/style.css", "text/css; charset=utf-8"},
		{"entry module", "/static/js/app.js", "text/javascript; charset=utf-8"},
		{"markdown module", "/static/js/markdown.js", "text/javascript; charset=utf-8"},
		{"icon", "/static/icon.svg", "image/svg+xml"},
		{"manifest", "/static/manifest.webmanifest", "application/manifest+json"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			resp := get(t, tc.path)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			checkSecurityHeaders(t, resp)
			if ct := resp.Header.Get("Content-Type"); ct != tc.ctype {
				t.Errorf("Content-Type %q, want %q", ct, tc.ctype)
			}
			if cc := resp.Header.Get("Cache-Control"); cc != "no-cache" {
				t.Errorf("unversioned URL: Cache-Control %q, want no-cache", cc)
			}
			etag := resp.Header.Get("ETag")
			if etag == "" {
				t.Fatal("no ETag")
			}
			plain := body(t, resp)
			again := get(t, tc.path, "If-None-Match", etag)
			if again.StatusCode != http.StatusNotModified {
				t.Errorf("If-None-Match with the ETag: %d, want 304", again.StatusCode)
			}
			stale := get(t, tc.path+"?v=0000000000000000")
			if cc := stale.Header.Get("Cache-Control"); cc != "no-cache" {
				t.Errorf("stale version: Cache-Control %q, want no-cache", cc)
			}

			zipped := get(t, tc.path, "Accept-Encoding", "gzip, deflate, br")
			if zipped.Header.Get("Content-Encoding") != "gzip" {
				if tc.ctype != "image/png" && len(plain) > 2000 {
					t.Errorf("a %d-byte text asset was not compressed", len(plain))
				}
				return
			}
			if zipped.Header.Get("ETag") == etag {
				t.Error("the gzip variant has the same ETag as the plain one")
			}
			if !strings.Contains(zipped.Header.Get("Vary"), "Accept-Encoding") {
				t.Error("no Vary: Accept-Encoding")
			}
			zr, err := gzip.NewReader(zipped.Body)
			if err != nil {
				t.Fatal(err)
			}
			unzipped, err := io.ReadAll(zr)
			if err != nil {
				t.Fatal(err)
			}
			if string(unzipped) != plain {
				t.Error("the gzip variant does not decompress to the asset")
			}
		})
	}
}

func TestNotFoundAndMethods(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		want   int
	}{
		{"unknown asset", http.MethodGet, "/static/nope.js", http.StatusNotFound},
		{"directory", http.MethodGet, "/static/js", http.StatusNotFound},
		{"traversal", http.MethodGet, "/static/../page.go", http.StatusNotFound},
		{"other path", http.MethodGet, "/admin", http.StatusNotFound},
		{"shell under static", http.MethodGet, "/static/index.html", http.StatusNotFound},
		{"post", http.MethodPost, "/", http.StatusMethodNotAllowed},
		{"delete asset", http.MethodDelete, "/static/style.css", http.StatusMethodNotAllowed},
		{"head", http.MethodHead, "/", http.StatusOK},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			Handler().ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.want {
				t.Errorf("%s %s: %d, want %d", tc.method, tc.path, rec.Code, tc.want)
			}
			if rec.Header().Get("Content-Security-Policy") == "" {
				t.Error("no CSP on this answer")
			}
		})
	}
}

func TestAcceptsGzip(t *testing.T) {
	tests := []struct {
		name   string
		header string
		want   bool
	}{
		{"empty", "", false},
		{"gzip", "gzip", true},
		{"list", "br, gzip, deflate", true},
		{"with q", "gzip;q=0.8", true},
		{"refused", "gzip;q=0", false},
		{"refused spaced", "gzip; q=0.0", false},
		{"upper case", "GZIP", true},
		{"other only", "br, deflate", false},
		{"prefix is not gzip", "x-gzipped", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := acceptsGzip(tc.header); got != tc.want {
				t.Errorf("acceptsGzip(%q) = %v, want %v", tc.header, got, tc.want)
			}
		})
	}
}

// TestNoInlineCode keeps the shell free of inline script and style (the CSP
// would block them) and the scripts free of HTML-string sinks (Trusted
// Types would make them throw).
func TestNoInlineCode(t *testing.T) {
	shell, err := fs.ReadFile(staticFS, "static/index.html")
	if err != nil {
		t.Fatal(err)
	}
	if m := regexp.MustCompile(`(?i)<script(?:\s[^>]*)?>`).FindAll(shell, -1); len(m) != 1 || !bytes.Contains(m[0], []byte(`src="/static/js/app.js"`)) {
		t.Errorf("the shell must have exactly one script, the external entry module: %q", m)
	}
	for _, re := range []string{`(?i)\son[a-z]+\s*=`, `(?i)\sstyle\s*=`, `(?i)<style`, `(?i)javascript:`, `(?i)https?://`} {
		if loc := regexp.MustCompile(re).FindIndex(shell); loc != nil {
			t.Errorf("index.html contains %q: %q", re, shell[loc[0]:min(loc[1]+30, len(shell))])
		}
	}
	sinks := regexp.MustCompile(`\.innerHTML\s*=|\.outerHTML\s*=|insertAdjacentHTML|document\.write|\beval\(|new Function\(|setAttribute\(\s*'on|https?://(?:[a-z0-9-]+\.)+[a-z]{2,}/`)
	err = fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(p, ".js") {
			return err
		}
		src, err := fs.ReadFile(staticFS, p)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue
			}
			if m := sinks.FindString(line); m != "" && !strings.Contains(line, "http://www.w3.org/2000/svg") {
				t.Errorf("%s: %q in %q", p, m, strings.TrimSpace(line))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestModuleImportsResolve checks that every relative import of every
// module names an embedded file.
func TestModuleImportsResolve(t *testing.T) {
	imp := regexp.MustCompile(`(?m)^\s*import\s+(?:[^'"]+\s+from\s+)?'(\./[^']+)'`)
	err := fs.WalkDir(staticFS, "static/js", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		src, err := fs.ReadFile(staticFS, p)
		if err != nil {
			return err
		}
		for _, m := range imp.FindAllStringSubmatch(string(src), -1) {
			target := "static/js/" + strings.TrimPrefix(m[1], "./")
			if _, err := fs.Stat(staticFS, target); err != nil {
				t.Errorf("%s imports %s, which is not embedded", p, m[1])
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestBuildRejectsUnknownTypes(t *testing.T) {
	fsys := fstest.MapFS{"static/index.html": {Data: []byte("<html></html>")}, "static/x.exe": {Data: []byte("MZ")}}
	if _, err := build(fsys); err == nil || !strings.Contains(err.Error(), "no content type") {
		t.Errorf("build with an unknown file type: %v", err)
	}
	if _, err := build(fstest.MapFS{"static/a.css": {Data: []byte("a{}")}}); err == nil || !strings.Contains(err.Error(), "index.html") {
		t.Errorf("build without index.html: %v", err)
	}
}
