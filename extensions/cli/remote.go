package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/api/client"
	"github.com/reverie-ai/reverie/chat"
)

// commandText matches a slash command the way the router recognises one.
var commandText = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/([A-Za-z][A-Za-z0-9_]*)(?:@\S+)?(?:\s|$)`) })

// Remote is the Backend of a server reached through its WebSocket API.
// Cancel sends a cancel frame (the server stops the turn; what was written
// so far stays in the history) and hides what still arrives for it.
type Remote struct {
	c      *client.Client
	conn   *client.Conn
	thread chat.ThreadID
	q      *Queue

	mu      sync.Mutex
	staged  []Attached   // uploaded for the next message
	pending []*remoteMsg // sent, oldest first, until their done/error
	seq     int
	readErr error

	cancel context.CancelFunc
	wg     sync.WaitGroup
}

type remoteMsg struct {
	id     string
	expect int  // done/error frames still to come
	muted  bool // cancelled locally: its frames are dropped
}

// DialRemote connects to the server of c and prepares a chat on thread:
// it checks the token with a history read and opens the WebSocket
// subscribed to the thread. Every message is answered by one reply (a new
// thread's first reply opens with its greeting).
func DialRemote(ctx context.Context, c *client.Client, thread chat.ThreadID) (*Remote, error) {
	if err := thread.Validate(); err != nil {
		return nil, err
	}
	_, err := c.Messages(ctx, thread, api.MessageQuery{Limit: 1})
	if err != nil {
		if errors.Is(err, client.ErrUnauthorized) {
			return nil, fmt.Errorf("%s refused the access token (give it with --token or $REVERIE_TOKEN): %w", c.URL(), err)
		}
		var op *net.OpError
		if errors.As(err, &op) && op.Op == "dial" {
			return nil, &unreachableError{url: c.URL(), err: err}
		}
		return nil, fmt.Errorf("reach %s: %w", c.URL(), err)
	}
	conn, err := c.Dial(ctx, thread)
	if err != nil {
		return nil, fmt.Errorf("open the chat connection to %s: %w", c.URL(), err)
	}
	rctx, cancel := context.WithCancel(context.Background())
	r := &Remote{c: c, conn: conn, thread: thread, q: NewQueue(), cancel: cancel}
	r.wg.Add(1)
	go r.read(rctx)
	return r, nil
}

// unreachableError is DialRemote's error when nothing answers at the
// server's address: one sentence, not the transport's chain of requests
// (which it unwraps to).
type unreachableError struct {
	url string
	err error
}

func (e *unreachableError) Error() string {
	why := "it cannot be reached"
	var op *net.OpError
	switch {
	case errors.Is(e.err, syscall.ECONNREFUSED):
		why = "the connection was refused"
	case errors.As(e.err, &op) && op.Timeout():
		why = "the connection timed out"
	}
	return fmt.Sprintf("nothing answers at %s (%s): is Reverie running there (reverie run), and is --remote its address?", e.url, why)
}

func (e *unreachableError) Unwrap() error { return e.err }

// Thread implements Backend.
func (r *Remote) Thread() chat.ThreadID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.thread
}

// Threads implements Backend: the server's web conversations.
func (r *Remote) Threads(ctx context.Context) ([]api.Thread, error) {
	all, err := r.c.Threads(ctx)
	if err != nil {
		return nil, err
	}
	var out []api.Thread
	for _, t := range all {
		if t.ID.Channel() == "web" {
			out = append(out, t)
		}
	}
	return out, nil
}

// Switch implements Backend: the connection follows thread (a web
// thread) instead; not while a reply is awaited.
func (r *Remote) Switch(ctx context.Context, thread chat.ThreadID) error {
	if err := thread.Validate(); err != nil {
		return err
	}
	if thread.Channel() != "web" {
		return fmt.Errorf("%s is not a conversation of the web channel (web:…)", thread)
	}
	// Reading the history checks that the conversation can be reached.
	if _, err := r.c.Messages(ctx, thread, api.MessageQuery{Limit: 1}); err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) > 0 {
		return errors.New("a reply is still being written; wait for it (or Ctrl+C) first")
	}
	if err := r.conn.Write(ctx, api.ClientFrame{Type: api.FrameSubscribe, Thread: string(thread)}); err != nil {
		return err
	}
	_ = r.conn.Write(ctx, api.ClientFrame{Type: api.FrameUnsubscribe, Thread: string(r.thread)})
	r.thread, r.staged = thread, nil
	return nil
}

// Where implements Backend.
func (r *Remote) Where() string { return r.c.URL() }

// Attach implements Backend: the file is uploaded to the server's
// workspace (POST …/attachments) and named by the next message.
func (r *Remote) Attach(ctx context.Context, p string) (Attached, error) {
	name, data, media, _, err := readAttachment(p)
	if err != nil {
		return Attached{}, err
	}
	info, err := r.c.Upload(ctx, r.Thread(), api.AttachmentUpload{Name: name, MediaType: media, Data: data})
	if err != nil {
		return Attached{}, fmt.Errorf("upload %s: %w", name, err)
	}
	a := Attached{Name: info.Name, Path: info.Path, Image: info.Kind == api.AttachmentImage, MediaType: info.MediaType, Size: info.Size}
	r.mu.Lock()
	r.staged = append(r.staged, a)
	r.mu.Unlock()
	return a, nil
}

// Send implements Backend; the uploaded files go with the message.
func (r *Remote) Send(ctx context.Context, text string) error {
	cmd := commandText().FindStringSubmatch(strings.TrimSpace(text))
	return r.start(ctx, func(thread chat.ThreadID, id string) (api.ClientFrame, int) {
		var refs []api.AttachmentRef
		if cmd != nil { // a command does not take the staged files
			return api.ClientFrame{Type: api.FrameMessage, Thread: string(thread), Text: text, ID: id}, 0
		}
		for _, a := range r.staged {
			refs = append(refs, api.AttachmentRef{Path: a.Path})
		}
		return api.ClientFrame{Type: api.FrameMessage, Thread: string(thread), Text: text, ID: id, Attachments: refs}, len(refs)
	})
}

// Regenerate implements Backend: a regenerate frame; the new reply
// streams like a message's.
func (r *Remote) Regenerate(ctx context.Context) error {
	return r.start(ctx, func(thread chat.ThreadID, id string) (api.ClientFrame, int) {
		return api.ClientFrame{Type: api.FrameRegenerate, Thread: string(thread), ID: id}, 0
	})
}

// Edit implements Backend: an edit frame.
func (r *Remote) Edit(ctx context.Context, msg int64, text string) error {
	return r.start(ctx, func(thread chat.ThreadID, id string) (api.ClientFrame, int) {
		return api.ClientFrame{Type: api.FrameEdit, Thread: string(thread), ID: id, Message: msg, Text: text}, 0
	})
}

// start writes the frame that build makes (with the thread and a new id)
// and waits for its reply like a message's: one done or error frame, or
// an error frame echoing the id when the server refuses it. build runs
// with r.mu held and says how many staged files the frame takes.
func (r *Remote) start(ctx context.Context, build func(thread chat.ThreadID, id string) (api.ClientFrame, int)) error {
	r.mu.Lock()
	if r.readErr != nil {
		err := r.readErr
		r.mu.Unlock()
		return err
	}
	r.seq++
	m := &remoteMsg{id: fmt.Sprintf("c%d", r.seq), expect: 1}
	f, staged := build(r.thread, m.id)
	r.pending = append(r.pending, m)
	r.mu.Unlock()
	if err := r.conn.Write(ctx, f); err != nil {
		r.mu.Lock()
		r.remove(m)
		r.mu.Unlock()
		return err
	}
	r.mu.Lock()
	r.staged = r.staged[min(staged, len(r.staged)):]
	r.mu.Unlock()
	return nil
}

// LastUserMessage implements Backend: the history through the HTTP API.
func (r *Remote) LastUserMessage(ctx context.Context) (api.Message, bool, error) {
	thread := r.Thread()
	return lastUserMessage(ctx, func(ctx context.Context, after int64) ([]api.Message, error) {
		return r.c.Messages(ctx, thread, api.MessageQuery{AfterID: after, Limit: messagePage})
	})
}

// Rename implements Backend: PUT /api/v1/threads/{thread}.
func (r *Remote) Rename(ctx context.Context, title string) (api.Thread, error) {
	th, err := r.c.Rename(ctx, r.Thread(), title)
	if ae := (*client.Error)(nil); errors.As(err, &ae) && ae.Status == http.StatusNotFound {
		return th, errNoConversation
	}
	return th, err
}

// Cancel implements Backend: the reply is no longer waited for.
func (r *Remote) Cancel(context.Context) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, m := range r.pending {
		if !m.muted {
			m.muted = true
			r.q.Push(Event{Kind: EventIdle, Thread: r.thread, Err: "cancelled"})
			wctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			err := r.conn.Write(wctx, api.ClientFrame{Type: api.FrameCancel, Thread: string(r.thread)})
			cancel()
			if err != nil {
				return "stopped waiting (the cancel did not reach the server, which finishes the reply)"
			}
			return "cancelled"
		}
	}
	return "nothing to cancel"
}

// Answer implements Backend.
func (r *Remote) Answer(ctx context.Context, id string, approve bool) error {
	return r.conn.Write(ctx, api.ClientFrame{Type: api.FrameApproval, Approval: id, Approve: &approve})
}

// Next implements Backend.
func (r *Remote) Next(ctx context.Context) (Event, error) {
	ev, err := r.q.Next(ctx)
	if errors.Is(err, ErrClosed) {
		r.mu.Lock()
		if r.readErr != nil {
			err = r.readErr
		}
		r.mu.Unlock()
	}
	return ev, err
}

// Close implements Backend.
func (r *Remote) Close() error {
	err := r.conn.Close()
	r.cancel()
	r.wg.Wait()
	return err
}

func (r *Remote) remove(m *remoteMsg) {
	for i, p := range r.pending {
		if p == m {
			r.pending = append(r.pending[:i], r.pending[i+1:]...)
			return
		}
	}
}

// read turns frames into events until the connection ends.
func (r *Remote) read(ctx context.Context) {
	defer r.wg.Done()
	for {
		f, err := r.conn.Read(ctx)
		if err != nil {
			r.mu.Lock()
			if ctx.Err() == nil {
				r.readErr = fmt.Errorf("connection to %s lost: %w", r.c.URL(), err)
			} else {
				r.readErr = ErrClosed
			}
			r.mu.Unlock()
			r.q.Close()
			return
		}
		r.mu.Lock()
		r.frame(f)
		r.mu.Unlock()
	}
}

// frame handles one frame; r.mu is held.
func (r *Remote) frame(f api.ServerFrame) {
	var head *remoteMsg
	if len(r.pending) > 0 {
		head = r.pending[0]
	}
	if f.Type == api.FrameError && f.ID != "" {
		// One of our messages was refused.
		for _, m := range r.pending {
			if m.id == f.ID {
				r.remove(m)
				if !m.muted {
					r.q.Push(Event{Kind: EventError, Thread: r.thread, Text: f.Error})
					r.q.Push(Event{Kind: EventIdle, Thread: r.thread, Err: f.Error})
				}
				return
			}
		}
	}
	if f.Thread == "" {
		if f.Type == api.FrameError {
			r.q.Push(Event{Kind: EventNotify, Text: "server: " + f.Error})
		}
		return
	}
	if f.Thread != r.thread {
		switch f.Type {
		case api.FrameNotify, api.FrameDone:
			r.q.Push(Event{Kind: EventNotify, Thread: f.Thread, Text: "[" + string(f.Thread) + "] " + f.Text})
		}
		return
	}
	muted := head != nil && head.muted
	switch f.Type {
	case api.FrameApproval:
		r.q.Push(Event{Kind: EventApproval, Thread: f.Thread, Text: f.Text, Tool: f.Name, Arguments: f.Arguments,
			Approval: f.Approval, State: chat.ApprovalState(f.State)})
	case api.FrameDelta:
		if !muted {
			r.q.Push(Event{Kind: EventDelta, Thread: f.Thread, Text: f.Text})
		}
	case api.FrameThinking:
		if !muted {
			r.q.Push(Event{Kind: EventThinking, Thread: f.Thread, Text: f.Text})
		}
	case api.FrameWait:
		if !muted {
			r.q.Push(Event{Kind: EventWait, Thread: f.Thread, Text: f.Text})
		}
	case api.FrameToolCall:
		if !muted {
			r.q.Push(Event{Kind: EventToolCall, Thread: f.Thread, Tool: f.Name, CallID: f.CallID, Arguments: f.Arguments})
		}
	case api.FrameToolResult:
		if !muted {
			ev := Event{Kind: EventToolResult, Thread: f.Thread, Tool: f.Name, CallID: f.CallID}
			if f.Result != nil {
				ev.Result = *f.Result
			}
			if f.IsError != nil {
				ev.IsError = *f.IsError
			}
			r.q.Push(ev)
		}
	case api.FrameNotify:
		r.q.Push(Event{Kind: EventNotify, Thread: f.Thread, Text: f.Text})
	case api.FrameDone, api.FrameError:
		ev := Event{Kind: EventDone, Thread: f.Thread, Text: f.Text}
		if f.Type == api.FrameError {
			ev = Event{Kind: EventError, Thread: f.Thread, Text: f.Error}
		}
		if head == nil {
			// A reply to someone else on the same thread (the web page).
			r.q.Push(ev)
			return
		}
		if !muted {
			r.q.Push(ev)
		}
		head.expect--
		if head.expect > 0 {
			return
		}
		r.remove(head)
		if !muted {
			idle := Event{Kind: EventIdle, Thread: f.Thread}
			if f.Type == api.FrameError {
				idle.Err = f.Error
			}
			r.q.Push(idle)
		}
	}
}

var _ Backend = (*Remote)(nil)
