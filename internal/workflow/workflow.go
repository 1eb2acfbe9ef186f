package workflow

import (
	"context"
	"database/sql"
	"errors"
	"log/slog"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// Component is the name under which the schema is versioned.
const Component = "workflow"

// Prefixes of the ids this package hands out.
const (
	SessionPrefix  = chat.SubSessionPrefix // "sub_"
	WorkflowPrefix = "wf_"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxConcurrent    = 4
	DefaultTimeout          = 300 * time.Second
	DefaultMaxContinuations = 3
	DefaultMaxDepth         = 2
	// MaxTimeout caps a spawn's timeout.
	MaxTimeout = 24 * time.Hour
	// MaxResultChars caps a result handed to dependents or delivered.
	MaxResultChars = 12000
	// MaxObjectiveChars and MaxContextChars bound what a spawn may carry.
	MaxObjectiveChars = 4000
	MaxContextChars   = 64000
)

// Topics published on the event bus.
const (
	TopicStarted           = "sub_session.started"
	TopicCompleted         = "sub_session.completed"
	TopicFailed            = "sub_session.failed"
	TopicTimeout           = "sub_session.timeout"
	TopicCancelled         = "sub_session.cancelled"
	TopicWorkflowCreated   = "workflow.created"
	TopicWorkflowMerged    = "workflow.merged"
	TopicWorkflowCompleted = "workflow.completed"
	TopicWorkflowFailed    = "workflow.failed"
	TopicWorkflowCancelled = "workflow.cancelled"
)

// ActionSubSession is the interaction-log action of a worker's run.
const ActionSubSession interactions.Action = "sub_session"

// Errors.
var (
	// ErrNotFound: no sub-session or workflow has that id. Errors read
	// `workflow "wf_1" not found`, `sub-session "sub_1" not found`.
	ErrNotFound = errors.New("not found")
	// ErrFinished: the sub-session or workflow has already finished.
	ErrFinished = errors.New("has already finished")
	// ErrDepth: spawning would exceed the nesting depth limit.
	ErrDepth = errors.New("nesting depth limit reached")
	// ErrNotAllowed: the spawning session may not spawn (only full-mode
	// workers may).
	ErrNotAllowed = errors.New("this session may not spawn sub-sessions")
	// ErrInvalid is wrapped by errors about a bad SpawnRequest.
	ErrInvalid = errors.New("invalid spawn request")
	// ErrClosed: Run has returned; nothing more runs in this process.
	ErrClosed = errors.New("workflow manager is stopped")
)

// State is a sub-session's state.
type State string

// States. Terminal: completed, failed, timeout, cancelled. A timed-out
// session that was continued is superseded by its continuation (see
// Node.ContinuedBy).
const (
	StatePending   State = "pending"
	StateRunning   State = "running"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
	StateTimeout   State = "timeout"
	StateCancelled State = "cancelled"
)

// Terminal reports whether s is a final state.
func (s State) Terminal() bool {
	switch s {
	case StateCompleted, StateFailed, StateTimeout, StateCancelled:
		return true
	}
	return false
}

// Deliverer queues a system event into a thread (*router.Router): the
// agent answers it there and tells the user.
type Deliverer interface {
	EnqueueSystemEvent(ctx context.Context, thread chat.ThreadID, text string) error
}

// Publisher publishes bus events (*eventbus.Bus).
type Publisher interface {
	Publish(ctx context.Context, topic string, payload any) error
}

// InteractionLog records interactions (*interactions.Store).
type InteractionLog interface {
	Log(ctx context.Context, entries ...interactions.Entry) error
}

// Sources supply the variable sections of a full-mode worker's prompt
// (agent.DataDirSources, or the memory/pulse/skills stores).
type Sources interface {
	Memories(ctx context.Context) (string, error)
	Pulse(ctx context.Context) (string, error)
	Skills(ctx context.Context) ([]prompt.Skill, error)
}

// Options configure a Manager.
type Options struct {
	// DB holds workflows, nodes, message lists and outcomes (required).
	DB *sql.DB
	// Model runs the workers: the sub_sessions role (required).
	Model toolloop.Model
	// Tools returns the tools workers choose from (the main agent's tool
	// set, without the tools of this package); called when a worker
	// starts. nil offers none.
	Tools func() []tool.Tool
	// Profiles are the configured tool profiles (name → tools or
	// "@category" entries).
	Profiles tool.Profiles
	// Deliver queues results into threads (nil: results are only stored).
	Deliver Deliverer
	// Events receives sub_session.* and workflow.* (nil: none).
	Events Publisher
	// Interactions records every worker run and tool call (nil: none).
	Interactions InteractionLog
	// DataDir holds BASE_PROMPT.txt (full and base_only modes).
	DataDir string
	// Sources supply memories, pulse and skills for full mode (nil:
	// agent.DataDirSources over DataDir).
	Sources Sources
	// ProjectStatus, when set, gives the project status manifest of a
	// conversation (internal/projectstatus); full-mode workers read their
	// root conversation's in the Additional Context section.
	ProjectStatus func(ctx context.Context, thread chat.ThreadID) (string, error)
	// Location interprets naive not_before times and is shown to workers
	// (nil: UTC).
	Location *time.Location
	// MaxConcurrent bounds workers running at once (default 4).
	MaxConcurrent int
	// DefaultTimeout applies when a spawn gives none (default 300 s).
	DefaultTimeout time.Duration
	// MaxContinuations bounds the continuation hops after timeouts, and
	// the restarts a running worker is resumed after (default 3).
	MaxContinuations int
	// MaxDepth is the deepest nesting level (default 2: main agent →
	// sub-session → sub-sub-session).
	MaxDepth int
	// Loop tunes each worker's tool loop (MaxRounds, Parallel, CallTimeout,
	// MaxResultChars).
	Loop toolloop.Options
	// ClaimRules are the supervisor rules applied to worker reports (nil:
	// agent.DefaultClaimRules).
	ClaimRules []agent.ClaimRule
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// SpawnRequest asks for a sub-session.
type SpawnRequest struct {
	// Objective is what the worker must achieve (required).
	Objective string
	// Context is background the worker needs (optional).
	Context string
	// Mode is the system prompt mode: minimal (default), full, base_only
	// or none. Only full-mode workers may spawn further sub-sessions.
	Mode prompt.Mode
	// ToolNames narrows the worker's tools to these names; unknown names
	// are dropped with a warning.
	ToolNames []string
	// Profile selects a configured tool profile instead of ToolNames.
	Profile string
	// DependsOn lists sub-session ids that must complete first; unknown
	// ids are dropped with a warning.
	DependsOn []string
	// DependsOnPrevious adds every session the parent spawned before (see
	// the package documentation for the exact set).
	DependsOnPrevious bool
	// NotBefore delays the start until this time (checked after the
	// dependencies); zero for none.
	NotBefore time.Time
	// Timeout bounds one worker run (0: Options.DefaultTimeout).
	Timeout time.Duration
	// Parent is who spawns: a user thread (results are delivered there),
	// a sub-session id (a nested spawn), or "" for a fire-and-forget
	// system spawn whose result is only stored and published.
	Parent chat.ThreadID
	// TaskID links the session to a scheduled task (recorded in outcomes).
	TaskID string
	// MaxRounds bounds the worker's rounds of tool calls per run (0:
	// Options.Loop.MaxRounds, else the tool loop's default).
	MaxRounds int
	// Taint names the untrusted input in the conversation the spawn came
	// from ("": none; see tool.Taint). The worker inherits it: its calls
	// that could carry data out to a destination not fixed before are
	// refused, since a worker cannot ask the user.
	Taint string
}

// SpawnResult is what Spawn returns at once.
type SpawnResult struct {
	ID       string `json:"session_id"`
	Workflow string `json:"workflow_id"`
	State    State  `json:"state"`
	// Waiting says why a pending session has not started ("" when it is
	// queued to start now).
	Waiting   string   `json:"waiting,omitempty"`
	Depth     int      `json:"depth"`
	DependsOn []string `json:"depends_on,omitempty"`
	// Warnings report what was dropped (unknown dependency ids or tool
	// names, a profile entry that does not resolve).
	Warnings []string `json:"warnings,omitempty"`
}

// Node is a sub-session as the API, the web panel and tools see it.
type Node struct {
	ID             string     `json:"id"`
	Workflow       string     `json:"workflow_id"`
	Parent         string     `json:"parent,omitempty"`
	RootThread     string     `json:"root_thread,omitempty"`
	Depth          int        `json:"depth"`
	Objective      string     `json:"objective"`
	Context        string     `json:"context,omitempty"`
	Mode           string     `json:"mode"`
	Profile        string     `json:"profile,omitempty"`
	Tools          []string   `json:"tools,omitempty"`
	DependsOn      []string   `json:"depends_on"`
	NotBefore      *time.Time `json:"not_before,omitempty"`
	TimeoutSeconds float64    `json:"timeout_seconds"`
	TaskID         string     `json:"task_id,omitempty"`
	State          State      `json:"state"`
	// Waiting says why a pending session has not started: "dependencies",
	// "not_before", "concurrency" (queued behind the limit) or "stopped".
	Waiting        string     `json:"waiting,omitempty"`
	Result         string     `json:"result,omitempty"`
	Error          string     `json:"error,omitempty"`
	Hop            int        `json:"hop"`
	ContinuationOf string     `json:"continuation_of,omitempty"`
	ContinuedBy    string     `json:"continued_by,omitempty"`
	ToolCalls      int        `json:"tool_calls"`
	Usage          llm.Usage  `json:"usage"`
	Verdict        string     `json:"supervisor_verdict,omitempty"`
	Delivered      bool       `json:"delivered"`
	CreatedAt      time.Time  `json:"created_at"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
}

// Workflow is a graph of sub-sessions.
type Workflow struct {
	ID         string `json:"id"`
	RootThread string `json:"root_thread,omitempty"`
	// State is running while any node is pending or running, else
	// completed when every (non-superseded) node completed, cancelled when
	// nodes were cancelled and none failed, failed otherwise.
	State      State      `json:"state"`
	CreatedAt  time.Time  `json:"created_at"`
	FinishedAt *time.Time `json:"finished_at,omitempty"`
	// MergedFrom lists workflows merged into this one.
	MergedFrom []string `json:"merged_from,omitempty"`
	Nodes      []Node   `json:"nodes"`
}

// ListOptions select workflows for ListWorkflows.
type ListOptions struct {
	// Active keeps only workflows with pending or running nodes.
	Active bool
	// Thread keeps only workflows whose root thread is this one.
	Thread chat.ThreadID
	// Limit caps the result (default 50, at most 500), newest first.
	Limit int
}

// Outcome is one row of sub_session_outcomes.
type Outcome struct {
	ID                int64         `json:"id"`
	SessionID         string        `json:"session_id"`
	Workflow          string        `json:"workflow_id"`
	TaskID            string        `json:"task_id,omitempty"`
	Objective         string        `json:"objective"`
	Mode              string        `json:"mode"`
	Profile           string        `json:"profile,omitempty"`
	Status            State         `json:"status"`
	StartedAt         time.Time     `json:"started_at"`
	FinishedAt        time.Time     `json:"finished_at"`
	Duration          time.Duration `json:"duration_ns"`
	ToolCalls         int           `json:"tool_calls"`
	ContinuationDepth int           `json:"continuation_depth"`
	SkillsLoaded      []string      `json:"skills_loaded"`
	SupervisorVerdict string        `json:"supervisor_verdict"`
	Usage             llm.Usage     `json:"usage"`
	ResultChars       int           `json:"result_chars"`
	Error             string        `json:"error,omitempty"`
}
