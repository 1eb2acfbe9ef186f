package web

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"
)

// engine serves a recorded-shape fixture and checks the request it gets.
func engine(t *testing.T, status int, fixture, contentType string, check func(*http.Request) error) *httptest.Server {
	t.Helper()
	var body []byte
	if fixture != "" {
		var err error
		if body, err = os.ReadFile("testdata/" + fixture); err != nil {
			t.Fatal(err)
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if check != nil {
			if err := check(r); err != nil {
				t.Errorf("request: %v", err)
			}
		}
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func checkDuck(r *http.Request) error {
	if r.Method != http.MethodPost || r.URL.Path != "/html/" {
		return errors.New("want POST /html/, got " + r.Method + " " + r.URL.Path)
	}
	if err := r.ParseForm(); err != nil {
		return err
	}
	if q := r.PostForm.Get("q"); q != "golang generics" {
		return errors.New("q = " + q)
	}
	return nil
}

func checkSearx(r *http.Request) error {
	if r.Method != http.MethodGet || r.URL.Path != "/search" {
		return errors.New("want GET /search, got " + r.Method + " " + r.URL.Path)
	}
	if q := r.URL.Query(); q.Get("q") != "golang generics" || q.Get("format") != "json" {
		return errors.New("query = " + r.URL.RawQuery)
	}
	return nil
}

var (
	tutorial = Hit{Title: "Tutorial: Getting started with generics - The Go Programming Language", URL: "https://go.dev/doc/tutorial/generics",
		Snippet: "This tutorial introduces the basics of generics in Go. With generics, you can declare and use functions or types that are written to work with any of a set of types."}
	intro = Hit{Title: "An Introduction To Generics - The Go Programming Language", URL: "https://go.dev/blog/intro-generics",
		Snippet: "Generics adds three new big things to the language: type parameters, type sets and type inference."}
	constraints = Hit{Title: "constraints package - golang.org/x/exp/constraints - Go Packages", URL: "https://pkg.go.dev/golang.org/x/exp/constraints",
		Snippet: "Package constraints defines a set of useful constraints to be used with type parameters."}
)

func TestSearch(t *testing.T) {
	tests := []struct {
		name       string
		searxng    bool // serve as SearXNG instead of DuckDuckGo
		status     int
		fixture    string
		maxResults int
		want       []Hit
		errIs      error
		wantErr    string
	}{
		{name: "duckduckgo results", status: 200, fixture: "ddg_results.html", want: []Hit{tutorial, intro, constraints}},
		{name: "duckduckgo max_results", status: 200, fixture: "ddg_results.html", maxResults: 2, want: []Hit{tutorial, intro}},
		{name: "duckduckgo no results", status: 200, fixture: "ddg_noresults.html", want: []Hit{}},
		{name: "duckduckgo anomaly page", status: 200, fixture: "ddg_anomaly.html", errIs: ErrSearchBlocked},
		{name: "duckduckgo 202 challenge", status: 202, fixture: "ddg_anomaly.html", errIs: ErrSearchBlocked},
		{name: "duckduckgo rate limited", status: 429, errIs: ErrSearchBlocked},
		{name: "duckduckgo server error", status: 500, wantErr: "HTTP 500"},
		{name: "searxng results", searxng: true, status: 200, fixture: "searxng_results.json",
			want: []Hit{
				{Title: "Tutorial: Getting started with generics", URL: "https://go.dev/doc/tutorial/generics", Snippet: "This tutorial introduces the basics of generics in Go."},
				{Title: "An Introduction To Generics", URL: "https://go.dev/blog/intro-generics", Snippet: "Generics adds three new big things to the language."},
				{Title: "constraints package", URL: "https://pkg.go.dev/golang.org/x/exp/constraints", Snippet: "Package constraints defines a set of useful constraints."},
			}},
		{name: "searxng engines blocked", searxng: true, status: 200, fixture: "searxng_blocked.json", errIs: ErrSearchBlocked},
		{name: "searxng json disabled", searxng: true, status: 403, wantErr: "refuses the JSON API"},
		{name: "searxng bad json", searxng: true, status: 200, fixture: "ddg_results.html", wantErr: "decode response"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := SearchConfig{}
			if tc.searxng {
				srv := engine(t, tc.status, tc.fixture, "application/json", checkSearx)
				cfg.SearXNGURL = srv.URL
			} else {
				srv := engine(t, tc.status, tc.fixture, "text/html; charset=utf-8", checkDuck)
				cfg.DuckDuckGoURL = srv.URL + "/html/"
			}
			s, err := NewSearcher(cfg)
			if err != nil {
				t.Fatal(err)
			}
			got, err := s.Search(t.Context(), SearchArgs{Query: " golang generics ", MaxResults: tc.maxResults})
			if tc.errIs != nil || tc.wantErr != "" {
				if tc.errIs != nil && !errors.Is(err, tc.errIs) {
					t.Fatalf("Search error = %v; want %v", err, tc.errIs)
				}
				if tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
					t.Fatalf("Search error = %v; want one containing %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Search: %v", err)
			}
			wantEngine := "duckduckgo"
			if tc.searxng {
				wantEngine = "searxng"
			}
			if got.Engine != wantEngine {
				t.Errorf("engine = %q; want %q", got.Engine, wantEngine)
			}
			if got.Results == nil {
				t.Fatal("results is nil; want an empty list")
			}
			if len(got.Results) != len(tc.want) {
				t.Fatalf("got %d results %+v; want %d", len(got.Results), got.Results, len(tc.want))
			}
			for i := range tc.want {
				if got.Results[i] != tc.want[i] {
					t.Errorf("result %d =\n%+v\nwant\n%+v", i, got.Results[i], tc.want[i])
				}
			}
		})
	}
}

func TestSearchTimeout(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}))
	t.Cleanup(func() {
		close(release)
		srv.Close()
	})
	s, err := NewSearcher(SearchConfig{DuckDuckGoURL: srv.URL + "/html/", Timeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Search(t.Context(), SearchArgs{Query: "slow"}); err == nil || !strings.Contains(err.Error(), "search duckduckgo") {
		t.Fatalf("Search error = %v; want a timeout", err)
	}
}

func TestSearchArgs(t *testing.T) {
	s, err := NewSearcher(SearchConfig{DuckDuckGoURL: "http://127.0.0.1:1/html/"})
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range []SearchArgs{{Query: "  "}, {Query: "x", MaxResults: -1}} {
		if _, err := s.Search(t.Context(), a); err == nil {
			t.Errorf("Search(%+v) succeeded; want an argument error", a)
		}
	}
	if _, err := NewSearcher(SearchConfig{SearXNGURL: "ftp://nope"}); err == nil {
		t.Error("NewSearcher accepted a non-http SearXNG URL")
	}
}
