package page

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// browser starts a headless Chromium for the test (skipping when none is
// installed) and returns its context and a function that reports the page's
// uncaught exceptions and console errors so far.
func browser(t *testing.T, width, height int) (context.Context, func() []string) {
	t.Helper()
	path := ""
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			path = p
			break
		}
	}
	if path == "" {
		t.Skip("no Chromium: install it (apt-get install chromium) to run the browser tests; CI does")
	}
	// A start that fails (Chromium exiting at once on a loaded machine) is
	// tried again with a new process and new contexts: chromedp must not
	// start a second browser on a context whose first start failed (its
	// allocator then closes the context's channel twice: a panic that ends
	// the test binary).
	var (
		ctx                    context.Context
		cancelCtx, cancelAlloc context.CancelFunc
		errs                   []error
	)
	for attempt := 1; ctx == nil; attempt++ {
		if attempt > 3 {
			t.Fatalf("Chromium did not start: %v", errors.Join(errs...))
		}
		allocCtx, cancelA := chromedp.NewExecAllocator(context.Background(),
			chromedp.ExecPath(path),
			chromedp.Headless,
			chromedp.NoSandbox,
			chromedp.DisableGPU,
			chromedp.NoFirstRun,
			chromedp.NoDefaultBrowserCheck,
			chromedp.Flag("disable-background-networking", true),
			chromedp.Flag("disable-component-update", true),
			chromedp.Flag("disable-sync", true),
			chromedp.Flag("disable-dev-shm-usage", true),
			chromedp.UserDataDir(t.TempDir()),
			chromedp.WindowSize(width, height),
		)
		tabCtx, cancelT := chromedp.NewContext(allocCtx)
		stop := time.AfterFunc(time.Minute, cancelA) // bounds the start
		err := chromedp.Do(tabCtx)
		stop.Stop()
		if err == nil {
			ctx, cancelCtx, cancelAlloc = tabCtx, cancelT, cancelA
			break
		}
		cancelA()
		chromedp.FromContext(allocCtx).Allocator.Wait()
		cancelT()
		errs = append(errs, err)
		t.Logf("Chromium did not start (attempt %d of 3): %v", attempt, err)
	}
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)

	var (
		mu       sync.Mutex
		problems []string
		wg       sync.WaitGroup
	)
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	entries := chromedp.Events(ctx, log.EntryAdded)
	consoles := chromedp.Events(ctx, runtime.ConsoleAPICalled)
	wg.Add(3)
	go func() {
		defer wg.Done()
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			mu.Lock()
			problems = append(problems, "exception: "+exceptionText(ev.ExceptionDetails))
			mu.Unlock()
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range entries {
			if err != nil {
				return
			}
			if ev.Entry.Level == log.EntryLevelError && !expectedNetworkError(ev.Entry.Text, ev.Entry.URL) {
				mu.Lock()
				problems = append(problems, "log: "+ev.Entry.Text+" "+ev.Entry.URL)
				mu.Unlock()
			}
		}
	}()
	go func() {
		defer wg.Done()
		for ev, err := range consoles {
			if err != nil {
				return
			}
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				mu.Lock()
				problems = append(problems, "console.error: "+strings.Join(parts, " "))
				mu.Unlock()
			}
		}
	}()
	t.Cleanup(func() {
		cancelTimeout()
		cancelCtx()
		cancelAlloc()
		wg.Wait()
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

func exceptionText(d *runtime.ExceptionDetails) string {
	if d == nil {
		return ""
	}
	s := d.Text
	if d.Exception != nil {
		s += " " + d.Exception.Description
	}
	return s + " at " + d.URL
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
