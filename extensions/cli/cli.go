package cli

import (
	"context"
	"encoding/json"
	"errors"
	"sync"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// ID is the extension id; ChannelName the channel part of its threads.
const (
	ID          = "cli"
	ChannelName = "cli"
)

func init() {
	extension.Register(extension.Info{
		ID:          ID,
		New:         func() extension.Extension { return new(CLI) },
		Disabled:    true, // only `reverie chat` enables it
		Description: "terminal chat channel (reverie chat)",
	})
}

// EventKind names an Event. The names of the kinds shared with the
// WebSocket protocol are the same as its frame types.
type EventKind string

const (
	// EventDelta is the next piece of a reply being written (Text).
	EventDelta EventKind = "delta"
	// EventThinking is the next piece of the model's reasoning (Text),
	// shown folded apart from the reply.
	EventThinking EventKind = "thinking"
	// EventWait: the model call failed for a while (a rate limit, a
	// server error) and is tried again later; Text says so in plain words
	// ("rate limited by the provider, retrying in 30 s"). The reply is
	// still coming.
	EventWait EventKind = "wait"
	// EventToolCall: a tool started (Tool, CallID, Arguments).
	EventToolCall EventKind = "tool_call"
	// EventToolResult: it finished (Tool, CallID, Result, IsError).
	EventToolResult EventKind = "tool_result"
	// EventDone: a reply is complete; Text is the whole reply (it replaces
	// what the deltas built). Command answers arrive as EventDone without
	// deltas.
	EventDone EventKind = "done"
	// EventError: a turn failed; Text is the user-facing explanation.
	EventError EventKind = "error"
	// EventNotify: a proactive message (a reminder, a worker's result).
	EventNotify EventKind = "notify"
	// EventApproval: a tool call waits for the user's approval, or the
	// outcome of such a request (Approval, State, Tool, Arguments; Text is
	// the reason).
	EventApproval EventKind = "approval"
	// EventIdle: everything the last message sent caused has been shown
	// (its seed, its reply or its command answer). Err is set when it
	// failed.
	EventIdle EventKind = "idle"
)

// Event is what a chat frontend shows.
type Event struct {
	Kind   EventKind
	Thread chat.ThreadID
	// Text is the delta, the reply, the error explanation or the
	// notification.
	Text      string
	Tool      string
	CallID    string
	Arguments json.RawMessage
	Result    string
	IsError   bool
	// Err is why a message failed (EventIdle), "" when it did not.
	Err string
	// Approval is the request's id and State where it stands
	// (EventApproval).
	Approval string
	State    chat.ApprovalState
}

// Queue is an unbounded FIFO of Events with one consumer. Push never
// blocks; Next waits for an event.
type Queue struct {
	mu     sync.Mutex
	items  []Event
	signal chan struct{} // has a value when items may be non-empty
	closed bool
}

// NewQueue returns an empty queue.
func NewQueue() *Queue { return &Queue{signal: make(chan struct{}, 1)} }

// ErrClosed is returned by Queue.Next once the queue is closed and empty.
var ErrClosed = errors.New("the chat is closed")

// Push appends ev; after Close it is dropped.
func (q *Queue) Push(ev Event) {
	q.mu.Lock()
	if q.closed {
		q.mu.Unlock()
		return
	}
	q.items = append(q.items, ev)
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// Close makes Next return ErrClosed once the queued events are read.
func (q *Queue) Close() {
	q.mu.Lock()
	q.closed = true
	q.mu.Unlock()
	select {
	case q.signal <- struct{}{}:
	default:
	}
}

// Next returns the oldest event, waiting for one until ctx ends.
func (q *Queue) Next(ctx context.Context) (Event, error) {
	for {
		q.mu.Lock()
		if len(q.items) > 0 {
			ev := q.items[0]
			q.items[0] = Event{}
			q.items = q.items[1:]
			more := len(q.items) > 0 || q.closed
			q.mu.Unlock()
			if more {
				select {
				case q.signal <- struct{}{}:
				default:
				}
			}
			return ev, nil
		}
		closed := q.closed
		q.mu.Unlock()
		if closed {
			return Event{}, ErrClosed
		}
		select {
		case <-q.signal:
		case <-ctx.Done():
			return Event{}, ctx.Err()
		}
	}
}

// CLI is the terminal channel extension. Its events are read by the one
// chat frontend of the process through Events (or a Local backend).
type CLI struct {
	host      extension.Host
	events    *Queue
	approvals api.Approvals // nil when the agent offers none
}

// Init keeps the host; the channel has no configuration.
func (c *CLI) Init(_ context.Context, host extension.Host) error {
	if err := c.CheckConfig(host.DecodeConfig); err != nil {
		return err
	}
	c.host = host
	c.events = NewQueue()
	c.approvals = api.ServicesFrom(host).Approvals
	return nil
}

// CheckConfig decodes the cli section, which has no settings (only
// `enabled`), as Init does.
func (c *CLI) CheckConfig(decode func(any) error) error {
	var cfg struct{}
	return decode(&cfg)
}

// ChannelName implements extension.ChannelProvider.
func (c *CLI) ChannelName() string { return ChannelName }

// Events is the channel's output, in the order the router produced it.
func (c *CLI) Events() *Queue { return c.events }

// Receive hands a user's message to the router (Host.Receive).
func (c *CLI) Receive(ctx context.Context, msg chat.Inbound) error {
	return c.host.Receive(ctx, msg)
}

// Send queues a complete message: a command's answer or another
// non-streamed reply (EventDone), a proactive message (EventNotify) or a
// failure (EventError).
func (c *CLI) Send(_ context.Context, msg chat.Outbound) error {
	kind := EventDone
	switch msg.Kind {
	case chat.Notify:
		kind = EventNotify
	case chat.Error:
		kind = EventError
	case chat.AskApproval:
		if msg.Approval == nil {
			return errors.New("an approval message without its request")
		}
		a := msg.Approval
		c.events.Push(Event{Kind: EventApproval, Thread: msg.Address.Thread, Text: a.Reason, Tool: a.Tool,
			Arguments: json.RawMessage(a.Arguments), Approval: a.ID, State: a.State})
		return nil
	}
	c.events.Push(Event{Kind: kind, Thread: msg.Address.Thread, Text: msg.Text})
	return nil
}

// OpenStream begins a streamed reply.
func (c *CLI) OpenStream(_ context.Context, addr chat.Address) (extension.Stream, error) {
	return &stream{q: c.events, thread: addr.Thread}, nil
}

// Stop ends the event queue: a frontend still reading sees ErrClosed.
func (c *CLI) Stop(context.Context) error {
	if c.events != nil {
		c.events.Close()
	}
	return nil
}

type stream struct {
	q      *Queue
	thread chat.ThreadID
}

func (s *stream) Delta(text string) error {
	s.q.Push(Event{Kind: EventDelta, Thread: s.thread, Text: text})
	return nil
}

func (s *stream) Status(st extension.StreamStatus) error {
	ev := Event{Thread: s.thread, Tool: st.Tool, CallID: st.CallID}
	switch st.Kind {
	case extension.ToolCallStarted:
		ev.Kind, ev.Arguments = EventToolCall, st.Arguments
	case extension.ToolCallFinished:
		ev.Kind, ev.Result, ev.IsError = EventToolResult, st.Result, st.IsError
	case extension.Thinking:
		ev.Kind, ev.Text = EventThinking, st.Text
	case extension.Waiting:
		ev.Kind, ev.Text = EventWait, st.Text
	default:
		return nil
	}
	s.q.Push(ev)
	return nil
}

func (s *stream) Close(final string, err error) error {
	if err != nil {
		if final == "" {
			final = err.Error()
		}
		s.q.Push(Event{Kind: EventError, Thread: s.thread, Text: final})
		return nil
	}
	s.q.Push(Event{Kind: EventDone, Thread: s.thread, Text: final})
	return nil
}

var (
	_ extension.Extension                = (*CLI)(nil)
	_ extension.ChannelProvider          = (*CLI)(nil)
	_ extension.StreamingChannelProvider = (*CLI)(nil)
	_ extension.Stopper                  = (*CLI)(nil)
	_ extension.ConfigChecker            = (*CLI)(nil)
)
