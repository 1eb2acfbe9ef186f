package web

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"testing"
)

func TestPublic(t *testing.T) {
	tests := []struct {
		addr string
		want bool
	}{
		{"8.8.8.8", true},
		{"1.1.1.1", true},
		{"2606:4700:4700::1111", true},
		{"64:ff9b::808:808", true}, // NAT64 of 8.8.8.8
		{"127.0.0.1", false},
		{"127.8.9.10", false},
		{"::1", false},
		{"10.1.2.3", false},
		{"172.16.5.4", false},
		{"172.31.255.255", false},
		{"192.168.1.1", false},
		{"fc00::1", false},
		{"fd12:3456::1", false},
		{"fe80::1", false},
		{"169.254.169.254", false}, // cloud metadata
		{"0.0.0.0", false},
		{"::", false},
		{"224.0.0.1", false},
		{"ff02::1", false},
		{"100.64.0.1", false},
		{"255.255.255.255", false},
		{"::ffff:127.0.0.1", false},
		{"::ffff:10.0.0.1", false},
		{"64:ff9b::7f00:1", false}, // NAT64 of 127.0.0.1
		{"2002:7f00:1::", false},   // 6to4 of 127.0.0.1
		{"2002:a00:1::", false},    // 6to4 of 10.0.0.1
	}
	for _, tc := range tests {
		t.Run(tc.addr, func(t *testing.T) {
			ip := netip.MustParseAddr(tc.addr)
			if got := public(ip.Unmap()); got != tc.want {
				t.Fatalf("public(%s) = %v; want %v", tc.addr, got, tc.want)
			}
		})
	}
}

// site serves the fixtures fetch_url is tested against.
func site(t *testing.T) *httptest.Server {
	t.Helper()
	article, err := os.ReadFile("testdata/article.html")
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/article", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(article)
	})
	mux.HandleFunc("/notes.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte("plain notes\nsecond line\n"))
	})
	mux.HandleFunc("/data.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"ok":true}`))
	})
	mux.HandleFunc("/latin1", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=iso-8859-1")
		w.Write([]byte("caf\xe9 cr\xe8me\n"))
	})
	mux.HandleFunc("/untyped", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // suppress sniffing by net/http
		w.Write([]byte("just some text without a declared type\n"))
	})
	mux.HandleFunc("/image.png", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "image/png")
		w.Write([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"))
	})
	mux.HandleFunc("/blob", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Write([]byte("\x00\x01\x02\x03binary\x00\xff"))
	})
	mux.HandleFunc("/big.txt", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte(strings.Repeat("0123456789", 1000)))
	})
	mux.HandleFunc("/missing", func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "no such page", http.StatusNotFound)
	})
	mux.HandleFunc("/redirect", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Query().Get("to"), http.StatusFound)
	})
	mux.HandleFunc("/loop", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/loop", http.StatusFound)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestFetch(t *testing.T) {
	srv := site(t)
	f, err := NewFetcher(FetchConfig{AllowPrivate: true, MaxBytes: 5000})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		args        FetchArgs
		contentType string
		title       string
		contains    []string
		excludes    []string
		exact       string
		truncated   bool
		errIs       error
		wantErr     string
	}{
		{
			name: "article to markdown", args: FetchArgs{URL: srv.URL + "/article"},
			contentType: "text/html", title: "Growing Tomatoes on a Balcony",
			contains: []string{"Choosing a variety", "Tiny Tim", "- Six hours of sun", "[feeding guide](" + srv.URL + "/guides/feeding)"},
			excludes: []string{"tracker", "font-family", "<p>", "Subscribe to our newsletter", "Cookie settings"},
		},
		{name: "plain text passes through", args: FetchArgs{URL: srv.URL + "/notes.txt"}, contentType: "text/plain", exact: "plain notes\nsecond line\n"},
		{name: "json passes through", args: FetchArgs{URL: srv.URL + "/data.json"}, contentType: "application/json", exact: `{"ok":true}`},
		{name: "charset decoded", args: FetchArgs{URL: srv.URL + "/latin1"}, contentType: "text/plain", exact: "café crème\n"},
		{name: "untyped text sniffed", args: FetchArgs{URL: srv.URL + "/untyped"}, contentType: "text/plain", exact: "just some text without a declared type\n"},
		{name: "max_chars caps content", args: FetchArgs{URL: srv.URL + "/notes.txt", MaxChars: 5}, contentType: "text/plain",
			contains: []string{"plain\n\n[… truncated at 5 characters"}, truncated: true},
		{name: "body read limit", args: FetchArgs{URL: srv.URL + "/big.txt", MaxChars: 10_000}, contentType: "text/plain",
			exact: strings.Repeat("0123456789", 500), truncated: true},
		{name: "redirect followed", args: FetchArgs{URL: srv.URL + "/redirect?to=/notes.txt"}, contentType: "text/plain", exact: "plain notes\nsecond line\n"},
		{name: "png refused", args: FetchArgs{URL: srv.URL + "/image.png"}, errIs: ErrBinaryContent},
		{name: "octet-stream refused", args: FetchArgs{URL: srv.URL + "/blob"}, errIs: ErrBinaryContent},
		{name: "http error", args: FetchArgs{URL: srv.URL + "/missing"}, wantErr: "HTTP 404 Not Found: no such page"},
		{name: "too many redirects", args: FetchArgs{URL: srv.URL + "/loop"}, wantErr: "stopped after 5 redirects"},
		{name: "file scheme refused", args: FetchArgs{URL: "file:///etc/passwd"}, wantErr: "only http and https"},
		{name: "redirect to another scheme refused", args: FetchArgs{URL: srv.URL + "/redirect?to=" + url.QueryEscape("ftp://example.com/x")}, wantErr: "only http and https"},
		{name: "negative max_chars", args: FetchArgs{URL: srv.URL + "/notes.txt", MaxChars: -1}, wantErr: "must not be negative"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := f.Fetch(t.Context(), tc.args)
			if tc.errIs != nil || tc.wantErr != "" {
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Fatalf("Fetch error = %v; want %v", err, tc.errIs)
				}
				if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("Fetch error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if got.ContentType != tc.contentType || got.Status != http.StatusOK || got.Truncated != tc.truncated {
				t.Fatalf("content_type %q status %d truncated %v; want %q 200 %v", got.ContentType, got.Status, got.Truncated, tc.contentType, tc.truncated)
			}
			if tc.title != "" && got.Title != tc.title {
				t.Errorf("title = %q; want %q", got.Title, tc.title)
			}
			if tc.exact != "" && got.Content != tc.exact {
				t.Errorf("content = %q; want %q", got.Content, tc.exact)
			}
			for _, s := range tc.contains {
				if !strings.Contains(got.Content, s) {
					t.Errorf("content lacks %q:\n%s", s, got.Content)
				}
			}
			for _, s := range tc.excludes {
				if strings.Contains(got.Content, s) {
					t.Errorf("content contains %q:\n%s", s, got.Content)
				}
			}
		})
	}
}

func TestFetchGuard(t *testing.T) {
	srv := site(t)
	u, err := url.Parse(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	port := u.Port()
	tests := []struct {
		name    string
		cfg     FetchConfig
		url     string
		allowed bool
	}{
		{name: "loopback refused by default", url: srv.URL + "/notes.txt"},
		{name: "localhost name refused by default", url: "http://localhost:" + port + "/notes.txt"},
		{name: "IPv6 loopback refused", url: "http://[::1]:" + port + "/notes.txt"},
		{name: "metadata address refused", url: "http://169.254.169.254/latest/meta-data/"},
		{name: "private address refused", url: "http://10.0.0.1/"},
		{name: "allow_private permits loopback", cfg: FetchConfig{AllowPrivate: true}, url: srv.URL + "/notes.txt", allowed: true},
		{name: "allowlisted IP", cfg: FetchConfig{AllowHosts: []string{"127.0.0.1"}}, url: srv.URL + "/notes.txt", allowed: true},
		{name: "allowlisted prefix", cfg: FetchConfig{AllowHosts: []string{"127.0.0.0/8"}}, url: srv.URL + "/notes.txt", allowed: true},
		{name: "allowlisted host name", cfg: FetchConfig{AllowHosts: []string{"localhost"}}, url: "http://localhost:" + port + "/notes.txt", allowed: true},
		{name: "allowlisted address and port", cfg: FetchConfig{AllowHosts: []string{"127.0.0.1:" + port}}, url: srv.URL + "/notes.txt", allowed: true},
		{name: "allowlisted name and port", cfg: FetchConfig{AllowHosts: []string{"localhost:" + port}}, url: "http://localhost:" + port + "/notes.txt", allowed: true},
		{name: "another port of an allowlisted address is refused", cfg: FetchConfig{AllowHosts: []string{"127.0.0.1:1"}}, url: srv.URL + "/notes.txt"},
		{name: "another port of an allowlisted name is refused", cfg: FetchConfig{AllowHosts: []string{"localhost:1"}}, url: "http://localhost:" + port + "/notes.txt"},
		{name: "other allowlist entries do not help", cfg: FetchConfig{AllowHosts: []string{"intranet.example", "10.0.0.0/8"}}, url: srv.URL + "/notes.txt"},
		{
			name: "redirect from an allowlisted name to a blocked address",
			cfg:  FetchConfig{AllowHosts: []string{"localhost"}},
			url:  "http://localhost:" + port + "/redirect?to=" + url.QueryEscape(srv.URL+"/notes.txt"),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, err := NewFetcher(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := f.Fetch(t.Context(), FetchArgs{URL: tc.url})
			if tc.allowed {
				if err != nil || got.Content != "plain notes\nsecond line\n" {
					t.Fatalf("Fetch = %+v, %v; want the page", got, err)
				}
				return
			}
			if !errors.Is(err, ErrBlockedAddress) {
				t.Fatalf("Fetch error = %v; want ErrBlockedAddress", err)
			}
		})
	}
}

// TestFetchGuardAtDialTime bypasses the early URL check to show that the
// dialer itself refuses blocked addresses, which is what covers DNS answers
// and rebinding.
func TestFetchGuardAtDialTime(t *testing.T) {
	srv := site(t)
	f, err := NewFetcher(FetchConfig{})
	if err != nil {
		t.Fatal(err)
	}
	for _, target := range []string{srv.URL + "/notes.txt", strings.Replace(srv.URL, "127.0.0.1", "localhost", 1) + "/notes.txt"} {
		resp, err := f.client.Get(target)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("GET %s succeeded; want the dialer to refuse it", target)
		}
		if !errors.Is(err, ErrBlockedAddress) {
			t.Fatalf("GET %s error = %v; want ErrBlockedAddress", target, err)
		}
	}
}

func TestNewFetcherBadAllowlist(t *testing.T) {
	if _, err := NewFetcher(FetchConfig{AllowHosts: []string{"intranet.local:http"}}); err == nil {
		t.Error("a host with a non-numeric port was accepted")
	}
	if _, err := NewFetcher(FetchConfig{AllowHosts: []string{"10.0.0.0/99"}}); err == nil {
		t.Fatal("want an error for an invalid prefix")
	}
}

func BenchmarkToMarkdown(b *testing.B) {
	page, err := os.ReadFile("testdata/article.html")
	if err != nil {
		b.Fatal(err)
	}
	u, _ := url.Parse("https://garden.example/article")
	for b.Loop() {
		if _, _, err := toMarkdown(b.Context(), string(page), u); err != nil {
			b.Fatal(err)
		}
	}
}
