// Package extension is Reverie's kernel API: what an extension is, how it is
// registered, what the host gives it and the capability interfaces through
// which it contributes tools, channels, agents, scheduled jobs, background
// services, prompt context and setup screens.
//
// Extensions register themselves from init, Caddy-style:
//
//	func init() {
//		extension.Register(extension.Info{
//			ID:  "kv",
//			New: func() extension.Extension { return new(KV) },
//		})
//	}
//
// and a bundle of blank imports (extensions/standard) selects the built-in
// set. The kernel (internal/kernel) creates every enabled extension, orders
// them by DependsOn, and drives the lifecycle
//
//	Init → Start → (running) → Stop → Destroy
//
// detecting capabilities by type assertion in one place. Every method other
// than Init is optional: implement Starter, Stopper, Destroyer or
// HealthChecker only when needed. An interface-guard block at the end of each
// implementation documents what it provides:
//
//	var (
//		_ extension.Extension    = (*KV)(nil)
//		_ extension.ToolProvider = (*KV)(nil)
//	)
package extension

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net/http"
	"regexp"
	"sort"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// Extension is the one method every extension has.
type Extension interface {
	// Init decodes the extension's configuration (host.DecodeConfig) and
	// prepares its resources. It must not start goroutines: long-running
	// work belongs in ServiceProvider.Run or Starter.Start. An error stops
	// this extension (and those that depend on it), not the process —
	// unless it is a configuration error (ErrInvalidConfig, or DecodeConfig's
	// error) or the extension is essential (configured explicitly, or the
	// only channel): then the agent does not start.
	Init(ctx context.Context, host Host) error
}

// ConfigChecker is implemented by an extension whose Init can reject a
// configuration. CheckConfig decodes the extension's section with decode
// (Host.DecodeConfig's rules) and validates it exactly as Init does, with
// no side effects: no files written, no connections, no goroutines.
// `reverie doctor` calls it on every enabled extension, so that what would
// stop the start is reported before it. Share the code with Init so that
// the two cannot disagree.
type ConfigChecker interface {
	CheckConfig(decode func(v any) error) error
}

// Diagnoser is a ConfigChecker that can also check, without starting, that
// what its settings name works: a token the service accepts, a server that
// answers. `reverie doctor` calls Diagnose (after CheckConfig passed) on
// every enabled extension that has it, through the kernel, and prints one
// verdict per extension; doctor names no extension itself. Diagnose returns
// what it found ("the bot token works (bot @reverie_bot)"); an error is
// the verdict's failure. It must bound its own calls (ctx has the doctor's
// overall deadline) and start nothing that outlives it.
type Diagnoser interface {
	Diagnose(ctx context.Context, decode func(v any) error, dataDir string) (string, error)
}

// Starter is implemented by extensions with work to do once every extension
// is initialised (open a listener, connect to a server). Start must return
// promptly; ongoing work belongs in ServiceProvider.Run.
type Starter interface {
	Start(ctx context.Context) error
}

// Stopper is implemented by extensions that must stop accepting work on
// shutdown. Stop is called in reverse dependency order, after every
// ServiceProvider.Run has returned.
type Stopper interface {
	Stop(ctx context.Context) error
}

// Destroyer is implemented by extensions that hold resources to release
// after Stop (files, connections). Destroy is called in reverse dependency
// order after every Stop.
type Destroyer interface {
	Destroy(ctx context.Context) error
}

// HealthChecker reports whether the extension works. A nil error is
// healthy. Checks must be cheap and honour ctx.
type HealthChecker interface {
	Health(ctx context.Context) error
}

// StartWaiter is an extension whose start goes on after Start returned
// (servers it launches in the background, as MCP's): WaitStarted waits
// until that is done or ctx ends, and returns a line for the user for each
// part that is not working. A one-shot exchange in process (reverie send, a
// piped chat) waits for it, so that its one turn does not run with tools
// silently missing.
type StartWaiter interface {
	WaitStarted(ctx context.Context) (notUp []string)
}

// ReadyListener is told once, after every extension has started and the
// agent is ready to take messages (the web extension's /healthz turns 200).
type ReadyListener interface {
	OnReady(ctx context.Context)
}

// ToolProvider contributes tools to the agent.
type ToolProvider interface {
	Tools() []tool.Tool
}

// DynamicToolProvider contributes tools that come and go while the agent
// runs: an MCP server's tools are offered while it is up and disappear
// while it is down. CurrentTools is called for every turn, so it must be
// cheap, must not block and must be safe for concurrent use. Its tools are
// offered after the ToolProviders' (a name already taken is dropped) and
// are subject to tools.allow, tools.deny and the workflow profiles like
// any other.
type DynamicToolProvider interface {
	CurrentTools() []tool.Tool
}

// HTTPProvider serves HTTP endpoints on the web channel's listener, behind
// the same rate limits, body limit and authentication as the HTTP API (MCP
// serves /mcp this way). Without the web channel they are not served.
type HTTPProvider interface {
	HTTPEndpoints() []HTTPEndpoint
}

// HTTPEndpoint is one path an HTTPProvider serves.
type HTTPEndpoint struct {
	// Path is an absolute path ("/mcp"); the handler gets requests for the
	// path itself and everything below it ("/mcp/…"). Paths under /api/,
	// /healthz and "/" itself are refused.
	Path    string
	Handler http.Handler
}

// ChannelProvider is a way to talk to the user (web, cli, matrix, telegram).
// Channels hand user messages to the host with Host.Receive and get replies
// and proactive messages through Send.
type ChannelProvider interface {
	// ChannelName is the channel part of the thread ids this channel owns
	// ("web" for "web:…").
	ChannelName() string
	// Send delivers a complete message.
	Send(ctx context.Context, msg chat.Outbound) error
}

// StreamingChannelProvider is a channel that can show a reply while it is
// being written. The router uses it instead of Send when present.
type StreamingChannelProvider interface {
	ChannelProvider
	// OpenStream begins a streamed reply to addr.
	OpenStream(ctx context.Context, addr chat.Address) (Stream, error)
}

// VoiceChannelProvider is a channel that can play a reply spoken aloud (a
// Telegram voice note, a Matrix m.audio event, the web page's play
// button). The router calls SendVoice after the text reply, once per part,
// when the conversation's voice_replies setting asks for speech; channels
// without it get the text only.
type VoiceChannelProvider interface {
	ChannelProvider
	// SendVoice delivers speech (a file in the workspace) to addr.
	SendVoice(ctx context.Context, addr chat.Address, speech chat.Speech) error
}

// Stream is one reply being streamed. Calls come from one goroutine, in
// order; Close is always called last, exactly once.
type Stream interface {
	// Delta appends text to the reply.
	Delta(text string) error
	// Status reports tool activity while the reply is being produced.
	Status(s StreamStatus) error
	// Close ends the stream with the complete reply text, or with the error
	// that ended the turn.
	Close(final string, err error) error
}

// StreamStatus is tool activity reported to a streaming channel.
type StreamStatus struct {
	Kind      StatusKind
	CallID    string
	Tool      string
	Arguments json.RawMessage // set for ToolCallStarted
	Result    string          // set for ToolCallFinished
	IsError   bool
	// Text is a piece of the model's reasoning, set for Thinking: shown
	// apart from the reply (folded), never part of its text. For Waiting
	// it is the wait in plain words ("rate limited by the provider,
	// retrying in 30 s").
	Text string
	// Wait is how long until the model is asked again, set for Waiting.
	Wait time.Duration
}

// StatusKind names a StreamStatus.
type StatusKind string

const (
	ToolCallStarted  StatusKind = "tool_call"
	ToolCallFinished StatusKind = "tool_result"
	// Thinking is reasoning the model streams before (or between) its
	// reply's text; channels that cannot fold it away ignore it.
	Thinking StatusKind = "thinking"
	// Waiting: the model call failed for a while (a rate limit, a server
	// error) and is tried again after Wait; channels show Text as it
	// happens, until the reply (or another Waiting) comes, and keep their
	// typing indicator going.
	Waiting StatusKind = "waiting"
)

// AgentProvider is a specialised agent the orchestrator can hand work to.
// With AsTool it is offered to the main agent as the tool agent_NAME
// (arguments task and optional context), beside the agents defined in
// <data>/agents/; the call's context carries the turn's tool.Call with
// Delegate set to the agent's name, and the tool's result (the answer and
// the tool calls) is untrusted input for the approval rule.
type AgentProvider interface {
	AgentDescriptor() AgentDescriptor
	Invoke(ctx context.Context, inv AgentInvocation) (AgentResponse, error)
}

// AgentDescriptor describes an agent to the orchestrator.
type AgentDescriptor struct {
	// Name is the agent's name; its tool is agent_NAME, which must be a
	// valid tool name.
	Name string
	// Description is what the orchestrator reads to choose the agent.
	Description string
	// AsTool exposes the agent to the orchestrator as the tool agent_NAME.
	AsTool bool
}

// AgentInvocation is one task for an agent.
type AgentInvocation struct {
	Thread  chat.ThreadID
	Task    string
	Context string
}

// AgentResponse is an agent's answer.
type AgentResponse struct {
	Text string
	// ToolCalls are the tool calls the agent made, if it says.
	ToolCalls []AgentToolCall
}

// AgentToolCall is one tool call an agent made.
type AgentToolCall struct {
	Name      string
	Arguments json.RawMessage
	// Error is a failed call's message ("" when it succeeded).
	Error string
}

// SchedulerProvider contributes periodic jobs to the scheduler. The
// built-in heartbeat ("heartbeat/review") and nightly dreaming
// ("dreaming/nightly") register through it too.
type SchedulerProvider interface {
	ScheduledJobs() []Job
}

// Job is a periodic job. Schedule is a cron expression (5 fields) or
// "@every <duration>". The scheduler names it "<extension>/<Name>" and
// records every run in a receipt.
type Job struct {
	Name     string
	Schedule string
	// Run is the job's body; Report replaces it for a job that can say
	// what a run did. One of the two is required.
	Run func(ctx context.Context) error
	// Report, when set, is the job's body instead of Run: its JobReport
	// goes into the run's receipt (model tokens spent, a note, or that
	// there was nothing to do).
	Report func(ctx context.Context) (JobReport, error)
	// Timeout bounds one run when the job needs longer than the
	// scheduler's run timeout (scheduler.run_timeout); zero: that one.
	Timeout time.Duration
}

// JobReport is what a run of a job did, for its receipt.
type JobReport struct {
	Usage llm.Usage
	Note  string
	// Skipped records the run as skipped (nothing to do, quiet hours)
	// rather than fired.
	Skipped bool
}

// ServiceProvider runs a long-lived background service. Run blocks until ctx
// is cancelled (returning nil) or the service fails. A failing service is
// reported and isolated; it does not take the process down.
type ServiceProvider interface {
	Run(ctx context.Context) error
}

// ContextProvider adds text to the prompt of each turn (relevant memories,
// for instance). Providers run in ascending ContextPriority order.
type ContextProvider interface {
	ContextPriority() int
	PromptContext(ctx context.Context, req ContextRequest) (string, error)
}

// ContextRequest is what a ContextProvider knows about the turn.
type ContextRequest struct {
	Thread chat.ThreadID
	// Query is the user's message (or the task) the turn answers.
	Query string
	// Agent is the agent being prompted ("main", a sub-session id, …).
	Agent string
}

// SetupProvider offers an interactive configuration form (the web page's
// setup screen renders it; the values are tested and saved by the provider).
type SetupProvider interface {
	SetupSchema(ctx context.Context) SetupSchema
	// ApplySetup validates the values (making a real test call where one
	// is possible) and saves them; an error explains what is wrong.
	ApplySetup(ctx context.Context, values SetupValues) error
}

// SetupValues are the answers to a SetupSchema's fields, by key.
type SetupValues map[string]string

// SetupSchema is a form.
type SetupSchema struct {
	Title       string
	Description string
	// Configured reports whether the extension already has a working
	// configuration (the setup screen is then optional).
	Configured bool
	Fields     []SetupField
}

// SetupField is one input of a form.
type SetupField struct {
	Key      string
	Label    string
	Kind     FieldKind
	Options  []string // for FieldSelect
	Default  string
	Required bool
	Help     string
}

// FieldKind is how a setup field is entered.
type FieldKind string

const (
	FieldText   FieldKind = "text"
	FieldSecret FieldKind = "secret"
	FieldURL    FieldKind = "url"
	FieldSelect FieldKind = "select"
)

// Pairer is a channel where people the owner has not allowed yet can ask
// for access: the channel gives them a one-time pairing code, and the owner
// approves it from a trusted place (the /approve command on the owner's
// channels, the web API, the command line).
type Pairer interface {
	ChannelProvider
	// ApprovePairing lets in the person who was given code. An unknown,
	// used or expired code is ErrPairingCode (wrapped).
	ApprovePairing(ctx context.Context, code string) (Paired, error)
	// IsOwner reports whether the sender with this id (chat.Sender.ID) is
	// one of the channel's owners, configured rather than let in by
	// pairing: only owners approve pairing codes from the channel.
	IsOwner(senderID string) bool
}

// ThreadMaker is a channel whose user makes a new thread for each
// conversation (the web page's "New session") rather than having one thread
// per chat (Telegram, Matrix, the terminal). A deleted thread of such a
// channel stays closed: the router refuses messages to it until it is
// restored. A deleted thread of any other channel starts a new
// conversation with its next message, the deleted one kept readable as a
// closed conversation.
type ThreadMaker interface {
	ChannelProvider
	// MakesThreads reports whether the channel's user makes its threads.
	MakesThreads() bool
}

// SharedThreads is a channel some of whose threads other people read too
// (Telegram groups, Matrix rooms with several members): an approval request from such a thread shows its data
// only in the owner's private thread, where it is answered.
type SharedThreads interface {
	// SharedThread reports whether thread is read by others and, if so,
	// the owner's private thread ("" when the channel has none).
	SharedThread(thread chat.ThreadID) (private chat.ThreadID, shared bool)
}

// Paired is who a pairing code let in.
type Paired struct {
	Channel string
	UserID  string
	Name    string
}

// ErrPairingCode: the pairing code is unknown, already used or expired.
var ErrPairingCode = errors.New("unknown, used or expired pairing code")

// ErrInvalidConfig marks an Init error caused by the extension's own
// configuration: a value DecodeConfig accepted but that cannot work (the
// web channel without authentication on a public address, say). Wrap it
// (fmt.Errorf("web.auth: …: %w", extension.ErrInvalidConfig)) and the agent
// refuses to start, like for any configuration error, instead of running
// without the extension.
var ErrInvalidConfig = errors.New("invalid configuration")

// ErrEnvironment marks a Start error caused by the machine around the
// agent rather than its configuration or data: the address to listen on is
// used by another program. Wrap it and the agent exits with its own code
// (5), which the supervisor does not restart on: restarting does not free
// the port.
var ErrEnvironment = errors.New("the environment prevents the start")

// Host is what the kernel gives an extension in Init. The values it returns
// stay valid until Destroy.
type Host interface {
	// ID is the extension's registered id.
	ID() string
	// Logger is a logger tagged with the extension id.
	Logger() *slog.Logger
	// DataDir is the absolute path of Reverie's data directory.
	DataDir() string
	// DecodeConfig decodes the extension's own section of the configuration
	// (with REVERIE_<ID>__… environment overrides applied) into v, strictly:
	// unknown keys and wrong types are errors naming file, line and key.
	// A missing section leaves v unchanged, so set defaults first.
	DecodeConfig(v any) error
	// DB is the shared SQLite database. Extensions create their own tables
	// with migrations under their own component name (Migrate).
	DB() *sql.DB
	// Migrate applies the extension's migrations to DB, as the package's
	// Migrate does, sharing the start's one read of what is applied with
	// the other components.
	Migrate(ctx context.Context, component string, files fs.FS, dir string) error
	// Bus is the durable event bus.
	Bus() Bus
	// Receive hands a user's message arriving on a channel to the router.
	// It returns once the message is accepted (persisted), not when the
	// reply is done; the reply comes back through the channel.
	Receive(ctx context.Context, msg chat.Inbound) error
	// Now is the current time from the host's clock (tests inject one).
	Now() time.Time
	// RegisterSecret adds a credential the extension resolved (a bot
	// token, an access token, a password, a server's API key) to the
	// process's set of secret values: from then on it is replaced by
	// RedactedSecret in every log line, stored event and interaction,
	// conversation message and HTTP error, wherever it appears (also
	// URL-encoded, JSON-escaped or base64). Call it in Init, as soon as the
	// value is known and before using it. Values shorter than 8 bytes are
	// ignored (they would match ordinary text). Safe for concurrent use.
	RegisterSecret(value string)
	// Redact returns text with every registered secret replaced by
	// RedactedSecret. Use it on text the extension sends outside on its
	// own (an error shown in a chat, a status message to a server);
	// logging through Logger and publishing on Bus redact already.
	Redact(text string) string
}

// RedactedSecret is what a registered secret is replaced with
// (Host.RegisterSecret).
const RedactedSecret = "[REDACTED]"

// Bus is the durable event bus as extensions see it.
type Bus interface {
	// Publish persists an event (payload marshalled to JSON) before
	// returning.
	Publish(ctx context.Context, topic string, payload any) error
	// Subscribe registers a durable named subscriber for every topic that
	// starts with prefix. Delivery is at least once and in order per topic;
	// a handler error is retried with backoff, then dead-lettered. Subscribe
	// must be called from Init.
	Subscribe(name, prefix string, h Handler) error
}

// Handler handles one event. Returning an error asks for redelivery.
type Handler func(ctx context.Context, ev Event) error

// Event is a published event.
type Event struct {
	ID      int64
	Topic   string
	Payload json.RawMessage
	Time    time.Time
	// Attempt counts deliveries of this event to this subscriber, from 1.
	Attempt int
}

// Info registers an extension.
type Info struct {
	// ID is unique, lower-case, [a-z][a-z0-9_]*; it names the extension's
	// configuration section.
	ID string
	// New returns a new, uninitialised instance. It must only allocate:
	// it is also called to learn what the extension is (the commands that
	// run the agent in process leave out every ChannelProvider).
	New func() Extension
	// DependsOn lists ids that must be initialised and started first.
	DependsOn []string
	// Disabled makes the extension opt-in: it runs only when its config
	// section says enabled: true. Otherwise it runs unless it says false.
	Disabled bool
	// AutoEnable, when set, replaces Disabled's default for a section
	// without an explicit `enabled` key (nor REVERIE_<ID>__ENABLED): it
	// gets the decoder of the extension's section (as Host.DecodeConfig)
	// and reports whether the configuration asks for the extension (the
	// Telegram channel runs once a token is set). An explicit enabled key
	// always wins.
	AutoEnable func(decode func(v any) error) bool
	// NotConfigured, with AutoEnable, is the warning `reverie doctor`
	// gives when the extension's section is present (and not enabled:
	// false) but AutoEnable finds nothing in it that turns the extension
	// on, so it stays off: what is missing and how to set it.
	NotConfigured string
	// Description is one line for `reverie doctor` and the debug panel.
	Description string
}

var (
	registryMu sync.RWMutex
	registry   = map[string]Info{}
	validID    = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-z][a-z0-9_]*$`) })
)

// Register adds an extension to the registry. It is meant to be called from
// init and panics on an invalid or duplicate id or a nil constructor.
func Register(info Info) {
	if !validID().MatchString(info.ID) {
		panic(fmt.Sprintf("extension.Register: invalid id %q", info.ID))
	}
	if info.New == nil {
		panic(fmt.Sprintf("extension.Register: %q has no constructor", info.ID))
	}
	registryMu.Lock()
	defer registryMu.Unlock()
	if _, dup := registry[info.ID]; dup {
		panic(fmt.Sprintf("extension.Register: %q registered twice", info.ID))
	}
	info.DependsOn = append([]string(nil), info.DependsOn...)
	registry[info.ID] = info
}

// Lookup returns the registration of id.
func Lookup(id string) (Info, bool) {
	registryMu.RLock()
	defer registryMu.RUnlock()
	info, ok := registry[id]
	return info, ok
}

// Registered returns every registered extension, sorted by id.
func Registered() []Info {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]Info, 0, len(registry))
	for _, info := range registry {
		out = append(out, info)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
	return out
}
