// Package chromiumtest starts a headless Chromium for the web page's browser
// tests, those of extensions/web/page and internal/apptest. It finds the
// executable (the test is skipped when there is none), holds the flags both
// use, starts the browser again on a fresh process when a start fails, and
// reports the page's errors.
package chromiumtest

import (
	"context"
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Path returns the Chromium to drive, or skips the test when none is
// installed.
func Path(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium: install it (apt-get install chromium) to run the browser tests; CI does")
	return ""
}

// startTries is how many times Start starts Chromium before it fails the
// test.
const startTries = 3

// Start starts the Chromium at path, headless, with a fresh profile in
// t.TempDir(), a window of width×height and the extra options (a fake
// microphone, say), and returns its tab's context and a function that stops
// it.
//
// A start that fails (Chromium exiting at once, as it now and then does on
// a loaded machine) is tried again with a new process and new contexts, up
// to startTries times. chromedp must never be asked to start a second
// browser on a context whose first start failed: its allocator then closes
// the context's channel twice when they exit, a panic that ends the whole
// test binary (seen in a run of the browser tests at load 15).
func Start(t testing.TB, path string, width, height int, extra ...chromedp.ExecAllocatorOption) (context.Context, func()) {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{
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
		chromedp.WindowSize(width, height),
	}, extra...)
	var errs []error
	for attempt := 1; attempt <= startTries; attempt++ {
		allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), append(slices.Clone(opts), chromedp.UserDataDir(t.TempDir()))...)
		tabCtx, cancelTab := chromedp.NewContext(allocCtx)
		// Started by the first action, bounded by cancelling the allocator.
		stop := time.AfterFunc(2*time.Minute, cancelAlloc)
		err := chromedp.Do(tabCtx)
		stop.Stop()
		if err == nil {
			return tabCtx, func() { cancelTab(); cancelAlloc() }
		}
		cancelAlloc()
		chromedp.FromContext(allocCtx).Allocator.Wait()
		cancelTab()
		errs = append(errs, err)
		t.Logf("Chromium did not start (attempt %d of %d): %v", attempt, startTries, err)
	}
	t.Fatalf("Chromium did not start: %v", errors.Join(errs...))
	return nil, nil
}

// Problem is one error the page reported.
type Problem struct {
	// Kind is "uncaught exception", "browser log" (an entry of level
	// error: a failed request, a refused WebSocket) or "console.error"
	// (console.error or a failed console.assert).
	Kind string
	// Text is the exception's text and description, the log entry's text
	// or the console call's arguments.
	Text string
	// URL is where the exception was thrown or the log entry's resource.
	URL string
}

func (p Problem) String() string {
	s := p.Kind + ": " + p.Text
	switch {
	case p.URL == "":
	case p.Kind == "uncaught exception":
		s += " at " + p.URL
	default:
		s += " " + p.URL
	}
	return s
}

// WatchProblems calls report (from other goroutines, one at a time) with
// each uncaught exception, error log entry and console.error of the page of
// ctx until ctx ends. The function it returns waits for the watchers to
// stop; call it after ending ctx.
func WatchProblems(ctx context.Context, report func(Problem)) (wait func()) {
	var mu sync.Mutex
	send := func(p Problem) {
		mu.Lock()
		defer mu.Unlock()
		report(p)
	}
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	entries := chromedp.Events(ctx, log.EntryAdded)
	consoles := chromedp.Events(ctx, runtime.ConsoleAPICalled)
	var wg sync.WaitGroup
	wg.Go(func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			d := ev.ExceptionDetails
			if d == nil {
				continue
			}
			text := d.Text
			if d.Exception != nil {
				text += " " + d.Exception.Description
			}
			send(Problem{Kind: "uncaught exception", Text: text, URL: d.URL})
		}
	})
	wg.Go(func() {
		for ev, err := range entries {
			if err != nil {
				return
			}
			if ev.Entry.Level == log.EntryLevelError {
				send(Problem{Kind: "browser log", Text: ev.Entry.Text, URL: ev.Entry.URL})
			}
		}
	})
	wg.Go(func() {
		for ev, err := range consoles {
			if err != nil {
				return
			}
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, string(a.Value)+a.Description)
				}
				send(Problem{Kind: "console.error", Text: strings.Join(parts, " ")})
			}
		}
	})
	return wg.Wait
}
