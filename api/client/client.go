// Package client is a small Go client of Reverie's HTTP API (docs/api.md)
// for programs that talk to a running server: `reverie chat --remote` uses
// it. It covers the chat part of the API — the agent's info, a thread's
// messages, sending a message and waiting for the reply, and the WebSocket
// chat with streamed replies — with the JSON types of package api.
//
//	c, err := client.New("http://127.0.0.1:8420", token)
//	reply, err := c.Send(ctx, "web:notes", "What's on my list?")
//
//	conn, err := c.Dial(ctx, "web:notes") // subscribed to the thread
//	err = conn.Write(ctx, api.ClientFrame{Type: api.FrameMessage, Thread: "web:notes", Text: "hi"})
//	for {
//		f, err := conn.Read(ctx) // delta, tool_call, tool_result, done, error, notify
//		…
//	}
//
// Every call honours its context; calls without a deadline get
// DefaultTimeout (Send: DefaultTurnTimeout). A Client is safe for concurrent
// use; a Conn may be read by one goroutine while others write.
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
)

// Timeouts applied when a call's context has no deadline.
const (
	DefaultTimeout = 30 * time.Second
	// DefaultTurnTimeout bounds Send, which waits for the whole turn (the
	// server's own turn_timeout is 10 minutes).
	DefaultTurnTimeout = 11 * time.Minute
)

// MaxFrameBytes bounds one WebSocket frame read from the server.
const MaxFrameBytes = 16 << 20

// maxBodyBytes bounds a JSON answer.
const maxBodyBytes = 64 << 20

// ErrUnauthorized is wrapped by an *Error with status 401: the token is
// missing or wrong.
var ErrUnauthorized = errors.New("unauthorized (wrong or missing access token)")

// Error is an error answer of the API.
type Error struct {
	Status  int
	Message string // the body's "error", or the status text
	// RetryAfter is the Retry-After header of a 429 or 503, when given.
	RetryAfter time.Duration
	// fromAPI: Message is the API's own sentence (an answer with an
	// {"error": …} body), not a status text.
	fromAPI bool
}

// Error is the server's message, as a person reads it ("dreaming needs a
// language model; …"): the status is in Status and in what the error
// wraps. An answer that is not the API's (a proxy's page) says its status.
func (e *Error) Error() string {
	switch {
	case e.fromAPI && (e.Status != http.StatusUnauthorized || e.Message != "unauthorized"):
		return e.Message
	case e.Status == http.StatusUnauthorized:
		return ErrUnauthorized.Error()
	}
	return fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
}

// Unwrap is the error of package api the status stands for, so that
// errors.Is(err, api.ErrNotFound) holds for a 404 from a running agent as
// for the same call in process; ErrUnauthorized for a 401.
func (e *Error) Unwrap() error {
	return statusErrors[e.Status]
}

// statusErrors are the errors of package api by the status the web
// extension answers them with (docs/api.md "Errors and limits").
var statusErrors = map[int]error{
	http.StatusUnauthorized:          ErrUnauthorized,
	http.StatusBadRequest:            api.ErrInvalid,
	http.StatusNotFound:              api.ErrNotFound,
	http.StatusConflict:              api.ErrConflict,
	http.StatusRequestEntityTooLarge: api.ErrTooLarge,
	http.StatusTooManyRequests:       api.ErrBusy,
	http.StatusServiceUnavailable:    api.ErrUnavailable,
	http.StatusBadGateway:            api.ErrTurnFailed,
	http.StatusUnprocessableEntity:   api.ErrTestFailed,
	http.StatusInsufficientStorage:   api.ErrDiskFull,
}

// apiError is the *Error of an error answer: its body's "error" when the
// body is the API's JSON, else the status text.
func apiError(status int, body []byte) *Error {
	e := &Error{Status: status, Message: http.StatusText(status)}
	var eb api.ErrorBody
	if json.Unmarshal(body, &eb) == nil && eb.Error != "" {
		e.Message, e.fromAPI = eb.Error, true
	}
	return e
}

// Client talks to one server.
type Client struct {
	base  *url.URL
	token string
	http  *http.Client
}

// Option adjusts a Client.
type Option func(*Client)

// WithHTTPClient uses h for every request (tests, custom TLS).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// New returns a client of the server at baseURL ("http://127.0.0.1:8420";
// a path prefix is kept) using token for the Authorization header (empty:
// none, for a server with web.auth: none).
func New(baseURL, token string, opts ...Option) (*Client, error) {
	if !strings.Contains(baseURL, "://") {
		return nil, fmt.Errorf("server URL %q: want http:// or https://", baseURL)
	}
	u, err := url.Parse(strings.TrimSpace(baseURL))
	if err != nil {
		return nil, fmt.Errorf("server URL %q: %w", baseURL, err)
	}
	switch u.Scheme {
	case "http", "https":
	case "ws":
		u.Scheme = "http"
	case "wss":
		u.Scheme = "https"
	default:
		return nil, fmt.Errorf("server URL %q: want http:// or https://", baseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("server URL %q: no host", baseURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	c := &Client{base: u, token: token, http: &http.Client{Transport: &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 0, // Send waits for the turn; bounded by the context
		IdleConnTimeout:       90 * time.Second,
		MaxIdleConns:          4,
	}}}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// URL is the server's base URL.
func (c *Client) URL() string { return c.base.String() }

// endpoint is the URL of an API path (relative to api.Prefix), given
// unescaped and escaped.
func (c *Client) endpoint(path, rawPath string, q url.Values) string {
	u := *c.base
	u.RawPath = c.base.EscapedPath() + api.Prefix + rawPath
	u.Path += api.Prefix + path
	if q != nil {
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// threadPath is /threads/{thread}/<rest>, unescaped and escaped.
func threadPath(t chat.ThreadID, rest string) (path, rawPath string) {
	return "/threads/" + string(t) + rest, "/threads/" + url.PathEscape(string(t)) + rest
}

// Info is GET /api/v1/info.
func (c *Client) Info(ctx context.Context) (api.AgentInfo, error) {
	var out api.AgentInfo
	err := c.do(ctx, http.MethodGet, c.endpoint("/info", "/info", nil), nil, &out, DefaultTimeout)
	return out, err
}

// Messages is GET /api/v1/threads/{thread}/messages: the thread's
// messages, oldest first (none for an unknown thread).
func (c *Client) Messages(ctx context.Context, thread chat.ThreadID, q api.MessageQuery) ([]api.Message, error) {
	v := url.Values{}
	if q.AfterID > 0 {
		v.Set("after_id", strconv.FormatInt(q.AfterID, 10))
	}
	if q.Limit > 0 {
		v.Set("limit", strconv.Itoa(q.Limit))
	}
	if q.IncludeArchived {
		v.Set("include_archived", "true")
	}
	var out api.MessageList
	p, raw := threadPath(thread, "/messages")
	err := c.do(ctx, http.MethodGet, c.endpoint(p, raw, v), nil, &out, DefaultTimeout)
	return out.Messages, err
}

// Send is POST /api/v1/threads/{thread}/messages: it runs one turn and
// returns its result. A failed turn returns the Reply (whose text explains
// the failure) together with an *Error of status 502.
func (c *Client) Send(ctx context.Context, thread chat.ThreadID, text string) (api.Reply, error) {
	var out api.Reply
	p, raw := threadPath(thread, "/messages")
	err := c.do(ctx, http.MethodPost, c.endpoint(p, raw, nil), api.SendRequest{Text: text}, &out, DefaultTurnTimeout)
	return out, err
}

// Threads is GET /api/v1/threads: the conversations, most recent first.
func (c *Client) Threads(ctx context.Context) ([]api.Thread, error) {
	var out api.ThreadList
	err := c.do(ctx, http.MethodGet, c.endpoint("/threads", "/threads", nil), nil, &out, DefaultTimeout)
	return out.Threads, err
}

// Rename is PUT /api/v1/threads/{thread}: it gives the thread a title of
// the user's (a generated title never replaces it) and returns the thread.
func (c *Client) Rename(ctx context.Context, thread chat.ThreadID, title string) (api.Thread, error) {
	var out api.Thread
	p, raw := threadPath(thread, "")
	err := c.do(ctx, http.MethodPut, c.endpoint(p, raw, nil), api.RenameRequest{Title: title}, &out, DefaultTimeout)
	return out, err
}

// Upload is POST /api/v1/threads/{thread}/attachments: it saves a file in
// the server's workspace for a later message of the thread (a web thread)
// to name.
func (c *Client) Upload(ctx context.Context, thread chat.ThreadID, up api.AttachmentUpload) (api.AttachmentInfo, error) {
	var out api.AttachmentInfo
	p, raw := threadPath(thread, "/attachments")
	err := c.do(ctx, http.MethodPost, c.endpoint(p, raw, nil), up, &out, DefaultTimeout)
	return out, err
}

// do sends a JSON request and decodes a JSON answer into out. An error
// status returns an *Error; for 502 out is decoded too (a failed turn's
// reply).
func (c *Client) do(ctx context.Context, method, u string, in, out any, timeout time.Duration) error {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	c.authorize(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxBodyBytes))
	if err != nil {
		return fmt.Errorf("%s %s: read answer: %w", method, req.URL.Path, err)
	}
	if resp.StatusCode >= 300 {
		e := apiError(resp.StatusCode, data)
		if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil {
			e.RetryAfter = time.Duration(s) * time.Second
		}
		if resp.StatusCode == http.StatusBadGateway && out != nil {
			_ = json.Unmarshal(data, out)
		}
		return e
	}
	if out == nil || len(data) == 0 {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("%s %s: decode answer: %w", method, req.URL.Path, err)
	}
	return nil
}

func (c *Client) authorize(h http.Header) {
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
}

// Conn is a WebSocket chat connection (GET /api/v1/ws).
type Conn struct {
	ws *websocket.Conn
}

// Dial opens the WebSocket chat, subscribed to threads. A refused upgrade
// returns an *Error (401 for a wrong token).
func (c *Client) Dial(ctx context.Context, threads ...chat.ThreadID) (*Conn, error) {
	q := url.Values{}
	for _, t := range threads {
		q.Add("thread", string(t))
	}
	if len(threads) == 0 {
		q = nil
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, DefaultTimeout)
		defer cancel()
	}
	h := http.Header{}
	c.authorize(h)
	ws, resp, err := websocket.Dial(ctx, c.endpoint("/ws", "/ws", q), &websocket.DialOptions{HTTPClient: c.http, HTTPHeader: h})
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			var data []byte
			if resp.Body != nil {
				data, _ = io.ReadAll(io.LimitReader(resp.Body, 64<<10))
			}
			return nil, apiError(resp.StatusCode, data)
		}
		return nil, fmt.Errorf("connect to %s: %w", c.base.Host, err)
	}
	ws.SetReadLimit(MaxFrameBytes)
	return &Conn{ws: ws}, nil
}

// Write sends a frame.
func (c *Conn) Write(ctx context.Context, f api.ClientFrame) error {
	if err := wsjson.Write(ctx, c.ws, f); err != nil {
		return fmt.Errorf("send %s frame: %w", f.Type, err)
	}
	return nil
}

// Read returns the next frame from the server. The connection is unusable
// after an error (and after ctx ends while reading).
func (c *Conn) Read(ctx context.Context) (api.ServerFrame, error) {
	var f api.ServerFrame
	if err := wsjson.Read(ctx, c.ws, &f); err != nil {
		return api.ServerFrame{}, fmt.Errorf("read frame: %w", err)
	}
	return f, nil
}

// Close closes the connection normally.
func (c *Conn) Close() error {
	err := c.ws.Close(websocket.StatusNormalClosure, "bye")
	if err != nil && !errors.Is(err, net.ErrClosed) && websocket.CloseStatus(err) == -1 {
		return fmt.Errorf("close websocket: %w", err)
	}
	return nil
}
