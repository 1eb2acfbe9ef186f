package ollama

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/providers/providerstest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

func TestEmbed(t *testing.T) {
	texts := []string{"alpha", "beta", "gamma", "delta", "epsilon"}
	cases := []struct {
		name      string
		base      func(url string) string
		model     string
		dims      int
		batch     int
		fail      []llmtest.ServerReply
		wantErr   error  // errors.Is target, nil for success
		wantMsg   string // part of the error
		wantDims  int
		wantCalls int
		sleeps    int
	}{
		{name: "one batch", model: "nomic-embed-text", wantDims: 12, wantCalls: 1},
		{name: "batches of two", model: "nomic-embed-text", batch: 2, wantDims: 12, wantCalls: 3},
		{name: "dimensions asked", model: "nomic-embed-text", dims: 4, wantDims: 4, wantCalls: 1},
		{name: "base URL with /v1", base: func(u string) string { return u + "/v1/" }, model: "nomic-embed-text", wantDims: 12, wantCalls: 1},
		{name: "host without scheme", base: func(u string) string { return strings.TrimPrefix(u, "http://") }, model: "nomic-embed-text", wantDims: 12, wantCalls: 1},
		{name: "unknown model is not retried", model: "missing", wantErr: providers.ErrNotFound, wantMsg: `model "missing" not found, try pulling it first`, wantCalls: 1},
		{name: "server error retried", model: "nomic-embed-text", fail: []llmtest.ServerReply{{Status: 500, ErrorMessage: "llama runner process has terminated"}},
			wantDims: 12, wantCalls: 2, sleeps: 1},
		{name: "overloaded twice then ok", model: "nomic-embed-text", fail: []llmtest.ServerReply{{Status: 503}, {Status: 503}}, wantDims: 12, wantCalls: 3, sleeps: 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := llmtest.NewOllamaServer(t)
			srv.AddModel("nomic-embed-text", 12)
			for _, f := range c.fail {
				srv.EnqueueFailure(f)
			}
			base := srv.URL()
			if c.base != nil {
				base = c.base(base)
			}
			clk := providerstest.NewClock()
			e, err := NewEmbedder(Options{Name: "local/" + c.model, BaseURL: base, Model: c.model, Dimensions: c.dims, BatchSize: c.batch,
				Clock: clk, Jitter: func() float64 { return 0 }})
			if err != nil {
				t.Fatal(err)
			}
			got, err := e.Embed(context.Background(), texts)
			if len(srv.Requests()) != c.wantCalls {
				t.Errorf("%d requests, want %d", len(srv.Requests()), c.wantCalls)
			}
			if len(clk.Sleeps()) != c.sleeps {
				t.Errorf("%d backoff sleeps, want %d", len(clk.Sleeps()), c.sleeps)
			}
			if c.wantErr != nil {
				var pe *providers.Error
				if !errors.Is(err, c.wantErr) || !errors.As(err, &pe) || !strings.Contains(err.Error(), c.wantMsg) {
					t.Fatalf("err = %v, want %v with %q", err, c.wantErr, c.wantMsg)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(texts) {
				t.Fatalf("%d vectors for %d texts", len(got), len(texts))
			}
			for i, v := range got {
				if !slices.Equal(v, llmtest.FakeEmbedding(texts[i], c.wantDims)) {
					t.Errorf("vector %d is not the one for %q with %d dimensions", i, texts[i], c.wantDims)
				}
			}
			for _, r := range srv.Requests() {
				if r.Model != c.model || r.Truncate == nil || !*r.Truncate || r.Dimensions != c.dims {
					t.Errorf("request %+v", r)
				}
			}
		})
	}
}

// A reply with fewer vectors than texts is a bad response, not a panic or
// a silent shift of vectors between texts.
func TestEmbedShortReply(t *testing.T) {
	srv := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"model":"m","embeddings":[[0.1,0.2]]}`))
	})
	ts := newServer(t, srv)
	e, err := NewEmbedder(Options{BaseURL: ts, Model: "m", MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Embed(context.Background(), []string{"a", "b"}); !errors.Is(err, providers.ErrBadResponse) {
		t.Fatalf("err = %v, want ErrBadResponse", err)
	}
}
