package client

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/reverie-ai/reverie/api"
)

const token = "secret-token-0123456789"

// server is a small stand-in for the web extension's API.
func server(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	auth := func(h http.HandlerFunc) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer "+token {
				w.WriteHeader(http.StatusUnauthorized)
				_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: "unauthorized"})
				return
			}
			h(w, r)
		}
	}
	mux.HandleFunc("GET /api/v1/info", auth(func(w http.ResponseWriter, r *http.Request) {
		_ = json.NewEncoder(w).Encode(api.AgentInfo{Version: "1.2.3", ModelsConfigured: true})
	}))
	mux.HandleFunc("GET /api/v1/threads/{thread}/messages", auth(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		text := r.PathValue("thread") + " after=" + q.Get("after_id") + " limit=" + q.Get("limit") + " archived=" + q.Get("include_archived")
		_ = json.NewEncoder(w).Encode(api.MessageList{Messages: []api.Message{{ID: 1, Role: "user", Text: text}}})
	}))
	mux.HandleFunc("POST /api/v1/threads/{thread}/messages", auth(func(w http.ResponseWriter, r *http.Request) {
		var in api.SendRequest
		_ = json.NewDecoder(r.Body).Decode(&in)
		switch in.Text {
		case "fail":
			w.WriteHeader(http.StatusBadGateway)
			_ = json.NewEncoder(w).Encode(api.Reply{Reply: "The model is unavailable.", Error: "provider down"})
		case "busy":
			w.Header().Set("Retry-After", "7")
			w.WriteHeader(http.StatusTooManyRequests)
			_ = json.NewEncoder(w).Encode(api.ErrorBody{Error: "too many messages waiting"})
		default:
			_ = json.NewEncoder(w).Encode(api.Reply{Thread: "web:x", Reply: "echo " + in.Text})
		}
	}))
	mux.HandleFunc("GET /api/v1/ws", auth(func(w http.ResponseWriter, r *http.Request) {
		ws, err := websocket.Accept(w, r, nil)
		if err != nil {
			return
		}
		defer ws.CloseNow()
		ctx := context.Background()
		_ = wsjson.Write(ctx, ws, api.ServerFrame{Type: api.FrameNotify, Text: "subscribed to " + strings.Join(r.URL.Query()["thread"], ",")})
		for {
			var f api.ClientFrame
			if err := wsjson.Read(ctx, ws, &f); err != nil {
				return
			}
			_ = wsjson.Write(ctx, ws, api.ServerFrame{Type: api.FrameDone, Thread: "web:x", Text: "echo " + f.Text})
		}
	}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestNew(t *testing.T) {
	tests := []struct {
		in, want, err string
	}{
		{"http://127.0.0.1:8420", "http://127.0.0.1:8420", ""},
		{"https://example.org/reverie/", "https://example.org/reverie", ""},
		{"ws://h:1/?x=1#f", "http://h:1", ""},
		{"ftp://h", "", "want http"},
		{"http://", "", "no host"},
		{"127.0.0.1:8420", "", "want http"},
	}
	for _, tc := range tests {
		t.Run(tc.in, func(t *testing.T) {
			c, err := New(tc.in, "")
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Errorf("err %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil || c.URL() != tc.want {
				t.Errorf("URL %q, err %v; want %q", c.URL(), err, tc.want)
			}
		})
	}
}

func TestHTTP(t *testing.T) {
	srv := server(t)
	c, err := New(srv.URL, token)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	info, err := c.Info(ctx)
	if err != nil || info.Version != "1.2.3" {
		t.Errorf("info %+v %v", info, err)
	}
	msgs, err := c.Messages(ctx, "web:a b/c", api.MessageQuery{AfterID: 4, Limit: 2, IncludeArchived: true})
	if err != nil || len(msgs) != 1 || msgs[0].Text != "web:a b/c after=4 limit=2 archived=true" {
		t.Errorf("messages %+v %v", msgs, err)
	}
	reply, err := c.Send(ctx, "web:x", "hi")
	if err != nil || reply.Reply != "echo hi" {
		t.Errorf("send %+v %v", reply, err)
	}
	// A failed turn: the reply explains it, the error says 502.
	reply, err = c.Send(ctx, "web:x", "fail")
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != http.StatusBadGateway || reply.Reply != "The model is unavailable." {
		t.Errorf("failed turn: %+v %v", reply, err)
	}
	_, err = c.Send(ctx, "web:x", "busy")
	if !errors.As(err, &apiErr) || apiErr.Status != 429 || apiErr.RetryAfter.Seconds() != 7 || apiErr.Message != "too many messages waiting" {
		t.Errorf("busy: %v", err)
	}

	bad, _ := New(srv.URL, "wrong")
	if _, err := bad.Info(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("wrong token: %v", err)
	}
	if _, err := bad.Dial(ctx); !errors.Is(err, ErrUnauthorized) {
		t.Errorf("wrong token on the WebSocket: %v", err)
	}
}

// An error answer reads as the server's sentence, and wraps the error of
// package api its status stands for; an answer that is not the API's
// (a proxy's page) says its status.
func TestErrorAnswers(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   string
		is     error
	}{
		{"conflict", 409, `{"error":"dreaming needs a language model; none is configured (see reverie doctor)"}`,
			"dreaming needs a language model; none is configured (see reverie doctor)", api.ErrConflict},
		{"not found", 404, `{"error":"revert dream 9: dream not found"}`, "revert dream 9: dream not found", api.ErrNotFound},
		{"invalid", 400, `{"error":"text is empty"}`, "text is empty", api.ErrInvalid},
		{"busy", 429, `{"error":"too many messages waiting"}`, "too many messages waiting", api.ErrBusy},
		{"disk full", 507, `{"error":"the disk holding the data directory is full; free some space and try again"}`,
			"the disk holding the data directory is full; free some space and try again", api.ErrDiskFull},
		{"wrong token", 401, `{"error":"unauthorized"}`, ErrUnauthorized.Error(), ErrUnauthorized},
		{"setup write without the token", 401, `{"error":"saving the setup needs the access token"}`,
			"saving the setup needs the access token", ErrUnauthorized},
		{"a proxy's page", 502, "<html>Bad Gateway</html>", "HTTP 502: Bad Gateway", api.ErrTurnFailed},
		{"no body", 404, "", "HTTP 404: Not Found", api.ErrNotFound},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			c, err := New(srv.URL, token)
			if err != nil {
				t.Fatal(err)
			}
			_, err = c.Dreams().Revert(context.Background(), 9)
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.Status != tc.status || err.Error() != tc.want || !errors.Is(err, tc.is) {
				t.Errorf("error %v (%T), want %q wrapping %v", err, err, tc.want, tc.is)
			}
		})
	}
}

func TestWebSocket(t *testing.T) {
	srv := server(t)
	c, _ := New(srv.URL, token)
	ctx := context.Background()
	conn, err := c.Dial(ctx, "web:x", "web:y")
	if err != nil {
		t.Fatal(err)
	}
	f, err := conn.Read(ctx)
	if err != nil || f.Text != "subscribed to web:x,web:y" {
		t.Fatalf("first frame %+v %v", f, err)
	}
	if err := conn.Write(ctx, api.ClientFrame{Type: api.FrameMessage, Thread: "web:x", Text: "hello"}); err != nil {
		t.Fatal(err)
	}
	if f, err := conn.Read(ctx); err != nil || f.Type != api.FrameDone || f.Text != "echo hello" {
		t.Errorf("reply frame %+v %v", f, err)
	}
	if err := conn.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := conn.Read(ctx); err == nil {
		t.Error("read after close succeeded")
	}
}
