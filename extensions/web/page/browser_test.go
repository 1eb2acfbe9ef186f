package page

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
)

// browser starts a headless Chromium for the test (skipping when none is
// installed) and returns its context and a function that reports the page's
// uncaught exceptions and console errors so far.
func browser(t *testing.T, width, height int) (context.Context, func() []string) {
	t.Helper()
	tabCtx, stopBrowser := chromiumtest.Start(t, chromiumtest.Path(t), width, height)
	ctx, cancelTimeout := context.WithTimeout(tabCtx, 90*time.Second)
	var (
		mu       sync.Mutex
		problems []string
	)
	wait := chromiumtest.WatchProblems(ctx, func(p chromiumtest.Problem) {
		if p.Kind == "browser log" && expectedNetworkError(p.Text, p.URL) {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		problems = append(problems, p.String())
	})
	t.Cleanup(func() {
		cancelTimeout()
		stopBrowser()
		wait()
	})
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

// expectedNetworkError: this test serves the page without the API, so the
// page's calls to /api/v1 answer 404.
func expectedNetworkError(text, url string) bool {
	return strings.Contains(url, "/api/v1/") && strings.Contains(text, "404")
}

// screenshotOnFailure saves a screenshot when the test has failed. The file
// is under the test's temporary directory (kept when REVERIE_TEST_ARTIFACTS
// names a directory instead).
func screenshotOnFailure(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	dir := os.Getenv("REVERIE_TEST_ARTIFACTS")
	if dir == "" {
		dir = t.TempDir()
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		shot, err := chromedp.Run(ctx, chromedp.FullScreenshot(90))
		if err != nil {
			t.Logf("screenshot: %v", err)
			return
		}
		p := filepath.Join(dir, name+".jpg")
		if err := os.WriteFile(p, shot, 0o644); err != nil {
			t.Logf("screenshot: %v", err)
			return
		}
		t.Logf("screenshot of the failure: %s (set REVERIE_TEST_ARTIFACTS=DIR to keep it)", p)
	})
}

// TestModulesInBrowser runs the page's JavaScript unit tests (the markdown
// renderer with injection payloads, the graph layout, JSON validation) in
// Chromium, on a page served with the production headers, so Trusted Types
// and the Content-Security-Policy are in force.
func TestModulesInBrowser(t *testing.T) {
	ctx, problems := browser(t, 1200, 900)
	srv := httptest.NewServer(Handler())
	t.Cleanup(srv.Close)
	screenshotOnFailure(t, ctx, "modules")

	script, err := os.ReadFile(filepath.Join("testdata", "markdown_test.js"))
	if err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(ctx, chromedp.Navigate(srv.URL+"/")); err != nil {
		t.Fatalf("load the page: %v", err)
	}
	type result struct {
		Passed   []string `json:"passed"`
		Failures []string `json:"failures"`
	}
	res, err := chromedp.Run(ctx, chromedp.Evaluate[result](string(script), chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("run the JavaScript tests: %v", err)
	}
	for _, f := range res.Failures {
		t.Error(f)
	}
	if len(res.Passed) < 50 {
		t.Errorf("only %d JavaScript tests passed: %v", len(res.Passed), res.Passed)
	}
	t.Logf("%d JavaScript tests passed", len(res.Passed))
	for _, p := range problems() {
		// The test assigns innerHTML on purpose to check Trusted Types.
		if strings.Contains(p, "TrustedHTML") {
			continue
		}
		t.Errorf("page problem: %s", p)
	}
}

// TestShellWithoutAPI: served alone (no API behind it), the shell loads all
// its modules under the CSP and says that Reverie cannot be reached.
func TestShellWithoutAPI(t *testing.T) {
	ctx, problems := browser(t, 390, 844)
	srv := httptest.NewServer(http.StripPrefix("", Handler()))
	t.Cleanup(srv.Close)
	screenshotOnFailure(t, ctx, "shell")
	if err := chromedp.Do(ctx,
		chromedp.Navigate(srv.URL+"/"),
		chromedp.WaitVisible(chromedp.CSS("#view-loading .error-text")),
	); err != nil {
		t.Fatalf("the page did not report the missing API: %v", err)
	}
	for _, p := range problems() {
		t.Errorf("page problem: %s", p)
	}
}
