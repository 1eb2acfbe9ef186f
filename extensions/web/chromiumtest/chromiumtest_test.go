package chromiumtest

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

func TestProblemString(t *testing.T) {
	tests := []struct {
		name string
		p    Problem
		want string
	}{
		{name: "exception with its script", p: Problem{Kind: "uncaught exception", Text: "Uncaught TypeError: x is undefined", URL: "http://127.0.0.1/js/app.js"},
			want: "uncaught exception: Uncaught TypeError: x is undefined at http://127.0.0.1/js/app.js"},
		{name: "exception without a URL", p: Problem{Kind: "uncaught exception", Text: "Uncaught boom"}, want: "uncaught exception: Uncaught boom"},
		{name: "log entry with its resource", p: Problem{Kind: "browser log", Text: "Failed to load resource: the server responded with a status of 401", URL: "http://127.0.0.1/api/v1/state"},
			want: "browser log: Failed to load resource: the server responded with a status of 401 http://127.0.0.1/api/v1/state"},
		{name: "console error", p: Problem{Kind: "console.error", Text: `"bad" 3`}, want: `console.error: "bad" 3`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.p.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestWatchProblems loads a page that logs an error, fails a request and
// throws, and checks that each is reported with its kind.
func TestWatchProblems(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/" {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(w, `<!doctype html><title>t</title><img src="/missing.png">`+
			`<script>console.error("bad", 3); throw new Error("boom")</script>`)
	}))
	t.Cleanup(srv.Close)

	tabCtx, stop := Start(t, Path(t), 800, 600)
	ctx, cancel := context.WithTimeout(tabCtx, 2*time.Minute)
	seen := make(chan Problem)
	wait := WatchProblems(ctx, func(p Problem) {
		select {
		case seen <- p:
		case <-ctx.Done():
		}
	})
	t.Cleanup(func() { cancel(); stop(); wait() })
	if _, err := chromedp.Run(ctx, chromedp.Navigate(srv.URL)); err != nil {
		t.Fatalf("load the page: %v", err)
	}

	want := map[string]string{
		"console.error":      `console.error: "bad" 3`,
		"uncaught exception": "Error: boom",
		"browser log":        "/missing.png",
	}
	for len(want) > 0 {
		select {
		case p := <-seen:
			if sub, ok := want[p.Kind]; ok && strings.Contains(p.String(), sub) {
				delete(want, p.Kind)
			}
		case <-ctx.Done():
			t.Fatalf("not reported: %v", want)
		}
	}
}
