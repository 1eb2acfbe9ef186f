package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"golang.org/x/net/html"

	"github.com/reverie-ai/reverie/evidence"
)

// SearchConfig configures a Searcher. Zero fields take the defaults.
type SearchConfig struct {
	// SearXNGURL is the base URL of a SearXNG instance (with the json format
	// enabled). When set it is used instead of DuckDuckGo.
	SearXNGURL string
	// DuckDuckGoURL is the DuckDuckGo HTML endpoint
	// (default https://html.duckduckgo.com/html/).
	DuckDuckGoURL string
	// Timeout bounds one search (default 15s).
	Timeout time.Duration
	// UserAgent is sent with every request.
	UserAgent string
}

// Defaults for zero SearchConfig fields and search_web arguments.
const (
	DefaultDuckDuckGoURL = "https://html.duckduckgo.com/html/"
	DefaultSearchTimeout = 15 * time.Second
	DefaultMaxResults    = 8
	MaxMaxResults        = 25
	searchUserAgent      = "Mozilla/5.0 (X11; Linux x86_64; rv:128.0) Gecko/20100101 Firefox/128.0"
	maxSearchBody        = 4 << 20
)

// ErrSearchBlocked is returned (wrapped) when the search engine answers with
// a CAPTCHA, an anomaly page or a rate limit instead of results.
var ErrSearchBlocked = errors.New("web search is temporarily blocked by the search engine (CAPTCHA or rate limit); try again later or use fetch_url on a known site")

// Searcher runs web searches.
type Searcher struct {
	cfg    SearchConfig
	client *http.Client
}

// NewSearcher builds a Searcher; it fails on an invalid URL.
func NewSearcher(cfg SearchConfig) (*Searcher, error) {
	if cfg.DuckDuckGoURL == "" {
		cfg.DuckDuckGoURL = DefaultDuckDuckGoURL
	}
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultSearchTimeout
	}
	if cfg.UserAgent == "" {
		cfg.UserAgent = searchUserAgent
	}
	for _, raw := range []string{cfg.SearXNGURL, cfg.DuckDuckGoURL} {
		if raw == "" {
			continue
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, fmt.Errorf("search config: %q is not an http(s) URL", raw)
		}
	}
	return &Searcher{cfg: cfg, client: &http.Client{Timeout: cfg.Timeout}}, nil
}

// Engine names the engine searches go to.
func (s *Searcher) Engine() string {
	if s.cfg.SearXNGURL != "" {
		return "searxng"
	}
	return "duckduckgo"
}

// SearchArgs are the arguments of search_web.
type SearchArgs struct {
	Query      string `json:"query" jsonschema:"the search query"`
	MaxResults int    `json:"max_results,omitempty" jsonschema:"how many results to return (default 8, at most 25)"`
}

// Hit is one search result.
type Hit struct {
	Title   string `json:"title"`
	URL     string `json:"url"`
	Snippet string `json:"snippet"`
}

// Evidence is r as the packet search_web returns for query: one item per
// hit, its snippet as the text.
func (r SearchResult) Evidence(query string) evidence.Packet {
	p := evidence.Packet{Kind: evidence.WebSearch, Title: fmt.Sprintf("Web results for %q", strings.TrimSpace(query)),
		Items: make([]evidence.Item, 0, len(r.Results)), Meta: evidence.Meta{Source: "search_web", Query: query, Engine: r.Engine}}
	for _, h := range r.Results {
		p.Items = append(p.Items, evidence.Item{URL: h.URL, Title: h.Title, Text: h.Snippet})
	}
	return p
}

// SearchResult is what search_web returns.
type SearchResult struct {
	Engine  string `json:"engine"`
	Results []Hit  `json:"results"`
}

// Search runs a query.
func (s *Searcher) Search(ctx context.Context, a SearchArgs) (SearchResult, error) {
	q := strings.TrimSpace(a.Query)
	if q == "" {
		return SearchResult{}, errors.New("query is empty")
	}
	n := a.MaxResults
	switch {
	case n < 0:
		return SearchResult{}, errors.New("max_results must not be negative")
	case n == 0:
		n = DefaultMaxResults
	case n > MaxMaxResults:
		n = MaxMaxResults
	}
	ctx, cancel := context.WithTimeout(ctx, s.cfg.Timeout)
	defer cancel()
	var hits []Hit
	var err error
	if s.cfg.SearXNGURL != "" {
		hits, err = s.searxng(ctx, q)
	} else {
		hits, err = s.duckduckgo(ctx, q)
	}
	if err != nil {
		return SearchResult{}, err
	}
	hits = dedupe(hits)
	if hits == nil {
		hits = []Hit{}
	}
	if len(hits) > n {
		hits = hits[:n]
	}
	return SearchResult{Engine: s.Engine(), Results: hits}, nil
}

// do sends req and returns the body of a 200 response.
func (s *Searcher) do(req *http.Request, engine string) ([]byte, error) {
	req.Header.Set("User-Agent", s.cfg.UserAgent)
	resp, err := s.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("search %s: %w", engine, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxSearchBody))
	if err != nil {
		return nil, fmt.Errorf("search %s: read response: %w", engine, err)
	}
	switch {
	case resp.StatusCode == http.StatusTooManyRequests:
		return nil, fmt.Errorf("search %s: HTTP %d: %w", engine, resp.StatusCode, ErrSearchBlocked)
	case resp.StatusCode == http.StatusForbidden && engine == "searxng":
		return nil, fmt.Errorf("search searxng: HTTP 403: the instance refuses the JSON API (add json to search.formats in its settings.yml)")
	case resp.StatusCode == http.StatusForbidden || resp.StatusCode == http.StatusAccepted:
		// DuckDuckGo answers 202 or 403 with its anomaly page.
		return nil, fmt.Errorf("search %s: HTTP %d: %w", engine, resp.StatusCode, ErrSearchBlocked)
	case resp.StatusCode != http.StatusOK:
		return nil, fmt.Errorf("search %s: HTTP %s", engine, resp.Status)
	}
	return body, nil
}

// searxngResponse is the part of SearXNG's /search?format=json answer used.
type searxngResponse struct {
	Results []struct {
		Title   string `json:"title"`
		URL     string `json:"url"`
		Content string `json:"content"`
	} `json:"results"`
	UnresponsiveEngines [][]string `json:"unresponsive_engines"`
}

func (s *Searcher) searxng(ctx context.Context, q string) ([]Hit, error) {
	u, err := url.Parse(s.cfg.SearXNGURL)
	if err != nil {
		return nil, fmt.Errorf("searxng URL: %w", err)
	}
	if !strings.HasSuffix(u.Path, "/search") {
		u = u.JoinPath("search")
	}
	v := url.Values{"q": {q}, "format": {"json"}, "pageno": {"1"}, "safesearch": {"0"}}
	u.RawQuery = v.Encode()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, fmt.Errorf("build searxng request: %w", err)
	}
	req.Header.Set("Accept", "application/json")
	body, err := s.do(req, "searxng")
	if err != nil {
		return nil, err
	}
	var r searxngResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("search searxng: decode response: %w", err)
	}
	hits := make([]Hit, 0, len(r.Results))
	for _, x := range r.Results {
		if !httpURL(x.URL) {
			continue
		}
		hits = append(hits, Hit{Title: collapse(x.Title), URL: x.URL, Snippet: collapse(x.Content)})
	}
	if len(hits) == 0 && len(r.UnresponsiveEngines) > 0 {
		var reasons []string
		for _, e := range r.UnresponsiveEngines {
			reasons = append(reasons, strings.Join(e, ": "))
		}
		return nil, fmt.Errorf("search searxng: no results, engines failed (%s): %w", strings.Join(reasons, "; "), ErrSearchBlocked)
	}
	return hits, nil
}

func (s *Searcher) duckduckgo(ctx context.Context, q string) ([]Hit, error) {
	form := url.Values{"q": {q}, "b": {""}, "kl": {""}}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.DuckDuckGoURL, strings.NewReader(form.Encode()))
	if err != nil {
		return nil, fmt.Errorf("build duckduckgo request: %w", err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Accept", "text/html")
	req.Header.Set("Accept-Language", "en-US,en;q=0.8")
	body, err := s.do(req, "duckduckgo")
	if err != nil {
		return nil, err
	}
	doc, err := html.Parse(strings.NewReader(string(body)))
	if err != nil {
		return nil, fmt.Errorf("search duckduckgo: parse page: %w", err)
	}
	return parseDuckDuckGo(doc)
}

// parseDuckDuckGo extracts organic results from DuckDuckGo's HTML page, or
// reports the anomaly (CAPTCHA) page.
func parseDuckDuckGo(doc *html.Node) ([]Hit, error) {
	var hits []Hit
	blocked := false
	var walk func(n *html.Node)
	walk = func(n *html.Node) {
		if n.Type == html.ElementNode {
			cls := classes(n)
			if isAnomaly(n, cls) {
				blocked = true
				return
			}
			if slices.Contains(cls, "result") && !slices.Contains(cls, "result--ad") {
				if h, ok := duckResult(n); ok {
					hits = append(hits, h)
				}
				return
			}
		}
		for c := n.FirstChild; c != nil; c = c.NextSibling {
			walk(c)
		}
	}
	walk(doc)
	if blocked {
		return nil, fmt.Errorf("search duckduckgo: %w", ErrSearchBlocked)
	}
	return hits, nil
}

func isAnomaly(n *html.Node, cls []string) bool {
	for _, c := range cls {
		if strings.HasPrefix(c, "anomaly-modal") {
			return true
		}
	}
	if n.Data == "form" {
		if attr(n, "id") == "challenge-form" || strings.Contains(attr(n, "action"), "anomaly") {
			return true
		}
	}
	return false
}

// duckResult reads one result block.
func duckResult(n *html.Node) (Hit, bool) {
	var h Hit
	var walk func(*html.Node)
	walk = func(c *html.Node) {
		if c.Type == html.ElementNode {
			cls := classes(c)
			switch {
			case slices.Contains(cls, "result__a") && h.URL == "":
				h.Title = collapse(text(c))
				h.URL = duckTarget(attr(c, "href"))
				return
			case slices.Contains(cls, "result__snippet") && h.Snippet == "":
				h.Snippet = collapse(text(c))
				return
			}
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			walk(k)
		}
	}
	walk(n)
	return h, h.Title != "" && httpURL(h.URL)
}

// duckTarget resolves DuckDuckGo's redirect links (//duckduckgo.com/l/?uddg=…)
// to the destination.
func duckTarget(href string) string {
	if strings.HasPrefix(href, "//") {
		href = "https:" + href
	}
	u, err := url.Parse(href)
	if err != nil {
		return ""
	}
	if dest := u.Query().Get("uddg"); dest != "" && strings.HasSuffix(u.Path, "/l/") {
		return dest
	}
	return href
}

func classes(n *html.Node) []string { return strings.Fields(attr(n, "class")) }

func attr(n *html.Node, key string) string {
	for _, a := range n.Attr {
		if a.Key == key {
			return a.Val
		}
	}
	return ""
}

func text(n *html.Node) string {
	var b strings.Builder
	var walk func(*html.Node)
	walk = func(c *html.Node) {
		if c.Type == html.TextNode {
			b.WriteString(c.Data)
		}
		for k := c.FirstChild; k != nil; k = k.NextSibling {
			walk(k)
		}
	}
	walk(n)
	return b.String()
}

// collapse folds runs of white space into single spaces.
func collapse(s string) string { return strings.Join(strings.Fields(s), " ") }

func httpURL(raw string) bool {
	u, err := url.Parse(raw)
	return err == nil && (u.Scheme == "http" || u.Scheme == "https") && u.Host != ""
}

// dedupe drops repeated URLs, keeping the first.
func dedupe(hits []Hit) []Hit {
	seen := make(map[string]bool, len(hits))
	out := hits[:0]
	for _, h := range hits {
		if seen[h.URL] {
			continue
		}
		seen[h.URL] = true
		out = append(out, h)
	}
	return out
}
