package apptest

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// The whole app behind its HTTP API: the real web extension, router, agent,
// SQLite and the fake OpenAI-compatible model.

func wsURL(w *WebHarness, query string) string {
	return "ws" + strings.TrimPrefix(w.Base, "http") + "/api/v1/ws" + query
}

func dialWS(t *testing.T, w *WebHarness, query string) *websocket.Conn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	c, _, err := websocket.Dial(ctx, wsURL(w, query), &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + w.Token}},
	})
	if err != nil {
		t.Fatalf("dial: %v", err)
	}
	t.Cleanup(func() { _ = c.CloseNow() })
	return c
}

func writeFrame(t *testing.T, c *websocket.Conn, v any) {
	t.Helper()
	var data []byte
	switch v := v.(type) {
	case string:
		data = []byte(v)
	default:
		var err error
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageText, data); err != nil {
		t.Fatalf("write frame: %v", err)
	}
}

func readFrame(t *testing.T, c *websocket.Conn) api.ServerFrame {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), patience)
	defer cancel()
	_, data, err := c.Read(ctx)
	if err != nil {
		t.Fatalf("read frame: %v", err)
	}
	var f api.ServerFrame
	if err := json.Unmarshal(data, &f); err != nil {
		t.Fatalf("frame %s: %v", data, err)
	}
	return f
}

// readReply reads frames until a done or error frame and returns them all.
func readReply(t *testing.T, c *websocket.Conn) []api.ServerFrame {
	t.Helper()
	var out []api.ServerFrame
	for {
		f := readFrame(t, c)
		out = append(out, f)
		if f.Type == api.FrameDone || f.Type == api.FrameError {
			return out
		}
	}
}

func frameTypes(fs []api.ServerFrame) string {
	var b strings.Builder
	for i, f := range fs {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(f.Type)
	}
	return b.String()
}

func TestWebAuthAndLimits(t *testing.T) {
	w := StartWeb(t, WithEnv("REVERIE_WEB__MAX_BODY_BYTES=4096"))

	resp, err := http.Get(w.Base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), `"ok"`) {
		t.Fatalf("/healthz without a token: %d %s", resp.StatusCode, body)
	}

	for _, auth := range []string{"", "Bearer wrong-token", "Basic " + w.Token, "Bearer " + w.Token + "x", "bearer"} {
		t.Run("refused "+auth, func(t *testing.T) {
			code, body := w.DoAuth(t, "GET", "/threads", nil, auth)
			if code != http.StatusUnauthorized || string(body) != "{\"error\":\"unauthorized\"}\n" {
				t.Fatalf("%d %q", code, body)
			}
		})
	}

	// Cookie sign-in for the page.
	// A sign-in that no browser vouches for (no Origin, no Sec-Fetch-Site)
	// is refused before the token is looked at; a browser's with a wrong
	// token gets 401.
	code, _ := w.DoAuth(t, "POST", "/login", map[string]string{"token": w.Token}, "")
	if code != http.StatusForbidden {
		t.Fatalf("login without Origin: %d", code)
	}
	req, _ := http.NewRequest("POST", w.Base+"/api/v1/login", strings.NewReader(`{"token":"nope"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Sec-Fetch-Site", "same-origin")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("login with a wrong token: %d", resp.StatusCode)
	}
	req, _ = http.NewRequest("POST", w.Base+"/api/v1/login", strings.NewReader(`{"token":"`+w.Token+`"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", w.Base) // a browser's sign-in says where it comes from
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	cookies := resp.Cookies()
	if resp.StatusCode != http.StatusNoContent || len(cookies) != 1 || !cookies[0].HttpOnly ||
		cookies[0].SameSite != http.SameSiteStrictMode || strings.Contains(cookies[0].Value, w.Token) {
		t.Fatalf("login: %d %+v", resp.StatusCode, cookies)
	}
	withCookie := func(method, path, origin string, body string) *http.Response {
		req, _ := http.NewRequest(method, w.Base+"/api/v1"+path, strings.NewReader(body))
		req.AddCookie(cookies[0])
		if body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		if origin != "" {
			req.Header.Set("Origin", origin)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp
	}
	if r := withCookie("GET", "/threads", "", ""); r.StatusCode != 200 {
		t.Fatalf("GET with the cookie: %d", r.StatusCode)
	}
	if r := withCookie("POST", "/pulse", "http://evil.example", `{"text":"x"}`); r.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin POST with the cookie: %d", r.StatusCode)
	}
	if r := withCookie("POST", "/pulse", w.Base, `{"text":"same origin"}`); r.StatusCode != http.StatusCreated {
		t.Fatalf("same-origin POST with the cookie: %d", r.StatusCode)
	}
	if r := withCookie("GET", "/threads", "http://evil.example", ""); r.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("CORS header sent: %q", r.Header.Get("Access-Control-Allow-Origin"))
	}
	// A browser page elsewhere cannot open the WebSocket with the cookie.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, hresp, err := websocket.Dial(ctx, wsURL(w, ""), &websocket.DialOptions{HTTPHeader: http.Header{
		"Cookie": {cookies[0].Name + "=" + cookies[0].Value}, "Origin": {"http://evil.example"}}})
	if err == nil || hresp == nil || hresp.StatusCode != http.StatusForbidden {
		t.Fatalf("cross-origin WebSocket: %v %v", err, hresp)
	}

	// Oversized bodies, with and without a Content-Length.
	big := map[string]string{"text": strings.Repeat("x", 5000)}
	if code, body := w.Do(t, "POST", "/threads/web:big/messages", big); code != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized body: %d %s", code, body)
	}
	data, _ := json.Marshal(big)
	req, _ = http.NewRequest("POST", w.Base+"/api/v1/memories", io.MultiReader(bytes.NewReader(data)))
	req.Header.Set("Authorization", "Bearer "+w.Token)
	req.Header.Set("Content-Type", "application/json")
	req.ContentLength = -1 // chunked
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("oversized chunked body: %d", resp.StatusCode)
	}
	// Nothing was stored for the refused message.
	var msgs api.MessageList
	w.JSON(t, "GET", "/threads/web:big/messages", nil, 200, &msgs)
	if len(msgs.Messages) != 0 {
		t.Fatalf("refused message stored: %+v", msgs)
	}

	for _, tc := range []struct {
		name, method, path string
		body               any
		want               int
	}{
		{"malformed JSON", "POST", "/threads/web:a/messages", []byte(`{"text":`), 400},
		{"unknown field", "POST", "/threads/web:a/messages", []byte(`{"txt":"hi"}`), 400},
		{"empty text", "POST", "/threads/web:a/messages", map[string]string{"text": "  "}, 400},
		{"bad thread", "POST", "/threads/%0Abad/messages", map[string]string{"text": "hi"}, 400},
		{"unknown route", "GET", "/nothing-here", nil, 404},
		{"bad memory id", "GET", "/memories/abc", nil, 400},
		{"unknown memory", "GET", "/memories/999999", nil, 404},
		{"bad limit", "GET", "/threads?limit=-3", nil, 400},
		{"bad memory kind", "POST", "/memories", map[string]string{"text": "x", "kind": "gossip"}, 400},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, body := w.Do(t, tc.method, tc.path, tc.body)
			var e api.ErrorBody
			if code != tc.want || json.Unmarshal(body, &e) != nil || e.Error == "" {
				t.Fatalf("%d %s, want %d with an error message", code, body, tc.want)
			}
		})
	}
}

func TestWebPostMessageAndCommands(t *testing.T) {
	w := StartWeb(t)
	w.Model.Handle(scriptedAssistant)

	var r api.Reply
	w.JSON(t, "POST", "/threads/web:p1/messages", map[string]string{"text": "please write a note"}, 200, &r)
	if r.Reply != Greeting+"Saved it to notes/today.txt." || r.Thread != "web:p1" || r.SeedReply != "" {
		t.Fatalf("reply %+v", r)
	}
	if len(r.ToolCalls) != 1 || r.ToolCalls[0].Name != "write_file" || r.ToolCalls[0].IsError ||
		!strings.Contains(string(r.ToolCalls[0].Arguments), `"notes/today.txt"`) {
		t.Fatalf("tool calls %+v", r.ToolCalls)
	}
	if r.Usage.InputTokens != 90 || r.Usage.OutputTokens != 20 {
		t.Fatalf("usage %+v", r.Usage)
	}

	w.JSON(t, "POST", "/threads/web:p1/messages", map[string]string{"text": "/status"}, 200, &r)
	if !strings.Contains(r.Reply, "Reverie status") || !strings.Contains(r.Reply, "Conversations:") {
		t.Fatalf("/status: %q", r.Reply)
	}
	w.JSON(t, "POST", "/threads/web:p1/messages", map[string]string{"text": "/debug"}, 200, &r)
	if !strings.Contains(r.Reply, w.Base+"/#debug") {
		t.Fatalf("/debug: %q, want the panel at %s", r.Reply, w.Base)
	}

	var threads api.ThreadList
	w.JSON(t, "GET", "/threads", nil, 200, &threads)
	if len(threads.Threads) != 1 || threads.Threads[0].ID != "web:p1" || threads.Threads[0].Channel != "web" {
		t.Fatalf("threads %+v", threads)
	}
	var msgs api.MessageList
	w.JSON(t, "GET", "/threads/web%3Ap1/messages", nil, 200, &msgs)
	var roles []string
	for _, m := range msgs.Messages {
		roles = append(roles, m.Role)
	}
	// seed event, user, tool call, tool result, reply (greeting included).
	if got := strings.Join(roles, ","); got != "user,user,assistant,tool,assistant" {
		t.Fatalf("roles %s", got)
	}
	if !msgs.Messages[0].SystemEvent || msgs.Messages[0].Source != "seed" || msgs.Messages[1].SystemEvent {
		t.Fatalf("system event marks: %+v", msgs.Messages[:2])
	}
	if c := msgs.Messages[2].ToolCalls; len(c) != 1 || c[0].Name != "write_file" {
		t.Fatalf("tool call message %+v", msgs.Messages[2])
	}
	if res := msgs.Messages[3].ToolResults; len(res) != 1 || res[0].CallID != "call_1" {
		t.Fatalf("tool result message %+v", msgs.Messages[3])
	}
	// Paging after an id.
	var later api.MessageList
	w.JSON(t, "GET", fmt.Sprintf("/threads/web:p1/messages?after_id=%d&limit=1", msgs.Messages[3].ID), nil, 200, &later)
	if len(later.Messages) != 1 || later.Messages[0].ID != msgs.Messages[4].ID {
		t.Fatalf("after_id page %+v", later)
	}
}

func TestWebSocketStreamsRepliesAndToolCalls(t *testing.T) {
	w := StartWeb(t)
	w.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		r := scriptedAssistant(req)
		r.Chunks = 4
		return r
	})
	c := dialWS(t, w, "")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:s1", Text: "write a note please"})

	// One reply: the new conversation is greeted in it.
	reply := readReply(t, c)
	var text strings.Builder
	var calls, results int
	for _, f := range reply {
		if f.Thread != "web:s1" {
			t.Fatalf("frame for thread %q", f.Thread)
		}
		switch f.Type {
		case api.FrameDelta:
			text.WriteString(f.Text)
		case api.FrameToolCall:
			calls++
			if f.Name != "write_file" || f.CallID == "" || !strings.Contains(string(f.Arguments), "buy milk") {
				t.Fatalf("tool_call frame %+v", f)
			}
		case api.FrameToolResult:
			results++
			if f.Name != "write_file" || f.Result == nil || f.IsError == nil || *f.IsError {
				t.Fatalf("tool_result frame %+v", f)
			}
		}
	}
	last := reply[len(reply)-1]
	if calls != 1 || results != 1 || last.Type != api.FrameDone || last.Text != Greeting+"Saved it to notes/today.txt." || text.String() != last.Text {
		t.Fatalf("reply frames %s; deltas %q; done %+v", frameTypes(reply), text.String(), last)
	}
	// The order: the tool ran before the final text was written.
	if got := frameTypes(reply); !strings.HasPrefix(got, "tool_call tool_result delta") {
		t.Fatalf("reply frame order: %s", got)
	}

	// A slash command's answer is a done frame without deltas.
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "s1", Text: "/help"})
	if f := readFrame(t, c); f.Type != api.FrameDone || !strings.Contains(f.Text, "/debug") {
		t.Fatalf("/help frame %+v", f)
	}
}

func TestWebSocketMalformedFramesKeepTheConnection(t *testing.T) {
	w := StartWeb(t)
	c := dialWS(t, w, "")
	for _, tc := range []struct {
		name  string
		frame any
		want  string
	}{
		{"not JSON", "hello?", "malformed frame"},
		{"truncated JSON", `{"type":"message",`, "malformed frame"},
		{"no type", `{"text":"hi"}`, `"type" is missing`},
		{"unknown type", `{"type":"shout"}`, "unknown frame type"},
		{"other channel's thread", api.ClientFrame{Type: api.FrameMessage, Thread: "cli:alice", Text: "hi", ID: "m1"}, "not a web thread"},
		{"bad session", api.ClientFrame{Type: api.FrameMessage, Thread: "web:a b", Text: "hi"}, "a session is"},
		{"empty text", api.ClientFrame{Type: api.FrameMessage, Thread: "web:x", Text: " "}, "text is empty"},
		{"subscribe without thread", api.ClientFrame{Type: api.FrameSubscribe}, "a session is"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			writeFrame(t, c, tc.frame)
			f := readFrame(t, c)
			if f.Type != api.FrameError || !strings.Contains(f.Error, tc.want) {
				t.Fatalf("frame %+v, want an error with %q", f, tc.want)
			}
			if cf, ok := tc.frame.(api.ClientFrame); ok && cf.ID != "" && f.ID != cf.ID {
				t.Fatalf("error frame id %q, want %q", f.ID, cf.ID)
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := c.Write(ctx, websocket.MessageBinary, []byte{1, 2, 3}); err != nil {
		t.Fatal(err)
	}
	if f := readFrame(t, c); f.Type != api.FrameError || !strings.Contains(f.Error, "binary") {
		t.Fatalf("binary frame answer %+v", f)
	}
	// Still usable.
	writeFrame(t, c, api.ClientFrame{Type: api.FramePing})
	if f := readFrame(t, c); f.Type != api.FramePong {
		t.Fatalf("ping answer %+v", f)
	}
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:m", Text: "hello"})
	if got := readReply(t, c); got[len(got)-1].Type != api.FrameDone {
		t.Fatalf("message after malformed frames: %s", frameTypes(got))
	}
}

func TestWebSocketDisconnectMidStreamLosesNothing(t *testing.T) {
	w := StartWeb(t)
	gate := make(chan struct{})
	w.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case strings.HasPrefix(lastUser(req), "[SYSTEM EVENT]"):
			return llmtest.ServerReply{Text: "Hi."}
		case last.Role == "tool":
			return llmtest.ServerReply{Text: "The note is written; you left before I finished.", Gate: gate}
		default:
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_9", Name: "write_file",
				Arguments: json.RawMessage(`{"path":"n.txt","content":"x"}`)}}}
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	replied := w.App.Bus.Watch(ctx, "message.replied", 4)

	c := dialWS(t, w, "?thread=web:gone")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:gone", Text: "write it"})
	for f := readFrame(t, c); f.Type != api.FrameToolResult; f = readFrame(t, c) {
	}
	// The client goes away while the model is still writing the reply.
	_ = c.CloseNow()
	close(gate)
	select {
	case ev := <-replied:
		if !strings.Contains(string(ev.Payload), `"web:gone"`) || strings.Contains(string(ev.Payload), `"failed"`) {
			t.Fatalf("replied event %s", ev.Payload)
		}
	case <-time.After(patience):
		t.Fatal("the turn did not complete after the client left")
	}
	// Reconnecting shows it in the history.
	c2 := dialWS(t, w, "?thread=web:gone")
	var msgs api.MessageList
	w.JSON(t, "GET", "/threads/web:gone/messages", nil, 200, &msgs)
	last := msgs.Messages[len(msgs.Messages)-1]
	if last.Role != "assistant" || last.Text != "The note is written; you left before I finished." {
		t.Fatalf("last message %+v", last)
	}
	writeFrame(t, c2, api.ClientFrame{Type: api.FramePing})
	if f := readFrame(t, c2); f.Type != api.FramePong {
		t.Fatalf("new connection: %+v", f)
	}
}

// sseEvent is one event read from the stream.
type sseEvent struct {
	id   string
	data api.Event
}

func openSSE(t *testing.T, w *WebHarness, query, lastID string) (<-chan sseEvent, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", w.Base+"/api/v1/events"+query, nil)
	req.Header.Set("Authorization", "Bearer "+w.Token)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		cancel()
		t.Fatalf("events: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	out := make(chan sseEvent, 64)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(out)
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				ev.id = strings.TrimPrefix(line, "id: ")
			case strings.HasPrefix(line, "data: "):
				if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &ev.data); err != nil {
					t.Errorf("event data %q: %v", line, err)
				}
			case line == "" && ev.id != "":
				out <- ev
				ev = sseEvent{}
			}
		}
	})
	return out, func() { cancel(); wg.Wait() }
}

func nextEvent(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	select {
	case ev, ok := <-ch:
		if !ok {
			t.Fatal("event stream ended")
		}
		return ev
	case <-time.After(patience):
		t.Fatalf("no event within %v", patience)
	}
	return sseEvent{}
}

func TestWebEventStreamFiltersAndResumes(t *testing.T) {
	w := StartWeb(t)
	events, stop := openSSE(t, w, "?topic=message.", "")
	var r api.Reply
	w.JSON(t, "POST", "/threads/web:e1/messages", map[string]string{"text": "hello"}, 200, &r)

	first := nextEvent(t, events)
	second := nextEvent(t, events)
	stop()
	if first.data.Topic != "message.received" || second.data.Topic != "message.replied" ||
		!strings.Contains(string(first.data.Payload), `"web:e1"`) || first.id != fmt.Sprint(first.data.ID) {
		t.Fatalf("events %+v, %+v", first, second)
	}
	// turn.completed was published in between and filtered out.
	var recent api.EventList
	w.JSON(t, "GET", "/events/recent?topic=turn.", nil, 200, &recent)
	if len(recent.Events) == 0 {
		t.Fatal("no turn events stored")
	}

	// Resuming after the first event replays the second, then goes live.
	events, stop = openSSE(t, w, "?topic=message.", first.id)
	defer stop()
	if ev := nextEvent(t, events); ev.data.ID != second.data.ID {
		t.Fatalf("replayed %+v, want event %d", ev, second.data.ID)
	}
	w.JSON(t, "POST", "/threads/web:e1/messages", map[string]string{"text": "again"}, 200, &r)
	if ev := nextEvent(t, events); ev.data.Topic != "message.received" || ev.data.ID <= second.data.ID {
		t.Fatalf("live after replay: %+v", ev)
	}

	var last api.EventList
	w.JSON(t, "GET", "/events/recent?topic=message.&last=2", nil, 200, &last)
	if len(last.Events) != 2 || last.Events[0].ID >= last.Events[1].ID || last.Events[1].Topic != "message.replied" {
		t.Fatalf("last 2: %+v", last)
	}
	if code, _ := w.Do(t, "GET", "/events?topic=bad%20topic", nil); code != 400 {
		t.Fatalf("bad topic filter: %d", code)
	}
}

func TestWebIdleClientsDoNotHurtAChattingOne(t *testing.T) {
	if testing.Short() {
		t.Skip("opens 1,000 connections")
	}
	const idle = 1000
	w := StartWeb(t, WithEnv("REVERIE_WEB__RATE_BURST=5000"))
	conns := make([]*websocket.Conn, 0, idle)
	for i := range idle {
		conns = append(conns, dialWS(t, w, fmt.Sprintf("?thread=web:idle%d", i)))
	}
	c := dialWS(t, w, "")
	for round := range 3 {
		writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:busy", Text: fmt.Sprintf("message %d", round)})
		if got := readReply(t, c); got[len(got)-1].Type != api.FrameDone {
			t.Fatalf("round %d: %s", round, frameTypes(got))
		}
	}
	// The idle ones are all still there and usable. Each one's pong also
	// shows the server has registered it: it does so just after answering
	// the upgrade, before it reads the connection.
	for i, conn := range conns {
		writeFrame(t, conn, api.ClientFrame{Type: api.FramePing})
		if f := readFrame(t, conn); f.Type != api.FramePong {
			t.Fatalf("idle client %d: %+v", i, f)
		}
	}
	if n := w.Web.Connections(); n != idle+1 {
		t.Fatalf("%d connections open, want %d", n, idle+1)
	}
}

func TestWebStateEndpoints(t *testing.T) {
	w := StartWeb(t)
	var r api.Reply
	w.JSON(t, "POST", "/threads/web:st/messages", map[string]string{"text": "hello"}, 200, &r)

	var info api.AgentInfo
	w.JSON(t, "GET", "/info", nil, 200, &info)
	if !info.ModelsConfigured || info.Auth != "token" || !info.Features["memories"] || !info.Features["chat"] ||
		info.PanelURL != w.Base+"/#debug" || len(info.Commands) < 8 {
		t.Fatalf("info %+v", info)
	}

	t.Run("memories", func(t *testing.T) {
		var m api.Memory
		w.JSON(t, "POST", "/memories", map[string]string{"text": "Anna is my sister and lives in Lyon", "kind": "fact"}, 201, &m)
		if m.ID == 0 || m.Source != "user_explicit" {
			t.Fatalf("added %+v", m)
		}
		var list api.MemoryList
		w.JSON(t, "GET", "/memories?q=where+does+anna+live", nil, 200, &list)
		if len(list.Memories) == 0 || list.Memories[0].ID != m.ID || list.Memories[0].Score == nil {
			t.Fatalf("search %+v", list)
		}
		lyon := m.ID
		w.JSON(t, "PUT", fmt.Sprintf("/memories/%d", m.ID), map[string]string{"text": "Anna is my sister and lives in Paris", "kind": "fact"}, 200, &m)
		if !strings.Contains(m.Text, "Paris") || m.ID == lyon || m.ValidTo != nil {
			t.Fatalf("updated %+v", m)
		}
		// The old text is closed, not lost, and names its successor.
		var old api.Memory
		w.JSON(t, "GET", fmt.Sprintf("/memories/%d", lyon), nil, 200, &old)
		if !strings.Contains(old.Text, "Lyon") || old.ValidTo == nil || old.SupersededBy != m.ID {
			t.Fatalf("superseded %+v", old)
		}
		if code, body := w.Do(t, "PUT", fmt.Sprintf("/memories/%d", lyon), map[string]string{"text": "Anna lives in Nice", "kind": "fact"}); code != 409 {
			t.Fatalf("edit of a superseded memory: %d %s", code, body)
		}
		w.JSON(t, "GET", "/memories?kind=fact&include_closed=true", nil, 200, &list)
		if len(list.Memories) != 2 {
			t.Fatalf("list with closed %+v", list)
		}
		w.JSON(t, "GET", "/memories?kind=fact", nil, 200, &list)
		if len(list.Memories) != 1 {
			t.Fatalf("list %+v", list)
		}
		if code, body := w.Do(t, "POST", "/memories", map[string]string{"text": "my api key is sk-proj-abcdefghijklmnopqrstuvwxyz0123456789", "kind": "fact"}); code != 400 {
			t.Fatalf("secret memory: %d %s", code, body)
		}
		w.JSON(t, "DELETE", fmt.Sprintf("/memories/%d", m.ID), nil, 204, nil)
		w.JSON(t, "GET", fmt.Sprintf("/memories/%d", m.ID), nil, 404, nil)
	})

	t.Run("pulse", func(t *testing.T) {
		var it api.PulseItem
		w.JSON(t, "POST", "/pulse", map[string]any{"text": "Plan the Lyon trip", "priority": 2}, 201, &it)
		w.JSON(t, "PUT", fmt.Sprintf("/pulse/%d", it.ID), map[string]any{"status": "completed"}, 200, &it)
		if it.Status != "completed" || it.CompletedAt == nil {
			t.Fatalf("completed %+v", it)
		}
		var list api.PulseList
		w.JSON(t, "GET", "/pulse", nil, 200, &list)
		if len(list.Items) != 0 {
			t.Fatalf("active items %+v", list)
		}
		w.JSON(t, "GET", "/pulse?status=all", nil, 200, &list)
		if len(list.Items) != 1 {
			t.Fatalf("all items %+v", list)
		}
		if code, _ := w.Do(t, "PUT", fmt.Sprintf("/pulse/%d", it.ID), map[string]any{"priority": 42}); code != 400 {
			t.Fatalf("bad priority: %d", code)
		}
		w.JSON(t, "DELETE", fmt.Sprintf("/pulse/%d", it.ID), nil, 204, nil)
	})

	t.Run("skills", func(t *testing.T) {
		var sk api.Skill
		w.JSON(t, "PUT", "/skills/book-train", map[string]string{"content": "How to book a train\n1. Open the site."}, 200, &sk)
		if sk.Summary != "How to book a train" || sk.Chars == 0 {
			t.Fatalf("saved %+v", sk)
		}
		var list api.SkillList
		w.JSON(t, "GET", "/skills", nil, 200, &list)
		found := false
		for _, s := range list.Skills {
			found = found || s.Name == "book-train"
			if s.Content != "" {
				t.Fatalf("list carries content: %+v", s)
			}
		}
		if !found {
			t.Fatalf("skills %+v", list)
		}
		w.JSON(t, "GET", "/skills/book-train", nil, 200, &sk)
		if !strings.Contains(sk.Content, "Open the site") {
			t.Fatalf("get %+v", sk)
		}
		w.JSON(t, "PUT", "/skills/Bad..Name", map[string]string{"content": "x"}, 400, nil)
		w.JSON(t, "DELETE", "/skills/book-train", nil, 204, nil)
		w.JSON(t, "GET", "/skills/book-train", nil, 404, nil)
	})

	t.Run("world", func(t *testing.T) {
		var doc map[string]any
		w.JSON(t, "GET", "/world", nil, 200, &doc)
		doc["project"] = "Lyon trip"
		w.JSON(t, "PUT", "/world", doc, 200, &doc)
		if doc["project"] != "Lyon trip" {
			t.Fatalf("saved %+v", doc)
		}
		doc["goals"] = []map[string]string{{"text": "", "status": "active"}}
		if code, body := w.Do(t, "PUT", "/world", doc); code != 400 {
			t.Fatalf("invalid world state: %d %s", code, body)
		}
		w.JSON(t, "GET", "/world", nil, 200, &doc)
		if doc["project"] != "Lyon trip" {
			t.Fatalf("after a refused edit %+v", doc)
		}
		// The editor is held to the bounds of the model's ops: an 800 KB
		// rule would go whole into every prompt.
		doc["rules"] = []string{strings.Repeat("z", 800_000)}
		if code, body := w.Do(t, "PUT", "/world", doc); code != 400 || !strings.Contains(string(body), "rules[0]") {
			t.Fatalf("an 800 KB rule: %d %.200s", code, body)
		}
		doc["rules"] = []string{}
		topics := make([]string, 31)
		for i := range topics {
			topics[i] = fmt.Sprint("topic ", i)
		}
		doc["topics"] = topics
		if code, body := w.Do(t, "PUT", "/world", doc); code != 400 || !strings.Contains(string(body), "topics[30]") {
			t.Fatalf("31 topics: %d %s", code, body)
		}
	})

	t.Run("debug views", func(t *testing.T) {
		var il api.InteractionList
		w.JSON(t, "GET", "/interactions?action=inference", nil, 200, &il)
		if len(il.Interactions) == 0 || len(il.Actions) == 0 {
			t.Fatalf("interactions %+v", il)
		}
		for _, e := range il.Interactions {
			if e.Action != "inference" {
				t.Fatalf("filter let %q through", e.Action)
			}
		}
		var p api.SystemPrompt
		w.JSON(t, "GET", "/prompt?thread=web:st", nil, 200, &p)
		if p.Thread != "web:st" || p.Chars == 0 || p.Text == "" {
			t.Fatalf("prompt %+v", p)
		}
		w.JSON(t, "GET", "/prompt?thread=web:never", nil, 404, nil)
		var u api.UsageList
		w.JSON(t, "GET", "/usage", nil, 200, &u)
		if len(u.Usage) == 0 || u.Usage[0].Role == "" || u.Usage[0].Calls == 0 {
			t.Fatalf("usage %+v", u)
		}
		var st api.SetupStatus
		w.JSON(t, "GET", "/setup", nil, 200, &st)
		if !st.Configured {
			t.Fatalf("setup %+v", st)
		}
	})
}

func TestWebSetupTestsThenSavesTheModel(t *testing.T) {
	w := StartWeb(t)
	var st api.SetupStatus
	w.JSON(t, "GET", "/setup", nil, 200, &st)
	if len(st.Forms) == 0 || st.Forms[0].ID != "models" || len(st.Forms[0].Fields) != 4 {
		t.Fatalf("forms %+v", st)
	}
	cfgPath := filepath.Join(w.DataDir, "config.yaml")
	before, _ := os.ReadFile(cfgPath)

	// A server that does not answer: nothing is saved.
	code, body := w.Do(t, "POST", "/setup/models", api.SetupRequest{Values: map[string]string{
		"provider": "openai", "base_url": "http://127.0.0.1:1/v1", "api_key": "sk-never-shown-123", "model": "m"}})
	if code != http.StatusUnprocessableEntity || strings.Contains(body2s(body), "sk-never-shown") {
		t.Fatalf("unreachable model: %d %s", code, body)
	}
	// Said in words: what happened and what to do, no Go error chain.
	if msg := body2s(body); !strings.Contains(msg, "Could not reach the model server at 127.0.0.1:1") || !strings.Contains(msg, "base URL") ||
		strings.Contains(msg, "dial tcp") || strings.Contains(msg, "setup test failed") || strings.Contains(msg, "`") {
		t.Errorf("unreachable model's message: %s", msg)
	}
	if after, _ := os.ReadFile(cfgPath); !bytes.Equal(before, after) {
		t.Fatal("config.yaml changed after a failed test")
	}
	if _, err := os.Stat(filepath.Join(w.DataDir, "secrets", "model_api_key")); err == nil {
		t.Fatal("key stored after a failed test")
	}
	for _, tc := range []struct {
		name   string
		values map[string]string
	}{
		{"no model", map[string]string{"provider": "openai"}},
		{"unknown provider", map[string]string{"provider": "skynet", "model": "m"}},
		{"bad url", map[string]string{"provider": "openai", "base_url": "ftp://x", "model": "m"}},
		{"quote in model", map[string]string{"provider": "openai", "model": `m"\n`}},
	} {
		if code, body := w.Do(t, "POST", "/setup/models", api.SetupRequest{Values: tc.values}); code != 400 {
			t.Errorf("%s: %d %s", tc.name, code, body)
		}
	}

	// The fake model server answers: saved, key kept private, restart asked.
	var res api.SetupResult
	w.JSON(t, "POST", "/setup/models", api.SetupRequest{Values: map[string]string{
		"provider": "openai", "base_url": w.Model.BaseURL(), "api_key": "sk-setup-key-456", "model": "gpt-setup"}}, 200, &res)
	if !res.OK || !strings.Contains(res.Message, "gpt-setup") || strings.Contains(res.Message, "`") {
		t.Fatalf("result %+v", res)
	}
	cfg, _ := os.ReadFile(cfgPath)
	if !strings.Contains(string(cfg), "main: [\"setup/gpt-setup\"]") || strings.Contains(string(cfg), "sk-setup-key") ||
		!strings.Contains(string(cfg), "api_key: {file: secrets/model_api_key}") {
		t.Fatalf("config.yaml:\n%s", cfg)
	}
	fi, err := os.Stat(filepath.Join(w.DataDir, "secrets", "model_api_key"))
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(w.DataDir, "restart.request")); err != nil {
		t.Fatalf("no restart requested: %v", err)
	}
	// The saved file loads: a second save is refused instead of duplicating the section.
	if code, _ := w.Do(t, "POST", "/setup/models", api.SetupRequest{Values: map[string]string{
		"provider": "openai", "base_url": w.Model.BaseURL(), "model": "other"}}); code != http.StatusConflict {
		t.Fatalf("second save: %d", code)
	}
	loaded, err := config.Load(cfgPath, nil, []string{"web"})
	if err == nil {
		loaded.SetDataDir(w.DataDir)
		err = loaded.Validate()
	}
	if err != nil {
		t.Fatalf("the saved config.yaml does not load: %v\n%s", err, cfg)
	}
	if b := loaded.Models.Backends["setup"]; b.Kind != "openai" || b.BaseURL != w.Model.BaseURL() {
		t.Fatalf("loaded backend %+v", b)
	}
	if key, err := loaded.Models.Backends["setup"].APIKey.Resolve(); err != nil || key != "sk-setup-key-456" {
		t.Fatalf("api key: %v", err)
	}

	// After the restart the form shows what was saved (the base URL was
	// empty before), never the key.
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	w2 := StartWeb(t, WithDataDir(w.DataDir))
	w2.JSON(t, "GET", "/setup", nil, 200, &st)
	saved := map[string]string{}
	for _, f := range st.Forms[0].Fields {
		saved[f.Key] = f.Default
	}
	if saved["provider"] != "openai" || saved["base_url"] != w.Model.BaseURL() || saved["model"] != "gpt-setup" || saved["api_key"] != "" {
		t.Errorf("the models form after saving shows %v", saved)
	}
}

func body2s(b []byte) string { return string(b) }

func TestWebWithoutAuthOnAPublicAddressRefusesToStart(t *testing.T) {
	info, _ := extension.Lookup("web")
	dir := filepath.Join(t.TempDir(), "data")
	_, err := app.New(context.Background(), app.Options{DataDir: dir, Console: io.Discard,
		Registry: []extension.Info{info},
		Env:      []string{"REVERIE_WEB__LISTEN=0.0.0.0:0", "REVERIE_WEB__AUTH=none", "REVERIE_LOG__FILE=false"}})
	if !errors.Is(err, extension.ErrInvalidConfig) || !strings.Contains(err.Error(), "loopback") {
		t.Fatalf("start: %v, want a configuration error about loopback", err)
	}
}

// A cancel frame stops the turn the thread is processing: the model call
// is abandoned and the client gets the error frame that ends the reply.
func TestWebSocketCancelStopsTheTurn(t *testing.T) {
	w := StartWeb(t)
	gate := make(chan struct{})
	t.Cleanup(func() { close(gate) })
	asked := make(chan struct{}, 1)
	w.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		if strings.HasPrefix(lastUser(req), "[SYSTEM EVENT]") {
			return llmtest.ServerReply{Text: "Hi."}
		}
		asked <- struct{}{}
		return llmtest.ServerReply{Text: "never shown", Gate: gate}
	})
	c := dialWS(t, w, "?thread=web:stop")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:stop", Text: "think for a long time"})
	select {
	case <-asked:
	case <-time.After(patience):
		t.Fatal("the model was not asked")
	}
	writeFrame(t, c, api.ClientFrame{Type: api.FrameCancel, Thread: "web:stop"})
	// A stop is not an error: the reply ends with a done frame marked
	// stopped, holding what was written (nothing here).
	for {
		f := readFrame(t, c)
		if f.Type == api.FrameError {
			t.Fatalf("the stop was reported as an error: %+v", f)
		}
		if f.Type == api.FrameDone {
			if f.Thread != "web:stop" || f.Status != "stopped" || strings.Contains(f.Text, "never shown") {
				t.Fatalf("done frame %+v", f)
			}
			break
		}
	}
	// The connection stays usable, and cancelling an idle thread is quiet.
	writeFrame(t, c, api.ClientFrame{Type: api.FrameCancel, Thread: "web:stop"})
	writeFrame(t, c, api.ClientFrame{Type: api.FramePing})
	if f := readFrame(t, c); f.Type != api.FramePong {
		t.Fatalf("after cancel: %+v", f)
	}
}
