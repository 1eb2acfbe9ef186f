package router

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/growstack"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

// Component is the name under which the inbox schema is versioned.
const Component = "router"

// Defaults for the zero values of Options.
const (
	DefaultMaxParallel     = 8
	DefaultMaxQueue        = 100
	DefaultGrace           = 20 * time.Second
	DefaultMaxMessageBytes = 1 << 20
)

// Topics the router publishes.
const (
	TopicMessageReceived = "message.received"
	TopicMessageReplied  = "message.replied"
)

// Errors returned when an item is not accepted.
var (
	// ErrStopped: the router is shutting down.
	ErrStopped = errors.New("router is stopping")
	// ErrQueueFull: the thread has Options.MaxQueue items waiting.
	ErrQueueFull = errors.New("too many messages waiting in this conversation")
	// ErrEmptyText: the message has no text (and no attachments).
	ErrEmptyText = errors.New("message has no text")
	// ErrTooLarge: the message exceeds Options.MaxMessageBytes.
	ErrTooLarge = errors.New("message too large")
	// ErrOverheard: Handle or Submit was given a message the assistant only
	// listens to (chat.Inbound.Overheard); only Receive takes those.
	ErrOverheard = errors.New("an overheard message is remembered, not answered: hand it to Receive")
	// ErrDuplicate: Handle or Submit was given a message whose channel and
	// ID (chat.Inbound.ID) were accepted before. Receive returns nil for
	// one: the channel handed it over again, and it was accepted then.
	ErrDuplicate = errors.New("this message was received before")
	// ErrDeleted: the message (or regeneration, retry or edit) was for a
	// deleted conversation that stays closed until restored (see
	// extension.ThreadMaker); DeletedReply tells its sender.
	ErrDeleted = errors.New("the conversation was deleted")
)

// DeletedReply is what the sender of a message to a deleted conversation
// that stays closed is told.
const DeletedReply = "This conversation was deleted: restore it (under Archived) to go on with it, or start a new one."

// Agent runs turns (*agent.Agent).
type Agent interface {
	Turn(ctx context.Context, in agent.Input) (agent.Result, error)
	Seed(ctx context.Context, thread chat.ThreadID, stream llm.StreamFunc) (agent.Result, error)
	Compact(ctx context.Context, thread chat.ThreadID) (agent.CompactResult, error)
}

// Threads is what the router needs from the conversation store
// (*conversation.Store).
type Threads interface {
	EnsureThread(ctx context.Context, id chat.ThreadID) (conversation.Thread, bool, error)
	LastMessageID(ctx context.Context, id chat.ThreadID) (int64, error)
	Reset(ctx context.Context, id chat.ThreadID) error
	Append(ctx context.Context, id chat.ThreadID, msgs ...llm.Message) ([]int64, error)
	Branch(ctx context.Context, id chat.ThreadID, fromID int64) (conversation.Segment, error)
	Threads(ctx context.Context, opts conversation.ListOptions) ([]conversation.Thread, error)
	Messages(ctx context.Context, id chat.ThreadID, q conversation.MessageQuery) ([]conversation.StoredMessage, error)
	Thread(ctx context.Context, id chat.ThreadID) (conversation.Thread, bool, error)
	Reopen(ctx context.Context, id chat.ThreadID) (bool, error)
}

// ChannelLookup finds a channel by name (*kernel.Kernel).
type ChannelLookup interface {
	Channel(name string) (extension.ChannelProvider, bool)
}

// Publisher publishes bus events.
type Publisher interface {
	Publish(ctx context.Context, topic string, payload any) error
}

// TxPublisher is a Publisher that also writes an event within a
// transaction of the database's shared group commit (Options.Commits) and
// returns what tells its watchers once that transaction is committed
// (eventbus.Bus.PublishTx): a message's message.received is committed
// with its inbox row, one commit instead of two.
type TxPublisher interface {
	PublishTx(ctx context.Context, tx *sql.Tx, topic string, payload any) (published func(), err error)
}

// Options configure a Router.
type Options struct {
	// DB holds the inbox (required).
	DB *sql.DB
	// Commits, when set, is the database's shared group commit: the
	// inbox's writes (a message accepted, a turn started, an item done)
	// share transactions with the other stores' concurrent writes. nil:
	// each is a transaction of its own.
	Commits *sqlite.Committer
	// Agent runs turns (required).
	Agent Agent
	// Threads is the conversation store (required).
	Threads Threads
	// Channels finds the channel of a thread (nil: nothing is delivered,
	// replies are only stored and returned by Handle).
	Channels ChannelLookup
	// MaxParallel bounds turns running at once (default 8).
	MaxParallel int
	// MaxQueue bounds items waiting per thread (default 100).
	MaxQueue int
	// MaxMessageBytes bounds an inbound message (default 1 MiB).
	MaxMessageBytes int
	// Grace is how long in-flight turns may finish after Run's context
	// ends before they are cancelled (default 20 s).
	Grace time.Duration
	// Roles lists the model roles /status describes; Describe names each
	// role's model ("openai/gpt-4.1-mini").
	Roles    []string
	Describe func(role string) string
	// UsageToday reports today's token usage for /status.
	UsageToday func(ctx context.Context) (llm.Usage, error)
	// Memory, when set, describes the memory store for /status (its
	// embedding model and a re-embedding's progress); "" says nothing.
	Memory func(ctx context.Context) string
	// UsageByRole, when set, breaks today's usage down by model role for
	// /status (the heartbeat's scout, dreaming, sub-sessions…).
	UsageByRole func(ctx context.Context) ([]RoleUsage, error)
	// Extensions, when set, runs the extensions' health checks for /status.
	Extensions func(ctx context.Context) []ExtensionHealth
	// DebugURL is the web debug panel's address for /debug ("" when the
	// web channel is off).
	DebugURL string
	// PanelURL, when set, is asked for the debug panel's address at each
	// /debug instead of DebugURL (the web channel knows its address only
	// once it has bound its listener); "" means not available.
	PanelURL func() string
	// Events receives message.received / message.replied (nil: none).
	Events Publisher
	Now    func() time.Time
	// Answers, when set, sees every user message before it is queued and
	// may take it as an answer to something the thread waits for (a yes or
	// no to an approval request): the waiting turn holds the thread's
	// queue, so such an answer cannot wait in it.
	Answers Interceptor
	// Titles, when set, is told of every answered user message (after its
	// reply was delivered) and may give the conversation a title
	// (conversations.titles: model).
	Titles Titler
	// Listener, when set, remembers the messages the assistant only
	// listens to (chat.Inbound.Overheard); without it they are dropped.
	Listener Listener
	// Voice, when set, transcribes voice messages (audio attachments)
	// before their turn and speaks replies on channels that play audio;
	// without it a recording reaches the model as a line naming its file.
	Voice  Voice
	Logger *slog.Logger
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// Listener remembers a message not addressed to the assistant (the app's
// episode writer: memory.Service.Ingest with no reply).
type Listener interface {
	Overheard(ctx context.Context, msg chat.Inbound) error
}

// Titler names conversations (see Options.Titles). It runs in the thread's
// queue: keep it short and bounded.
type Titler interface {
	Title(ctx context.Context, thread chat.ThreadID, message, reply string)
}

type jobKind string

const (
	jobMessage     jobKind = "message"
	jobSystemEvent jobKind = "system_event"
	jobNotify      jobKind = "notify"
	// Redo kinds (redo.go): they run a thread's last turn again.
	jobRegenerate jobKind = jobKind(ActionRegenerate)
	jobRetry      jobKind = jobKind(ActionRetry)
	jobEdit       jobKind = jobKind(ActionEdit)
)

// RoleUsage is one model role's usage today.
type RoleUsage struct {
	Role  string
	Calls int
	Usage llm.Usage
}

// ExtensionHealth is one extension's state and last health check, as
// /status shows it.
type ExtensionHealth struct {
	ID     string
	State  string // "running", "failed", "skipped", …
	Health string // "ok", "failing", "none" (no check), …
	Detail string // why it failed or is unhealthy
}

// job is one queued item.
type job struct {
	id      int64 // inbox row
	kind    jobKind
	thread  chat.ThreadID
	channel string
	// msgID is the channel's id of the message (chat.Inbound.ID), "" for
	// none: accept records it, and refuses one seen before.
	msgID  string
	sender chat.Sender
	text   string
	// attachments are the message's files in the workspace.
	attachments []chat.Attachment
	origin      agent.Origin
	received    time.Time
	// target is the user message an edit replaces.
	target int64
	// spoken: the message was a voice message, transcribed before its
	// turn (its reply may be spoken: voice_replies when_spoken_to).
	spoken bool
	// started: a turn for this item began before the last stop (the row
	// was found marked at start-up); afterID is the thread's last message
	// id before the turn stored the item; attempts counts turn starts.
	started  bool
	afterID  int64
	attempts int
	// resume: the item is stored and its turn carries on from the history.
	resume bool
	// greet: the item opens a new conversation on a thread that had one
	// (a deleted chat reopened): it is greeted like a new thread's first.
	greet bool
	// done receives the outcome for Handle; nil when nobody waits.
	done chan outcome
	// deliver: the outcome also goes through the channel though done is
	// set (Post, PostRedo).
	deliver bool
	// finished receives the outcome's error for Submit, after delivery;
	// nil when nobody waits.
	finished chan error
	// replied, when set, is the payload of the message.replied its turn's
	// end writes with the removal of its inbox row (endTurn), after ended,
	// the agent's closing event (agent.Input.EndEvent); repliedDone says
	// that it was.
	replied     func(agent.Result, error) any
	ended       []pendingEvent
	repliedDone bool
}

// delivers reports whether j's outcome goes through its channel: always,
// unless a caller waits for it (Handle, HandleRedo).
func (j *job) delivers() bool { return j.done == nil || j.deliver }

// pendingEvent is an event to publish.
type pendingEvent struct {
	topic   string
	payload any
}

type outcome struct {
	res agent.Result
	err error
}

type threadQueue struct {
	jobs    []*job
	running bool               // a worker owns this queue
	cancel  context.CancelFunc // cancels the item in progress (CancelTurn)
}

// Router routes messages to turns and replies to channels.
type Router struct {
	o     Options
	log   *slog.Logger
	start time.Time
	sem   chan struct{}

	cmdMu    sync.RWMutex
	commands map[string]Command

	// replayMu keeps Run's inbox replay apart from acceptances: an item
	// inserted while Run reads the inbox would otherwise be queued twice
	// (once from the replay, once by its acceptance).
	replayMu sync.RWMutex

	mu     sync.Mutex
	pruned time.Time // when router_seen last lost its old rows
	queues map[chat.ThreadID]*threadQueue
	queued map[int64]bool // inbox ids in memory
	// unforgotten are inbox rows whose removal failed (a full disk): their
	// removal is tried again at each later one and at shutdown, so that an
	// item its sender was told to send again is not replayed.
	unforgotten map[int64]chat.ThreadID
	known       map[chat.ThreadID]bool
	running     bool            // Run has started
	stopped     bool            // Run's context ended: accept nothing
	turnCtx     context.Context // parent of every turn while running
	active      int             // turns in progress
	wg          sync.WaitGroup  // workers
}

//go:embed migrations/*.sql
var migrations embed.FS

// New migrates the inbox and returns a Router with the built-in commands
// registered. Call Run to process.
func New(ctx context.Context, opts Options) (*Router, error) {
	switch {
	case opts.DB == nil:
		return nil, errors.New("router: no database")
	case opts.Agent == nil:
		return nil, errors.New("router: no agent")
	case opts.Threads == nil:
		return nil, errors.New("router: no conversation store")
	}
	if err := opts.Migrations.Migrate(ctx, opts.DB, Component, migrations, "migrations"); err != nil {
		return nil, err
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = DefaultMaxParallel
	}
	if opts.MaxQueue <= 0 {
		opts.MaxQueue = DefaultMaxQueue
	}
	if opts.MaxMessageBytes <= 0 {
		opts.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if opts.Grace <= 0 {
		opts.Grace = DefaultGrace
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Router{
		o: opts, log: opts.Logger, start: opts.Now(),
		sem:      make(chan struct{}, opts.MaxParallel),
		commands: map[string]Command{},
		queues:   map[chat.ThreadID]*threadQueue{},
		queued:   map[int64]bool{},

		unforgotten: map[int64]chat.ThreadID{},
		known:       map[chat.ThreadID]bool{},
	}
	r.registerBuiltins()
	return r, nil
}

// Receive accepts a user's message from a channel (extension.Host.Receive):
// it returns once the message is stored in the inbox; the reply goes back
// through the channel.
//
// A message whose channel and ID (chat.Inbound.ID) were accepted before is
// dropped, and Receive returns nil: the channel handed it over again (after
// a crash, or refetching what it could not confirm) and it is answered, or
// remembered, once.
func (r *Router) Receive(ctx context.Context, msg chat.Inbound) error {
	j, err := r.inbound(msg)
	if err != nil {
		return err
	}
	if dup, err := r.seen(ctx, j); err != nil || dup {
		return err
	}
	if msg.Overheard {
		return r.overheard(ctx, msg, j)
	}
	if _, ok := r.intercept(ctx, msg); ok {
		r.markSeen(ctx, j)
		return nil
	}
	if err := r.accept(ctx, j); !errors.Is(err, ErrDuplicate) {
		return err
	}
	return nil
}

// WasReceived reports whether a message with msg's channel and ID
// (chat.Inbound.ID) was accepted before, so that Receive would drop it; a
// message without an ID never was. A channel asks before costly work on a
// message it fetched again: downloading its files.
func (r *Router) WasReceived(ctx context.Context, msg chat.Inbound) (bool, error) {
	return r.seen(ctx, &job{channel: cmp.Or(msg.Address.Channel, msg.Address.Thread.Channel()), msgID: msg.ID})
}

// overheard remembers a message the assistant only listens to: no turn, no
// reply, no inbox row; it returns once the listener stored it.
func (r *Router) overheard(ctx context.Context, msg chat.Inbound, j *job) error {
	if r.o.Listener == nil {
		return nil
	}
	msg.Received = j.received
	msg.Address.Channel = j.channel
	if err := r.o.Listener.Overheard(ctx, msg); err != nil {
		return fmt.Errorf("remember a message on %s: %w", msg.Address.Thread, err)
	}
	r.markSeen(ctx, j)
	return nil
}

// Interceptor takes a user message that answers something its thread waits
// for, instead of queueing it (see Options.Answers).
type Interceptor interface {
	// Intercept reports whether msg was taken, and a short reply saying
	// what it did (for Handle).
	Intercept(ctx context.Context, msg chat.Inbound) (reply string, handled bool)
}

func (r *Router) intercept(ctx context.Context, msg chat.Inbound) (string, bool) {
	if r.o.Answers == nil {
		return "", false
	}
	return r.o.Answers.Intercept(ctx, msg)
}

// Handle runs a message synchronously through the thread's queue and
// returns the turn's result (`reverie send`, MCP clients). Nothing is
// delivered to a channel; a conversation seed's reply comes back in
// Result.SeedReply. If ctx ends first, Handle returns ctx's error and the
// message is still answered (and stored).
func (r *Router) Handle(ctx context.Context, msg chat.Inbound) (agent.Result, error) {
	return r.handle(ctx, msg, false)
}

// Post is Handle for a message on a thread that its channel shows to the
// user (the web API's messages to web threads): the turn is also
// delivered through the channel as a received message's is (a streaming
// channel streams the reply), so that every client following the thread
// sees it, and its result is returned.
func (r *Router) Post(ctx context.Context, msg chat.Inbound) (agent.Result, error) {
	return r.handle(ctx, msg, true)
}

func (r *Router) handle(ctx context.Context, msg chat.Inbound, deliver bool) (agent.Result, error) {
	if msg.Overheard {
		return agent.Result{}, ErrOverheard
	}
	j, err := r.inbound(msg)
	if err != nil {
		return agent.Result{Reply: "The message was not accepted: " + err.Error() + "."}, err
	}
	if dup, err := r.seen(ctx, j); err != nil || dup {
		return agent.Result{}, cmp.Or(err, ErrDuplicate)
	}
	if reply, ok := r.intercept(ctx, msg); ok {
		r.markSeen(ctx, j)
		return agent.Result{Reply: reply}, nil
	}
	j.done, j.deliver = make(chan outcome, 1), deliver
	if err := r.accept(ctx, j); err != nil {
		return agent.Result{Reply: "The message was not accepted: " + err.Error() + "."}, err
	}
	select {
	case o := <-j.done:
		return o.res, o.err
	case <-ctx.Done():
		return agent.Result{}, fmt.Errorf("wait for the reply on %s: %w", j.thread, ctx.Err())
	}
}

// Submit is Receive for a caller that also wants to know when the message
// has been handled (the terminal chat): the reply is delivered through the
// channel as with Receive, and the returned channel then receives nil, or
// the error that ended the turn or command. If the router stops before the
// message ran, it receives ErrStopped (the message stays in the inbox).
func (r *Router) Submit(ctx context.Context, msg chat.Inbound) (<-chan error, error) {
	if msg.Overheard {
		return nil, ErrOverheard
	}
	j, err := r.inbound(msg)
	if err != nil {
		return nil, err
	}
	if dup, err := r.seen(ctx, j); err != nil || dup {
		return nil, cmp.Or(err, ErrDuplicate)
	}
	j.finished = make(chan error, 1)
	if _, ok := r.intercept(ctx, msg); ok {
		r.markSeen(ctx, j)
		j.finished <- nil
		return j.finished, nil
	}
	if err := r.accept(ctx, j); err != nil {
		return nil, err
	}
	return j.finished, nil
}

// CancelTurn cancels what thread is processing now (a user's "stop"): the
// turn ends with context.Canceled, the user's message stays stored, and
// queued items still run. It reports whether something was in progress.
func (r *Router) CancelTurn(thread chat.ThreadID) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	q := r.queues[thread]
	if q == nil || q.cancel == nil {
		return false
	}
	q.cancel()
	return true
}

// EnqueueSystemEvent queues a system event (a worker's result, a reminder)
// into thread's queue; it runs as a turn of kind system_event and its reply,
// if any, is delivered as chat.Notify.
func (r *Router) EnqueueSystemEvent(ctx context.Context, thread chat.ThreadID, text string) error {
	return r.enqueueEvent(ctx, thread, text, agent.OriginExternal)
}

func (r *Router) enqueueEvent(ctx context.Context, thread chat.ThreadID, text string, origin agent.Origin) error {
	if err := thread.Validate(); err != nil {
		return err
	}
	if strings.TrimSpace(text) == "" {
		return ErrEmptyText
	}
	return r.accept(ctx, &job{kind: jobSystemEvent, thread: thread, channel: thread.Channel(), text: text, origin: origin, received: r.o.Now()})
}

// Notify queues a proactive message for out.Address without a model call:
// in the thread's order it is stored as an assistant message and delivered
// (Kind defaults to chat.Notify). It returns once accepted.
func (r *Router) Notify(ctx context.Context, out chat.Outbound) error {
	if err := out.Address.Thread.Validate(); err != nil {
		return err
	}
	if strings.TrimSpace(out.Text) == "" {
		return ErrEmptyText
	}
	ch := out.Address.Channel
	if ch == "" {
		ch = out.Address.Thread.Channel()
	}
	return r.accept(ctx, &job{kind: jobNotify, thread: out.Address.Thread, channel: ch, text: out.Text, received: r.o.Now()})
}

// Deliver is Notify (chat.Deliverer).
func (r *Router) Deliver(ctx context.Context, out chat.Outbound) error { return r.Notify(ctx, out) }

func (r *Router) inbound(msg chat.Inbound) (*job, error) {
	t := msg.Address.Thread
	if err := t.Validate(); err != nil {
		return nil, err
	}
	if strings.TrimSpace(msg.Text) == "" && len(msg.Attachments) == 0 {
		return nil, ErrEmptyText
	}
	if len(msg.Attachments) > chat.MaxAttachments {
		return nil, fmt.Errorf("%w: %d attachments, the limit is %d", ErrTooLarge, len(msg.Attachments), chat.MaxAttachments)
	}
	for i, a := range msg.Attachments {
		if err := a.Validate(); err != nil {
			return nil, fmt.Errorf("attachment %d: %w", i, err)
		}
	}
	if len(msg.Text) > r.o.MaxMessageBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(msg.Text), r.o.MaxMessageBytes)
	}
	if len(msg.ID) > chat.MaxInboundIDLen {
		return nil, fmt.Errorf("%w: a message id of %d bytes, the limit is %d", ErrTooLarge, len(msg.ID), chat.MaxInboundIDLen)
	}
	ch := msg.Address.Channel
	if ch == "" {
		ch = t.Channel()
	}
	received := msg.Received
	if received.IsZero() {
		received = r.o.Now()
	}
	return &job{kind: jobMessage, thread: t, channel: ch, msgID: msg.ID, sender: msg.Sender, text: msg.Text,
		attachments: slices.Clone(msg.Attachments), received: received}, nil
}

// accept stores j in the inbox and queues it.
func (r *Router) accept(ctx context.Context, j *job) error {
	r.mu.Lock()
	if r.stopped {
		r.mu.Unlock()
		return ErrStopped
	}
	if q := r.queues[j.thread]; q != nil && len(q.jobs) >= r.o.MaxQueue {
		r.mu.Unlock()
		return fmt.Errorf("%w (%d)", ErrQueueFull, r.o.MaxQueue)
	}
	r.mu.Unlock()

	r.replayMu.RLock()
	defer r.replayMu.RUnlock()
	// A message's message.received is written with its inbox row when the
	// bus can (one commit; its watchers learn of it once both are
	// committed, as before once the row was), else published after.
	var received func(ctx context.Context, tx *sql.Tx) (func(), error)
	if tp := r.txEvents(); tp != nil && j.kind == jobMessage {
		received = func(ctx context.Context, tx *sql.Tx) (func(), error) {
			return tp.PublishTx(ctx, tx, TopicMessageReceived, receivedPayload(j))
		}
	}
	var published func()
	// The message's id is recorded with its inbox row, in one transaction:
	// a message is in the inbox at most once, and its id is recorded
	// exactly when it is.
	err := r.write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		if j.msgID != "" {
			res, err := tx.ExecContext(ctx, `INSERT OR IGNORE INTO router_seen (channel, message_id, seen_at) VALUES (?,?,?)`,
				j.channel, j.msgID, r.o.Now().UnixMilli())
			if err != nil {
				return err
			}
			if n, err := res.RowsAffected(); err != nil || n == 0 {
				return cmp.Or(err, ErrDuplicate)
			}
		}
		res, err := tx.ExecContext(ctx,
			`INSERT INTO router_inbox (thread, kind, channel, sender_id, sender_name, text, attachments, origin, received_at, target_message_id) VALUES (?,?,?,?,?,?,?,?,?,?)`,
			string(j.thread), string(j.kind), j.channel, j.sender.ID, j.sender.DisplayName, j.text, encodeAttachments(j.attachments), string(j.origin), j.received.UnixNano(), j.target)
		if err != nil {
			return err
		}
		if j.id, err = res.LastInsertId(); err != nil || received == nil {
			return err
		}
		published, err = received(ctx, tx)
		return err
	}, func() {
		if published != nil {
			published()
		}
	})
	if errors.Is(err, ErrDuplicate) {
		r.log.Debug("a message received before was handed over again; dropped", "channel", j.channel, "id", j.msgID)
		return ErrDuplicate
	}
	if err != nil {
		return fmt.Errorf("store inbound %s for %s: %w", j.kind, j.thread, err)
	}
	if j.msgID != "" {
		r.pruneSeen(ctx)
	}
	if j.kind == jobMessage && received == nil {
		r.publish(ctx, TopicMessageReceived, receivedPayload(j))
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.stopped {
		// Accepted (it is in the inbox) but processed on the next start.
		if j.done != nil || j.finished != nil {
			return ErrStopped
		}
		return nil
	}
	r.enqueueLocked(j)
	return nil
}

// receivedPayload is the payload of a message's message.received.
func receivedPayload(j *job) any {
	return struct {
		Thread  chat.ThreadID `json:"thread"`
		Channel string        `json:"channel"`
		Sender  string        `json:"sender,omitempty"`
		Chars   int           `json:"chars"`
	}{j.thread, j.channel, j.sender.ID, len([]rune(j.text))}
}

// enqueueLocked appends j to its thread's queue and starts the thread's
// worker when Run is running and none owns the queue.
func (r *Router) enqueueLocked(j *job) {
	q := r.queues[j.thread]
	if q == nil {
		q = &threadQueue{}
		r.queues[j.thread] = q
	}
	q.jobs = append(q.jobs, j)
	r.queued[j.id] = true
	if r.running && !q.running {
		q.running = true
		r.wg.Add(1)
		go r.worker(j.thread, q)
	}
}

// Run processes queued items until ctx ends, replaying what the inbox holds
// from before, then shuts down as the package documentation says.
func (r *Router) Run(ctx context.Context) error {
	// Turns cut off by the shutdown are cancelled with agent.ErrRestarting
	// as the cause: they are resumed or reported at the next start, not
	// stored as stopped by the user.
	turnCtx, cancelCause := context.WithCancelCause(context.WithoutCancel(ctx))
	cancelTurns := func() { cancelCause(agent.ErrRestarting) }
	defer cancelTurns()
	r.replayMu.Lock()
	pending, err := r.loadInbox(ctx)
	if err != nil {
		r.replayMu.Unlock()
		return err
	}
	r.mu.Lock()
	if r.running || r.stopped {
		r.mu.Unlock()
		r.replayMu.Unlock()
		return errors.New("router: Run called twice")
	}
	r.running, r.turnCtx = true, turnCtx
	for _, j := range pending {
		if !r.queued[j.id] {
			r.enqueueLocked(j)
		}
	}
	for t, q := range r.queues {
		// A turn a stop interrupted comes first in its thread (at most one
		// per thread: a thread runs one item at a time), so that nothing
		// lands in the thread between it and its resumption or note; then
		// acceptance order, which is inbox id order (items accepted before
		// Run started were queued before the replay).
		slices.SortFunc(q.jobs, func(a, b *job) int {
			if a.started != b.started {
				if a.started {
					return -1
				}
				return 1
			}
			return cmp.Compare(a.id, b.id)
		})
		if len(q.jobs) > 0 && !q.running {
			q.running = true
			r.wg.Add(1)
			go r.worker(t, q)
		}
	}
	r.mu.Unlock()
	r.replayMu.Unlock()
	if len(pending) > 0 {
		r.log.Info("replaying accepted messages from before the last stop", "items", len(pending))
	}

	<-ctx.Done()
	r.mu.Lock()
	r.stopped = true
	inFlight := r.active
	r.mu.Unlock()
	if inFlight > 0 {
		r.log.Info("waiting for turns in progress", "turns", inFlight, "grace", r.o.Grace)
	}
	done := make(chan struct{})
	go func() { r.wg.Wait(); close(done) }()
	timer := time.NewTimer(r.o.Grace)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		r.log.Warn("turns still running after the grace period; cancelling them")
		cancelTurns()
		<-done
	}
	// Processed items whose removal failed (a full disk since freed) must
	// not be replayed.
	r.retryForget(ctx)
	// Whoever still waits on a queued item is told; the item stays in the
	// inbox for the next start.
	r.mu.Lock()
	for _, q := range r.queues {
		for _, j := range q.jobs {
			if j.done != nil {
				j.done <- outcome{res: agent.Result{Reply: "The assistant is restarting; your message is saved and will be answered."}, err: ErrStopped}
			}
			if j.finished != nil {
				j.finished <- ErrStopped
			}
		}
	}
	r.mu.Unlock()
	return nil
}

func (r *Router) loadInbox(ctx context.Context) ([]*job, error) {
	out, err := sqlite.Rows(ctx, r.o.DB, r.scanJob,
		`SELECT id, thread, kind, channel, sender_id, sender_name, text, attachments, origin, received_at, started_at, after_message_id, attempts, target_message_id FROM router_inbox ORDER BY id`)
	if err != nil {
		return nil, fmt.Errorf("read router inbox: %w", err)
	}
	return out, nil
}

func (r *Router) scanJob(row sqlite.Scanner) (*job, error) {
	var (
		j                    job
		thread, kind, origin string
		atts                 string
		receivedAt, started  int64
	)
	if err := row.Scan(&j.id, &thread, &kind, &j.channel, &j.sender.ID, &j.sender.DisplayName, &j.text, &atts, &origin, &receivedAt, &started, &j.afterID, &j.attempts, &j.target); err != nil {
		return nil, err
	}
	var err error
	if j.attachments, err = decodeAttachments(atts); err != nil {
		// The text still gets an answer; the files stay in the workspace.
		r.log.Warn("inbox item's attachments unreadable; answering without them", "id", j.id, "err", err)
	}
	j.thread, j.kind, j.origin, j.received = chat.ThreadID(thread), jobKind(kind), agent.Origin(origin), time.Unix(0, receivedAt)
	j.started = started != 0
	return &j, nil
}

// worker processes a thread's queue until it is empty or the router stops.
func (r *Router) worker(thread chat.ThreadID, q *threadQueue) {
	defer r.wg.Done()
	// A turn goes through SQLite's deep frames, and encoding its model
	// request through openai-go's nested MarshalJSON calls needs more
	// than 32 KiB: the stack grows to that in one shallow copy rather
	// than in four ever deeper ones.
	growstack.To64K()
	for {
		r.mu.Lock()
		if len(q.jobs) == 0 || r.stopped {
			q.running = false
			if len(q.jobs) == 0 && r.queues[thread] == q {
				delete(r.queues, thread)
			}
			r.mu.Unlock()
			return
		}
		j := q.jobs[0]
		q.jobs[0] = nil
		q.jobs = q.jobs[1:]
		ctx := r.turnCtx
		r.mu.Unlock()

		select {
		case r.sem <- struct{}{}:
		case <-ctx.Done():
			r.requeue(thread, q, j)
			continue
		}
		jctx, cancel := context.WithCancel(ctx)
		r.mu.Lock()
		r.active++
		q.cancel = cancel
		r.mu.Unlock()
		o := r.process(jctx, j)
		cancel()
		r.mu.Lock()
		r.active--
		q.cancel = nil
		delete(r.queued, j.id)
		r.mu.Unlock()
		<-r.sem
		if j.done != nil {
			j.done <- o
		}
		if j.finished != nil {
			j.finished <- o.err
		}
	}
}

// requeue puts j back at the head of q (the router is stopping; it stays in
// the inbox).
func (r *Router) requeue(thread chat.ThreadID, q *threadQueue, j *job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	q.jobs = append([]*job{j}, q.jobs...)
	r.queues[thread] = q
}

// forget removes j's inbox row (and its turn's journal): it is handled.
func (r *Router) forget(ctx context.Context, j *job) {
	r.mu.Lock()
	r.unforgotten[j.id] = j.thread
	r.mu.Unlock()
	r.retryForget(ctx)
}

// hasUnforgotten reports whether the removal of some inbox row failed and
// waits for retryForget.
func (r *Router) hasUnforgotten() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.unforgotten) > 0
}

// retryForget removes the inbox rows of r.unforgotten; a row whose removal
// fails (the disk is full) stays listed for the next call (the next
// forget, and Run's end).
func (r *Router) retryForget(ctx context.Context) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	r.mu.Lock()
	ids := maps.Clone(r.unforgotten)
	r.mu.Unlock()
	for id, thread := range ids {
		if err := r.exec(ctx, `DELETE FROM router_inbox WHERE id = ?`, id); err != nil {
			r.log.Error("could not remove a processed item from the inbox; trying again at the next one and at shutdown",
				"thread", thread, "id", id, "err", err)
			continue
		}
		r.mu.Lock()
		delete(r.unforgotten, id)
		r.mu.Unlock()
	}
}

// write runs fn in a transaction: the database's shared one
// (Options.Commits) or one of its own, and calls committed, when set, once
// that transaction is committed (not when fn or the commit failed).
func (r *Router) write(ctx context.Context, fn func(ctx context.Context, tx *sql.Tx) error, committed func()) error {
	if r.o.Commits != nil {
		return r.o.Commits.Write(ctx, fn, committed)
	}
	err := sqlite.Tx(ctx, r.o.DB, func(tx *sql.Tx) error { return fn(ctx, tx) })
	if err == nil && committed != nil {
		committed()
	}
	return err
}

// exec runs one write statement: in the database's shared transaction
// (Options.Commits) or on its own.
func (r *Router) exec(ctx context.Context, query string, args ...any) error {
	if r.o.Commits == nil {
		_, err := r.o.DB.ExecContext(ctx, query, args...)
		return err
	}
	return r.o.Commits.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	}, nil)
}

func (r *Router) publish(ctx context.Context, topic string, payload any) {
	if r.o.Events == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if err := r.o.Events.Publish(ctx, topic, payload); err != nil {
		r.log.Warn("could not publish", "topic", topic, "err", err)
	}
}

// shuttingDown reports whether Run has cancelled the turns in progress.
func (r *Router) shuttingDown() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.turnCtx != nil && r.turnCtx.Err() != nil
}

// QueueDepth is the number of items waiting (not running) over all threads.
func (r *Router) QueueDepth() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, q := range r.queues {
		n += len(q.jobs)
	}
	return n
}

// storedAttachment is the JSON shape of a chat.Attachment in the inbox.
type storedAttachment struct {
	Kind      chat.AttachmentKind `json:"kind"`
	Path      string              `json:"path"`
	MediaType string              `json:"media_type,omitempty"`
}

func encodeAttachments(atts []chat.Attachment) string {
	if len(atts) == 0 {
		return ""
	}
	out := make([]storedAttachment, len(atts))
	for i, a := range atts {
		out[i] = storedAttachment(a)
	}
	b, _ := json.Marshal(out) // strings only: cannot fail
	return string(b)
}

func decodeAttachments(s string) ([]chat.Attachment, error) {
	if s == "" {
		return nil, nil
	}
	var stored []storedAttachment
	if err := json.Unmarshal([]byte(s), &stored); err != nil {
		return nil, err
	}
	out := make([]chat.Attachment, 0, len(stored))
	for _, a := range stored {
		if err := chat.Attachment(a).Validate(); err != nil {
			return out, err
		}
		out = append(out, chat.Attachment(a))
	}
	return out, nil
}

// seen reports whether j's channel and message id were accepted before (a
// message without an id never was).
func (r *Router) seen(ctx context.Context, j *job) (bool, error) {
	if j.msgID == "" {
		return false, nil
	}
	var n int
	err := r.o.DB.QueryRowContext(ctx, `SELECT COUNT(*) FROM router_seen WHERE channel = ? AND message_id = ?`, j.channel, j.msgID).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("check whether message %s on %s was received before: %w", j.msgID, j.channel, err)
	}
	if n > 0 {
		r.log.Debug("a message received before was handed over again; dropped", "channel", j.channel, "id", j.msgID)
	}
	return n > 0, nil
}

// markSeen records j's message id for a message handled without an inbox
// row (an overheard one, an answer to an approval): it is handled, so a
// failure only risks handling a redelivery again, and is logged.
func (r *Router) markSeen(ctx context.Context, j *job) {
	if j.msgID == "" {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := r.o.DB.ExecContext(ctx, `INSERT OR IGNORE INTO router_seen (channel, message_id, seen_at) VALUES (?,?,?)`,
		j.channel, j.msgID, r.o.Now().UnixMilli()); err != nil {
		r.log.Error("could not record a handled message's id; the channel handing it over again would have it handled twice",
			"channel", j.channel, "id", j.msgID, "err", err)
		return
	}
	r.pruneSeen(ctx)
}

// pruneSeen forgets message ids older than chat.MaxSeenAge, at most once
// an hour.
func (r *Router) pruneSeen(ctx context.Context) {
	now := r.o.Now()
	r.mu.Lock()
	due := now.Sub(r.pruned) >= time.Hour
	if due {
		r.pruned = now
	}
	r.mu.Unlock()
	if !due {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, err := r.o.DB.ExecContext(ctx, `DELETE FROM router_seen WHERE seen_at < ?`, now.Add(-chat.MaxSeenAge).UnixMilli()); err != nil {
		r.log.Warn("could not forget old message ids", "err", err)
	}
}
