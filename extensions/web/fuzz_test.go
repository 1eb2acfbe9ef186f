package web

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

// Fuzz tests of what a client sends: the JSON bodies of the main routes,
// through the whole handler (access checks, decoding, the handlers), and
// the WebSocket client frames. `go test` runs the seeds (f.Add and
// testdata/fuzz/<Name>/); `go test -run '^$' -fuzz FuzzAPIBodies
// -fuzztime 1m ./extensions/web/` searches for more.

// fuzzRoutes are the routes FuzzAPIBodies sends bodies to.
var fuzzRoutes = []struct{ method, path string }{
	{"POST", "/api/v1/threads/web:fuzz/messages"},
	{"PUT", "/api/v1/world"},
	{"POST", "/api/v1/setup/models"},
	{"POST", "/api/v1/login"},
	{"POST", "/api/v1/memories"},
	{"PUT", "/api/v1/memories/7"},
}

func FuzzAPIBodies(f *testing.F) {
	for i := range fuzzRoutes {
		for _, body := range []string{
			`{"text":"hello"}`, `{"version":2,"topics":["a"]}`, `{"values":{"model":"m"}}`,
			`{"token":"` + testToken + `"}`, `{"text":"x","kind":"fact"}`,
			``, `null`, `[]`, `{}`, `{"text":""}`, `{"text":"a"}{"text":"b"}`, `{"unknown":1}`,
			`{"text":"\u0000"}`, `"text"`, `{"text":123}`, `{"values":{"a":null}}`,
		} {
			f.Add(uint8(i), []byte(body))
		}
	}
	host := extensiontest.NewHost(f, extensiontest.WithConfig(
		"listen: 127.0.0.1:0\ntoken: "+testToken+"\nrate_per_second: 0\nauth_failures_per_minute: 0\nmax_body_bytes: 4096"))
	fa := &fakeAPI{}
	svc := fa.services()
	svc.Memories = fuzzMemories{}
	w := new(Web)
	if err := w.Init(context.Background(), svcHost{host, svc}); err != nil {
		f.Fatal(err)
	}
	w.log = slog.New(slog.DiscardHandler) // the fuzz target may not write to f's output
	h := w.srv.Handler
	f.Fuzz(func(t *testing.T, route uint8, body []byte) {
		rt := fuzzRoutes[int(route)%len(fuzzRoutes)]
		req := httptest.NewRequest(rt.method, "http://127.0.0.1:0"+rt.path, bytes.NewReader(body))
		req.Host = "127.0.0.1:0"
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Origin", "http://127.0.0.1:0")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusCreated, http.StatusNoContent, http.StatusBadRequest,
			http.StatusUnauthorized, http.StatusNotFound, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("%s %s %q: status %d %s", rt.method, rt.path, body, rec.Code, rec.Body)
		}
		if rec.Code != http.StatusNoContent && !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("%s %s %q: answer is not JSON: %q", rt.method, rt.path, body, rec.Body)
		}
		if rec.Code >= 400 {
			var e api.ErrorBody
			if err := json.Unmarshal(rec.Body.Bytes(), &e); err != nil || e.Error == "" {
				t.Fatalf("%s %s %q: error answer without a message: %q", rt.method, rt.path, body, rec.Body)
			}
		}
	})
	fa.mu.Lock()
	defer fa.mu.Unlock()
	for _, in := range fa.turns {
		if strings.TrimSpace(in.Text) == "" {
			f.Errorf("a turn ran with empty text %q", in.Text)
		}
	}
}

// fuzzMemories accepts what the handlers pass on.
type fuzzMemories struct{ api.Memories }

func (fuzzMemories) Add(_ context.Context, in api.MemoryInput) (api.Memory, error) {
	return api.Memory{ID: 7, Text: in.Text, Kind: in.Kind, Source: in.Source}, nil
}

func (fuzzMemories) Update(_ context.Context, id int64, in api.MemoryInput) (api.Memory, error) {
	return api.Memory{ID: id, Text: in.Text, Kind: in.Kind}, nil
}

func FuzzClientFrame(f *testing.F) {
	for _, frame := range []string{
		`{"type":"message","thread":"web:a","text":"hi","id":"c1"}`,
		`{"type":"message","thread":"a","text":"hi"}`,
		`{"type":"message","thread":"cli:alice","text":"hi"}`,
		`{"type":"message","thread":"web:a","text":"   "}`,
		`{"type":"subscribe","thread":"web:b"}`,
		`{"type":"unsubscribe","thread":"web:b"}`,
		`{"type":"cancel","thread":"web:a"}`,
		`{"type":"ping"}`,
		`{"type":"nope"}`,
		`{"thread":"web:a"}`,
		`{"type":1}`,
		`[]`, `null`, `{`, ``, "\xff\xfe",
		`{"type":"subscribe","thread":"web:` + strings.Repeat("x", 65) + `"}`,
	} {
		f.Add(true, []byte(frame))
	}
	f.Add(false, []byte(`{"type":"ping"}`))
	host := extensiontest.NewHost(f)
	w := &Web{host: host, log: slog.New(slog.DiscardHandler), now: host.Now, svc: &api.Services{}, hub: newHub()}
	f.Fuzz(func(t *testing.T, text bool, data []byte) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		c := newWSConn(ctx, nil, cancel) // no socket: frames stay queued
		if !w.hub.add(c, nil) {
			t.Fatal("hub closed")
		}
		defer w.hub.remove(c)
		typ := websocket.MessageBinary
		if text {
			typ = websocket.MessageText
		}
		before := len(host.Received())
		w.clientFrame(c, typ, data)
		for _, in := range host.Received()[before:] {
			if _, err := webThread(string(in.Address.Thread)); err != nil || strings.TrimSpace(in.Text) == "" {
				t.Fatalf("frame %q reached the router: thread %q text %q", data, in.Address.Thread, in.Text)
			}
		}
		c.mu.Lock()
		queued := c.queue
		c.mu.Unlock()
		for _, b := range queued {
			var sf api.ServerFrame
			if err := json.Unmarshal(b, &sf); err != nil {
				t.Fatalf("frame %q: answer %q is not JSON: %v", data, b, err)
			}
			switch sf.Type {
			case api.FramePong:
			case api.FrameError:
				if sf.Error == "" {
					t.Fatalf("frame %q: error without a message", data)
				}
			default:
				t.Fatalf("frame %q: unexpected answer %q", data, b)
			}
		}
		if len(c.threads) > maxSubscriptions {
			t.Fatalf("%d subscriptions", len(c.threads))
		}
	})
}
