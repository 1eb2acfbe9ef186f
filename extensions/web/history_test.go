package web

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
)

// fakeHistory is a history of two changes, "aaaa1111…" (older) and
// "aaaa2222…"; "aaaa" is ambiguous.
type fakeHistory struct {
	mu       sync.Mutex
	queries  []api.HistoryQuery
	restored []string
}

var histAt = time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)

func fakeRev(n int) api.Revision {
	hash := fmt.Sprintf("aaaa%d%s", n, strings.Repeat("0", 35))
	return api.Revision{Hash: hash, Short: hash[:7], Time: histAt.Add(time.Duration(n) * time.Minute),
		Message: fmt.Sprintf("memory: remember %d", n), Files: []string{"MEMORIES.txt"}}
}

func (f *fakeHistory) find(rev string) (api.Revision, error) {
	switch {
	case rev == "aaaa":
		return api.Revision{}, fmt.Errorf("%w: %q matches 2 commits; give more digits", api.ErrInvalid, rev)
	case strings.HasPrefix(fakeRev(1).Hash, rev):
		return fakeRev(1), nil
	case strings.HasPrefix(fakeRev(2).Hash, rev), rev == "HEAD":
		return fakeRev(2), nil
	}
	return api.Revision{}, fmt.Errorf("%w: unknown revision %q", api.ErrNotFound, rev)
}

func (f *fakeHistory) List(_ context.Context, q api.HistoryQuery) ([]api.Revision, error) {
	f.mu.Lock()
	f.queries = append(f.queries, q)
	f.mu.Unlock()
	switch q.Path {
	case "", "MEMORIES.txt":
		return []api.Revision{fakeRev(2), fakeRev(1)}, nil
	case "skills":
		return nil, nil
	}
	return nil, fmt.Errorf("%w: path is not versioned: %q", api.ErrInvalid, q.Path)
}

func (f *fakeHistory) Get(_ context.Context, rev string) (api.RevisionDiff, error) {
	r, err := f.find(rev)
	if err != nil {
		return api.RevisionDiff{}, err
	}
	return api.RevisionDiff{Revision: r, Patch: "--- a/MEMORIES.txt\n+++ b/MEMORIES.txt\n@@ -0,0 +1 @@\n+x\n"}, nil
}

func (f *fakeHistory) Restore(_ context.Context, rev string) (api.RestoreResult, error) {
	r, err := f.find(rev)
	if err != nil {
		return api.RestoreResult{}, err
	}
	f.mu.Lock()
	f.restored = append(f.restored, rev)
	f.mu.Unlock()
	if r.Hash == fakeRev(2).Hash { // the head: nothing to do
		return api.RestoreResult{Target: r}, nil
	}
	n := fakeRev(3)
	n.Message, n.Files = "restore "+r.Short, nil
	return api.RestoreResult{Target: r, Revision: &n}, nil
}

// keys returns the sorted keys of a JSON object.
func keys(t *testing.T, raw json.RawMessage) []string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("%s is not a JSON object: %v", raw, err)
	}
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

var revisionKeys = []string{"files", "hash", "message", "short", "time"}

func TestHistoryEndpoints(t *testing.T) {
	hist := &fakeHistory{}
	s := startWeb(t, "rate_per_second: 0", &api.Services{History: hist})
	auth := "Bearer " + testToken

	t.Run("list", func(t *testing.T) {
		code, h, body := s.do(t, "GET", "/api/v1/history", "", auth)
		if code != 200 || !strings.HasPrefix(h.Get("Content-Type"), "application/json") {
			t.Fatalf("%d %s", code, body)
		}
		var list struct{ Revisions []json.RawMessage }
		if err := json.Unmarshal([]byte(body), &list); err != nil || len(list.Revisions) != 2 {
			t.Fatalf("%s: %v", body, err)
		}
		if got := keys(t, list.Revisions[0]); !slices.Equal(got, revisionKeys) {
			t.Errorf("revision keys %v, want %v", got, revisionKeys)
		}
		var first api.Revision
		_ = json.Unmarshal(list.Revisions[0], &first)
		if first.Hash != fakeRev(2).Hash || first.Short != "aaaa200" || !first.Time.Equal(fakeRev(2).Time) ||
			first.Message != "memory: remember 2" || !slices.Equal(first.Files, []string{"MEMORIES.txt"}) {
			t.Errorf("first revision %+v", first)
		}
	})

	t.Run("list passes path and limit", func(t *testing.T) {
		hist.mu.Lock()
		hist.queries = nil
		hist.mu.Unlock()
		s.do(t, "GET", "/api/v1/history?path=MEMORIES.txt&limit=5", "", auth)
		s.do(t, "GET", "/api/v1/history", "", auth)
		hist.mu.Lock()
		defer hist.mu.Unlock()
		want := []api.HistoryQuery{{Path: "MEMORIES.txt", Limit: 5}, {Limit: 50}}
		if !slices.Equal(hist.queries, want) {
			t.Errorf("queries %+v, want %+v", hist.queries, want)
		}
	})

	t.Run("empty list is an empty array", func(t *testing.T) {
		code, _, body := s.do(t, "GET", "/api/v1/history?path=skills", "", auth)
		if code != 200 || body != "{\"revisions\":[]}\n" {
			t.Fatalf("%d %s", code, body)
		}
	})

	t.Run("one change with its patch", func(t *testing.T) {
		code, _, body := s.do(t, "GET", "/api/v1/history/aaaa1", "", auth)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		want := append(slices.Clone(revisionKeys), "patch")
		slices.Sort(want)
		if got := keys(t, json.RawMessage(body)); !slices.Equal(got, want) {
			t.Errorf("keys %v, want %v", got, want)
		}
		var d api.RevisionDiff
		if err := json.Unmarshal([]byte(body), &d); err != nil || d.Hash != fakeRev(1).Hash || !strings.Contains(d.Patch, "+x\n") {
			t.Errorf("diff %+v: %v", d, err)
		}
	})

	t.Run("restore", func(t *testing.T) {
		code, _, body := s.do(t, "POST", "/api/v1/history/"+fakeRev(1).Short+"/restore", "", auth)
		if code != 200 {
			t.Fatalf("%d %s", code, body)
		}
		if got := keys(t, json.RawMessage(body)); !slices.Equal(got, []string{"revision", "target"}) {
			t.Errorf("keys %v", got)
		}
		var res struct{ Target, Revision json.RawMessage }
		_ = json.Unmarshal([]byte(body), &res)
		if got := keys(t, res.Revision); !slices.Equal(got, revisionKeys) {
			t.Errorf("revision keys %v", got)
		}
		var out api.RestoreResult
		_ = json.Unmarshal([]byte(body), &out)
		if out.Target.Hash != fakeRev(1).Hash || out.Revision == nil || out.Revision.Message != "restore aaaa100" ||
			out.Revision.Files == nil {
			t.Errorf("result %s", body)
		}
	})

	t.Run("restore of the current state records nothing", func(t *testing.T) {
		code, _, body := s.do(t, "POST", "/api/v1/history/HEAD/restore", "", auth)
		if code != 200 || !strings.Contains(body, `"revision":null`) {
			t.Fatalf("%d %s", code, body)
		}
	})

	errs := []struct {
		name, method, path string
		code               int
		want               string
	}{
		{"unknown revision", "GET", "/api/v1/history/bbbb", 404, "unknown revision"},
		{"unknown revision to restore", "POST", "/api/v1/history/bbbb/restore", 404, "unknown revision"},
		{"ambiguous revision", "GET", "/api/v1/history/aaaa", 400, "give more digits"},
		{"ambiguous revision to restore", "POST", "/api/v1/history/aaaa/restore", 400, "give more digits"},
		{"revision with a space", "GET", "/api/v1/history/HEAD%20x", 400, "is not a revision"},
		{"revision with a slash", "POST", "/api/v1/history/..%2Fx/restore", 400, "is not a revision"},
		{"revision too long", "GET", "/api/v1/history/" + strings.Repeat("a", 101), 400, "longer than"},
		{"bad path", "GET", "/api/v1/history?path=config.yaml", 400, "not versioned"},
		{"bad limit", "GET", "/api/v1/history?limit=0", 400, "limit must be"},
		{"restore needs POST", "GET", "/api/v1/history/aaaa1/restore", 405, "allowed: POST"},
	}
	for _, tc := range errs {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := s.do(t, tc.method, tc.path, "", auth)
			if code != tc.code || !strings.Contains(body, tc.want) {
				t.Errorf("%d %s, want %d with %q", code, body, tc.code, tc.want)
			}
		})
	}
	hist.mu.Lock()
	defer hist.mu.Unlock()
	if want := []string{fakeRev(1).Short, "HEAD"}; !slices.Equal(hist.restored, want) {
		t.Errorf("restored %v, want %v", hist.restored, want)
	}
}

func TestHistoryNeedsAuthAndService(t *testing.T) {
	paths := []struct{ method, path string }{
		{"GET", "/api/v1/history"},
		{"GET", "/api/v1/history/HEAD"},
		{"POST", "/api/v1/history/HEAD/restore"},
	}
	t.Run("unauthorized", func(t *testing.T) {
		hist := &fakeHistory{}
		s := startWeb(t, "rate_per_second: 0", &api.Services{History: hist})
		for _, p := range paths {
			for _, auth := range []string{"", "Bearer nope"} {
				code, _, body := s.do(t, p.method, p.path, "", auth)
				if code != 401 || body != "{\"error\":\"unauthorized\"}\n" {
					t.Errorf("%s %s (%q): %d %s", p.method, p.path, auth, code, body)
				}
			}
		}
		if len(hist.restored) != 0 {
			t.Errorf("restored without a token: %v", hist.restored)
		}
	})
	t.Run("not enabled", func(t *testing.T) {
		s := startWeb(t, "rate_per_second: 0", &api.Services{})
		for _, p := range paths {
			code, _, body := s.do(t, p.method, p.path, "", "Bearer "+testToken)
			if code != 501 || body != "{\"error\":\"history is not enabled\"}\n" {
				t.Errorf("%s %s: %d %s", p.method, p.path, code, body)
			}
		}
		_, _, body := s.do(t, "GET", "/api/v1/info", "", "Bearer "+testToken)
		var info api.AgentInfo
		if err := json.Unmarshal([]byte(body), &info); err != nil || info.Features["history"] {
			t.Errorf("info %s: %v", body, err)
		}
	})
	t.Run("listed in info", func(t *testing.T) {
		s := startWeb(t, "rate_per_second: 0", &api.Services{History: &fakeHistory{}})
		_, _, body := s.do(t, "GET", "/api/v1/info", "", "Bearer "+testToken)
		var info api.AgentInfo
		if err := json.Unmarshal([]byte(body), &info); err != nil || !info.Features["history"] {
			t.Errorf("info %s: %v", body, err)
		}
	})
}

// An unknown path is 404; a known one with the wrong method is 405 naming
// the allowed methods.
func TestUnknownEndpointAndWrongMethod(t *testing.T) {
	s := startWeb(t, "rate_per_second: 0", &api.Services{})
	cases := []struct {
		method, path string
		code         int
		allow        string
	}{
		{"GET", "/api/v1/nothing-here", 404, ""},
		{"DELETE", "/api/v1/threads", 405, "GET"},
		{"PATCH", "/api/v1/memories/5", 405, "GET, PUT, DELETE"},
	}
	for _, c := range cases {
		code, hdr, body := s.do(t, c.method, c.path, "", "Bearer "+testToken)
		if code != c.code || hdr.Get("Allow") != c.allow {
			t.Errorf("%s %s = %d (Allow %q) %s; want %d (Allow %q)", c.method, c.path, code, hdr.Get("Allow"), body, c.code, c.allow)
		}
	}
}
