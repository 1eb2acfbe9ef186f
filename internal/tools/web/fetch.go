// Package web implements the fetch_url and search_web tools' operations:
// fetching a page as readable markdown behind an SSRF guard, and web search
// through SearXNG or DuckDuckGo's HTML endpoint.
//
// A Fetcher and a Searcher are safe for concurrent use. Every request has a
// total timeout; responses are read up to a size limit.
package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strings"
	"time"
	"unicode/utf8"

	readability "codeberg.org/readeck/go-readability/v2"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"
	"github.com/JohannesKaufmann/html-to-markdown/v2/converter"
	"golang.org/x/net/html/charset"

	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/tool"
)

// FetchConfig configures a Fetcher. Zero fields take the defaults.
type FetchConfig struct {
	// AllowPrivate lets fetch_url reach loopback, private and link-local
	// addresses. Off by default.
	AllowPrivate bool
	// AllowHosts lists host names, IP addresses or CIDR prefixes reachable
	// even though they are not public.
	AllowHosts []string
	// Timeout bounds each request of a fetch, its body included: each
	// redirect hop has its own, and the wait for a hop's approval is not
	// counted (default 30s).
	Timeout time.Duration
	// MaxBytes is how much of a response body is read (default 5 MiB).
	MaxBytes int
	// UserAgent is sent with every request.
	UserAgent string
}

// Defaults for zero FetchConfig fields and fetch_url arguments.
const (
	DefaultFetchTimeout = 30 * time.Second
	DefaultMaxBytes     = 5 << 20
	DefaultMaxChars     = 20_000
	MaxMaxChars         = 200_000
	maxRedirects        = 5
	defaultUserAgent    = "Mozilla/5.0 (compatible; Reverie; +https://github.com/reverie-ai/reverie)"
)

// ErrBinaryContent is returned (wrapped) for responses that are not text.
var ErrBinaryContent = errors.New("response is binary")

// Fetcher fetches web pages.
type Fetcher struct {
	cfg    FetchConfig
	guard  *Guard
	client *http.Client
}

// NewFetcher builds a Fetcher; it fails on an unparsable AllowHosts entry.
func NewFetcher(cfg FetchConfig) (*Fetcher, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultFetchTimeout
	}
	if cfg.MaxBytes <= 0 {
		cfg.MaxBytes = DefaultMaxBytes
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = defaultUserAgent
	}
	g, err := NewGuard(cfg.AllowPrivate, cfg.AllowHosts)
	if err != nil {
		return nil, fmt.Errorf("fetch config: %w", err)
	}
	transport := &http.Transport{
		Proxy:                 nil, // a proxy would dial on our behalf, past the guard
		DialContext:           g.DialContext(10 * time.Second),
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: cfg.Timeout,
		MaxIdleConns:          16,
		IdleConnTimeout:       60 * time.Second,
	}
	f := &Fetcher{cfg: cfg, guard: g}
	// Fetch follows redirects itself, one request (and one timeout) per
	// hop, so that each hop can be checked — by the guard and, between
	// two requests, by the call's approval gate.
	f.client = &http.Client{
		Transport:     transport,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return f, nil
}

// get requests u with the fetch timeout. The caller closes the body, then
// calls cancel.
func (f *Fetcher) get(ctx context.Context, u *url.URL) (resp *http.Response, hctx context.Context, cancel context.CancelFunc, err error) {
	hctx, cancel = context.WithTimeout(ctx, f.cfg.Timeout)
	req, err := http.NewRequestWithContext(hctx, http.MethodGet, u.String(), nil)
	if err != nil {
		cancel()
		return nil, nil, nil, fmt.Errorf("build request: %w", err)
	}
	req.Header.Set("User-Agent", f.cfg.UserAgent)
	req.Header.Set("Accept", "text/html,application/xhtml+xml,text/plain;q=0.9,application/json;q=0.8,*/*;q=0.5")
	resp, err = f.client.Do(req)
	if err != nil {
		cancel()
		return nil, nil, nil, fmt.Errorf("fetch %s: %w", u.Redacted(), err)
	}
	return resp, hctx, cancel, nil
}

// follow fetches u and follows its redirects (at most maxRedirects). Each
// new hop passes checkURL and, when the call has an approval gate
// (tool.GateFrom), the gate with the arguments a fetch of that hop would
// have: a redirect is a request to a destination the call did not name.
func (f *Fetcher) follow(ctx context.Context, u *url.URL, a FetchArgs) (*http.Response, context.Context, context.CancelFunc, error) {
	gate, gated := tool.GateFrom(ctx)
	for hop := 0; ; hop++ {
		resp, hctx, cancel, err := f.get(ctx, u)
		if err != nil {
			return nil, nil, nil, err
		}
		loc := resp.Header.Get("Location")
		switch resp.StatusCode {
		case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
		default:
			return resp, hctx, cancel, nil
		}
		_ = resp.Body.Close()
		cancel()
		if loc == "" {
			return nil, nil, nil, fmt.Errorf("fetch %s: HTTP %s without a Location", u.Redacted(), resp.Status)
		}
		if hop >= maxRedirects {
			return nil, nil, nil, fmt.Errorf("fetch %s: stopped after %d redirects", u.Redacted(), maxRedirects)
		}
		next, err := u.Parse(loc)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("fetch %s: bad redirect Location: %w", u.Redacted(), err)
		}
		if err := f.guard.CheckURL(next); err != nil {
			return nil, nil, nil, fmt.Errorf("fetch %s: redirect to %s refused: %w", u.Redacted(), next.Redacted(), err)
		}
		if gated {
			args, err := json.Marshal(FetchArgs{URL: next.String(), MaxChars: a.MaxChars})
			if err != nil {
				return nil, nil, nil, fmt.Errorf("encode the redirect: %w", err)
			}
			if err := gate(ctx, args); err != nil {
				return nil, nil, nil, fmt.Errorf("fetch %s redirected to %s, which was not followed: %w", u.Redacted(), next.Redacted(), err)
			}
		}
		u = next
	}
}

// FetchArgs are the arguments of fetch_url.
type FetchArgs struct {
	URL      string `json:"url" jsonschema:"the http or https URL to fetch"`
	MaxChars int    `json:"max_chars,omitempty" jsonschema:"maximum characters of content to return (default 20000, at most 200000)"`
}

// FetchResult is what fetch_url returns.
type FetchResult struct {
	// URL is the final URL, after redirects.
	URL         string `json:"url"`
	Status      int    `json:"status"`
	ContentType string `json:"content_type"`
	Title       string `json:"title,omitempty"`
	// Content is markdown for HTML pages and the text itself otherwise.
	Content string `json:"content"`
	// Truncated is set when the body or the content was cut.
	Truncated bool `json:"truncated,omitempty"`
}

// Evidence is r as the packet fetch_url returns: one item, the page.
func (r FetchResult) Evidence() evidence.Packet {
	title := r.Title
	if title == "" {
		title = r.URL
	}
	return evidence.Packet{Kind: evidence.WebPage, Title: title,
		Items: []evidence.Item{{URL: r.URL, Text: r.Content}},
		Meta:  evidence.Meta{Source: "fetch_url", URL: r.URL, Status: r.Status, ContentType: r.ContentType, Truncated: r.Truncated}}
}

// Fetch retrieves a URL and returns its readable text.
func (f *Fetcher) Fetch(ctx context.Context, a FetchArgs) (FetchResult, error) {
	u, err := url.Parse(strings.TrimSpace(a.URL))
	if err != nil {
		return FetchResult{}, fmt.Errorf("parse URL: %w", err)
	}
	if err := f.guard.CheckURL(u); err != nil {
		return FetchResult{}, err
	}
	maxChars := a.MaxChars
	switch {
	case maxChars < 0:
		return FetchResult{}, errors.New("max_chars must not be negative")
	case maxChars == 0:
		maxChars = DefaultMaxChars
	case maxChars > MaxMaxChars:
		maxChars = MaxMaxChars
	}
	resp, ctx, cancel, err := f.follow(ctx, u, a)
	if err != nil {
		return FetchResult{}, err
	}
	defer cancel()
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, int64(f.cfg.MaxBytes)+1))
	if err != nil {
		return FetchResult{}, fmt.Errorf("read %s: %w", resp.Request.URL.Redacted(), err)
	}
	res := FetchResult{URL: resp.Request.URL.String(), Status: resp.StatusCode}
	if len(body) > f.cfg.MaxBytes {
		body = body[:f.cfg.MaxBytes]
		res.Truncated = true
	}
	header := resp.Header.Get("Content-Type")
	mediaType, _, _ := mime.ParseMediaType(header)
	if mediaType == "" || mediaType == "application/octet-stream" {
		mediaType, _, _ = mime.ParseMediaType(http.DetectContentType(body))
		header = mediaType
	}
	res.ContentType = mediaType
	switch {
	case isHTML(mediaType):
		text, err := decode(body, header)
		if err != nil {
			return FetchResult{}, err
		}
		res.Title, res.Content, err = toMarkdown(ctx, text, resp.Request.URL)
		if err != nil {
			return FetchResult{}, fmt.Errorf("convert %s to markdown: %w", res.URL, err)
		}
	case isText(mediaType):
		text, err := decode(body, header)
		if err != nil {
			return FetchResult{}, err
		}
		res.Content = text
	default:
		return FetchResult{}, fmt.Errorf("%w (%s, %d bytes): fetch_url returns text only", ErrBinaryContent, mediaType, len(body))
	}
	if resp.StatusCode >= 400 {
		return FetchResult{}, fmt.Errorf("fetch %s: HTTP %s: %s", res.URL, resp.Status, clip(strings.TrimSpace(res.Content), 500))
	}
	if utf8.RuneCountInString(res.Content) > maxChars {
		res.Content = clip(res.Content, maxChars) + fmt.Sprintf("\n\n[… truncated at %d characters; pass a larger max_chars for more]", maxChars)
		res.Truncated = true
	}
	return res, nil
}

func isHTML(mediaType string) bool {
	return mediaType == "text/html" || mediaType == "application/xhtml+xml"
}

// isText reports whether a media type is textual.
func isText(mediaType string) bool {
	if strings.HasPrefix(mediaType, "text/") {
		return true
	}
	switch mediaType {
	case "application/json", "application/xml", "application/javascript", "application/ecmascript",
		"application/x-javascript", "application/yaml", "application/x-yaml", "application/toml",
		"application/x-sh", "application/sql", "application/graphql", "application/x-ndjson",
		"application/rss+xml", "application/atom+xml", "image/svg+xml":
		return true
	}
	return strings.HasSuffix(mediaType, "+json") || strings.HasSuffix(mediaType, "+xml")
}

// decode converts body to UTF-8 using the declared or detected charset.
func decode(body []byte, contentType string) (string, error) {
	r, err := charset.NewReader(bytes.NewReader(body), contentType)
	if err != nil {
		return strings.ToValidUTF8(string(body), "\uFFFD"), nil
	}
	out, err := io.ReadAll(r)
	if err != nil {
		return "", fmt.Errorf("decode text: %w", err)
	}
	return strings.ToValidUTF8(string(out), "\uFFFD"), nil
}

// minReadable is the least text readability must extract to be trusted;
// below it the whole page is converted instead.
const minReadable = 200

// toMarkdown extracts the main content of a page and converts it.
func toMarkdown(ctx context.Context, page string, pageURL *url.URL) (title, md string, err error) {
	opts := []converter.ConvertOptionFunc{converter.WithContext(ctx), converter.WithDomain(pageURL.Scheme + "://" + pageURL.Host)}
	article, rerr := readability.FromReader(strings.NewReader(page), pageURL)
	if rerr == nil {
		title = strings.TrimSpace(article.Title())
		if article.Node != nil {
			out, cerr := htmltomarkdown.ConvertNode(article.Node, opts...)
			if cerr == nil && len(strings.TrimSpace(string(out))) >= minReadable {
				return title, strings.TrimSpace(string(out)), nil
			}
		}
	}
	out, err := htmltomarkdown.ConvertString(page, opts...)
	if err != nil {
		return "", "", err
	}
	return title, strings.TrimSpace(out), nil
}

// clip shortens s to at most n runes.
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	i := 0
	for j := range s {
		if i == n {
			return s[:j]
		}
		i++
	}
	return s
}
