package workflow

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/textclip"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// runSpec is what a worker needs, copied under the lock at launch so that
// the worker never reads shared state.
type runSpec struct {
	id, workflow string
	parent, root chat.ThreadID
	depth, hop   int
	objective    string
	context      string
	feedback     string
	mode         prompt.Mode
	profile      string
	toolNames    []string
	timeout      time.Duration
	baseCalls    int
	maxRounds    int
	taint        string
	deps         []depResult
}

type depResult struct {
	id, objective, result string
}

type runKind int

const (
	runDone runKind = iota
	runFailed
	runTimedOut
	runInterrupted
	runCancelled
)

type runOutcome struct {
	kind    runKind
	result  string
	err     error
	calls   []toolloop.CallRecord
	usage   llm.Usage
	verdict string
	system  string
	// promptSkills names the skills the system prompt carried (full mode:
	// the skills section); they count as loaded for reflection's
	// skill_correlation, as the ones the worker read do.
	promptSkills []string
}

var errTimedOut = errors.New("sub-session timed out")

// specLocked copies what n's worker needs, with its dependencies' results.
func (m *Manager) specLocked(ctx context.Context, n *node) (runSpec, error) {
	sp := runSpec{
		id: n.id, workflow: n.workflow, parent: n.parent, root: n.root, depth: n.depth, hop: n.hop,
		objective: n.objective, context: n.context, feedback: n.feedback, mode: n.mode, profile: n.profile,
		toolNames: slices.Clone(n.toolNames), timeout: n.timeout, baseCalls: n.toolCalls, maxRounds: n.maxRounds,
		taint: n.taint,
	}
	for _, d := range n.deps {
		f := m.finalLocked(ctx, d)
		if f == nil || f.state != StateCompleted {
			return sp, fmt.Errorf("dependency %s is not completed", d)
		}
		sp.deps = append(sp.deps, depResult{id: d, objective: f.objective, result: f.result})
	}
	return sp, nil
}

// work runs one worker and records its outcome.
func (m *Manager) work(ctx context.Context, n *node, sp runSpec) {
	start := m.now()
	out := m.execute(ctx, n, sp)
	m.logRun(sp, start, out) // before the outcome is visible
	m.finishRun(n, out)
}

// execute runs the tool loop over the saved message list under the
// session's timeout, saving every message as soon as it is final: the
// assistant message before its first tool call starts, each tool result
// before the next call starts. A list saved in the middle of a round (the
// process died, or the run was stopped or timed out between calls) is
// resumed by running only the calls that have no saved result.
func (m *Manager) execute(ctx context.Context, n *node, sp runSpec) (out runOutcome) {
	defer func() {
		if p := recover(); p != nil {
			out.kind, out.err = runFailed, fmt.Errorf("worker panicked: %v", p)
		}
	}()
	tools, names := m.workerTools(sp)
	out.system, out.promptSkills = m.systemPrompt(ctx, sp, names)
	lctx, cancel := dbctx()
	msgs, seq, err := loadList(lctx, m.o.DB, sp.id)
	cancel()
	if err != nil {
		out.kind, out.err = runFailed, err
		return out
	}
	tctx, tcancel := context.WithTimeoutCause(ctx, sp.timeout, errTimedOut)
	if sp.taint != "" {
		tctx = tool.WithTaint(tctx, tool.Taint{Source: sp.taint})
	}
	defer tcancel()

	// calls counts the tool results saved in this session's list by its
	// own runs (a continuation starts from 0).
	calls := sp.baseCalls
	save := func(msg llm.Message) {
		var b batch
		b.appendMessage(sp.id, seq, msg)
		seq++
		if msg.Role == llm.RoleTool {
			calls++
			b.add(`UPDATE workflow_nodes SET tool_calls = ? WHERE id = ?`, calls, sp.id)
		}
		// Under the lock: the package's writes never contend with each
		// other for SQLite's write lock (whose busy wait sleeps).
		m.mu.Lock()
		defer m.mu.Unlock()
		n.toolCalls = calls
		m.commitLocked(&b)
	}
	if len(msgs) == 0 { // saved at spawn; never empty unless edited by hand
		msgs = []llm.Message{llm.UserText(startNote)}
		save(msgs[0])
	}
	opts := toolloop.Options{
		MaxRounds: cmp.Or(sp.maxRounds, m.o.Loop.MaxRounds), Parallel: m.o.Loop.Parallel, CallTimeout: m.o.Loop.CallTimeout,
		MaxResultChars: m.o.Loop.MaxResultChars, Approver: m.o.Loop.Approver, Redact: m.o.Loop.Redact,
		OnToolResult: func(r toolloop.CallRecord) { out.calls = append(out.calls, r) },
		OnMessage:    save,
	}
	failed := func(err error) {
		switch {
		case errors.Is(context.Cause(ctx), errCancelled):
			out.kind = runCancelled
		case ctx.Err() != nil:
			out.kind = runInterrupted
		case errors.Is(context.Cause(tctx), errTimedOut):
			out.kind = runTimedOut
		default:
			out.kind = runFailed
		}
		out.err = err
	}
	run := func(msgs []llm.Message) (toolloop.Result, bool) {
		res, err := toolloop.Run(tctx, m.o.Model, llm.Request{System: out.system, Messages: msgs}, tools, opts)
		out.usage = out.usage.Add(res.Usage)
		if err != nil {
			failed(err)
			return res, false
		}
		return res, true
	}
	// A round cut short: its finished calls are not run again (the model
	// sees their saved results), the others run now.
	if pending := unanswered(msgs); len(pending) > 0 {
		res, err := toolloop.RunCalls(tctx, tools, pending, opts)
		if err != nil {
			failed(err)
			return out
		}
		msgs = inCallOrder(append(msgs, res.Messages...))
	}
	res, ok := run(msgs)
	if !ok {
		return out
	}
	final := strings.TrimSpace(res.Final.Text())

	// The supervisor check of seed 000 applied to the worker's report: a
	// claim without the tool call behind it gets one corrective round when
	// the worker has the tool, and the verdict is recorded either way.
	out.verdict = "ok"
	if mm, bad := agent.CheckClaims(m.o.ClaimRules, final, out.calls); bad {
		out.verdict = "claim_without_call:" + mm.Rule.Name
		if hasAny(names, mm.Rule.Tools) && tctx.Err() == nil {
			note := llm.UserText(mm.Event())
			save(note)
			again := append(append(slices.Clone(msgs), res.Messages...), note)
			res2, ok := run(again)
			if !ok {
				return out
			}
			final = strings.TrimSpace(res2.Final.Text())
			if _, still := agent.CheckClaims(m.o.ClaimRules, final, out.calls); still {
				out.verdict = "uncorrected:" + mm.Rule.Name
			} else {
				out.verdict = "corrected:" + mm.Rule.Name
			}
		}
	}
	out.kind, out.result = runDone, final
	return out
}

func hasAny(have, want []string) bool {
	for _, w := range want {
		if slices.Contains(have, w) {
			return true
		}
	}
	return false
}

// finishRun applies a worker's outcome.
func (m *Manager) finishRun(n *node, out runOutcome) {
	ctx, cancel := dbctx()
	defer cancel()
	var b batch
	var fx effects
	m.mu.Lock()
	m.running--
	n.cancel = nil
	fx.wake = true
	if n.state == StateRunning {
		n.usage = n.usage.Add(out.usage)
		n.verdict = out.verdict
		n.skills = mergeSkills(skillsLoaded(callInfos(out.calls)), out.promptSkills)
		switch out.kind {
		case runDone:
			m.completeLocked(ctx, n, out.result, &b, &fx)
		case runTimedOut:
			m.continueLocked(ctx, n, &b, &fx)
		case runInterrupted:
			b.updateNode(n) // stays running: resumed by the next Run
		default:
			reason := "the worker failed"
			if out.err != nil {
				reason = out.err.Error()
			}
			m.failWaveLocked(ctx, n, reason, &b, &fx)
		}
		m.sweepLocked(n.workflow, &b, &fx)
	}
	m.commitLocked(&b)
	m.mu.Unlock()
	m.emit(&fx)
}

func callInfos(calls []toolloop.CallRecord) []callInfo {
	out := make([]callInfo, 0, len(calls))
	for _, c := range calls {
		ci := callInfo{name: c.Name}
		_ = json.Unmarshal(c.Arguments, &ci.args)
		out = append(out, ci)
	}
	return out
}

// workerTools are the tools of a worker: the named or profile tools, or the
// mode's default set (full: everything; others: execution and research);
// full-mode workers also get the orchestration tools of this package, and
// spawn_sub_session while below the depth limit.
func (m *Manager) workerTools(sp runSpec) ([]tool.Tool, []string) {
	allowed := m.allowedTools(sp.mode)
	var tools []tool.Tool
	for _, t := range allowed {
		switch {
		case sp.toolNames != nil:
			if slices.Contains(sp.toolNames, t.Name()) {
				tools = append(tools, t)
			}
		case sp.mode == prompt.ModeFull:
			tools = append(tools, t)
		default:
			cats := tool.CategoriesOf(t)
			if hasAny(cats, defaultCategories) {
				tools = append(tools, t)
			}
		}
	}
	if sp.mode == prompt.ModeFull {
		b := binding{parent: chat.ThreadID(sp.id), turn: &turnState{}}
		tools = append(tools, bind(m.listTool, b), bind(m.cancelTool, b))
		if sp.depth < m.o.MaxDepth {
			tools = append(tools, bind(m.spawnTool, b))
		}
	}
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name()
	}
	return tools, names
}

// systemPrompt assembles the worker's system prompt for its mode (seed
// 003): the task section always comes last. It also returns the names of the
// skills the prompt carries (full mode), sorted.
func (m *Manager) systemPrompt(ctx context.Context, sp runSpec, tools []string) (string, []string) {
	in := prompt.Input{Mode: sp.mode, Now: m.now(), Location: m.o.Location, Tools: tools, Task: m.taskText(sp, tools)}
	if sp.mode == prompt.ModeFull || sp.mode == prompt.ModeBaseOnly {
		if m.o.DataDir != "" {
			b, err := os.ReadFile(filepath.Join(m.o.DataDir, prompt.BaseFile))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				m.log.Warn("base prompt unavailable for a worker", "session", sp.id, "err", err)
			}
			in.Base = string(b)
		}
	}
	if sp.mode == prompt.ModeFull {
		var err error
		if in.Memories, err = m.o.Sources.Memories(ctx); err != nil {
			m.log.Warn("memories unavailable for a worker", "err", err)
		}
		if in.Pulse, err = m.o.Sources.Pulse(ctx); err != nil {
			m.log.Warn("pulse unavailable for a worker", "err", err)
		}
		if in.Skills, err = m.o.Sources.Skills(ctx); err != nil {
			m.log.Warn("skills unavailable for a worker", "err", err)
		}
		if m.o.ProjectStatus != nil {
			if st, err := m.o.ProjectStatus(ctx, sp.root); err != nil {
				m.log.Warn("project status unavailable for a worker", "session", sp.id, "err", err)
			} else if st != "" {
				in.Extra = append(in.Extra, st)
			}
		}
	}
	var skills []string
	for _, s := range in.Skills {
		if name := strings.TrimSpace(s.Name); name != "" && (s.Body != "" || s.Summary != "") {
			skills = append(skills, name)
		}
	}
	return prompt.Assemble(in), mergeSkills(nil, skills)
}

// taskText is the Task section: objective, context, the dependencies'
// results, historical feedback and what the worker should know about its
// own session.
func (m *Manager) taskText(sp runSpec, tools []string) string {
	var s strings.Builder
	s.WriteString("## Objective\n")
	s.WriteString(sp.objective)
	if sp.context != "" {
		s.WriteString("\n\n## Context\n")
		s.WriteString(sp.context)
	}
	if len(sp.deps) > 0 {
		s.WriteString("\n\n## Results of the sessions this task depends on")
		per := max(MaxResultChars/len(sp.deps), 2000)
		for _, d := range sp.deps {
			fmt.Fprintf(&s, "\n\n### %s: %s\n%s", d.id, textclip.Line(d.objective, 200), prompt.MidTruncate(orNone(d.result), per))
		}
	}
	if sp.feedback != "" {
		s.WriteString("\n\n## Historical feedback\n")
		s.WriteString(sp.feedback)
	}
	s.WriteString("\n\n## This session\n")
	fmt.Fprintf(&s, "You are background worker %s (nesting level %d of %d). Each run may take at most %s", sp.id, sp.depth, m.o.MaxDepth, sp.timeout)
	if m.o.MaxContinuations > 0 {
		fmt.Fprintf(&s, "; when time runs out, a continuation carries on from your messages (at most %d)", m.o.MaxContinuations)
	}
	s.WriteString(".")
	if sp.hop > 0 {
		fmt.Fprintf(&s, " You are continuation %d.", sp.hop)
	}
	if slices.Contains(tools, ToolSpawn) {
		s.WriteString(" You may delegate parts of the task with spawn_sub_session (use depends_on or depends_on_previous to order them). " +
			"Their results are not returned to you: when all of them have finished, they are delivered together to the user's conversation.")
	}
	return s.String()
}

// logRun writes the run and its tool calls to the interaction log.
func (m *Manager) logRun(sp runSpec, start time.Time, out runOutcome) {
	if m.o.Interactions == nil {
		return
	}
	state := map[runKind]string{runDone: "completed", runFailed: "failed", runTimedOut: "timeout",
		runInterrupted: "interrupted", runCancelled: "cancelled"}[out.kind]
	errText := ""
	if out.err != nil && out.kind != runDone {
		errText = out.err.Error()
	}
	names := make([]string, len(out.calls))
	for i, c := range out.calls {
		names[i] = c.Name
	}
	detail, _ := json.Marshal(struct {
		Workflow  string   `json:"workflow_id"`
		Parent    string   `json:"parent,omitempty"`
		Mode      string   `json:"mode"`
		Depth     int      `json:"depth"`
		Hop       int      `json:"hop"`
		State     string   `json:"state"`
		ToolCalls []string `json:"tool_calls,omitempty"`
		Verdict   string   `json:"supervisor_verdict,omitempty"`
		Objective string   `json:"objective"`
		Result    string   `json:"result,omitempty"`
	}{sp.workflow, string(sp.parent), string(sp.mode), sp.depth, sp.hop, state, names, out.verdict,
		prompt.MidTruncate(sp.objective, 2000), prompt.MidTruncate(out.result, 2000)})
	entries := []interactions.Entry{{
		At: start, Thread: chat.ThreadID(sp.id), Action: ActionSubSession,
		Summary: state + ": " + textclip.Line(sp.objective, 140), Detail: detail,
		InputTokens: out.usage.InputTokens, OutputTokens: out.usage.OutputTokens,
		Duration: m.now().Sub(start), Error: errText,
	}}
	for _, c := range out.calls {
		d, _ := json.Marshal(struct {
			ID        string          `json:"id"`
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments,omitempty"`
			Result    string          `json:"result"`
			IsError   bool            `json:"is_error,omitempty"`
			Round     int             `json:"round"`
		}{c.ID, c.Name, validJSON(c.Arguments), prompt.MidTruncate(c.Result, 2000), c.IsError, c.Round})
		e := interactions.Entry{At: start, Thread: chat.ThreadID(sp.id), Action: interactions.ActionToolCall,
			Summary: c.Name, Detail: d, Duration: c.Duration}
		if c.IsError {
			e.Summary += " (failed)"
			if c.Err != nil {
				e.Error = c.Err.Error()
			}
		}
		entries = append(entries, e)
	}
	ctx, cancel := dbctx()
	defer cancel()
	if err := m.o.Interactions.Log(ctx, entries...); err != nil {
		m.log.Warn("could not write the interaction log", "session", sp.id, "err", err)
	}
}

func validJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || json.Valid(b) {
		return b
	}
	q, _ := json.Marshal(string(b))
	return q
}
