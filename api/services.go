// Package api is the contract of Reverie's HTTP API (docs/api.md): the JSON
// types of every request and response, with stable field names, and the
// small service interfaces the web extension serves them from.
//
// The agent process (internal/app) implements the services over its
// internal packages and offers them to extensions through the host:
//
//	svc := api.ServicesFrom(host) // nil fields: feature not available
//	if svc.Memories != nil { … }
//
// Every field of Services may be nil; the web extension answers the
// endpoints of a nil service with 501. The package imports only the
// standard library and Reverie's public vocabulary packages, so
// out-of-tree extensions can use it too.
package api

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// Prefix is the path prefix of every API endpoint.
const Prefix = "/api/v1"

// The control socket: a running agent serves the same API on a Unix socket
// in its data dir (mode 0600, peers of another uid refused), for the
// command line on the same machine (docs/api.md "Control socket"). A
// request over it carries the control token, kept in the data dir, as its
// bearer token.
const (
	// ControlSocket is the socket's file name in the data dir.
	ControlSocket = "reverie.sock"
	// ControlTokenFile is where the control token is kept, relative to
	// the data dir (mode 0600).
	ControlTokenFile = "secrets/control_token"
)

// Errors the services return (wrapped, with details) so the web extension
// can choose the HTTP status. Anything else is a 500.
var (
	// ErrInvalid: the request is malformed or a value is not allowed (400).
	ErrInvalid = errors.New("invalid request")
	// ErrNotFound: no such thread, memory, item, skill, task or workflow (404).
	ErrNotFound = errors.New("not found")
	// ErrConflict: the change conflicts with the current state (409).
	ErrConflict = errors.New("conflict")
	// ErrTooLarge: a message or value exceeds a size limit (413).
	ErrTooLarge = errors.New("too large")
	// ErrBusy: too much is waiting; retry later (429).
	ErrBusy = errors.New("busy")
	// ErrUnavailable: the agent is starting or stopping (503).
	ErrUnavailable = errors.New("unavailable")
	// ErrTurnFailed: the turn ran but failed (the model could not be
	// reached, …); the Reply still carries a user-facing text (502).
	ErrTurnFailed = errors.New("turn failed")
	// ErrTestFailed: setup values failed their test; nothing was saved (422).
	ErrTestFailed = errors.New("setup test failed")
)

// kinds are the errors above, whose words lead a service error's text.
var kinds = []error{ErrInvalid, ErrNotFound, ErrConflict, ErrTooLarge, ErrBusy, ErrUnavailable, ErrTurnFailed, ErrTestFailed}

// Reason is a service error's text for a person: without the words of the
// error above it starts with ("conflict: dreaming needs a language model…"
// is "dreaming needs a language model…"), which an HTTP status or an exit
// code already says. The web extension answers it as the body's "error".
func Reason(err error) string {
	msg := err.Error()
	for _, k := range kinds {
		if rest, ok := strings.CutPrefix(msg, k.Error()+": "); ok && errors.Is(err, k) {
			return rest
		}
	}
	return msg
}

// Services are what the agent offers the HTTP API. Any field may be nil: the
// feature is not part of this build or is switched off.
type Services struct {
	Info    Info
	Threads Threads
	Chat    Chat
	// Conversations manages threads (rename, delete, restore, archived
	// parts, search) and runs regenerations, retries and edits.
	Conversations Conversations
	Memories      Memories
	Pulse         Pulse
	Skills        Skills
	World         World
	Tasks         Tasks
	Workflows     Workflows
	Interactions  Interactions
	Usage         TokenUsage
	Events        Events
	Prompt        Prompt
	Setup         Setup
	History       History
	Pairing       Pairing
	Approvals     Approvals
	Models        Models
	Dreams        Dreams
	// Project compiles GET /status/project.
	Project Project
	// Endpoints are the extensions' own HTTP endpoints (MCP's /mcp),
	// served on the web listener behind the API's authentication.
	Endpoints Endpoints

	// Instance identifies this run of the agent process (the per-start id
	// the supervisor passes in REVERIE_INSTANCE; "" when started without
	// one). GET /healthz echoes it so that the supervisor knows its probe
	// reached its own child.
	Instance string
}

// Provider is the optional interface of an extension.Host that offers the
// services.
type Provider interface {
	APIServices() *Services
}

// ServicesFrom returns the services the host offers, or an empty (all nil)
// Services when it offers none. The result is never nil.
func ServicesFrom(h extension.Host) *Services {
	if p, ok := h.(Provider); ok {
		if s := p.APIServices(); s != nil {
			return s
		}
	}
	return &Services{}
}

// Info describes the running agent.
type Info interface {
	// Info reports the version, whether a model is configured and the
	// slash commands.
	Info(ctx context.Context) (AgentInfo, error)
}

// Threads lists conversations and their messages.
type Threads interface {
	List(ctx context.Context, q ThreadQuery) ([]Thread, error)
	// Messages returns a thread's messages, oldest first; an unknown thread
	// has none.
	Messages(ctx context.Context, thread chat.ThreadID, q MessageQuery) ([]Message, error)
}

// Chat runs messages synchronously.
type Chat interface {
	// Handle runs msg (a message or a slash command) through its thread's
	// queue and returns the turn's result; nothing is delivered to a
	// channel. Errors: ErrInvalid, ErrTooLarge, ErrBusy, ErrUnavailable,
	// ErrTurnFailed (the Reply is still filled in). If ctx ends first the
	// message is still answered and stored.
	Handle(ctx context.Context, msg chat.Inbound) (Reply, error)
	// Post is Handle for a message on a thread its channel shows to the
	// user (a web thread): the turn is also delivered through that
	// channel, as a message the channel received is, so that every page
	// following the thread sees the message's reply; the result is
	// returned as Handle's.
	Post(ctx context.Context, msg chat.Inbound) (Reply, error)
	// Cancel stops the turn the thread is processing (its reply ends with
	// an error frame; what was written so far is kept). It reports whether
	// something was running.
	Cancel(ctx context.Context, thread chat.ThreadID) bool
}

// Conversations manages threads and their history beyond Threads.
// Errors: ErrNotFound (no such thread, message or segment), ErrInvalid (an
// empty title or query, a message that cannot be edited), ErrConflict
// (nothing to regenerate; a retry of a reply that did not fail), and
// Chat.Handle's errors for Redo.
type Conversations interface {
	Rename(ctx context.Context, thread chat.ThreadID, title string) (Thread, error)
	// Archive deletes the thread from the list (restorable); Restore
	// brings it back.
	Archive(ctx context.Context, thread chat.ThreadID) (Thread, error)
	Restore(ctx context.Context, thread chat.ThreadID) (Thread, error)
	Segments(ctx context.Context, q SegmentQuery) ([]Segment, error)
	Segment(ctx context.Context, id int64) (SegmentMessages, error)
	Search(ctx context.Context, q string, limit int) ([]SearchHit, error)
	// Redo runs the request synchronously and returns the new reply,
	// which is also delivered through the thread's channel as Submit's
	// is (Chat.Post's delivery).
	Redo(ctx context.Context, r RedoRequest) (Reply, error)
	// Submit queues the request in the thread's order; the reply is
	// delivered through the thread's channel (streamed on the web). The
	// returned channel then receives nil or the error that ended the
	// turn, after everything the turn delivered (the terminal chat waits
	// for it; the web learns the end from the done frame).
	Submit(ctx context.Context, r RedoRequest) (<-chan error, error)
}

// Memories reads and edits long-term memories.
type Memories interface {
	// Search runs hybrid recall without counting an access.
	Search(ctx context.Context, q MemorySearch) ([]Memory, error)
	List(ctx context.Context, f MemoryFilter) ([]Memory, error)
	Get(ctx context.Context, id int64) (Memory, error)
	// Add stores a memory (an equal current memory is returned instead).
	Add(ctx context.Context, in MemoryInput) (Memory, error)
	Update(ctx context.Context, id int64, in MemoryInput) (Memory, error)
	// Forget deletes the memory for good (and its MEMORIES.txt line).
	Forget(ctx context.Context, id int64) error
	// History returns the memory's earlier versions (the closed memories
	// whose text edits led to it), newest first. ErrNotFound for an
	// unknown id.
	History(ctx context.Context, id int64) ([]Memory, error)
}

// Pulse reads and edits the working memory.
type Pulse interface {
	// List returns the items with status (PulseActive, PulseCompleted,
	// PulseCancelled, or "all"; "" means PulseActive).
	List(ctx context.Context, status string) ([]PulseItem, error)
	Add(ctx context.Context, in PulseInput) (PulseItem, error)
	Update(ctx context.Context, id int64, in PulseInput) (PulseItem, error)
	Delete(ctx context.Context, id int64) error
}

// Skills reads and edits the learned procedures.
type Skills interface {
	List(ctx context.Context) ([]Skill, error)
	Get(ctx context.Context, name string) (Skill, error)
	Put(ctx context.Context, name, content string) (Skill, error)
	Delete(ctx context.Context, name string) error
}

// World reads and replaces the durable world state document.
type World interface {
	Get(ctx context.Context) (WorldState, error)
	// Put validates and saves the whole document, returning it as saved.
	Put(ctx context.Context, doc WorldState) (WorldState, error)
}

// Tasks reads and edits schedules (reminders, AI tasks) and their run
// receipts.
type Tasks interface {
	List(ctx context.Context, q TaskQuery) ([]Task, error)
	Get(ctx context.Context, id string) (Task, error)
	Add(ctx context.Context, in TaskInput) (Task, error)
	Pause(ctx context.Context, id string) (Task, error)
	Resume(ctx context.Context, id string) (Task, error)
	Cancel(ctx context.Context, id string) (Task, error)
	Receipts(ctx context.Context, q ReceiptQuery) ([]Receipt, error)
}

// Workflows reads workflows of sub-sessions and cancels them.
type Workflows interface {
	List(ctx context.Context, q WorkflowQuery) ([]Workflow, error)
	Get(ctx context.Context, id string) (Workflow, error)
	// Cancel cancels a workflow's (or one sub-session's) unfinished
	// sub-sessions and returns the ids cancelled.
	Cancel(ctx context.Context, id string) ([]string, error)
}

// Interactions reads the interaction log.
type Interactions interface {
	List(ctx context.Context, q InteractionQuery) ([]Interaction, error)
	// Actions lists the known action names (for the filter).
	Actions() []string
}

// TokenUsage reads token usage.
type TokenUsage interface {
	// Usage returns rows for UTC days in [from, to] (YYYY-MM-DD; empty is
	// unbounded), newest day first.
	Usage(ctx context.Context, from, to string) ([]UsageRow, error)
}

// Events reads the event bus.
type Events interface {
	// Watch delivers events published from now on whose topic starts with
	// prefix, until ctx ends (then the channel is closed). Delivery never
	// blocks publishers: when the buffer is full, events are dropped for
	// this watcher.
	Watch(ctx context.Context, prefix string, buffer int) <-chan extension.Event
	// Recent returns stored events with id > afterID, oldest first.
	Recent(ctx context.Context, prefix string, afterID int64, limit int) ([]extension.Event, error)
	// Last returns the newest limit stored events, oldest first.
	Last(ctx context.Context, prefix string, limit int) ([]extension.Event, error)
}

// EventOf converts a bus event to its JSON form.
func EventOf(ev extension.Event) Event {
	return Event{ID: ev.ID, Topic: ev.Topic, Time: ev.Time, Payload: ev.Payload}
}

// Prompt reports the system prompt of the last turn.
type Prompt interface {
	// LastPrompt returns the system prompt of the last turn on thread (any
	// thread when ""); ErrNotFound when none ran since the start.
	LastPrompt(ctx context.Context, thread chat.ThreadID) (SystemPrompt, error)
}

// Pairing approves the one-time codes channels with pairing (Telegram)
// give people the owner has not let in yet.
type Pairing interface {
	// Approve lets in the person who was given code on channel.
	// Errors: ErrInvalid (empty code), ErrNotFound (unknown, used or
	// expired code, or the channel is not running).
	Approve(ctx context.Context, channel, code string) (PairingApproval, error)
}

// Setup lists configuration forms and applies them.
type Setup interface {
	Forms(ctx context.Context) (SetupStatus, error)
	// Apply tests and saves a form's values; ErrNotFound for an unknown
	// form, ErrTestFailed (with the reason) when the test failed.
	Apply(ctx context.Context, form string, values map[string]string) (string, error)
}

// Endpoints looks up the HTTP endpoints extensions serve
// (extension.HTTPProvider).
type Endpoints interface {
	// Endpoint returns the handler for path (an endpoint's path or a path
	// below it), or false.
	Endpoint(path string) (http.Handler, bool)
}

// Approvals lists and answers the tool calls waiting for the user's
// approval.
type Approvals interface {
	// Pending lists the pending requests of thread (every thread when
	// empty), oldest first.
	Pending(ctx context.Context, thread chat.ThreadID) ([]Approval, error)
	// Answer approves or denies request id; via says how ("web", "http",
	// "cli"). ErrNotFound for an unknown id, ErrConflict (with the request)
	// when it is no longer pending.
	Answer(ctx context.Context, id string, approve bool, via string) (Approval, error)
}

// TimePtr returns &t, or nil for the zero time (optional timestamps are
// pointers so that JSON shows null).
func TimePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Project compiles the project status: a manifest of what is in progress,
// built mechanically (no model call) from the world state, the open pulse
// items, the active workflows and their workers, the last turns' tool
// trace and the evidence those calls brought in.
type Project interface {
	// Status compiles the manifest for thread; "" takes the conversation
	// active most recently. The same state always gives the same manifest.
	Status(ctx context.Context, thread chat.ThreadID) (ProjectStatus, error)
}
