package apptest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/web"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// WebToken is the access token StartWeb configures.
const WebToken = "apptest-web-token-0123456789abcdef"

// WebHarness is the whole app with the web extension listening on a free
// loopback port.
type WebHarness struct {
	*Harness
	// Base is the server's URL without a trailing slash
	// ("http://127.0.0.1:40123"); Token is its access token.
	Base  string
	Token string
	// Web is the running extension.
	Web *web.Web
}

// StartWeb starts the app (see Start) with the web extension on
// 127.0.0.1:0 and the token WebToken. More REVERIE_WEB__… settings can be
// given with WithEnv. Until the test scripts the model (Model.Handle or
// Model.Enqueue, or WithModel), it answers every request with "ok".
func StartWeb(t testing.TB, opts ...Option) *WebHarness {
	t.Helper()
	info, ok := extension.Lookup("web")
	if !ok {
		t.Fatal("the web extension is not registered")
	}
	var inst *web.Web
	wrapped := info
	wrapped.New = func() extension.Extension {
		e := info.New()
		inst = e.(*web.Web)
		return e
	}
	h := Start(t, append([]Option{WithExtensions(wrapped), WithEnv(
		"REVERIE_WEB__LISTEN=127.0.0.1:0",
		"REVERIE_WEB__TOKEN="+WebToken,
	)}, opts...)...)
	if inst == nil || inst.Addr() == nil {
		t.Fatal("the web extension did not start")
	}
	var set settings
	for _, o := range opts {
		o(&set)
	}
	if set.handler == nil {
		h.Model.Handle(func(llmtest.ChatRequest) llmtest.ServerReply { return llmtest.ServerReply{Text: "ok"} })
	}
	return &WebHarness{Harness: h, Base: "http://" + inst.Addr().String(), Token: WebToken, Web: inst}
}

// Do sends an API request (path relative to /api/v1, body marshalled to
// JSON unless it is a []byte or nil) with the bearer token and returns the
// status and the body.
func (w *WebHarness) Do(t testing.TB, method, path string, body any) (int, []byte) {
	t.Helper()
	return w.DoAuth(t, method, path, body, "Bearer "+w.Token)
}

// DoAuth is Do with the given Authorization header ("" for none).
func (w *WebHarness) DoAuth(t testing.TB, method, path string, body any, auth string) (int, []byte) {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, w.Base+"/api/v1"+path, rd)
	if err != nil {
		t.Fatal(err)
	}
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: read: %v", method, path, err)
	}
	return resp.StatusCode, data
}

// JSON is Do for a call that must answer want; the body is decoded into out
// (when not nil).
func (w *WebHarness) JSON(t testing.TB, method, path string, body any, want int, out any) {
	t.Helper()
	code, data := w.Do(t, method, path, body)
	if code != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, code, data, want)
	}
	if out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			t.Fatalf("%s %s: decode %s: %v", method, path, data, err)
		}
	}
}
