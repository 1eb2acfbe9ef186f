package web

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/tool"
)

// Every redirect hop is put to the call's approval gate, with the
// arguments a fetch of that hop would have; a refused hop is not requested.
func TestFetchRedirectHopsAskTheGate(t *testing.T) {
	var mu sync.Mutex
	var served []string
	mux := http.NewServeMux()
	mux.HandleFunc("/start", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/middle", http.StatusFound)
	})
	mux.HandleFunc("/middle", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/end?d=secret", http.StatusTemporaryRedirect)
	})
	mux.HandleFunc("/end", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("arrived"))
	})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		served = append(served, r.URL.RequestURI())
		mu.Unlock()
		mux.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	f, err := NewFetcher(FetchConfig{AllowPrivate: true})
	if err != nil {
		t.Fatal(err)
	}
	refuse := errors.New("the user denied this call")
	tests := []struct {
		name   string
		refuse string // the hop the gate refuses
		asked  []string
		served []string
		err    error
	}{
		{"every hop asked, all allowed", "", []string{srv.URL + "/middle", srv.URL + "/end?d=secret"},
			[]string{"/start", "/middle", "/end?d=secret"}, nil},
		{"a refused hop is not requested", srv.URL + "/end?d=secret", []string{srv.URL + "/middle", srv.URL + "/end?d=secret"},
			[]string{"/start", "/middle"}, refuse},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			mu.Lock()
			served = nil
			mu.Unlock()
			var asked []string
			gate := tool.Gate(func(_ context.Context, args json.RawMessage) error {
				var a FetchArgs
				if err := json.Unmarshal(args, &a); err != nil || a.MaxChars != 500 {
					t.Errorf("gate args = %s (%v)", args, err)
				}
				asked = append(asked, a.URL)
				if a.URL == tc.refuse {
					return refuse
				}
				return nil
			})
			res, err := f.Fetch(tool.WithGate(t.Context(), gate), FetchArgs{URL: srv.URL + "/start", MaxChars: 500})
			if !errors.Is(err, tc.err) || (tc.err == nil && err != nil) {
				t.Fatalf("Fetch = %+v, %v; want %v", res, err, tc.err)
			}
			if tc.err != nil && !strings.Contains(err.Error(), "not followed") {
				t.Errorf("error %q does not say the redirect was not followed", err)
			}
			if tc.err == nil && (res.Content != "arrived" || res.URL != srv.URL+"/end?d=secret") {
				t.Errorf("result = %+v", res)
			}
			mu.Lock()
			defer mu.Unlock()
			if !slices.Equal(asked, tc.asked) || !slices.Equal(served, tc.served) {
				t.Errorf("asked %v, served %v; want %v, %v", asked, served, tc.asked, tc.served)
			}
		})
	}
}
