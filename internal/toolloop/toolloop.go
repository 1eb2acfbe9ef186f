package toolloop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// Defaults for the zero values of Options.
const (
	DefaultMaxRounds      = 24
	DefaultParallel       = 4
	DefaultCallTimeout    = 2 * time.Minute
	DefaultMaxResultChars = 32 * 1024
	DefaultMaxRepeats     = 3
)

// ErrStructuredOutput is wrapped by Run's error when the model's answer is
// still not JSON valid against req.ResponseFormat's schema after one retry.
var ErrStructuredOutput = errors.New("structured output does not match the schema")

// Model is what the loop needs from a language model.
type Model interface {
	Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error)
}

// Options tune a Run. The zero value gives the defaults.
type Options struct {
	// MaxRounds bounds the rounds offering tools; when reached, one last call
	// with tool use disabled asks for a final answer. Default 24.
	MaxRounds int
	// Parallel is the most tool calls of one round running at once.
	// Default 4.
	Parallel int
	// CallTimeout bounds each tool call. Default 2 minutes.
	CallTimeout time.Duration
	// MaxResultChars caps each tool result sent back to the model, in
	// characters. Default 32768.
	MaxResultChars int
	// MaxRepeats is in how many rounds of one Run one call — the same tool
	// with the same arguments — runs (identical calls of one round count
	// once). A further identical call is not run:
	// its result tells the model (and, through OnToolResult, the user)
	// that it was stopped, and a round whose calls were all stopped ends
	// the tool rounds: the model is asked for its answer with tools off.
	// Default 3; negative: no limit.
	MaxRepeats int
	// Stream is passed to the model on every call, so text deltas reach the
	// caller as they arrive.
	Stream llm.StreamFunc
	// OnToolCall is called before each tool call runs (also for calls that
	// turn out to be invalid), in the order the model issued them.
	OnToolCall func(Call)
	// OnToolResult is called when a tool call has finished, in completion
	// order.
	OnToolResult func(CallRecord)
	// OnRound is called after each round's messages are final, with the
	// messages the round appended (the assistant message and its tool
	// results; or the final answer), so that callers can save their message
	// list after every round.
	OnRound func(appended []llm.Message)
	// OnMessage is called with each message as soon as it is final, before
	// the loop goes on, so that callers can save their message list after
	// every tool call: a round's assistant message before its first call
	// starts, each tool result when its call has finished (in completion
	// order, before another call starts), and the final answer. Results
	// of calls that ctx cut off (CallRecord.Interrupted) are not reported:
	// a caller resuming from what it saved runs those calls again (see
	// RunCalls). Each round's OnMessage calls come before its OnRound call.
	OnMessage func(llm.Message)
	// BeforeCall, when set, is called just before a call's handler runs —
	// after its arguments are checked and, with an Approver, after the call
	// was approved (a call waiting for approval has not started), with
	// Call.Arguments normalised as the tool receives them — on the call's
	// own goroutine, so calls of one round may reach it concurrently. A
	// caller uses it to make the call durable before it can have side
	// effects. When it returns an error the call does not run: it fails
	// with that error (sent to the model like any failed call), and the
	// loop goes on.
	BeforeCall func(ctx context.Context, c Call) error
	// Approver, when set, is asked before every valid call runs; see
	// Approver.
	Approver Approver
	// Redact, when set, is applied to every call's result (and failure
	// message) as it leaves the tool, before it is capped, sent to the
	// model or reported (OnToolResult, OnMessage): secret values a tool
	// returns (an MCP server printing its environment) reach neither the
	// model, the live stream and response, nor the turn journal.
	Redact func(string) string
	// FenceKey, when set, derives each tool result's nonce from the result
	// itself (HMAC-SHA256 under this key) instead of drawing one nonce at
	// random per Run: a result is then fenced the same way in every
	// request, so a conversation's earlier results stay the same prefix
	// for providers' prompt caches. It must be secret and random, at least
	// 16 bytes (the agent draws one when it is built).
	FenceKey []byte
}

// redact is Redact, or the text as it is.
func (o Options) redact(text string) string {
	if o.Redact == nil {
		return text
	}
	return o.Redact(text)
}

func (o Options) withDefaults() Options {
	if o.MaxRounds <= 0 {
		o.MaxRounds = DefaultMaxRounds
	}
	if o.Parallel <= 0 {
		o.Parallel = DefaultParallel
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.MaxResultChars <= 0 {
		o.MaxResultChars = DefaultMaxResultChars
	}
	if o.MaxRepeats == 0 {
		o.MaxRepeats = DefaultMaxRepeats
	}
	return o
}

// Approver decides whether a call may run: the tool loop asks it before
// every call whose arguments are valid, on the call's own goroutine (so one
// call waiting does not hold up the others), and runs the call only when
// Approve returns nil. Approve may block — until the user answers, say —
// and must return promptly when ctx ends. An error means the call does not
// run: its message goes back to the model as the call's failed result
// ({"ok":false,…}), and the loop carries on; when ctx has ended the call
// counts as interrupted (CallRecord.Interrupted), so a caller resuming the
// turn asks again.
type Approver interface {
	Approve(ctx context.Context, req ApprovalRequest) error
}

// ApprovalRequest is a call about to run, as an Approver sees it.
type ApprovalRequest struct {
	// Call is the call, with its normalised arguments.
	Call Call
	// Tool is the tool it calls.
	Tool tool.Tool
	// Messages are the messages of the run up to and including the
	// assistant message that issued the call (req.Messages first; empty for
	// RunCalls). They must not be modified.
	Messages []llm.Message
	// Tools finds the tools of the run by name (nil: unknown), so that
	// the Approver can tell what earlier results of the conversation are,
	// per-turn tools included.
	Tools func(name string) (tool.Tool, bool)
	// Further says the call is already running and asks about a further
	// destination its arguments did not name (fetch_url following a
	// redirect): Call.Arguments are those a call to that destination
	// would have. See tool.Gate.
	Further bool
}

// Tainter is an Approver that also says whether the conversation a call
// was made in holds untrusted input. The loop puts the answer into the
// call's context (tool.WithTaint), so that work the call starts in the
// background (a sub-session, a scheduled AI task) carries it on.
type Tainter interface {
	Taint(ctx context.Context, req ApprovalRequest) (tool.Taint, bool)
}

// Call is a tool call the model made, as announced by Options.OnToolCall.
type Call struct {
	ID   string
	Name string
	// Arguments are exactly what the model sent.
	Arguments json.RawMessage
	// Round is the 1-based round that issued the call; 0 for RunCalls.
	Round int
	// Index is the call's 0-based place among the calls of its round (of
	// RunCalls' calls), in the order the model issued them.
	Index int
	// ReadOnly is set when the tool declared itself free of side effects
	// (tool.IsReadOnly); false for an unknown tool.
	ReadOnly bool
}

// CallRecord is a finished tool call.
type CallRecord struct {
	ID   string
	Name string
	// Arguments are the normalised arguments the tool received, or the
	// model's raw arguments when they could not be parsed.
	Arguments json.RawMessage
	// Result is the content sent back to the model.
	Result string
	// Images are the result's pictures (tool.Result.Images): the result
	// message carries them after the result.
	Images  []llm.Image
	IsError bool
	// Err is the detailed cause when IsError (a panic's value and stack, the
	// handler's error, the validation error). It is for logs only.
	Err      error
	Duration time.Duration
	// Round is the 1-based round that issued the call; 0 for RunCalls.
	Round int
	// Index is the call's place in its round (see Call.Index).
	Index int
	// Interrupted is set when ctx ended before the call started or while
	// it ran and the call failed: its result only says that it was
	// cancelled, so it is not reported to Options.OnMessage.
	Interrupted bool
}

// Result is the outcome of Run.
type Result struct {
	// Messages are the messages appended after req.Messages, in order: each
	// round's assistant message and tool results, then Final.
	Messages []llm.Message
	// Final is the model's final answer (the formatted JSON when
	// req.ResponseFormat is set). When Run fails on structured output, Final
	// holds the last invalid reply, which is not in Messages.
	Final llm.Message
	// Usage is summed over every model call.
	Usage llm.Usage
	// Calls are the tool calls run, in the order the model issued them.
	Calls []CallRecord
	// Rounds counts model calls, including the final and formatting calls.
	Rounds int
	// RoundLimitReached is set when MaxRounds was reached and the answer was
	// forced with tool use disabled.
	RoundLimitReached bool
	// RepeatsStopped counts the calls not run because the same call had
	// already run Options.MaxRepeats times.
	RepeatsStopped int
}

// Run runs the loop for req with tools. See the package documentation for
// the rules. Errors are returned for invalid tools (before any model call),
// model errors, cancellation and ErrStructuredOutput; the Result then holds
// what was done so far.
func Run(ctx context.Context, m Model, req llm.Request, tools []tool.Tool, opts Options) (Result, error) {
	l := &loop{model: m, opts: opts.withDefaults(), base: req, fence: newFence(opts.FenceKey)}
	if err := l.setTools(tools); err != nil {
		return Result{}, fmt.Errorf("toolloop: %w", err)
	}
	if req.ResponseFormat != nil {
		f, err := newFormat(req.ResponseFormat)
		if err != nil {
			return Result{}, fmt.Errorf("toolloop: response format %q: %w", req.ResponseFormat.Name, err)
		}
		l.format = f
	}
	l.base.Tools = l.specs
	l.base.ResponseFormat = nil
	l.prior = slices.Clip(req.Messages)
	err := l.run(ctx)
	l.res.Messages = slices.Clip(l.added)
	return l.res, err
}

// RunCalls runs calls — tool calls a model issued earlier whose results
// were lost, typically because a run was interrupted between them — under
// the rules of one round of Run (validation, Options.Parallel,
// CallTimeout, MaxResultChars, failures as {"ok":false,…} results), without
// calling a model. Result.Messages holds one llm.RoleTool message per call,
// in the order of calls, and Result.Calls their records (Round 0); the
// callbacks OnToolCall, OnToolResult and OnMessage are invoked as in Run.
// A call without an ID cannot be answered and is an error, before any call
// runs, as are invalid tools. When ctx ends, calls not yet started do not
// start, and RunCalls returns an error wrapping ctx.Err() after the running
// ones return.
func RunCalls(ctx context.Context, tools []tool.Tool, calls []llm.ToolCall, opts Options) (Result, error) {
	l := &loop{opts: opts.withDefaults()}
	if err := l.setTools(tools); err != nil {
		return Result{}, fmt.Errorf("toolloop: %w", err)
	}
	for _, c := range calls {
		if c.ID == "" {
			return Result{}, fmt.Errorf("toolloop: tool call %q has no id", c.Name)
		}
	}
	l.runCalls(ctx, 0, calls)
	l.res.Messages = slices.Clip(l.added)
	if err := ctx.Err(); err != nil {
		return l.res, fmt.Errorf("toolloop: %w", err)
	}
	return l.res, nil
}

// loop is the state of one Run. It is used only by the goroutine calling
// Run; tool-call goroutines touch nothing but their own record.
type loop struct {
	model  Model
	opts   Options
	base   llm.Request
	format *format
	fence  fence

	tools map[string]tool.Tool
	names []string
	specs []llm.ToolSpec

	// prior is req.Messages and added what the run appended after them
	// (RunCalls has no prior); joined is prior followed by added[:k],
	// extended as requests need it (see conversation).
	prior, added, joined []llm.Message
	res                  Result
	// runs counts the calls issued so far by name and canonical
	// arguments, for Options.MaxRepeats.
	runs map[string]repeat
}

func (l *loop) setTools(tools []tool.Tool) error {
	l.tools = make(map[string]tool.Tool, len(tools))
	l.names = make([]string, 0, len(tools))
	if len(tools) > 0 {
		l.specs = make([]llm.ToolSpec, 0, len(tools))
	}
	for _, t := range tools {
		if t == nil {
			return errors.New("nil tool")
		}
		ct, err := tool.Checked(t)
		if err != nil {
			return err
		}
		name := ct.Name()
		if _, dup := l.tools[name]; dup {
			return fmt.Errorf("duplicate tool name %q", name)
		}
		l.tools[name] = ct
		l.names = append(l.names, name)
		l.specs = append(l.specs, tool.Spec(ct))
	}
	return nil
}

func (l *loop) run(ctx context.Context) error {
	toolsOn := len(l.tools) > 0 && l.base.ToolChoice != llm.ToolChoiceNone
	if !toolsOn {
		if l.format != nil {
			return l.formatted(ctx, l.conversation())
		}
		resp, err := l.generate(ctx, l.request(l.conversation(), llm.ToolChoiceNone))
		if err != nil {
			return err
		}
		l.finish(answerOnly(resp.Message))
		return nil
	}
	for round := 1; round <= l.opts.MaxRounds; round++ {
		choice := llm.ToolChoiceAuto
		if round == 1 {
			choice = l.base.ToolChoice
		}
		resp, err := l.generate(ctx, l.request(l.conversation(), choice))
		if err != nil {
			return err
		}
		msg := withCallIDs(assistant(resp.Message), round)
		calls := msg.ToolCalls()
		if len(calls) == 0 {
			if l.format != nil {
				// The draft informs the formatting call but is superseded by it.
				return l.formatted(ctx, append(l.conversation(), msg), formatNote)
			}
			l.finish(msg)
			return nil
		}
		roundStart := len(l.added)
		l.added = append(l.added, msg)
		l.report(msg)
		stopped := l.res.RepeatsStopped
		l.runCalls(ctx, round, calls)
		l.roundDone(roundStart)
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("toolloop: round %d: %w", round, err)
		}
		if l.res.RepeatsStopped-stopped == len(calls) {
			// Nothing new was tried: more rounds would repeat again.
			return l.forceAnswer(ctx, repeatNote)
		}
	}

	l.res.RoundLimitReached = true
	return l.forceAnswer(ctx, fmt.Sprintf(limitNote, l.opts.MaxRounds))
}

// forceAnswer asks for the final answer with tools off, after note.
func (l *loop) forceAnswer(ctx context.Context, note string) error {
	if l.format != nil {
		return l.formatted(ctx, l.conversation(), note+" "+formatNote)
	}
	resp, err := l.generate(ctx, l.request(append(l.conversation(), llm.UserText(note)), llm.ToolChoiceNone))
	if err != nil {
		return err
	}
	l.finish(answerOnly(resp.Message))
	return nil
}

const (
	limitNote  = "You have used all %d rounds of tool calls allowed for this turn, and tools are now disabled. Give your final answer now from what you have gathered, and say plainly what is left undone."
	repeatNote = "You repeated tool calls that had already run with the same arguments, so they were stopped and tools are now disabled for this turn. Give your final answer now from the results you have, and say plainly what is left undone."
	// repeatMessage is the result of a call stopped as a repeat.
	repeatMessage = "not run: %s with these same arguments already ran %d times in this turn, and the result will not change. Use the results you already have, try something different, or give your answer"
	formatNote    = "Now give your final answer as a single JSON value matching the required schema. Output only the JSON."
	retryNote     = "That reply is not valid: %s. Reply again with only a JSON value matching the required schema."
)

// request builds one model call over msgs.
func (l *loop) request(msgs []llm.Message, choice llm.ToolChoice) llm.Request {
	r := l.base
	r.Messages = l.fence.messages(msgs)
	r.ToolChoice = choice
	if len(r.Tools) == 0 {
		r.ToolChoice = llm.ToolChoiceAuto
	}
	return r
}

// generate makes one model call and accounts for it.
func (l *loop) generate(ctx context.Context, r llm.Request) (llm.Response, error) {
	if err := ctx.Err(); err != nil {
		return llm.Response{}, fmt.Errorf("toolloop: %w", err)
	}
	l.res.Rounds++
	resp, err := l.model.Generate(ctx, r, l.opts.Stream)
	if err != nil {
		return llm.Response{}, fmt.Errorf("toolloop: model call %d: %w", l.res.Rounds, err)
	}
	l.res.Usage = l.res.Usage.Add(resp.Usage)
	return resp, nil
}

// finish appends the final answer.
func (l *loop) finish(msg llm.Message) {
	l.res.Final = msg
	start := len(l.added)
	l.added = append(l.added, msg)
	l.report(msg)
	l.roundDone(start)
}

// report hands a final message to Options.OnMessage.
func (l *loop) report(msg llm.Message) {
	if l.opts.OnMessage != nil {
		l.opts.OnMessage(msg)
	}
}

// roundDone reports the messages appended since start.
func (l *loop) roundDone(start int) {
	if l.opts.OnRound != nil {
		l.opts.OnRound(l.added[start:len(l.added):len(l.added)])
	}
}

// conversation returns req.Messages followed by the messages the run has
// added, for a request. The two are joined only when a request needs
// added messages (a round after tool calls), and the join is extended
// rather than redone: a run whose first answer is final never copies the
// history it was given, however long.
func (l *loop) conversation() []llm.Message {
	if len(l.added) == 0 {
		return l.prior
	}
	if l.joined == nil {
		l.joined = make([]llm.Message, len(l.prior), len(l.prior)+2*len(l.added)+4)
		copy(l.joined, l.prior)
	}
	l.joined = append(l.joined, l.added[len(l.joined)-len(l.prior):]...)
	return slices.Clip(l.joined)
}

// formatted makes the structured-output call over msgs (followed by note,
// when not empty), validates the answer and retries once.
func (l *loop) formatted(ctx context.Context, msgs []llm.Message, notes ...string) error {
	prompt := slices.Clip(msgs)
	for _, n := range notes {
		prompt = append(prompt, llm.UserText(n))
	}
	for attempt := 0; ; attempt++ {
		r := l.request(prompt, llm.ToolChoiceNone)
		r.ResponseFormat = l.format.rf
		resp, err := l.generate(ctx, r)
		if err != nil {
			return err
		}
		reply := answerOnly(resp.Message)
		text, verr := l.format.check(reply.Text())
		if verr == nil {
			l.finish(llm.AssistantText(text))
			return nil
		}
		l.res.Final = reply
		if attempt == 1 {
			return fmt.Errorf("toolloop: %w: %v", ErrStructuredOutput, verr)
		}
		prompt = append(prompt, reply, llm.UserText(fmt.Sprintf(retryNote, verr)))
	}
}

// assistant normalises a model reply's role.
func assistant(m llm.Message) llm.Message {
	if m.Role == "" {
		m.Role = llm.RoleAssistant
	}
	return m
}

// answerOnly returns the reply without tool calls, for calls made with tool
// use disabled.
func answerOnly(m llm.Message) llm.Message {
	m = assistant(m)
	if len(m.ToolCalls()) == 0 {
		return m
	}
	parts := make([]llm.Part, 0, len(m.Parts))
	for _, p := range m.Parts {
		if _, ok := p.(llm.ToolCall); !ok {
			parts = append(parts, p)
		}
	}
	m.Parts = parts
	return m
}

// withCallIDs gives every tool call an ID, so that results can answer it.
func withCallIDs(m llm.Message, round int) llm.Message {
	var parts []llm.Part
	for i, p := range m.Parts {
		c, ok := p.(llm.ToolCall)
		if !ok || c.ID != "" {
			continue
		}
		if parts == nil {
			parts = slices.Clone(m.Parts)
		}
		c.ID = fmt.Sprintf("call_%d_%d", round, i)
		parts[i] = c
	}
	if parts != nil {
		m.Parts = parts
	}
	return m
}

// runCalls runs the round's calls, at most opts.Parallel at once, and appends
// their results in issue order. Calls start in issue order; a call of a
// tool that runs in order (tool.RunsInOrder) waits until the round's
// earlier calls of the same tool have finished, and the calls after it wait
// with it.
func (l *loop) runCalls(ctx context.Context, round int, calls []llm.ToolCall) {
	n := len(calls)
	records := make([]CallRecord, n)
	finishedAt := make([]bool, n)
	var seen []llm.Message
	if l.opts.Approver != nil {
		seen = l.conversation()
	}
	done := make(chan int, n)
	var wg sync.WaitGroup
	next, running, finished := 0, 0, 0
	for finished < n {
		if next < n && running < l.opts.Parallel && !l.mustWait(calls, next, finishedAt) {
			i := next
			next++
			c := calls[i]
			t := l.tools[c.Name]
			call := Call{ID: c.ID, Name: c.Name, Arguments: c.Arguments, Round: round, Index: i, ReadOnly: t != nil && tool.IsReadOnly(t)}
			if l.opts.OnToolCall != nil {
				l.opts.OnToolCall(call)
			}
			t, args, rec, ok := l.prepare(ctx, c)
			if ok && l.repeated(round, c.Name, args) {
				rec = l.failed(rec, fmt.Errorf(repeatMessage, c.Name, l.opts.MaxRepeats))
				l.res.RepeatsStopped++
				ok = false
			}
			if !ok {
				rec.Round, rec.Index = round, i
				records[i] = rec
				finishedAt[i] = true
				finished++
				l.reportResult(rec)
				continue
			}
			running++
			pos := tool.Position{ID: c.ID, Round: round, Index: i}
			wg.Go(func() {
				if l.opts.Approver != nil {
					if r, ok := l.approve(ctx, t, call, args, seen); !ok {
						records[i] = r
						done <- i
						return
					}
				}
				if l.opts.BeforeCall != nil {
					call.Arguments = args
					if err := l.opts.BeforeCall(ctx, call); err != nil {
						r := l.failed(rec, fmt.Errorf("tool %q was not run: %w", c.Name, err))
						r.Round, r.Index = round, i
						records[i] = r
						done <- i
						return
					}
				}
				r := execute(l.callContext(tool.WithPosition(ctx, pos), t, call, args, seen), t, c, args, l.opts)
				r.Round, r.Index = round, i
				records[i] = r
				done <- i
			})
			continue
		}
		i := <-done
		running--
		finished++
		finishedAt[i] = true
		l.reportResult(records[i])
	}
	wg.Wait()
	for _, r := range records {
		l.added = append(l.added, resultMessage(r))
	}
	l.res.Calls = append(l.res.Calls, records...)
}

// repeated counts a valid call of round and reports whether the same call
// (name and arguments, whatever their key order or spacing) was already
// issued in Options.MaxRepeats earlier rounds of this Run. Identical calls
// of one round count once: a model fanning out the same call in parallel
// is not looping.
func (l *loop) repeated(round int, name string, args json.RawMessage) bool {
	if l.opts.MaxRepeats < 0 {
		return false
	}
	key := name + "\x00" + canonicalJSON(args)
	if l.runs == nil {
		l.runs = map[string]repeat{}
	}
	r := l.runs[key]
	if r.round == round {
		return false
	}
	if r.rounds >= l.opts.MaxRepeats {
		return true
	}
	l.runs[key] = repeat{rounds: r.rounds + 1, round: round}
	return false
}

// repeat is how often one call was issued: in how many rounds, the last
// of them round.
type repeat struct{ rounds, round int }

// canonicalJSON re-encodes a JSON value with sorted keys and no spacing;
// raw text when it does not decode.
func canonicalJSON(b json.RawMessage) string {
	var v any
	if json.Unmarshal(b, &v) != nil {
		return string(b)
	}
	out, err := json.Marshal(v)
	if err != nil {
		return string(b)
	}
	return string(out)
}

// mustWait reports whether call i runs in order and an earlier call of the
// same tool in its round has not finished yet (that call is then running,
// so a result will arrive).
func (l *loop) mustWait(calls []llm.ToolCall, i int, finished []bool) bool {
	t := l.tools[calls[i].Name]
	if t == nil || !tool.RunsInOrder(t) {
		return false
	}
	for j := range i {
		if !finished[j] && calls[j].Name == calls[i].Name {
			return true
		}
	}
	return false
}

// resultMessage is the tool message answering r's call.
func resultMessage(r CallRecord) llm.Message {
	m := llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{
		CallID: r.ID, Name: r.Name, Content: r.Result, IsError: r.IsError,
	}}}
	for _, img := range r.Images {
		m.Parts = append(m.Parts, img)
	}
	return m
}

// reportResult announces a finished call; its result message goes to
// OnMessage unless ctx cut the call off.
func (l *loop) reportResult(r CallRecord) {
	if l.opts.OnToolResult != nil {
		l.opts.OnToolResult(r)
	}
	if l.opts.OnMessage != nil && !r.Interrupted {
		l.opts.OnMessage(resultMessage(r))
	}
}

// prepare resolves the tool and checks the arguments. When the call cannot
// run, ok is false and rec is its failed record.
func (l *loop) prepare(ctx context.Context, c llm.ToolCall) (t tool.Tool, args json.RawMessage, rec CallRecord, ok bool) {
	rec = CallRecord{ID: c.ID, Name: c.Name, Arguments: c.Arguments}
	t, known := l.tools[c.Name]
	if !known {
		return nil, nil, l.failed(rec, fmt.Errorf("unknown tool %q; %s", c.Name, l.available())), false
	}
	args, err := normalizeArgs(c.Arguments)
	if err != nil {
		return nil, nil, l.failed(rec, fmt.Errorf("tool %q: %w", c.Name, err)), false
	}
	rec.Arguments = args
	if err := tool.Validate(t, args); err != nil {
		return nil, nil, l.failed(rec, fmt.Errorf("tool %q: %w", c.Name, err)), false
	}
	if err := ctx.Err(); err != nil {
		rec = l.failed(rec, fmt.Errorf("tool %q was not run: the turn was cancelled", c.Name))
		rec.Interrupted = true
		return nil, nil, rec, false
	}
	return t, args, rec, true
}

// callContext is the context a call's handler runs in: with an Approver,
// it carries the conversation's taint (Tainter) and a gate that asks the
// Approver about each further destination of the call (tool.Gate).
func (l *loop) callContext(ctx context.Context, t tool.Tool, c Call, args json.RawMessage, seen []llm.Message) context.Context {
	if l.opts.Approver == nil {
		return ctx
	}
	c.Arguments = args
	if tr, ok := l.opts.Approver.(Tainter); ok {
		if taint, tainted := tr.Taint(ctx, ApprovalRequest{Call: c, Tool: t, Messages: seen, Tools: l.lookup}); tainted {
			ctx = tool.WithTaint(ctx, taint)
		}
	}
	return tool.WithGate(ctx, func(ctx context.Context, further json.RawMessage) error {
		// The hops of one call differ by their arguments.
		h := c
		h.ID, h.Arguments = c.ID+"/further", further
		return l.opts.Approver.Approve(ctx, ApprovalRequest{Call: h, Tool: t, Messages: seen, Tools: l.lookup, Further: true})
	})
}

// approve asks the Approver whether the call may run. When it may
// not, ok is false and rec is the call's failed record.
func (l *loop) approve(ctx context.Context, t tool.Tool, c Call, args json.RawMessage, seen []llm.Message) (rec CallRecord, ok bool) {
	c.Arguments = args
	err := l.opts.Approver.Approve(ctx, ApprovalRequest{Call: c, Tool: t, Messages: seen, Tools: l.lookup})
	if err == nil {
		return CallRecord{}, true
	}
	rec = CallRecord{ID: c.ID, Name: c.Name, Arguments: args, Round: c.Round, Index: c.Index}
	if ctx.Err() != nil {
		rec = l.failed(rec, fmt.Errorf("tool %q was not run: the turn was stopped while the call waited for the user's approval (%w); call it again to ask again", c.Name, err))
		rec.Interrupted = true
		return rec, false
	}
	return l.failed(rec, fmt.Errorf("tool %q was not run: %w", c.Name, err)), false
}

// lookup finds a tool of the run by name.
func (l *loop) lookup(name string) (tool.Tool, bool) {
	t, ok := l.tools[name]
	return t, ok
}

func (l *loop) failed(rec CallRecord, err error) CallRecord {
	rec.IsError = true
	rec.Err = err
	rec.Result = errorContent(l.opts.redact(err.Error()), l.opts.MaxResultChars)
	return rec
}

func (l *loop) available() string {
	if len(l.names) == 0 {
		return "no tools are available here"
	}
	return "available tools: " + strings.Join(l.names, ", ")
}
