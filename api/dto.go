package api

import (
	"encoding/json"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/evidence"
)

// ErrorBody is every error answer: {"error":"…"}.
type ErrorBody struct {
	Error string `json:"error"`
}

// LoginRequest is the body of POST /api/v1/login.
type LoginRequest struct {
	Token string `json:"token"`
}

// AgentInfo is GET /api/v1/info (Features and Auth are filled in by the web
// extension).
type AgentInfo struct {
	Version          string          `json:"version"`
	Auth             string          `json:"auth"`
	ModelsConfigured bool            `json:"models_configured"`
	PanelURL         string          `json:"panel_url,omitempty"`
	Features         map[string]bool `json:"features"`
	Commands         []Command       `json:"commands"`
	// Extensions are the loaded extensions with their lifecycle state and
	// the outcome of their last health check (run by /status).
	Extensions []ExtensionStatus `json:"extensions"`
	// Embedding says which embedding model memory recall uses and how far
	// a re-embedding is (absent for backends without vectors).
	Embedding *EmbeddingInfo `json:"embedding,omitempty"`
}

// EmbeddingInfo is the memory store's embedding model in AgentInfo.
type EmbeddingInfo struct {
	Model       string `json:"model"`       // configured (memory.embedding.model), as stored with vectors
	Serving     string `json:"serving"`     // the model whose vectors recall uses now
	Dimensions  int    `json:"dimensions"`  // of the serving model's vectors
	Pending     int    `json:"pending"`     // memories without a vector of Model yet
	Reembedding bool   `json:"reembedding"` // a re-embedding runs; Done of Total
	Done        int    `json:"done"`
	Total       int    `json:"total"`
	Error       string `json:"error,omitempty"` // the embedding model's last failure
}

// ExtensionStatus is one extension in AgentInfo.
type ExtensionStatus struct {
	ID     string `json:"id"`
	State  string `json:"state"`           // pending, initialised, started, running, failed, skipped, stopped, disabled
	Health string `json:"health"`          // none (no check), unknown (not checked yet), ok, failing
	Error  string `json:"error,omitempty"` // why it failed, was skipped or is unhealthy
}

// Command is a slash command.
type Command struct {
	Name string `json:"name"`
	Help string `json:"help"`
}

// SendRequest is the body of POST /api/v1/threads/{thread}/messages.
type SendRequest struct {
	Text string `json:"text"`
	// Attachments name files uploaded to the thread (POST
	// …/attachments); Text may then be empty.
	Attachments []AttachmentRef `json:"attachments,omitempty"`
}

// Reply is the answer to POST /api/v1/threads/{thread}/messages.
type Reply struct {
	Thread    chat.ThreadID `json:"thread"`
	Reply     string        `json:"reply"`
	ToolCalls []ToolCall    `json:"tool_calls"`
	Usage     Usage         `json:"usage"`
	SeedReply string        `json:"seed_reply,omitempty"`
	// Error is set (with status 502) when the turn failed.
	Error string `json:"error,omitempty"`
}

// Usage is a token count.
type Usage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// ToolCall is a finished tool call of a turn.
type ToolCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
	Result    string          `json:"result"`
	IsError   bool            `json:"is_error"`
}

// ThreadQuery selects threads.
type ThreadQuery struct {
	IncludeSubSessions bool
	Limit              int
	// Archived lists the deleted (archived) threads instead.
	Archived bool
}

// Thread is a conversation.
type Thread struct {
	ID                chat.ThreadID `json:"id"`
	Channel           string        `json:"channel"`
	Title             string        `json:"title"`
	Language          string        `json:"language"`
	CreatedAt         time.Time     `json:"created_at"`
	UpdatedAt         time.Time     `json:"updated_at"`
	LastUserMessageAt *time.Time    `json:"last_user_message_at"`
	// ArchivedAt is set when the thread was deleted (restorable).
	ArchivedAt *time.Time `json:"archived_at,omitempty"`
	// TitleSource is "" (the first message), "model" or "user".
	TitleSource string `json:"title_source,omitempty"`
}

// RenameRequest is the body of PUT /api/v1/threads/{thread}.
type RenameRequest struct {
	Title string `json:"title"`
}

// EditRequest is the body of POST /api/v1/threads/{thread}/messages/{id}/edit.
type EditRequest struct {
	Text string `json:"text"`
}

// Redo actions (Conversations.Redo, the WebSocket frames of the same names).
const (
	RedoRegenerate = "regenerate"
	RedoRetry      = "retry"
	RedoEdit       = "edit"
)

// RedoRequest runs a thread's last turn again: Action is RedoRegenerate,
// RedoRetry or RedoEdit (MessageID and Text: the user message replaced and
// its new text). What is replaced is kept as a branch (a Segment).
type RedoRequest struct {
	Action    string
	Thread    chat.ThreadID
	MessageID int64
	Text      string
}

// Segment is an archived part of a thread, kept readable: a conversation
// /new closed (kind "conversation", with the title it had) or the turns an
// edit or a regeneration replaced (kind "branch"; after_message_id is the
// message it followed).
type Segment struct {
	ID             int64         `json:"id"`
	Thread         chat.ThreadID `json:"thread"`
	Kind           string        `json:"kind"`
	Title          string        `json:"title"`
	AfterMessageID int64         `json:"after_message_id,omitempty"`
	CreatedAt      time.Time     `json:"created_at"`
	Messages       int           `json:"messages"`
}

// SegmentQuery selects segments: of one thread ("" for all), of one kind
// ("" for both).
type SegmentQuery struct {
	Thread chat.ThreadID
	Kind   string
	Limit  int
}

// SegmentList is GET /api/v1/segments.
type SegmentList struct {
	Segments []Segment `json:"segments"`
}

// SegmentMessages is GET /api/v1/segments/{id}.
type SegmentMessages struct {
	Segment  Segment   `json:"segment"`
	Messages []Message `json:"messages"`
}

// SearchHit is a search result: a thread whose title matches (message_id
// 0) or a message; segment is the archived part holding it (0: the
// thread's current conversation). The snippet marks matches with « ».
type SearchHit struct {
	Thread         chat.ThreadID `json:"thread"`
	Title          string        `json:"title"`
	ThreadArchived bool          `json:"thread_archived,omitempty"`
	MessageID      int64         `json:"message_id,omitempty"`
	Role           string        `json:"role,omitempty"`
	Segment        int64         `json:"segment,omitempty"`
	Snippet        string        `json:"snippet"`
	At             time.Time     `json:"at"`
}

// SearchResults is GET /api/v1/search.
type SearchResults struct {
	Hits []SearchHit `json:"hits"`
}

// ThreadList is GET /api/v1/threads.
type ThreadList struct {
	Threads []Thread `json:"threads"`
}

// MessageQuery selects a thread's messages.
type MessageQuery struct {
	AfterID         int64
	Limit           int
	IncludeArchived bool
}

// Message is a stored message.
type Message struct {
	ID   int64  `json:"id"`
	Role string `json:"role"`
	Text string `json:"text"`
	// Thinking is the reasoning the model wrote before this reply, when it
	// streamed any (shown folded above the reply).
	Thinking    string          `json:"thinking,omitempty"`
	ToolCalls   []MessageCall   `json:"tool_calls,omitempty"`
	ToolResults []MessageResult `json:"tool_results,omitempty"`
	SystemEvent bool            `json:"system_event,omitempty"`
	// Source says who wrote a system_event message: "seed" (the opening
	// of a conversation: never shown), "supervisor" (the check asking the
	// assistant to correct itself: never shown) or "system_event".
	Source   string `json:"source,omitempty"`
	Archived bool   `json:"archived,omitempty"`
	// Segment is the archived part holding the message (0: none).
	Segment int64 `json:"segment,omitempty"`
	// Status is "failed" or "stopped" for a reply that did not finish
	// (Text is what was written of it); Note says what happened.
	Status    string    `json:"status,omitempty"`
	Note      string    `json:"note,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	// Attachments are the files the user attached to the message.
	Attachments []MessageAttachment `json:"attachments,omitempty"`
}

// MessageCall is a tool call inside an assistant message.
type MessageCall struct {
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// MessageResult is a tool result inside a tool message.
type MessageResult struct {
	CallID  string `json:"call_id"`
	Name    string `json:"name"`
	Result  string `json:"result"`
	IsError bool   `json:"is_error"`
}

// MessageList is GET /api/v1/threads/{thread}/messages.
type MessageList struct {
	Messages []Message `json:"messages"`
}

// Frame types of the WebSocket protocol (docs/api.md).
const (
	// Client → server.
	FrameMessage     = "message"
	FrameSubscribe   = "subscribe"
	FrameUnsubscribe = "unsubscribe"
	FramePing        = "ping"
	// FrameCancel stops the turn the thread is processing.
	FrameCancel = "cancel"
	// FrameRegenerate, FrameRetry and FrameEdit run the thread's last turn
	// again (RedoRequest); FrameEdit carries Message and Text.
	FrameRegenerate = RedoRegenerate
	FrameRetry      = RedoRetry
	FrameEdit       = RedoEdit
	// FrameApproval (both ways): the server asks to approve a tool call, or
	// tells its outcome (State); the client answers with Approval and
	// Approve.
	FrameApproval = "approval"
	// Server → client.
	FrameDelta = "delta"
	// FrameThinking carries a piece of the model's reasoning (Text), shown
	// folded above the reply; it is not part of the reply's text.
	FrameThinking   = "thinking"
	FrameToolCall   = "tool_call"
	FrameToolResult = "tool_result"
	// FrameWait: the model call failed for a while (a rate limit, a
	// server error) and is tried again in WaitMS; Text says so in plain
	// words ("rate limited by the provider, retrying in 30 s"). The reply
	// is still coming.
	FrameWait   = "wait"
	FrameDone   = "done"
	FrameError  = "error"
	FrameNotify = "notify"
	FramePong   = "pong"
	// FrameTranscript shows what was heard in the user's voice message
	// (Text), before the reply.
	FrameTranscript = "transcript"
	// FrameVoice is a reply spoken aloud, after its text: Audio is the URL
	// path of the file (GET, with the token), Text what it says, Part and
	// Parts its place in a reply spoken in parts.
	FrameVoice = "voice"
	// FrameThread: a thread was deleted (State ThreadDeleted) or restored
	// (ThreadRestored), by any client; sent to every connection, so that
	// each page updates its list and stops (or resumes) taking messages on
	// it.
	FrameThread = "thread"
)

// States of a FrameThread.
const (
	ThreadDeleted  = "deleted"
	ThreadRestored = "restored"
)

// ClientFrame is a frame a WebSocket client sends.
type ClientFrame struct {
	Type   string `json:"type"`
	Thread string `json:"thread,omitempty"`
	Text   string `json:"text,omitempty"`
	ID     string `json:"id,omitempty"`
	// Approval and Approve answer an approval request (type "approval").
	Approval string `json:"approval,omitempty"`
	Approve  *bool  `json:"approve,omitempty"`
	// Attachments of a "message" frame: files uploaded to the thread.
	Attachments []AttachmentRef `json:"attachments,omitempty"`
	// Message is the user message an edit replaces (type "edit").
	Message int64 `json:"message,omitempty"`
}

// ServerFrame is a frame the server sends; which fields are set depends on
// Type.
type ServerFrame struct {
	Type      string          `json:"type"`
	Thread    chat.ThreadID   `json:"thread,omitempty"`
	Text      string          `json:"text,omitempty"`
	CallID    string          `json:"call_id,omitempty"`
	Name      string          `json:"name,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	Result    *string         `json:"result,omitempty"`
	IsError   *bool           `json:"is_error,omitempty"`
	Error     string          `json:"error,omitempty"`
	ID        string          `json:"id,omitempty"`
	// Status is "stopped" on the "done" frame of a reply the user stopped
	// (Text is what was written of it): a stop is not an error.
	Status string `json:"status,omitempty"`
	// Approval is the request's id, State where it stands (pending,
	// approved, denied, expired) and Deadline when an unanswered request
	// counts as denied (type "approval"; Name, Arguments and Text — the
	// reason — describe the call).
	Approval string     `json:"approval,omitempty"`
	State    string     `json:"state,omitempty"`
	Deadline *time.Time `json:"deadline,omitempty"`
	// Audio, MediaType, Part and Parts describe a spoken reply (type
	// "voice").
	Audio     string `json:"audio,omitempty"`
	MediaType string `json:"media_type,omitempty"`
	Part      int    `json:"part,omitempty"`
	Parts     int    `json:"parts,omitempty"`
	// WaitMS is how long until the model is asked again (type "wait").
	WaitMS int64 `json:"wait_ms,omitempty"`
}

// Approval is a tool call waiting for (or decided by) the user's approval:
// GET /api/v1/approvals, POST /api/v1/approvals/{id}.
type Approval struct {
	ID        string          `json:"id"`
	Thread    chat.ThreadID   `json:"thread"`
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	Reason    string          `json:"reason"`
	// State is pending, approved, denied or expired.
	State     string     `json:"state"`
	CreatedAt time.Time  `json:"created_at"`
	Deadline  time.Time  `json:"deadline"`
	DecidedAt *time.Time `json:"decided_at,omitempty"`
}

// ApprovalList is GET /api/v1/approvals.
type ApprovalList struct {
	Approvals []Approval `json:"approvals"`
}

// ApprovalAnswer is the body of POST /api/v1/approvals/{id}.
type ApprovalAnswer struct {
	Approve bool `json:"approve"`
}

// Event is an event of the bus.
type Event struct {
	ID      int64           `json:"id"`
	Topic   string          `json:"topic"`
	Time    time.Time       `json:"time"`
	Payload json.RawMessage `json:"payload"`
}

// EventList is GET /api/v1/events/recent.
type EventList struct {
	Events []Event `json:"events"`
}

// InteractionQuery selects interaction log entries; zero fields do not
// filter.
type InteractionQuery struct {
	Action   string
	Thread   chat.ThreadID
	Since    time.Time
	BeforeID int64
	Limit    int
}

// Interaction is one entry of the interaction log.
type Interaction struct {
	ID           int64           `json:"id"`
	At           time.Time       `json:"at"`
	Thread       chat.ThreadID   `json:"thread,omitempty"`
	Action       string          `json:"action"`
	Summary      string          `json:"summary,omitempty"`
	Detail       json.RawMessage `json:"detail,omitempty"`
	InputTokens  int             `json:"input_tokens,omitempty"`
	OutputTokens int             `json:"output_tokens,omitempty"`
	DurationMS   int64           `json:"duration_ms,omitempty"`
	Error        string          `json:"error,omitempty"`
}

// InteractionList is GET /api/v1/interactions.
type InteractionList struct {
	Interactions []Interaction `json:"interactions"`
	Actions      []string      `json:"actions"`
}

// SystemPrompt is GET /api/v1/prompt.
type SystemPrompt struct {
	Thread chat.ThreadID `json:"thread"`
	At     time.Time     `json:"at"`
	Text   string        `json:"text"`
	Chars  int           `json:"chars"`
}

// UsageRow is the usage of one role on one backend on one day.
type UsageRow struct {
	Day          string `json:"day"`
	Role         string `json:"role"`
	Backend      string `json:"backend"`
	Model        string `json:"model"`
	Calls        int    `json:"calls"`
	Failures     int    `json:"failures"`
	InputTokens  int    `json:"input_tokens"`
	OutputTokens int    `json:"output_tokens"`
}

// UsageList is GET /api/v1/usage.
type UsageList struct {
	Usage []UsageRow `json:"usage"`
}

// Memory kinds and sources (docs/api.md).
var (
	MemoryKinds   = []string{"fact", "preference", "episode", "procedure", "opinion"}
	MemorySources = []string{"user_explicit", "agent", "harvest", "dream", "import", "conversation"}
)

// MemorySearch is a recall query.
type MemorySearch struct {
	Text  string
	Limit int
	Kinds []string
	// IncludeClosed recalls superseded memories too.
	IncludeClosed bool
}

// MemoryFilter selects memories for listing.
type MemoryFilter struct {
	Kinds         []string
	Sources       []string
	IncludeClosed bool
	Limit         int
	Offset        int
	// OrderByAccess lists the most recalled first (access count, then the
	// last access) instead of the newest first (?order=access).
	OrderByAccess bool
}

// MemoryInput is the body of POST and PUT /api/v1/memories.
type MemoryInput struct {
	Text      string     `json:"text"`
	Kind      string     `json:"kind"`
	Source    string     `json:"source,omitempty"`
	EventTime *time.Time `json:"event_time,omitempty"`
	Thread    string     `json:"thread,omitempty"`
	// Keep (POST only): false leaves the new memory out of MEMORIES.txt
	// (absent or true: it is kept there, always in the prompt).
	Keep *bool `json:"keep,omitempty"`
}

// Memory is a long-term memory.
type Memory struct {
	ID          int64      `json:"id"`
	Text        string     `json:"text"`
	Kind        string     `json:"kind"`
	Source      string     `json:"source"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	ValidFrom   time.Time  `json:"valid_from"`
	ValidTo     *time.Time `json:"valid_to"`
	AccessCount int        `json:"access_count"`
	LastAccess  *time.Time `json:"last_access"`
	EventTime   *time.Time `json:"event_time"`
	Thread      string     `json:"thread,omitempty"`
	// Session, Speaker and Role are an episode's sitting, who said it and
	// their part ("user" or "assistant"); absent for other memories.
	Session string   `json:"session,omitempty"`
	Speaker string   `json:"speaker,omitempty"`
	Role    string   `json:"role,omitempty"`
	Score   *float64 `json:"score,omitempty"`

	// SupersededBy is the id of the memory that replaced this one when an
	// edit of its text closed it; absent otherwise.
	SupersededBy int64 `json:"superseded_by,omitempty"`
	// Existing (POST only): an equal current memory was found and
	// returned instead of a new one.
	Existing bool `json:"existing,omitempty"`
}

// MemoryList is GET /api/v1/memories.
type MemoryList struct {
	Memories []Memory `json:"memories"`
}

// Pulse item statuses: completed and cancelled items are closed.
const (
	PulseActive    = "active"
	PulseCompleted = "completed"
	PulseCancelled = "cancelled"
)

// Pulse priorities: 1 is urgent, 10 low.
const (
	PulseMinPriority     = 1
	PulseMaxPriority     = 10
	PulseDefaultPriority = 5
)

// PulseItem is one item of the working memory.
type PulseItem struct {
	ID          int64      `json:"id"`
	Text        string     `json:"text"`
	Priority    int        `json:"priority"`
	Status      string     `json:"status"`
	Thread      string     `json:"thread,omitempty"`
	Source      string     `json:"source,omitempty"`
	CreatedAt   time.Time  `json:"created_at"`
	UpdatedAt   time.Time  `json:"updated_at"`
	CompletedAt *time.Time `json:"completed_at"`
}

// PulseInput is the body of POST and PUT /api/v1/pulse; nil fields are
// left unchanged by an update (and take their defaults on creation).
type PulseInput struct {
	Text     *string `json:"text,omitempty"`
	Priority *int    `json:"priority,omitempty"`
	Status   *string `json:"status,omitempty"`
	Thread   *string `json:"thread,omitempty"`
}

// PulseList is GET /api/v1/pulse.
type PulseList struct {
	Items []PulseItem `json:"items"`
}

// Skill is a learned procedure. Content is omitted from lists.
type Skill struct {
	Name      string    `json:"name"`
	Summary   string    `json:"summary"`
	Content   string    `json:"content,omitempty"`
	Chars     int       `json:"chars"`
	UpdatedAt time.Time `json:"updated_at"`
	// Folder marks a skill in the shared format (skills/NAME/SKILL.md):
	// Summary is its description; it is read-only here (PUT and DELETE
	// answer 409).
	Folder bool `json:"folder,omitempty"`
}

// SkillInput is the body of PUT /api/v1/skills/{name}.
type SkillInput struct {
	Content string `json:"content"`
}

// SkillList is GET /api/v1/skills.
type SkillList struct {
	Skills []Skill `json:"skills"`
}

// WorldState is the world state document, passed through as JSON (its
// schema belongs to the world state; see docs/api.md).
type WorldState = json.RawMessage

// Task kinds: a reminder delivers "Reminder: <text>" with no model call,
// an AI task runs its prompt with the model and delivers the answer, a job
// is an extension's scheduled job.
const (
	TaskReminder = "reminder"
	TaskAI       = "ai_task"
	TaskJob      = "job"
)

// Task states.
const (
	TaskActive    = "active"
	TaskPaused    = "paused"
	TaskDone      = "done"
	TaskCancelled = "cancelled"
	TaskInactive  = "inactive"
)

// Schedule says when a task runs (docs/api.md lists the kinds). Times of
// day are "HH:MM" in Zone, else the configured time zone.
type Schedule struct {
	Kind        string     `json:"kind"` // once, daily, weekly, monthly, interval, cron
	At          *time.Time `json:"at,omitempty"`
	Time        string     `json:"time,omitempty"`
	Weekdays    []string   `json:"weekdays,omitempty"` // "mon" … "sun"
	Day         int        `json:"day,omitempty"`      // day of month
	Every       string     `json:"every,omitempty"`    // "90m", "2h"
	WindowStart string     `json:"window_start,omitempty"`
	WindowEnd   string     `json:"window_end,omitempty"`
	Cron        string     `json:"cron,omitempty"`
	Start       *time.Time `json:"start,omitempty"`
	Zone        string     `json:"zone,omitempty"`
}

// TaskQuery selects tasks.
type TaskQuery struct {
	Thread chat.ThreadID
	// Statuses to include; empty means active and paused.
	Statuses []string
	// Jobs includes extensions' scheduled jobs.
	Jobs bool
}

// Task is a scheduled reminder, AI task or job.
type Task struct {
	ID          string     `json:"id"`
	Kind        string     `json:"kind"`
	Text        string     `json:"text,omitempty"`
	AIPrompt    string     `json:"ai_prompt,omitempty"`
	Thread      string     `json:"thread,omitempty"`
	SubSession  bool       `json:"sub_session,omitempty"`
	Job         string     `json:"job,omitempty"`
	Schedule    Schedule   `json:"schedule"`
	Description string     `json:"description"`
	Status      string     `json:"status"`
	NextRun     *time.Time `json:"next_run"`
	LastRun     *time.Time `json:"last_run"`
	LastOutcome string     `json:"last_outcome,omitempty"`
	// DeliveredTo is the thread the newest fired run delivered to.
	DeliveredTo string    `json:"delivered_to,omitempty"`
	Runs        int       `json:"runs"`
	Failures    int       `json:"failures"`
	CreatedAt   time.Time `json:"created_at"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// TaskInput is the body of POST /api/v1/tasks. With AIPrompt it is an AI
// task (without Thread its answer goes to the main agent as a system
// event); else a reminder (without Thread it goes to the conversation the
// user wrote in most recently).
type TaskInput struct {
	Text       string   `json:"text,omitempty"`
	AIPrompt   string   `json:"ai_prompt,omitempty"`
	Thread     string   `json:"thread,omitempty"`
	SubSession bool     `json:"sub_session,omitempty"`
	Schedule   Schedule `json:"schedule"`
}

// TaskList is GET /api/v1/tasks.
type TaskList struct {
	Tasks []Task `json:"tasks"`
}

// ReceiptQuery selects run receipts.
type ReceiptQuery struct {
	TaskID string
	Limit  int
}

// Receipt records one run of a task (or a group of skipped runs).
type Receipt struct {
	ID          int64     `json:"id"`
	TaskID      string    `json:"task_id"`
	ScheduledAt time.Time `json:"scheduled_at"`
	StartedAt   time.Time `json:"started_at"`
	Outcome     string    `json:"outcome"` // running, fired, skipped, failed
	Reason      string    `json:"reason,omitempty"`
	Count       int       `json:"count"`
	CatchUp     bool      `json:"catch_up,omitempty"`
	// DeliveredTo is the thread the run delivered to ("": none).
	DeliveredTo string `json:"delivered_to,omitempty"`
	DurationMS  int64  `json:"duration_ms"`
	Usage       Usage  `json:"usage"`
}

// ReceiptList is GET /api/v1/receipts.
type ReceiptList struct {
	Receipts []Receipt `json:"receipts"`
}

// WorkflowQuery selects workflows.
type WorkflowQuery struct {
	// Active keeps workflows with pending or running sub-sessions.
	Active bool
	Thread chat.ThreadID
	Limit  int
}

// Sub-session and workflow states.
const (
	StatePending   = "pending"
	StateRunning   = "running"
	StateCompleted = "completed"
	StateFailed    = "failed"
	StateTimeout   = "timeout"
	StateCancelled = "cancelled"
)

// Workflow is a graph of sub-sessions.
type Workflow struct {
	ID         string         `json:"id"`
	RootThread string         `json:"root_thread,omitempty"`
	State      string         `json:"state"`
	CreatedAt  time.Time      `json:"created_at"`
	FinishedAt *time.Time     `json:"finished_at,omitempty"`
	MergedFrom []string       `json:"merged_from,omitempty"`
	Nodes      []WorkflowNode `json:"nodes"`
}

// WorkflowNode is one sub-session of a workflow.
type WorkflowNode struct {
	ID             string     `json:"id"`
	Workflow       string     `json:"workflow_id"`
	Parent         string     `json:"parent,omitempty"`
	Depth          int        `json:"depth"`
	Objective      string     `json:"objective"`
	Mode           string     `json:"mode"`
	Profile        string     `json:"profile,omitempty"`
	DependsOn      []string   `json:"depends_on"`
	NotBefore      *time.Time `json:"not_before,omitempty"`
	TimeoutSeconds float64    `json:"timeout_seconds"`
	State          string     `json:"state"`
	// Waiting says why a pending sub-session has not started:
	// dependencies, not_before, concurrency or stopped.
	Waiting        string     `json:"waiting,omitempty"`
	Result         string     `json:"result,omitempty"`
	Error          string     `json:"error,omitempty"`
	Hop            int        `json:"hop"`
	ContinuationOf string     `json:"continuation_of,omitempty"`
	ContinuedBy    string     `json:"continued_by,omitempty"`
	ToolCalls      int        `json:"tool_calls"`
	Usage          Usage      `json:"usage"`
	CreatedAt      time.Time  `json:"created_at"`
	StartedAt      *time.Time `json:"started_at,omitempty"`
	FinishedAt     *time.Time `json:"finished_at,omitempty"`
}

// WorkflowList is GET /api/v1/workflows.
type WorkflowList struct {
	Workflows []Workflow `json:"workflows"`
}

// SetupStatus is GET /api/v1/setup.
type SetupStatus struct {
	// Configured reports whether a model is configured.
	Configured bool        `json:"configured"`
	Forms      []SetupForm `json:"forms"`
}

// SetupForm is a configuration form.
type SetupForm struct {
	ID          string       `json:"id"`
	Title       string       `json:"title"`
	Description string       `json:"description,omitempty"`
	Configured  bool         `json:"configured"`
	Fields      []SetupField `json:"fields"`
}

// SetupField is one input of a form.
type SetupField struct {
	Key      string   `json:"key"`
	Label    string   `json:"label"`
	Kind     string   `json:"kind"` // text, secret, url, select
	Options  []string `json:"options,omitempty"`
	Default  string   `json:"default,omitempty"`
	Required bool     `json:"required,omitempty"`
	Help     string   `json:"help,omitempty"`
}

// SetupRequest is the body of POST /api/v1/setup/{form}.
type SetupRequest struct {
	Values map[string]string `json:"values"`
}

// SetupResult is the answer of a successful POST /api/v1/setup/{form}.
type SetupResult struct {
	OK      bool   `json:"ok"`
	Message string `json:"message"`
}

// PairingRequest is the body of POST /api/v1/telegram/approve.
type PairingRequest struct {
	Code string `json:"code"`
}

// PairingApproval is who a pairing code let in.
type PairingApproval struct {
	Channel string `json:"channel"`
	UserID  string `json:"user_id"`
	Name    string `json:"name"`
}

// ProjectStatus is GET /api/v1/status/project: the manifest of a
// conversation's work, compiled from state without a model call. Lists are
// in a fixed order (pulse by priority then id, workflows by creation then
// id, the trace oldest first), so the same state gives the same bytes.
type ProjectStatus struct {
	// Thread is the conversation the trace and evidence come from (""
	// when there is none yet).
	Thread chat.ThreadID `json:"thread,omitempty"`
	// World is the durable world state document.
	World WorldState `json:"world"`
	// Pulse lists the open (active) pulse items.
	Pulse []ProjectPulseItem `json:"pulse"`
	// Workflows lists the workflows with pending or running workers.
	Workflows []ProjectWorkflow `json:"workflows"`
	// Trace is the tool calls of the conversation's last turns (at most
	// ProjectTraceTurns), oldest first.
	Trace []TraceEntry `json:"tool_trace"`
	// Evidence lists the evidence packets those calls returned.
	Evidence []EvidenceEntry `json:"evidence"`
	// Text is the manifest as workers read it in their prompt.
	Text string `json:"text"`
}

// ProjectTraceTurns is how many of a conversation's last turns the
// project status traces.
const ProjectTraceTurns = 3

// ProjectPulseItem is an open pulse item in the project status.
type ProjectPulseItem struct {
	ID       int64  `json:"id"`
	Text     string `json:"text"`
	Priority int    `json:"priority"`
	Thread   string `json:"thread,omitempty"`
}

// ProjectWorkflow is an active workflow in the project status.
type ProjectWorkflow struct {
	ID         string          `json:"id"`
	State      string          `json:"state"`
	RootThread string          `json:"root_thread,omitempty"`
	Workers    []ProjectWorker `json:"workers"`
}

// ProjectWorker is one sub-session of an active workflow.
type ProjectWorker struct {
	ID        string `json:"id"`
	Objective string `json:"objective"`
	State     string `json:"state"`
	// Waiting says why a pending worker has not started.
	Waiting   string `json:"waiting,omitempty"`
	Profile   string `json:"profile,omitempty"`
	ToolCalls int    `json:"tool_calls"`
}

// TraceEntry is one tool call of a recent turn.
type TraceEntry struct {
	// Turn numbers the traced turns, 1 for the oldest shown.
	Turn int `json:"turn"`
	// MessageID is the assistant message that made the call.
	MessageID int64  `json:"message_id"`
	CallID    string `json:"call_id"`
	Tool      string `json:"tool"`
	// Arguments are the call's arguments, cut to 300 characters.
	Arguments string `json:"arguments"`
	// Outcome is "ok", "error" or "no result" (the turn ended first).
	Outcome string `json:"outcome"`
	// Result sums the result up: an evidence packet's kind, title and
	// item count, else its first 200 characters.
	Result string `json:"result,omitempty"`
}

// EvidenceEntry is an evidence packet a traced call returned.
type EvidenceEntry struct {
	CallID string        `json:"call_id"`
	Kind   evidence.Kind `json:"kind"`
	Title  string        `json:"title"`
	Source string        `json:"source"`
	Items  int           `json:"items"`
	// Refs are the first items' addresses (URLs, memory ids, titles).
	Refs []string `json:"refs,omitempty"`
}
