package cli

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// Backend is what a chat frontend talks to: the agent in this process
// (Local) or a running server (Remote).
type Backend interface {
	// Thread is the conversation the chat sends to.
	Thread() chat.ThreadID
	// Where describes the backend for the banner ("in process",
	// "http://host:8420").
	Where() string
	// Send submits a message or a slash command. It returns once the
	// message is accepted; what it causes arrives through Next and ends
	// with an EventIdle.
	Send(ctx context.Context, text string) error
	// Attach saves the local file at path where the assistant sees it and
	// stages it for the next message Send submits.
	Attach(ctx context.Context, path string) (Attached, error)
	// Threads lists the conversations the chat can switch to (this
	// channel's), most recent first.
	Threads(ctx context.Context) ([]api.Thread, error)
	// Switch makes thread the conversation the chat sends to and shows.
	Switch(ctx context.Context, thread chat.ThreadID) error
	// LastUserMessage returns the last message the user wrote in the
	// conversation (not a system event, not archived); false when there
	// is none.
	LastUserMessage(ctx context.Context) (api.Message, bool, error)
	// Regenerate answers the last user message again; the replies after it
	// are kept as a branch. Like Send it returns once accepted; the new
	// reply arrives through Next and ends with an EventIdle.
	Regenerate(ctx context.Context) error
	// Edit replaces the user message id (LastUserMessage) with text and
	// answers it; the message and what followed are kept as a branch.
	// Like Send it returns once accepted.
	Edit(ctx context.Context, id int64, text string) error
	// Rename gives the conversation a title of the user's.
	Rename(ctx context.Context, title string) (api.Thread, error)
	// Cancel stops the turn in progress, if any. It reports what happened
	// in words for the user.
	Cancel(ctx context.Context) string
	// Answer approves or denies the approval request id (EventApproval).
	Answer(ctx context.Context, id string, approve bool) error
	// Next returns the next event, waiting until there is one or ctx ends.
	// An error other than ctx's means the backend is gone.
	Next(ctx context.Context) (Event, error)
	// Close releases the backend and waits for its goroutines.
	Close() error
}

// Router is what Local needs from the process's message router
// (*router.Router): Submit is Receive plus a report of when the message
// was handled; CancelTurn cancels what a thread is processing.
type Router interface {
	Submit(ctx context.Context, msg chat.Inbound) (<-chan error, error)
	CancelTurn(thread chat.ThreadID) bool
}

// Local is the Backend of an agent running in this process: messages go
// to the router, replies come back through the cli channel.
type Local struct {
	c      *CLI
	router Router
	thread chat.ThreadID // guarded by mu
	sender chat.Sender
	now    func() time.Time

	ctx    context.Context // ends with Close
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu     sync.Mutex
	staged []Attached // files for the next message

	// conv and msgs replace the host's services (tests).
	conv conversations
	msgs messageReader
}

// conversations is what Local needs of the host's api.Conversations.
type conversations interface {
	Rename(ctx context.Context, thread chat.ThreadID, title string) (api.Thread, error)
	Submit(ctx context.Context, r api.RedoRequest) (<-chan error, error)
}

// messageReader is what Local needs of the host's api.Threads.
type messageReader interface {
	Messages(ctx context.Context, thread chat.ThreadID, q api.MessageQuery) ([]api.Message, error)
}

func (l *Local) conversations() (conversations, error) {
	if l.conv != nil {
		return l.conv, nil
	}
	if c := api.ServicesFrom(l.c.host).Conversations; c != nil {
		return c, nil
	}
	return nil, errors.New("conversations are not available in this process")
}

func (l *Local) messages() (messageReader, error) {
	if l.msgs != nil {
		return l.msgs, nil
	}
	if t := api.ServicesFrom(l.c.host).Threads; t != nil {
		return t, nil
	}
	return nil, errors.New("the conversation's messages are not available in this process")
}

// LastUserMessage implements Backend.
func (l *Local) LastUserMessage(ctx context.Context) (api.Message, bool, error) {
	mr, err := l.messages()
	if err != nil {
		return api.Message{}, false, err
	}
	thread := l.Thread()
	return lastUserMessage(ctx, func(ctx context.Context, after int64) ([]api.Message, error) {
		return mr.Messages(ctx, thread, api.MessageQuery{AfterID: after, Limit: messagePage})
	})
}

// Regenerate implements Backend.
func (l *Local) Regenerate(ctx context.Context) error {
	return l.redo(ctx, api.RedoRequest{Action: api.RedoRegenerate})
}

// Edit implements Backend.
func (l *Local) Edit(ctx context.Context, id int64, text string) error {
	return l.redo(ctx, api.RedoRequest{Action: api.RedoEdit, MessageID: id, Text: text})
}

func (l *Local) redo(ctx context.Context, r api.RedoRequest) error {
	conv, err := l.conversations()
	if err != nil {
		return err
	}
	r.Thread = l.Thread()
	done, err := conv.Submit(ctx, r)
	if err != nil {
		return err
	}
	l.idleAfter(r.Thread, done)
	return nil
}

// Rename implements Backend.
func (l *Local) Rename(ctx context.Context, title string) (api.Thread, error) {
	conv, err := l.conversations()
	if err != nil {
		return api.Thread{}, err
	}
	th, err := conv.Rename(ctx, l.Thread(), title)
	if errors.Is(err, api.ErrNotFound) {
		return th, errNoConversation
	}
	return th, err
}

// errNoConversation: a rename of a conversation the server has not stored
// yet.
var errNoConversation = errors.New("this conversation has no messages yet; send one first, then name it")

// NewLocal returns a backend on thread for the channel c (the enabled cli
// extension of this process) and the process's router.
func NewLocal(c *CLI, r Router, thread chat.ThreadID, sender chat.Sender) (*Local, error) {
	if c == nil || c.events == nil {
		return nil, errors.New("the cli channel is not running")
	}
	if err := thread.Validate(); err != nil {
		return nil, err
	}
	if thread.Channel() != ChannelName {
		return nil, fmt.Errorf("thread %q is not a %s thread", thread, ChannelName)
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Local{c: c, router: r, thread: thread, sender: sender, now: time.Now, ctx: ctx, cancel: cancel}, nil
}

// Thread implements Backend.
func (l *Local) Thread() chat.ThreadID {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.thread
}

// Threads implements Backend: the cli conversations.
func (l *Local) Threads(ctx context.Context) ([]api.Thread, error) {
	ts := api.ServicesFrom(l.c.host).Threads
	if ts == nil {
		return nil, errors.New("the conversation list is not available in this process")
	}
	all, err := ts.List(ctx, api.ThreadQuery{})
	if err != nil {
		return nil, err
	}
	var out []api.Thread
	for _, t := range all {
		if t.ID.Channel() == ChannelName {
			out = append(out, t)
		}
	}
	return out, nil
}

// Switch implements Backend: thread must be a cli thread.
func (l *Local) Switch(_ context.Context, thread chat.ThreadID) error {
	if err := thread.Validate(); err != nil {
		return err
	}
	if thread.Channel() != ChannelName {
		return fmt.Errorf("%s is not a conversation of the terminal (cli:…)", thread)
	}
	l.mu.Lock()
	l.thread, l.staged = thread, nil
	l.mu.Unlock()
	return nil
}

// Where implements Backend.
func (l *Local) Where() string { return "in process" }

// Attach implements Backend: the file is copied into the workspace under
// cli/<user>/.
func (l *Local) Attach(_ context.Context, p string) (Attached, error) {
	name, data, media, image, err := readAttachment(p)
	if err != nil {
		return Attached{}, err
	}
	dir := path.Join("cli", extension.SafeName(strings.TrimPrefix(string(l.Thread()), ChannelName+":")))
	rel, err := saveInWorkspace(l.c.host.DataDir(), dir, name, data, l.now())
	if err != nil {
		return Attached{}, fmt.Errorf("save %s in the workspace: %w", name, err)
	}
	a := Attached{Name: name, Path: rel, Image: image, MediaType: media, Size: int64(len(data))}
	l.mu.Lock()
	l.staged = append(l.staged, a)
	l.mu.Unlock()
	return a, nil
}

// Send implements Backend; the staged files go with the message.
func (l *Local) Send(ctx context.Context, text string) error {
	l.mu.Lock()
	staged, thread := l.staged, l.thread
	l.mu.Unlock()
	if commandText().MatchString(strings.TrimSpace(text)) {
		staged = nil // a command does not take the staged files
	}
	text, images := inboundParts(staged, text)
	done, err := l.router.Submit(ctx, chat.Inbound{
		Address:     chat.Address{Channel: ChannelName, Thread: thread},
		Sender:      l.sender,
		Text:        text,
		Attachments: images,
		Received:    l.now(),
	})
	if err != nil {
		return err
	}
	l.mu.Lock()
	l.staged = l.staged[len(staged):]
	l.mu.Unlock()
	l.idleAfter(thread, done)
	return nil
}

// idleAfter pushes the EventIdle of thread once done reports the end of
// what was submitted.
func (l *Local) idleAfter(thread chat.ThreadID, done <-chan error) {
	l.wg.Add(1)
	go func() {
		defer l.wg.Done()
		select {
		case err := <-done:
			ev := Event{Kind: EventIdle, Thread: thread}
			if err != nil {
				ev.Err = err.Error()
			}
			l.c.events.Push(ev)
		case <-l.ctx.Done():
		}
	}()
}

// Cancel implements Backend.
func (l *Local) Cancel(context.Context) string {
	if l.router.CancelTurn(l.Thread()) {
		return "cancelled"
	}
	return "nothing to cancel"
}

// Next implements Backend. Events of other cli threads (a message the
// assistant sent to another terminal user) are shown as notifications.
// Answer implements Backend.
func (l *Local) Answer(ctx context.Context, id string, approve bool) error {
	if l.c.approvals == nil {
		return errors.New("approvals are not available in this process")
	}
	_, err := l.c.approvals.Answer(ctx, id, approve, ChannelName)
	return err
}

func (l *Local) Next(ctx context.Context) (Event, error) {
	for {
		ev, err := l.c.events.Next(ctx)
		if err != nil {
			return ev, err
		}
		if ev.Thread == "" || ev.Thread == l.Thread() || ev.Kind == EventNotify {
			return ev, nil
		}
		switch ev.Kind {
		case EventDone, EventError:
			return Event{Kind: EventNotify, Thread: ev.Thread, Text: "[" + string(ev.Thread) + "] " + ev.Text}, nil
		}
	}
}

// Close implements Backend.
func (l *Local) Close() error {
	l.cancel()
	l.wg.Wait()
	return nil
}

var _ Backend = (*Local)(nil)
