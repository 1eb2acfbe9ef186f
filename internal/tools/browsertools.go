package tools

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/reverie-ai/reverie/internal/tools/browser"
	"github.com/reverie-ai/reverie/internal/tools/web"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// Browser tool names.
const (
	NameBrowserOpen       = "browser_open"
	NameBrowserSnapshot   = "browser_snapshot"
	NameBrowserClick      = "browser_click"
	NameBrowserType       = "browser_type"
	NameBrowserScreenshot = "browser_screenshot"
	NameBrowserClose      = "browser_close"
)

// setUpBrowser finds Chromium and records the browser configuration;
// nothing starts before the first browser call. Without Chromium (or
// with the tools disabled) there are no browser tools.
func (t *Tools) setUpBrowser(cfg Config, logger *slog.Logger) error {
	if cfg.Browser.Disabled {
		t.browserStatus = "off (tools.browser.enabled is false)"
		return nil
	}
	exec, err := browser.Find(cfg.Browser.Path)
	if err != nil {
		if cfg.Browser.Path != "" {
			return fmt.Errorf("browser tools: %w", err)
		}
		t.browserStatus = "absent: " + err.Error()
		return nil
	}
	guard, err := web.NewGuard(cfg.Fetch.AllowPrivate, cfg.Fetch.AllowHosts)
	if err != nil {
		return fmt.Errorf("browser tools: %w", err)
	}
	t.browser = browser.New(browser.Config{
		Exec: exec, Workspace: t.ws.Dir(), Guard: guard,
		Timeout: cfg.Browser.Timeout, IdleTimeout: cfg.Browser.IdleTimeout,
		MaxBrowsers: cfg.Browser.MaxBrowsers, MaxMemory: cfg.Browser.MaxMemory,
		MaxDownload: cfg.Browser.MaxDownload,
		Clock:       cfg.Browser.Clock, Logger: logger.With("tool", "browser"),
	})
	t.browserStatus = exec
	return nil
}

// BrowserStatus says which Chromium the browser tools use, or why there
// are none.
func (t *Tools) BrowserStatus() string { return t.browserStatus }

// Close closes the browsers the browser tools started.
func (t *Tools) Close() error {
	if t.browser == nil {
		return nil
	}
	return t.browser.Close()
}

// BrowserStatus looks for Chromium as the browser tools would (path, else
// PATH), for reverie doctor: the executable, or why there is none.
func BrowserStatus(path string) (string, error) { return browser.Find(path) }

// browserDestinations: browser_open carries its URL to the URL's host; a
// request the page makes during any browser call (put to the gate) carries
// its method, URL and the start of its body to its host. Clicking and
// typing themselves send nothing: what they cause the page to send is
// asked about request by request.
func browserDestinations(args json.RawMessage) []tool.Destination {
	var a browser.RequestArgs
	if json.Unmarshal(args, &a) != nil || a.URL == "" {
		return nil
	}
	data := a.Request
	if data == "" {
		data = a.URL
	}
	return []tool.Destination{{URL: a.URL, Data: data}}
}

func (t *Tools) browserTools() []tool.Tool {
	b := t.browser
	if b == nil {
		return nil
	}
	out := tool.SendsOut(browserDestinations)
	cat := tool.WithCategories("web", "browser")
	return []tool.Tool{
		tool.New(NameBrowserOpen, browserOpenDescription,
			func(ctx context.Context, a browser.OpenArgs) (any, error) { return b.Open(ctx, a) },
			tool.ReadOnly(), tool.UntrustedResults(), out, cat, tool.WithCategories("research")),
		tool.New(NameBrowserSnapshot, browserSnapshotDescription,
			func(ctx context.Context, a browser.NoArgs) (any, error) { return b.Snapshot(ctx, a) },
			tool.ReadOnly(), tool.UntrustedResults(), out, cat),
		tool.New(NameBrowserClick, browserClickDescription,
			func(ctx context.Context, a browser.ClickArgs) (any, error) { return b.Click(ctx, a) },
			tool.UntrustedResults(), out, cat),
		tool.New(NameBrowserType, browserTypeDescription,
			func(ctx context.Context, a browser.TypeArgs) (any, error) { return b.Type(ctx, a) },
			tool.UntrustedResults(), out, cat),
		tool.New(NameBrowserScreenshot, browserScreenshotDescription,
			func(ctx context.Context, a browser.NoArgs) (any, error) { return screenshot(ctx, b, a) },
			tool.ReadOnly(), tool.UntrustedResults(), out, cat),
		tool.New(NameBrowserClose, browserCloseDescription,
			func(ctx context.Context, a browser.NoArgs) (any, error) { return b.CloseBrowser(ctx, a) },
			cat),
	}
}

// screenshot takes the screenshot and hands the image to the model with
// the result (a model without vision gets a note naming the file).
func screenshot(ctx context.Context, b *browser.Manager, a browser.NoArgs) (tool.Result, error) {
	shot, err := b.Screenshot(ctx, a)
	if err != nil {
		return tool.Result{}, err
	}
	content, err := json.Marshal(shot)
	if err != nil {
		return tool.Result{}, fmt.Errorf("encode the screenshot's result: %w", err)
	}
	return tool.Result{Content: string(content), Images: []llm.Image{{MediaType: "image/png", Path: shot.Path}}}, nil
}

const browserPageResult = `Returns the page as text: {"url","title","content","truncated","refused","note"}; in content, headings start with #, and links, buttons and form fields appear as [link e3 "text" -> URL], [button e4 "text"], [field e5 type label="…" value="…"], where e3… are references for browser_click and browser_type (they change when the page does: use those of the latest result). refused lists requests of the page that were blocked (private addresses, or ones you were not allowed to make).`

const browserOpenDescription = `Open a web page (http or https) in a real browser that runs its JavaScript: use it for pages fetch_url cannot read (content rendered by scripts, forms, pages that need clicking through). Each conversation has its own browser, closed after a few idle minutes. ` + browserPageResult + ` Private, loopback and link-local addresses are blocked.`

const browserSnapshotDescription = `Read the page open in the browser again, as text (after waiting for it to change, say). ` + browserPageResult

const browserClickDescription = `Click a link or button of the open page by its reference from the latest page text (such as e12), then return the page. ` + browserPageResult

const browserTypeDescription = `Put text into a form field of the open page by its reference (such as e7), replacing what it holds; for a list, text names the option; for a checkbox, "true" or "false". With submit, the field's form is submitted. Returns the page afterwards. ` + browserPageResult

const browserScreenshotDescription = `Take a screenshot of the visible part of the open page. It is saved in the workspace; returns {"path","url","title"}, and the image itself when you can see images.`

const browserCloseDescription = `Close this conversation's browser (its cookies stay in its profile for next time). Returns {"closed"}.`
