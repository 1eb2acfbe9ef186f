package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/textclip"
	"github.com/reverie-ai/reverie/tool"
)

// Tool names.
const (
	ToolSpawn  = "spawn_sub_session"
	ToolCancel = "cancel_sub_session"
	ToolList   = "list_sub_sessions"
)

// binding is who calls a tool of this package: the session that spawns
// (a user thread or a worker) and, for a user thread, its current turn.
type binding struct {
	parent chat.ThreadID
	turn   *turnState
}

// turnState remembers the sessions spawned during one turn, with the place
// of the call that spawned each, for depends_on_previous.
type turnState struct {
	mu      sync.Mutex
	spawned []spawned
}

type spawned struct {
	pos tool.Position
	id  string
}

func (t *turnState) add(pos tool.Position, id string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.spawned = append(t.spawned, spawned{pos, id})
}

// before returns the sessions spawned by calls the model issued before the
// call at pos: earlier rounds, and lower indexes of the same round. It does
// not depend on the order in which a round's calls ran (spawn_sub_session
// runs its calls of one round in issue order, tool.InOrder, so the earlier
// ones have all finished). Without a position (a call made outside the tool
// loop) every session spawned so far counts.
func (t *turnState) before(pos tool.Position, known bool) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var out []string
	for _, s := range t.spawned {
		if !known || s.pos.Before(pos) {
			out = append(out, s.id)
		}
	}
	return out
}

type bindingKey struct{}

// bound is a shared tool (schema compiled once) bound to a caller: Call
// hands the binding to the handler through the context. This is how the
// tools learn which thread or worker calls them.
type bound struct {
	tool.Tool
	b binding
}

func bind(t tool.Tool, b binding) tool.Tool { return &bound{Tool: t, b: b} }

func (t *bound) Call(ctx context.Context, args json.RawMessage) (tool.Result, error) {
	return t.Tool.Call(context.WithValue(ctx, bindingKey{}, t.b), args)
}

// ValidateArgs uses the shared tool's compiled schema.
func (t *bound) ValidateArgs(args json.RawMessage) error { return tool.Validate(t.Tool, args) }

// Categories forwards to the shared tool.
func (t *bound) Categories() []string { return tool.CategoriesOf(t.Tool) }

// ReadOnly forwards to the shared tool.
func (t *bound) ReadOnly() bool { return tool.IsReadOnly(t.Tool) }

// InOrder forwards to the shared tool.
func (t *bound) InOrder() bool { return tool.RunsInOrder(t.Tool) }

// ReadsPrivate forwards to the shared tool.
func (t *bound) ReadsPrivate() bool { return tool.ReadsPrivate(t.Tool) }

// UntrustedResults forwards to the shared tool.
func (t *bound) UntrustedResults() bool { return tool.ReturnsUntrusted(t.Tool) }

// SendsOut forwards to the shared tool.
func (t *bound) SendsOut() bool {
	o, ok := t.Tool.(tool.Outward)
	return ok && o.SendsOut()
}

// Destinations forwards to the shared tool.
func (t *bound) Destinations(args json.RawMessage) []tool.Destination {
	d, _ := tool.DestinationsOf(t.Tool, args)
	return d
}

func bindingOf(ctx context.Context) (binding, error) {
	b, ok := ctx.Value(bindingKey{}).(binding)
	if !ok {
		return binding{}, errors.New("this tool is not bound to a conversation")
	}
	return b, nil
}

// Tools returns spawn_sub_session, cancel_sub_session and
// list_sub_sessions bound to thread, for one turn of the main agent in that
// thread: sessions spawned from them report into thread. Call it once per
// turn (depends_on_previous remembers the turn's spawns); it is cheap.
func (m *Manager) Tools(thread chat.ThreadID) []tool.Tool {
	b := binding{parent: thread, turn: &turnState{}}
	return []tool.Tool{bind(m.spawnTool, b), bind(m.cancelTool, b), bind(m.listTool, b)}
}

type spawnArgs struct {
	Objective         string   `json:"objective" jsonschema:"what the worker must achieve, self-contained (it does not see this conversation)"`
	Context           string   `json:"context,omitempty" jsonschema:"background the worker needs: facts, constraints, file paths, the expected form of its report"`
	SystemPromptMode  string   `json:"system_prompt_mode,omitempty" jsonschema:"minimal (default: fast, cheap, execution and research tools), full (your memories, pulse and skills, all tools, may spawn its own sub-sessions), base_only (core instructions only) or none (bare tool loop)"`
	ToolNames         []string `json:"tool_names,omitempty" jsonschema:"restrict the worker to these tools"`
	Profile           string   `json:"profile,omitempty" jsonschema:"a configured tool profile instead of tool_names"`
	DependsOn         []string `json:"depends_on,omitempty" jsonschema:"session ids (sub_…) that must complete first; their results are handed to this worker"`
	DependsOnPrevious bool     `json:"depends_on_previous,omitempty" jsonschema:"depend on every session you spawned before (in this turn; else those still unfinished), without listing ids"`
	NotBefore         string   `json:"not_before,omitempty" jsonschema:"ISO-8601 time before which the worker must not start, e.g. 2025-01-15T20:00:00 (without a zone: the user's time zone)"`
	Timeout           int      `json:"timeout,omitempty" jsonschema:"seconds one worker run may take (default 300); on timeout a continuation carries on"`
}

type cancelArgs struct {
	ID     string `json:"id" jsonschema:"a sub-session id (sub_…) or a workflow id (wf_…)"`
	Reason string `json:"reason,omitempty" jsonschema:"why, for the log"`
}

type listArgs struct {
	IncludeFinished bool `json:"include_finished,omitempty" jsonschema:"also list finished workflows (the 10 most recent)"`
}

const spawnDescription = `Start a background worker (sub-session) for a task that takes several steps or time, and return at once with its session id (sub_…). The worker runs on its own with its own tools; its report arrives later in this conversation as a system event — do not wait, poll or pretend it is done, and tell the user what you started.
Workflows: spawn independent tasks separately (they run in parallel); give a later step depends_on with their ids (or depends_on_previous) and it starts when they have all completed, receiving their results; if one of them fails, the dependents fail too. not_before delays a start until a time. Unknown ids in depends_on are dropped with a warning.
The objective must be self-contained. Prefer the default minimal mode; use full only when the worker needs your memories or must split its work into further sub-sessions.`

// buildTools builds the shared tools once (their schemas are compiled
// here); Tools and workerTools bind them to callers.
func (m *Manager) buildTools() {
	opts := []tool.Option{tool.WithCategories("orchestration"),
		tool.WithEnum("system_prompt_mode", "minimal", "full", "base_only", "none")}
	if names := m.o.Profiles.Names(); len(names) > 0 {
		opts = append(opts, tool.WithEnum("profile", names...))
	}
	// In order: depends_on_previous of a call must see the sessions of the
	// round's earlier spawn calls, which therefore must have finished.
	m.spawnTool = tool.New(ToolSpawn, spawnDescription, m.spawnHandler, append(opts, tool.InOrder())...)
	m.cancelTool = tool.New(ToolCancel,
		"Cancel a background sub-session (sub_…) or a whole workflow (wf_…): pending sessions never start, running ones stop, sessions they spawned are cancelled and sessions depending on them fail.",
		m.cancelHandler, tool.WithCategories("orchestration"))
	m.listTool = tool.New(ToolList,
		"List the background sub-sessions of this conversation by workflow: state (pending, running, completed, failed, timeout, cancelled), what pending ones wait for, dependencies and a preview of results. Use it when the user asks how background work is going; results arrive by themselves.",
		m.listHandler, tool.ReadOnly(), tool.WithCategories("orchestration"))
}

func (m *Manager) spawnHandler(ctx context.Context, a spawnArgs) (any, error) {
	b, err := bindingOf(ctx)
	if err != nil {
		return nil, err
	}
	notBefore, err := ParseNotBefore(a.NotBefore, m.o.Location)
	if err != nil {
		return nil, err
	}
	if a.Timeout < 0 {
		return nil, errors.New("timeout must be a positive number of seconds")
	}
	req := SpawnRequest{
		Objective: a.Objective, Context: a.Context, Mode: modeOf(a.SystemPromptMode), ToolNames: a.ToolNames,
		Profile: a.Profile, DependsOn: a.DependsOn, DependsOnPrevious: a.DependsOnPrevious, NotBefore: notBefore,
		Timeout: time.Duration(a.Timeout) * time.Second, Parent: b.parent,
	}
	if taint, ok := tool.TaintFrom(ctx); ok {
		req.Taint = taint.Source
	}
	pos, positioned := tool.PositionFrom(ctx)
	if a.DependsOnPrevious && !b.parent.IsSubSession() && b.turn != nil {
		if prev := b.turn.before(pos, positioned); len(prev) > 0 {
			req.DependsOn = append(req.DependsOn, prev...)
			req.DependsOnPrevious = false
		}
	}
	res, err := m.Spawn(ctx, req)
	if err != nil {
		return nil, err
	}
	if b.turn != nil {
		b.turn.add(pos, res.ID)
	}
	note := "Started in the background."
	switch res.Waiting {
	case waitDeps:
		note = "Waiting for its dependencies; it starts by itself when they have completed."
	case waitNotBefore:
		note = "Waiting until " + notBefore.In(m.o.Location).Format("2006-01-02 15:04 MST") + "; it starts by itself then."
	}
	if res.State == StateFailed {
		note = "Not started: a dependency already failed."
	} else if b.parent.IsSubSession() {
		note += " Its result is not returned to you: it is delivered to the user's conversation together with the other sessions you spawned, once all have finished."
	} else {
		note += " Its result will arrive in this conversation as a system event; do not wait or poll for it."
	}
	return struct {
		OK bool `json:"ok"`
		SpawnResult
		Note string `json:"note"`
	}{res.State != StateFailed, res, note}, nil
}

func modeOf(s string) prompt.Mode { return prompt.Mode(strings.TrimSpace(s)) }

func (m *Manager) cancelHandler(ctx context.Context, a cancelArgs) (any, error) {
	if _, err := bindingOf(ctx); err != nil {
		return nil, err
	}
	id := strings.TrimSpace(a.ID)
	reason := strings.TrimSpace(a.Reason)
	if reason == "" {
		reason = "cancelled by the assistant"
	}
	ids, err := m.Cancel(ctx, id, reason)
	if err != nil {
		return nil, err
	}
	return struct {
		OK        bool     `json:"ok"`
		Cancelled []string `json:"cancelled"`
	}{true, ids}, nil
}

// listedNode is a compact node for list_sub_sessions.
type listedNode struct {
	ID        string   `json:"id"`
	State     State    `json:"state"`
	Objective string   `json:"objective"`
	Waiting   string   `json:"waiting,omitempty"`
	DependsOn []string `json:"depends_on,omitempty"`
	Depth     int      `json:"depth"`
	Hop       int      `json:"continuation,omitempty"`
	Result    string   `json:"result_preview,omitempty"`
	Error     string   `json:"error,omitempty"`
	Seconds   int      `json:"seconds,omitempty"`
}

type listedWorkflow struct {
	ID    string       `json:"workflow_id"`
	State State        `json:"state"`
	Nodes []listedNode `json:"sessions"`
}

func (m *Manager) listHandler(ctx context.Context, a listArgs) (any, error) {
	b, err := bindingOf(ctx)
	if err != nil {
		return nil, err
	}
	var wfs []Workflow
	if b.parent.IsSubSession() {
		n, err := m.GetNode(ctx, string(b.parent))
		if err != nil {
			return nil, err
		}
		w, err := m.GetWorkflow(ctx, n.Workflow)
		if err != nil {
			return nil, err
		}
		wfs = []Workflow{w}
	} else {
		wfs, err = m.ListWorkflows(ctx, ListOptions{Thread: b.parent, Active: !a.IncludeFinished, Limit: 10})
		if err != nil {
			return nil, err
		}
	}
	out := []listedWorkflow{}
	for _, w := range wfs {
		lw := listedWorkflow{ID: w.ID, State: w.State}
		for _, n := range w.Nodes {
			ln := listedNode{ID: n.ID, State: n.State, Objective: textclip.Line(n.Objective, 160), Waiting: n.Waiting,
				DependsOn: n.DependsOn, Depth: n.Depth, Hop: n.Hop, Result: textclip.Line(n.Result, 300), Error: textclip.Line(n.Error, 300)}
			if n.StartedAt != nil {
				end := m.now()
				if n.FinishedAt != nil {
					end = *n.FinishedAt
				}
				ln.Seconds = int(end.Sub(*n.StartedAt).Seconds())
			}
			lw.Nodes = append(lw.Nodes, ln)
		}
		out = append(out, lw)
	}
	return struct {
		Workflows []listedWorkflow `json:"workflows"`
	}{out}, nil
}

// Naive not_before layouts (interpreted in the configured zone).
var naiveLayouts = []string{
	"2006-01-02T15:04:05.999999999", "2006-01-02T15:04:05", "2006-01-02T15:04",
	"2006-01-02 15:04:05", "2006-01-02 15:04", "2006-01-02",
}

// ParseNotBefore parses an ISO-8601 time: with a zone or offset as given,
// without one (naive) in loc. "" is the zero time.
func ParseNotBefore(s string, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return time.Time{}, nil
	}
	if loc == nil {
		loc = time.UTC
	}
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	for _, layout := range naiveLayouts {
		if t, err := time.ParseInLocation(layout, s, loc); err == nil {
			return t, nil
		}
	}
	return time.Time{}, fmt.Errorf("not_before %q is not an ISO-8601 time; use e.g. 2025-01-15T20:00:00 (the user's time zone, %s) or 2025-01-15T20:00:00+01:00", s, loc)
}
