package browser

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/tools/web"
)

// admitLog is an admitter that allows everything and records what it was
// asked.
type admitLog struct {
	mu    sync.Mutex
	asked []string
}

func (a *admitLog) admit(_ context.Context, method string, u *url.URL, _ string) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, method+" "+u.RequestURI())
	return nil
}

func (a *admitLog) refused(*url.URL, error) {}

func (a *admitLog) all() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]string(nil), a.asked...)
}

// Chromium's request for a site's default icon is the browser's, not the
// page's: it comes when a page has loaded, which may be after the call
// that opened it, during the next one in a conversation tainted since
// (the whole-app test once got an approval for it). The proxy answers it
// with 404 itself: it reaches neither the admitter (the approval gate)
// nor the site. Every other request, an icon with a query, one the page
// posts or names under another path, is admitted and forwarded as before.
func TestProxyAnswersTheBrowsersFaviconItself(t *testing.T) {
	srv := newRecorder(t, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusNoContent) })
	g, err := web.NewGuard(false, []string{srv.hostPort()})
	if err != nil {
		t.Fatal(err)
	}
	adm := &admitLog{}
	p, err := newProxy(g, adm, 10*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.close)
	client := &http.Client{Transport: &http.Transport{Proxy: http.ProxyURL(&url.URL{Scheme: "http", Host: p.addr()})}}
	t.Cleanup(client.CloseIdleConnections)

	for _, tc := range []struct {
		name, method, path string
		local              bool // answered by the proxy: neither admitted nor forwarded
	}{
		{"the default icon", http.MethodGet, "/favicon.ico", true},
		{"an icon with a query", http.MethodGet, "/favicon.ico?who=Ada", false},
		{"an icon posted to", http.MethodPost, "/favicon.ico", false},
		{"an icon the page names", http.MethodGet, "/static/icon.png", false},
		{"a page", http.MethodGet, "/index.html", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			adm.mu.Lock()
			adm.asked = nil
			adm.mu.Unlock()
			before := len(srv.requests())
			var body io.Reader = http.NoBody
			if tc.method == http.MethodPost {
				body = strings.NewReader("who=Ada")
			}
			req, err := http.NewRequestWithContext(t.Context(), tc.method, srv.URL+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			asked, reached := adm.all(), srv.requests()[before:]
			want := tc.method + " " + tc.path
			if tc.local {
				if resp.StatusCode != http.StatusNotFound || len(asked) != 0 || len(reached) != 0 {
					t.Errorf("status %d, admitter asked %v, site reached %v; want 404 from the proxy, nothing asked or sent", resp.StatusCode, asked, reached)
				}
				return
			}
			if resp.StatusCode != http.StatusNoContent || len(asked) != 1 || asked[0] != want || len(reached) != 1 || reached[0] != want {
				t.Errorf("status %d, admitter asked %v, site reached %v; want %q admitted and forwarded", resp.StatusCode, asked, reached, want)
			}
		})
	}
}
