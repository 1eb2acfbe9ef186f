package workflow

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

// node is a sub-session in memory. Fields above the runtime marker mirror
// the workflow_nodes row; spec fields never change after creation, the
// others change only under Manager.mu.
type node struct {
	id, workflow string
	parent       chat.ThreadID
	lineage      string
	root         chat.ThreadID
	depth        int
	objective    string
	context      string
	mode         prompt.Mode
	profile      string
	toolNames    []string // nil: the mode's default set
	deps         []string
	notBefore    time.Time
	timeout      time.Duration
	taskID       string
	hop          int
	continuation string // continuation_of
	feedback     string
	maxRounds    int
	taint        string // what tainted the spawning conversation (tool.Taint)
	createdAt    time.Time

	continuedBy string
	resumes     int
	state       State
	result      string
	errText     string
	toolCalls   int
	usage       llm.Usage
	verdict     string
	delivered   bool
	startedAt   time.Time
	finishedAt  time.Time

	// runtime (never stored)
	waiting    string // why a pending node has not started
	dependents []string
	cancel     func(error)
	skills     []string // skills the last run loaded (for its outcome)
	// outcome overrides state in the outcome row (a run that timed out on
	// its last hop is a timeout there, while the session failed).
	outcome State
}

const nodeColumns = `id, workflow_id, parent, lineage, root_thread, depth, objective, context, mode, profile,
	tool_names, depends_on, not_before, timeout_ms, task_id, hop, continuation_of, continued_by, resumes,
	state, result, error, feedback, tool_calls, input_tokens, output_tokens, verdict, delivered,
	created_at, started_at, finished_at, max_rounds, taint`

// stmt is one statement of a batch.
type stmt struct {
	query string
	args  []any
}

// batch collects the writes of one transition, committed in one
// transaction.
type batch struct{ stmts []stmt }

func (b *batch) add(query string, args ...any) { b.stmts = append(b.stmts, stmt{query, args}) }

func (b *batch) insertNode(n *node) {
	b.add(`INSERT INTO workflow_nodes (`+nodeColumns+`) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)`,
		n.id, n.workflow, string(n.parent), n.lineage, string(n.root), n.depth, n.objective, n.context, string(n.mode), n.profile,
		encodeNames(n.toolNames), encodeList(n.deps), unixNano(n.notBefore), n.timeout.Milliseconds(), n.taskID, n.hop,
		n.continuation, n.continuedBy, n.resumes, string(n.state), n.result, n.errText, n.feedback, n.toolCalls,
		n.usage.InputTokens, n.usage.OutputTokens, n.verdict, boolInt(n.delivered),
		unixNano(n.createdAt), unixNano(n.startedAt), unixNano(n.finishedAt), n.maxRounds, n.taint)
}

// updateNode writes every mutable column of n.
func (b *batch) updateNode(n *node) {
	b.add(`UPDATE workflow_nodes SET workflow_id=?, continued_by=?, resumes=?, state=?, result=?, error=?, tool_calls=?,
		input_tokens=?, output_tokens=?, verdict=?, delivered=?, started_at=?, finished_at=? WHERE id=?`,
		n.workflow, n.continuedBy, n.resumes, string(n.state), n.result, n.errText, n.toolCalls,
		n.usage.InputTokens, n.usage.OutputTokens, n.verdict, boolInt(n.delivered),
		unixNano(n.startedAt), unixNano(n.finishedAt), n.id)
}

func (b *batch) appendMessage(nodeID string, seq int, m llm.Message) {
	b.add(`INSERT INTO workflow_messages (node_id, seq, message) VALUES (?,?,?)`, nodeID, seq, encodeMessage(m))
}

// appendNote appends m after the last saved message of nodeID.
func (b *batch) appendNote(nodeID string, m llm.Message) {
	b.add(`INSERT INTO workflow_messages (node_id, seq, message)
		SELECT ?, COALESCE(MAX(seq) + 1, 0), ? FROM workflow_messages WHERE node_id = ?`, nodeID, encodeMessage(m), nodeID)
}

// commit runs the batch in one transaction.
func commit(ctx context.Context, db *sql.DB, b *batch) error {
	if len(b.stmts) == 0 {
		return nil
	}
	return sqlite.Tx(ctx, db, func(tx *sql.Tx) error {
		for _, s := range b.stmts {
			if _, err := tx.ExecContext(ctx, s.query, s.args...); err != nil {
				return fmt.Errorf("%s: %w", firstWords(s.query), err)
			}
		}
		return nil
	})
}

func firstWords(q string) string {
	f := strings.Fields(q)
	if len(f) > 3 {
		f = f[:3]
	}
	return strings.Join(f, " ")
}

func scanNode(s sqlite.Scanner) (*node, error) {
	var (
		n                                   node
		parent, root, mode, tools, deps, st string
		notBefore, timeoutMS                int64
		delivered                           int
		created, started, finished          int64
	)
	err := s.Scan(&n.id, &n.workflow, &parent, &n.lineage, &root, &n.depth, &n.objective, &n.context, &mode, &n.profile,
		&tools, &deps, &notBefore, &timeoutMS, &n.taskID, &n.hop, &n.continuation, &n.continuedBy, &n.resumes,
		&st, &n.result, &n.errText, &n.feedback, &n.toolCalls, &n.usage.InputTokens, &n.usage.OutputTokens, &n.verdict,
		&delivered, &created, &started, &finished, &n.maxRounds, &n.taint)
	if err != nil {
		return nil, err
	}
	n.parent, n.root, n.mode, n.state = chat.ThreadID(parent), chat.ThreadID(root), prompt.Mode(mode), State(st)
	n.toolNames = decodeNames(tools)
	n.deps = decodeList(deps)
	n.notBefore = fromNano(notBefore)
	n.timeout = time.Duration(timeoutMS) * time.Millisecond
	n.delivered = delivered != 0
	n.createdAt, n.startedAt, n.finishedAt = fromNano(created), fromNano(started), fromNano(finished)
	return &n, nil
}

// queryNodes runs a SELECT of nodeColumns with the given tail.
func queryNodes(ctx context.Context, db *sql.DB, tail string, args ...any) ([]*node, error) {
	return sqlite.Rows(ctx, db, scanNode, `SELECT `+nodeColumns+` FROM workflow_nodes `+tail, args...)
}

// wfRow is a workflows row.
type wfRow struct {
	id         string
	root       chat.ThreadID
	mergedInto string
	createdAt  time.Time
	finishedAt time.Time
}

func queryWorkflows(ctx context.Context, db *sql.DB, tail string, args ...any) ([]wfRow, error) {
	return sqlite.Rows(ctx, db, func(row sqlite.Scanner) (wfRow, error) {
		var w wfRow
		var root string
		var c, f int64
		err := row.Scan(&w.id, &root, &w.mergedInto, &c, &f)
		w.root, w.createdAt, w.finishedAt = chat.ThreadID(root), fromNano(c), fromNano(f)
		return w, err
	}, `SELECT id, root_thread, merged_into, created_at, finished_at FROM workflows `+tail, args...)
}

// resolveWorkflowID follows merged_into links to the surviving workflow.
func resolveWorkflowID(ctx context.Context, db *sql.DB, id string) (string, error) {
	for range 64 {
		var into string
		err := db.QueryRowContext(ctx, `SELECT merged_into FROM workflows WHERE id = ?`, id).Scan(&into)
		if errors.Is(err, sql.ErrNoRows) {
			return "", fmt.Errorf("workflow %q %w", id, ErrNotFound)
		}
		if err != nil {
			return "", fmt.Errorf("look up workflow %q: %w", id, err)
		}
		if into == "" {
			return id, nil
		}
		id = into
	}
	return "", fmt.Errorf("workflow %q: merge chain too long", id)
}

// loadMessages reads a worker's saved message list (see loadList).
func loadMessages(ctx context.Context, db *sql.DB, nodeID string) ([]llm.Message, error) {
	msgs, _, err := loadList(ctx, db, nodeID)
	return msgs, err
}

// loadList reads a worker's saved message list, with every tool result
// right after the call it answers (inCallOrder), and the seq the next
// message is saved at.
func loadList(ctx context.Context, db *sql.DB, nodeID string) (msgs []llm.Message, next int, err error) {
	err = sqlite.Each(ctx, db, func(rows *sql.Rows) error {
		var s string
		if err := rows.Scan(&next, &s); err != nil {
			return err
		}
		next++
		m, err := decodeMessage(s)
		if err != nil {
			return err
		}
		msgs = append(msgs, m)
		return nil
	}, `SELECT seq, message FROM workflow_messages WHERE node_id = ? ORDER BY seq`, nodeID)
	if err != nil {
		return nil, 0, fmt.Errorf("load messages of %s: %w", nodeID, err)
	}
	return inCallOrder(msgs), next, nil
}

// inCallOrder puts every tool result right after the assistant message
// whose call it answers, in the order of the calls; other messages keep
// their order. A list is saved one message at a time — tool results in
// completion order, and a note (continuation, restart) may be appended
// while a round is unfinished, before the rest of its results — so the
// saved order alone may not be one both providers accept. A result is
// moved when the last assistant message before it made a call with its id
// that has no result yet; any other message stays where it is.
func inCallOrder(msgs []llm.Message) []llm.Message {
	out := make([]llm.Message, 0, len(msgs))
	var (
		at       = -1            // index in out of the current assistant message with calls
		order    map[string]int  // its call ids → position
		answered map[string]bool // its calls that have a result
		placed   int             // results placed right after it
	)
	for _, msg := range msgs {
		if id, ok := resultID(msg); ok && at >= 0 && !answered[id] {
			if k, mine := order[id]; mine {
				j := at + 1
				for j < at+1+placed {
					if other, _ := resultID(out[j]); order[other] > k {
						break
					}
					j++
				}
				out = slices.Insert(out, j, msg)
				answered[id] = true
				placed++
				continue
			}
		}
		out = append(out, msg)
		if msg.Role != llm.RoleAssistant {
			continue
		}
		at = -1
		if calls := msg.ToolCalls(); len(calls) > 0 {
			at, placed = len(out)-1, 0
			order, answered = make(map[string]int, len(calls)), make(map[string]bool, len(calls))
			for i, c := range calls {
				if _, dup := order[c.ID]; !dup {
					order[c.ID] = i
				}
			}
		}
	}
	return out
}

// resultID is the call id a tool message answers.
func resultID(m llm.Message) (string, bool) {
	if m.Role != llm.RoleTool || len(m.Parts) != 1 {
		return "", false
	}
	r, ok := m.Parts[0].(llm.ToolResult)
	return r.CallID, ok
}

// unanswered returns the tool calls of the list's last assistant message
// that no tool result after it answers: the calls of a round cut short.
func unanswered(msgs []llm.Message) []llm.ToolCall {
	last := -1
	for i, m := range slices.Backward(msgs) {
		if m.Role == llm.RoleAssistant {
			last = i
			break
		}
	}
	if last < 0 {
		return nil
	}
	done := map[string]bool{}
	for _, m := range msgs[last+1:] {
		if id, ok := resultID(m); ok {
			done[id] = true
		}
	}
	var out []llm.ToolCall
	for _, c := range msgs[last].ToolCalls() {
		if !done[c.ID] {
			out = append(out, c)
			done[c.ID] = true
		}
	}
	return out
}

// wirePart is the stored JSON of an llm.Part.
type wirePart struct {
	Type      string `json:"type"`
	Text      string `json:"text,omitempty"`
	ID        string `json:"id,omitempty"`
	Name      string `json:"name,omitempty"`
	Arguments string `json:"arguments,omitempty"`
	CallID    string `json:"call_id,omitempty"`
	Content   string `json:"content,omitempty"`
	IsError   bool   `json:"is_error,omitempty"`
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
}

type wireMessage struct {
	Role  llm.Role   `json:"role"`
	Parts []wirePart `json:"parts"`
}

func encodeMessage(m llm.Message) string {
	w := wireMessage{Role: m.Role, Parts: make([]wirePart, 0, len(m.Parts))}
	for _, p := range m.Parts {
		switch v := p.(type) {
		case llm.Text:
			w.Parts = append(w.Parts, wirePart{Type: "text", Text: v.Text})
		case llm.Thinking:
			w.Parts = append(w.Parts, wirePart{Type: "thinking", Text: v.Text, Signature: v.Signature, Data: v.Redacted})
		case llm.ToolCall:
			w.Parts = append(w.Parts, wirePart{Type: "tool_call", ID: v.ID, Name: v.Name, Arguments: string(v.Arguments)})
		case llm.ToolResult:
			w.Parts = append(w.Parts, wirePart{Type: "tool_result", CallID: v.CallID, Name: v.Name, Content: v.Content, IsError: v.IsError})
		}
	}
	b, _ := json.Marshal(w) // strings and bools only: cannot fail
	return string(b)
}

func decodeMessage(s string) (llm.Message, error) {
	var w wireMessage
	if err := json.Unmarshal([]byte(s), &w); err != nil {
		return llm.Message{}, fmt.Errorf("corrupt stored message: %w", err)
	}
	m := llm.Message{Role: w.Role, Parts: make([]llm.Part, 0, len(w.Parts))}
	for _, p := range w.Parts {
		switch p.Type {
		case "text":
			m.Parts = append(m.Parts, llm.Text{Text: p.Text})
		case "thinking":
			m.Parts = append(m.Parts, llm.Thinking{Text: p.Text, Signature: p.Signature, Redacted: p.Data})
		case "tool_call":
			m.Parts = append(m.Parts, llm.ToolCall{ID: p.ID, Name: p.Name, Arguments: json.RawMessage(p.Arguments)})
		case "tool_result":
			m.Parts = append(m.Parts, llm.ToolResult{CallID: p.CallID, Name: p.Name, Content: p.Content, IsError: p.IsError})
		default:
			return llm.Message{}, fmt.Errorf("corrupt stored message: unknown part type %q", p.Type)
		}
	}
	return m, nil
}

func encodeList(ss []string) string {
	if len(ss) == 0 {
		return "[]"
	}
	b, _ := json.Marshal(ss)
	return string(b)
}

func decodeList(s string) []string {
	var out []string
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

// encodeNames keeps nil ("" = the mode's default tools) apart from an empty
// list (no tools).
func encodeNames(ss []string) string {
	if ss == nil {
		return ""
	}
	b, _ := json.Marshal(ss)
	return string(b)
}

func decodeNames(s string) []string {
	if s == "" {
		return nil
	}
	out := []string{}
	_ = json.Unmarshal([]byte(s), &out)
	return out
}

func unixNano(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNano(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
