package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/coder/websocket"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// WebSocket limits.
const (
	// maxQueuedFrames is how many frames may wait for a slow client before
	// its connection is closed (it catches up from the history).
	maxQueuedFrames = 1024
	// maxSubscriptions bounds the threads one connection follows.
	maxSubscriptions = 64
	// wsMessageRate and wsMessageBurst bound the messages one connection
	// sends.
	wsMessageRate  = 5.0
	wsMessageBurst = 20.0
	// pingInterval is how often idle connections are pinged; a ping not
	// answered within pingTimeout closes the connection.
	pingInterval = 30 * time.Second
	pingTimeout  = 30 * time.Second
	// frameWriteTimeout bounds writing one frame.
	frameWriteTimeout = 10 * time.Second
	// receiveTimeout bounds handing a message to the router.
	receiveTimeout = 10 * time.Second
	// closeTimeout bounds waiting for a client's answer to a close frame.
	closeTimeout = time.Second
)

// ChannelName is the channel this extension is: threads "web:<session>".
const ChannelName = "web"

var sessionPattern = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`) })

// webThread turns a frame's thread ("web:abc" or "abc") into a web thread
// id.
func webThread(s string) (chat.ThreadID, error) {
	session, ok := strings.CutPrefix(s, ChannelName+":")
	if !ok && strings.Contains(s, ":") {
		return "", fmt.Errorf("thread %q is not a web thread (web:<session>)", s)
	}
	if !sessionPattern().MatchString(session) {
		return "", fmt.Errorf("thread %q: a session is 1 to 64 letters, digits, - or _", s)
	}
	return chat.NewThreadID(ChannelName, session), nil
}

// hub tracks WebSocket connections and the threads they follow. Safe for
// concurrent use.
type hub struct {
	mu       sync.RWMutex
	closed   bool
	conns    map[*wsConn]struct{}
	byThread map[chat.ThreadID]map[*wsConn]struct{}
	wg       sync.WaitGroup // one per registered connection
}

func newHub() *hub {
	return &hub{conns: map[*wsConn]struct{}{}, byThread: map[chat.ThreadID]map[*wsConn]struct{}{}}
}

// add registers c following threads (at once, so that Connections counts
// only connections that already follow their threads); false once the hub
// is closed.
func (h *hub) add(c *wsConn, threads []chat.ThreadID) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.conns[c] = struct{}{}
	h.wg.Add(1)
	for _, t := range threads {
		h.subscribeLocked(c, t)
	}
	return true
}

// remove unregisters c and its subscriptions.
func (h *hub) remove(c *wsConn) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.conns[c]; !ok {
		return
	}
	delete(h.conns, c)
	for t := range c.threads {
		h.unsubscribeLocked(c, t)
	}
	h.wg.Done()
}

func (h *hub) subscribe(c *wsConn, t chat.ThreadID) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := c.threads[t]; ok {
		return nil
	}
	if len(c.threads) >= maxSubscriptions {
		return fmt.Errorf("a connection follows at most %d threads", maxSubscriptions)
	}
	h.subscribeLocked(c, t)
	return nil
}

func (h *hub) subscribeLocked(c *wsConn, t chat.ThreadID) {
	c.threads[t] = struct{}{}
	subs := h.byThread[t]
	if subs == nil {
		subs = map[*wsConn]struct{}{}
		h.byThread[t] = subs
	}
	subs[c] = struct{}{}
}

func (h *hub) unsubscribe(c *wsConn, t chat.ThreadID) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.unsubscribeLocked(c, t)
}

func (h *hub) unsubscribeLocked(c *wsConn, t chat.ThreadID) {
	delete(c.threads, t)
	if subs := h.byThread[t]; subs != nil {
		delete(subs, c)
		if len(subs) == 0 {
			delete(h.byThread, t)
		}
	}
}

// toThread sends f to every connection following t and reports how many.
// The frame is encoded once, and only when someone follows t.
func (h *hub) toThread(t chat.ThreadID, f *api.ServerFrame) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	subs := h.byThread[t]
	if len(subs) == 0 {
		return 0
	}
	b := encodeFrame(f)
	for c := range subs {
		c.enqueue(b)
	}
	return len(subs)
}

// broadcast sends f to every connection.
func (h *hub) broadcast(f *api.ServerFrame) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if len(h.conns) == 0 {
		return 0
	}
	b := encodeFrame(f)
	for c := range h.conns {
		c.enqueue(b)
	}
	return len(h.conns)
}

// endSession closes the connections a session opened (after POST
// /logout ended it) and reports how many.
func (h *hub) endSession(sum [32]byte) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := 0
	for c := range h.conns {
		if c.session == sum {
			c.close(websocket.StatusPolicyViolation, "signed out")
			n++
		}
	}
	return n
}

// count is the number of open connections.
func (h *hub) count() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.conns)
}

// close refuses new connections, asks every open one to close with
// StatusGoingAway and waits (bounded by ctx) until their handlers are done.
func (h *hub) close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	for c := range h.conns {
		c.close(websocket.StatusGoingAway, "server shutting down")
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("close WebSocket connections: %w", ctx.Err())
	}
}

func encodeFrame(f *api.ServerFrame) []byte {
	b, err := json.Marshal(f)
	if err != nil {
		// Unreachable: every field marshals (arguments are checked).
		b, _ = json.Marshal(&api.ServerFrame{Type: api.FrameError, Thread: f.Thread, Error: "could not encode a frame"})
	}
	return b
}

// wsConn is one WebSocket connection. The handler goroutine reads. Writing
// happens on a writer goroutine that runs only while frames are queued (an
// idle connection costs one goroutine), and pings on short-lived
// goroutines started by the hub's pinger; the handler waits for both
// before it returns.
type wsConn struct {
	ws *websocket.Conn
	// ctx is the connection's lifetime (not a request's): it ends when the
	// handler returns, and ending it drops the connection.
	ctx     context.Context
	stop    context.CancelFunc         // ends ctx
	threads map[chat.ThreadID]struct{} // guarded by hub.mu
	session [32]byte                   // the session cookie's sum when it authenticated the upgrade
	// withToken: the upgrade carried the token (bearer or session cookie);
	// only such a connection answers approval requests.
	withToken bool
	bucket    bucket         // reader goroutine only
	wg        sync.WaitGroup // writer and pings

	mu      sync.Mutex
	queue   [][]byte
	writing bool // a writer goroutine runs
	pinging bool // a ping is in flight
	done    bool // closing: nothing more is queued
	code    websocket.StatusCode
	reason  string
}

func newWSConn(ctx context.Context, ws *websocket.Conn, stop context.CancelFunc) *wsConn {
	return &wsConn{ws: ws, ctx: ctx, stop: stop, threads: map[chat.ThreadID]struct{}{}}
}

// enqueue queues a frame; a client more than maxQueuedFrames behind is
// disconnected. It never blocks.
func (c *wsConn) enqueue(b []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.done {
		return
	}
	if len(c.queue) >= maxQueuedFrames {
		c.closeLocked(websocket.StatusPolicyViolation, "client too slow: reconnect and read the history")
		return
	}
	c.queue = append(c.queue, b)
	c.kickLocked()
}

// send queues a frame built here.
func (c *wsConn) send(f *api.ServerFrame) { c.enqueue(encodeFrame(f)) }

// close makes the writer close the connection with code and reason (the
// first call wins); queued frames are dropped.
func (c *wsConn) close(code websocket.StatusCode, reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closeLocked(code, reason)
}

func (c *wsConn) closeLocked(code websocket.StatusCode, reason string) {
	if c.done {
		return
	}
	c.done, c.code, c.reason, c.queue = true, code, reason, nil
	c.kickLocked()
}

// kickLocked starts the writer unless it runs.
func (c *wsConn) kickLocked() {
	if c.writing || c.ws == nil {
		return
	}
	c.writing = true
	c.wg.Go(c.write)
}

// write sends queued frames until the queue is empty, or closes the
// connection once it is closing. A write error drops the connection.
func (c *wsConn) write() {
	for {
		c.mu.Lock()
		if c.done {
			// writing stays set: no writer starts after this one.
			code, reason := c.code, c.reason
			c.mu.Unlock()
			c.closeHandshake(code, reason)
			return
		}
		batch := c.queue
		c.queue = nil
		if len(batch) == 0 {
			c.writing = false
			c.mu.Unlock()
			return
		}
		c.mu.Unlock()
		for _, b := range batch {
			wctx, cancel := context.WithTimeout(c.ctx, frameWriteTimeout)
			err := c.ws.Write(wctx, websocket.MessageText, b)
			cancel()
			if err != nil {
				c.mu.Lock()
				c.done = true
				c.mu.Unlock()
				c.stop()
				return
			}
		}
	}
}

// ping checks that the client still answers; one that does not within
// pingTimeout is dropped.
func (c *wsConn) ping() {
	c.mu.Lock()
	if c.done || c.pinging || c.ws == nil {
		c.mu.Unlock()
		return
	}
	c.pinging = true
	c.wg.Go(func() {
		pctx, cancel := context.WithTimeout(c.ctx, pingTimeout)
		err := c.ws.Ping(pctx)
		cancel()
		c.mu.Lock()
		c.pinging = false
		c.mu.Unlock()
		if err != nil {
			c.stop()
		}
	})
	c.mu.Unlock()
}

// closeHandshake sends a close frame and waits at most closeTimeout for the
// client's answer (a client that does not read must not hold up a
// shutdown), then drops the connection.
func (c *wsConn) closeHandshake(code websocket.StatusCode, reason string) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = c.ws.Close(code, reason)
	}()
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		// Ending the reader's context drops the connection (CloseNow does
		// not interrupt a handshake under way).
		c.stop()
		<-done
	}
}

// pingAll pings every connection every pingInterval until ctx ends.
func (h *hub) pingAll(ctx context.Context) {
	t := time.NewTicker(pingInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.mu.RLock()
			for c := range h.conns {
				c.ping()
			}
			h.mu.RUnlock()
		}
	}
}

// serveWS upgrades to a WebSocket and runs the connection.
func (w *Web) serveWS(rw http.ResponseWriter, r *http.Request) {
	var initial []chat.ThreadID
	for _, s := range r.URL.Query()["thread"] {
		t, err := webThread(s)
		if err != nil {
			writeError(rw, http.StatusBadRequest, err.Error())
			return
		}
		initial = append(initial, t)
	}
	if len(initial) > maxSubscriptions {
		writeError(rw, http.StatusBadRequest, fmt.Sprintf("at most %d threads", maxSubscriptions))
		return
	}
	if !w.acquireStream() {
		writeError(rw, http.StatusServiceUnavailable, "too many open connections")
		return
	}
	handedOver := false
	defer func() {
		if !handedOver {
			w.releaseStream()
		}
	}()
	opts := &websocket.AcceptOptions{CompressionMode: websocket.CompressionDisabled}
	if h := publicHost(w.cfg.PublicURL); h != "" {
		// Behind a reverse proxy the page's origin is the public address.
		opts.OriginPatterns = []string{h}
	}
	ws, err := websocket.Accept(rw, r, opts)
	if err != nil {
		// Accept has answered (400, 403 for another origin, …).
		w.log.Debug("WebSocket upgrade refused", "remote", r.RemoteAddr, "err", err)
		return
	}
	ws.SetReadLimit(w.cfg.MaxBodyBytes)
	// The request's context is not used after the upgrade (see
	// websocket.Accept); the connection lives until either side closes.
	ctx, cancel := context.WithCancel(context.Background())
	c := newWSConn(ctx, ws, cancel)
	c.withToken = authOf(r).withToken()
	if authOf(r) == authCookie {
		// Ending the session (POST /logout) closes the connection.
		if ck, err := r.Cookie(SessionCookie); err == nil {
			c.session = sessionSum(ck.Value)
		}
	}
	if !w.hub.add(c, initial) {
		cancel()
		_ = ws.Close(websocket.StatusGoingAway, "server shutting down")
		return
	}
	// The connection is read on a fresh goroutine (its stack stays small,
	// unlike this handler's) that the hub owns: Run waits for it.
	handedOver = true
	remote := clientIP(r)
	for _, t := range initial {
		w.sendPending(c, t)
	}
	go func() {
		defer w.releaseStream()
		defer w.hub.remove(c)
		defer cancel()
		defer func() {
			// The writer closes the connection (a bounded close
			// handshake); then the writer and any ping are awaited.
			c.close(websocket.StatusNormalClosure, "")
			c.wg.Wait()
		}()
		w.readLoop(ctx, c, remote)
	}()
}

// readLoop handles client frames until the connection ends.
func (w *Web) readLoop(ctx context.Context, c *wsConn, remote string) {
	for {
		typ, data, err := c.ws.Read(ctx)
		if err != nil {
			if s := websocket.CloseStatus(err); s == -1 && !errors.Is(err, context.Canceled) {
				w.log.Debug("WebSocket closed", "remote", remote, "err", err)
			}
			c.close(websocket.StatusNormalClosure, "")
			return
		}
		w.clientFrame(c, typ, data)
	}
}

// clientFrame decodes and handles one frame a client sent (FuzzClientFrame
// runs it on arbitrary input).
func (w *Web) clientFrame(c *wsConn, typ websocket.MessageType, data []byte) {
	if typ != websocket.MessageText {
		c.send(&api.ServerFrame{Type: api.FrameError, Error: "binary frames are not supported; send JSON text frames"})
		return
	}
	var f api.ClientFrame
	if err := json.Unmarshal(data, &f); err != nil {
		c.send(&api.ServerFrame{Type: api.FrameError, Error: "malformed frame: " + jsonMessage(err)})
		return
	}
	w.handleFrame(c, f)
}

func (w *Web) handleFrame(c *wsConn, f api.ClientFrame) {
	fail := func(msg string) {
		c.send(&api.ServerFrame{Type: api.FrameError, Error: w.host.Redact(msg), ID: f.ID})
	}
	switch f.Type {
	case api.FramePing:
		c.send(&api.ServerFrame{Type: api.FramePong})
	case api.FrameSubscribe, api.FrameUnsubscribe:
		t, err := webThread(f.Thread)
		if err != nil {
			fail(err.Error())
			return
		}
		if f.Type == api.FrameUnsubscribe {
			w.hub.unsubscribe(c, t)
			return
		}
		if err := w.hub.subscribe(c, t); err != nil {
			fail(err.Error())
			return
		}
		w.sendPending(c, t)
	case api.FrameApproval:
		w.answerFrame(c, f, fail)
	case api.FrameCancel:
		t, err := webThread(f.Thread)
		if err != nil {
			fail(err.Error())
			return
		}
		if w.svc.Chat != nil {
			// Nothing running is not an error: the turn may just have ended.
			w.svc.Chat.Cancel(context.Background(), t)
		}
	case api.FrameRegenerate, api.FrameRetry, api.FrameEdit:
		if ok, _ := c.bucket.take(w.now(), wsMessageRate, wsMessageBurst); !ok {
			fail("too many messages; slow down")
			return
		}
		t, err := webThread(f.Thread)
		if err != nil {
			fail(err.Error())
			return
		}
		if w.svc.Conversations == nil {
			fail("conversations is not enabled")
			return
		}
		if err := w.hub.subscribe(c, t); err != nil {
			fail(err.Error())
			return
		}
		// The new reply is streamed to the thread's connections like a
		// message's.
		rctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		_, err = w.svc.Conversations.Submit(rctx, api.RedoRequest{Action: f.Type, Thread: t, MessageID: f.Message, Text: f.Text})
		cancel()
		if err != nil {
			fail("could not " + f.Type + ": " + api.Reason(err))
		}
	case api.FrameMessage:
		if ok, _ := c.bucket.take(w.now(), wsMessageRate, wsMessageBurst); !ok {
			fail("too many messages; slow down")
			return
		}
		t, err := webThread(f.Thread)
		if err != nil {
			fail(err.Error())
			return
		}
		notes, images, err := w.inbound(t, f.Attachments)
		if err != nil {
			fail(err.Error())
			return
		}
		text := withNotes(notes, f.Text)
		if strings.TrimSpace(text) == "" && len(images) == 0 {
			fail("text is empty")
			return
		}
		if err := w.hub.subscribe(c, t); err != nil {
			fail(err.Error())
			return
		}
		// Detached: once read, the message is stored even if the client
		// goes away now.
		rctx, cancel := context.WithTimeout(context.Background(), receiveTimeout)
		err = w.host.Receive(rctx, chat.Inbound{
			Address:     chat.Address{Channel: ChannelName, Thread: t},
			Sender:      w.sender(rctx, ChannelName),
			Text:        text,
			Attachments: images,
			Received:    w.now(),
		})
		cancel()
		if err != nil {
			w.log.Warn("message from the web not accepted", "thread", t, "err", err)
			msg := api.Reason(err)
			if api.IsDiskFull(err) {
				msg = diskFullMessage
			}
			fail("the message was not accepted: " + msg)
		}
	case "":
		fail(`malformed frame: "type" is missing`)
	default:
		fail(fmt.Sprintf("unknown frame type %q", f.Type))
	}
}

// ChannelName implements extension.ChannelProvider: threads "web:…".
func (w *Web) ChannelName() string { return ChannelName }

// MakesThreads implements extension.ThreadMaker: the page makes a thread
// per conversation, and a deleted one takes no message until restored.
func (w *Web) MakesThreads() bool { return true }

// Send delivers a complete message: a reply as "done", a failure as
// "error", a proactive message as "notify". It goes to the connections
// following the thread; a message for a thread that is not a web thread
// goes to every connection. With nobody connected it is only stored (the
// router stored it before calling Send), so Send never fails.
func (w *Web) Send(_ context.Context, msg chat.Outbound) error {
	f := &api.ServerFrame{Thread: msg.Address.Thread}
	switch msg.Kind {
	case chat.Error:
		f.Type, f.Error = api.FrameError, w.host.Redact(msg.Text)
	case chat.Notify:
		f.Type, f.Text = api.FrameNotify, msg.Text
	case chat.Transcript:
		f.Type, f.Text = api.FrameTranscript, msg.Text
	case chat.AskApproval:
		if msg.Approval == nil {
			return errors.New("an approval message without its request")
		}
		f = approvalFrame(msg.Address.Thread, *msg.Approval)
	default:
		f.Type, f.Text = api.FrameDone, msg.Text
	}
	if n := w.hub.toThread(msg.Address.Thread, f); n == 0 && msg.Address.Thread.Channel() != ChannelName {
		w.hub.broadcast(f)
	}
	return nil
}

// OpenStream implements extension.StreamingChannelProvider: the reply is
// streamed to whoever follows the thread while it is written.
func (w *Web) OpenStream(_ context.Context, addr chat.Address) (extension.Stream, error) {
	return &wsStream{hub: w.hub, thread: addr.Thread, redact: w.host.Redact}, nil
}

// wsStream streams one reply to the thread's connections. Its methods never
// fail: a client that is gone loses nothing (the reply is stored).
type wsStream struct {
	hub    *hub
	thread chat.ThreadID
	redact func(string) string // Host.Redact, for error frames
	// written is the text streamed so far: what a stopped reply keeps.
	written strings.Builder
}

func (s *wsStream) Delta(text string) error {
	s.written.WriteString(text)
	s.hub.toThread(s.thread, &api.ServerFrame{Type: api.FrameDelta, Thread: s.thread, Text: text})
	return nil
}

func (s *wsStream) Status(st extension.StreamStatus) error {
	f := &api.ServerFrame{Thread: s.thread, CallID: st.CallID, Name: st.Tool}
	switch st.Kind {
	case extension.ToolCallStarted:
		f.Type = api.FrameToolCall
		f.Arguments = validJSON(st.Arguments)
	case extension.ToolCallFinished:
		f.Type = api.FrameToolResult
		result, isErr := st.Result, st.IsError
		f.Result, f.IsError = &result, &isErr
	case extension.Thinking:
		f.Type, f.Text = api.FrameThinking, st.Text
	case extension.Waiting:
		f.Type, f.Text, f.WaitMS = api.FrameWait, st.Text, st.Wait.Milliseconds()
	default:
		return nil
	}
	s.hub.toThread(s.thread, f)
	return nil
}

func (s *wsStream) Close(final string, err error) error {
	f := &api.ServerFrame{Type: api.FrameDone, Thread: s.thread, Text: final}
	switch {
	case err != nil && errors.Is(err, context.Canceled):
		// Stopped (by the user, or a restart): not an error; the text is
		// what was written.
		f.Status, f.Text = "stopped", s.written.String()
	case err != nil:
		f.Type, f.Text, f.Error = api.FrameError, "", s.redact(final)
		if f.Error == "" {
			f.Error = "the reply failed"
		}
	}
	s.hub.toThread(s.thread, f)
	return nil
}

// validJSON returns b when it is valid JSON, else b as a JSON string (the
// model's raw arguments may be malformed).
func validJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

var (
	_ extension.ChannelProvider          = (*Web)(nil)
	_ extension.StreamingChannelProvider = (*Web)(nil)
	_ extension.VoiceChannelProvider     = (*Web)(nil)
	_ extension.Stream                   = (*wsStream)(nil)
)
