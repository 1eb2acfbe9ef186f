package agent

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/growstack"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// Kind says what a turn answers.
type Kind string

// Turn kinds.
const (
	// KindUser answers a user's message.
	KindUser Kind = "user"
	// KindSystemEvent answers a system event (a worker's result, a reminder,
	// a condense request, a supervisor correction).
	KindSystemEvent Kind = "system_event"
	// KindSeed opens a new conversation (seed 001).
	KindSeed Kind = "seed"
)

// Origin says who raised a system event, so that follow-ups are not checked
// into loops.
type Origin string

// Origins of system events.
const (
	// OriginExternal is any other source (workers, reminders, tools).
	OriginExternal Origin = ""
	// OriginSupervisor marks the supervisor check's corrections; turns
	// answering them are never supervisor-checked.
	OriginSupervisor Origin = "supervisor"
	// OriginCondense marks component size-limit condense requests.
	OriginCondense Origin = "condense"
)

// SystemEventPrefix starts the text of every system event and seed: they
// are user-role messages (so that every provider accepts them) that the
// model can tell from what the user wrote. The store records their source
// (conversation.SourceSystemEvent, SourceSeed); code tells them apart by
// that, never by the prefix, which a user could type too.
const SystemEventPrefix = "[SYSTEM EVENT] "

// Topics the agent publishes.
const (
	TopicTurnCompleted = "turn.completed"
	TopicTurnFailed    = "turn.failed"
)

// DefaultContextTimeout bounds each context provider.
const DefaultContextTimeout = 2 * time.Second

// saveTimeout bounds store writes made on a detached context (a cancelled turn
// still saves what happened).
const saveTimeout = 10 * time.Second

// OversizeNote is put in front of a message that was cut for the model.
const OversizeNote = "[Note: this message was too long for the model's context window, so its middle was cut here. The stored copy is complete.]\n"

// ErrEmptyMessage is returned by Turn for a message without text.
var ErrEmptyMessage = errors.New("empty message")

// Conversations is what the agent needs from the conversation store
// (*conversation.Store).
type Conversations interface {
	Append(ctx context.Context, id chat.ThreadID, msgs ...llm.Message) ([]int64, error)
	AppendFrom(ctx context.Context, id chat.ThreadID, src conversation.Source, msgs ...llm.Message) ([]int64, error)
	AppendMarked(ctx context.Context, id chat.ThreadID, status conversation.Status, note string, msg llm.Message) (int64, error)
	History(ctx context.Context, id chat.ThreadID) ([]conversation.StoredMessage, error)
	ModelHistory(ctx context.Context, id chat.ThreadID) (conversation.ModelHistory, error)
	Summary(ctx context.Context, id chat.ThreadID) (conversation.Summary, bool, error)
	Compact(ctx context.Context, id chat.ThreadID, sum conversation.Summary) (int, error)
}

// InteractionLog records interactions (*interactions.Store).
type InteractionLog interface {
	Log(ctx context.Context, entries ...interactions.Entry) error
}

// Publisher publishes bus events (extension.Bus, *eventbus.Bus).
type Publisher interface {
	Publish(ctx context.Context, topic string, payload any) error
}

// Episodes stores a finished exchange — the user's message as the channel
// delivered it (its sender's display name is the speaker) and the reply —
// as episode memories, with no model call (the app's adapter over
// memory.Service.Ingest).
//
// replaces is, for a regeneration or an edit, the text of the first user
// message the turn took out of the conversation ("" otherwise): the
// episodes stored from that message on are removed first, so a redone turn
// replaces its episodes instead of adding to them.
type Episodes interface {
	RecordEpisodes(ctx context.Context, msg chat.Inbound, reply, replaces string) error
}

// Options configure an Agent.
type Options struct {
	// Conversations stores threads (required).
	Conversations Conversations
	// Models gives models and limits per role (required).
	Models Models
	// Tools returns the tools offered in a turn of a thread, snapshotted per
	// turn; nil offers none.
	Tools func(chat.ThreadID) []tool.Tool
	// DataDir holds BASE_PROMPT.txt, prompts/ and, for the default sources,
	// MEMORIES.txt and skills/ (required).
	DataDir string
	// Location is the configured time zone (nil: UTC).
	Location *time.Location
	// Language selects prompts/SEED_<language>.txt (default "en").
	Language string
	// Counter counts tokens (nil: prompt.NewCounter("")).
	Counter prompt.Counter
	// ContextProviders add blocks to each prompt, in ascending priority.
	ContextProviders []extension.ContextProvider
	// MoreContext, when set, returns further providers (the extensions'),
	// asked for at every turn because extensions start after the agent is
	// built; they are merged with ContextProviders by priority.
	MoreContext func() []extension.ContextProvider
	// ContextTimeout bounds each provider (default DefaultContextTimeout).
	ContextTimeout time.Duration
	// Sources supply memories, pulse and skills (nil: DataDirSources).
	Sources Sources
	// Sizes measures components after each turn (nil: Sources when it
	// implements Sizes, else DataDirSources).
	Sizes Sizes
	// HistoryTokens is the history budget: a request carries the newest
	// turns of the conversation that fit it, older ones being represented
	// by the conversation summary (compacted in chunks, see keepNum) and by
	// recall. 0 means DefaultHistoryTokens; negative means no budget (the
	// whole history, compacted only when it would not fit the model's
	// context window).
	HistoryTokens int
	// Limits are the component size limits; the zero value means
	// prompt.DefaultLimits(). The skills limit also switches the Skills
	// section to its table of contents.
	Limits prompt.Limits
	// Loop tunes the tool loop (MaxRounds, Parallel, CallTimeout,
	// MaxResultChars, Approver; callbacks are set per turn).
	Loop toolloop.Options
	// ClaimRules are the supervisor check's rules (nil: DefaultClaimRules).
	ClaimRules []ClaimRule
	// DisableSupervisor turns the supervisor check off.
	DisableSupervisor bool
	// Interactions records the interaction log (nil: not recorded).
	Interactions InteractionLog
	// Events receives turn.completed / turn.failed (nil: not published).
	Events Publisher
	// Episodes, when set, stores every answered user turn of a
	// user-facing thread (never a sub-session's, a system event's or a
	// seed's) as episode memories.
	Episodes Episodes
	// Secrets are redacted from a failed turn's error and error reply
	// before anything records, stores or delivers them (nil: none).
	Secrets *redact.Secrets
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
}

// Input is one turn to run.
type Input struct {
	Thread chat.ThreadID
	// Sender is who wrote a user message (its episodes' speaker).
	Sender chat.Sender
	// Received is when the channel got a user message (its episodes'
	// time); zero means the turn's start.
	Received time.Time
	// Text is the user's message, the system event or the seed prompt
	// (without SystemEventPrefix, which the agent adds).
	Text string
	// Attachments of a user message: images are stored in the message as
	// image parts (their workspace paths) and shown to a model that
	// accepts images.
	Attachments []chat.Attachment
	// Kind defaults to KindUser.
	Kind Kind
	// Origin says who raised a system event.
	Origin Origin
	// Stream receives the model's streaming events (text deltas).
	Stream llm.StreamFunc
	// OnToolCall and OnToolResult report tool activity as it happens.
	OnToolCall   func(toolloop.Call)
	OnToolResult func(toolloop.CallRecord)
	// BeforeToolCall, when set, is called just before each tool call runs
	// (toolloop.Options.BeforeCall): the router records the call there, and
	// an error keeps the call from running.
	BeforeToolCall func(ctx context.Context, c toolloop.Call) error
	// Saved, when set, is called once the message is stored, before any
	// model call.
	Saved func()
	// Resume continues a turn a restart interrupted: the message is already
	// stored (it is not stored again, and Saved is not called) and the turn
	// answers from the stored history, which ends with the message or with
	// the rounds the interrupted turn had stored. A regeneration runs the
	// same way, after the replies it replaces were taken out of the history.
	Resume bool
	// Replaces is, for a regeneration or an edit, the text of the first
	// user message taken out of the conversation: its episodes and those
	// after it are replaced by this turn's (Episodes.RecordEpisodes).
	Replaces string
	// Greet opens a new conversation in the same call that answers the
	// user's first message: the conversation seed is stored before the
	// message (as with Seed) with a note to greet briefly and answer, and
	// one model call does both (KindUser only).
	Greet bool
	// EndEvent, when set, is handed the turn's closing event (TopicTurnCompleted
	// or TopicTurnFailed, with its payload), once its log entry and
	// episodes are stored, instead of the agent publishing it: the caller
	// publishes it after the turn returns, with writes of its own (the
	// router, in the transaction that removes the turn's inbox row: one
	// commit).
	EndEvent func(topic string, payload any)
}

// FollowUp is a system event the turn asks its caller to queue after it.
type FollowUp struct {
	Thread chat.ThreadID
	Text   string
	Origin Origin
}

// Result is what a turn produced.
type Result struct {
	// Reply is the text for the user: the model's answer, or a user-facing
	// error text when the turn failed.
	Reply string
	// Calls are the tool calls run, in the order the model issued them.
	Calls []toolloop.CallRecord
	// Usage sums the main model's calls (compaction is logged separately).
	Usage llm.Usage
	// SystemPrompt is the system prompt of the inference.
	SystemPrompt string
	// FollowUps are system events to queue after this turn (condense
	// requests, a supervisor correction).
	FollowUps []FollowUp
	// SeedReply is the conversation seed's reply when the router opened the
	// thread with a seed before this turn (set by the router).
	SeedReply string
	// Stopped reports that the turn was cancelled (the user's stop, a
	// restart): the error wraps context.Canceled and Partial is what the
	// model had written of the reply being streamed.
	Stopped bool
	Partial string
	// Compacted reports that the history was compacted first.
	Compacted bool
	// Truncated counts messages cut for the model's context window.
	Truncated int
	Duration  time.Duration
}

// CompactResult reports an on-demand compaction.
type CompactResult struct {
	// Archived is how many messages the summary replaced (0: nothing to
	// compact).
	Archived int
	Summary  string
	Usage    llm.Usage
}

// Agent runs turns.
type Agent struct {
	o   Options
	log *slog.Logger

	// fenceKey fences tool results the same way in every turn (see
	// toolloop.Options.FenceKey), so that requests keep their prefix.
	fenceKey []byte

	mu         sync.Mutex
	condensing map[prompt.Component]bool // a condense event is outstanding
	toolCounts map[string]toolCount      // by tool name: see toolTokens
}

// toolCount is a tool's token count for the description and schema it was
// counted with.
type toolCount struct {
	description string
	schema      []byte
	tokens      int
}

// New checks opts and returns an Agent.
func New(opts Options) (*Agent, error) {
	switch {
	case opts.Conversations == nil:
		return nil, errors.New("agent: no conversation store")
	case opts.Models == nil:
		return nil, errors.New("agent: no models")
	case opts.DataDir == "":
		return nil, errors.New("agent: no data dir")
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.Counter == nil {
		opts.Counter = prompt.NewCounter("")
	}
	if opts.ContextTimeout <= 0 {
		opts.ContextTimeout = DefaultContextTimeout
	}
	if opts.Sources == nil {
		opts.Sources = DataDirSources{Dir: opts.DataDir}
	}
	if opts.Sizes == nil {
		if s, ok := opts.Sources.(Sizes); ok {
			opts.Sizes = s
		} else {
			opts.Sizes = DataDirSources{Dir: opts.DataDir}
		}
	}
	if opts.HistoryTokens == 0 {
		opts.HistoryTokens = DefaultHistoryTokens
	}
	if opts.Limits == (prompt.Limits{}) {
		opts.Limits = prompt.DefaultLimits()
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	providers := slices.Clone(opts.ContextProviders)
	slices.SortStableFunc(providers, func(a, b extension.ContextProvider) int {
		return cmp.Compare(a.ContextPriority(), b.ContextPriority())
	})
	opts.ContextProviders = providers
	return &Agent{o: opts, log: opts.Logger, fenceKey: toolloop.NewFenceKey(), condensing: map[prompt.Component]bool{}}, nil
}

// Seed runs the conversation seed on thread (seed 001): the seed prompt in
// the configured language (prompts/SEED_<language>.txt, else English) as a
// system event, with tools off. Its reply opens the conversation.
func (a *Agent) Seed(ctx context.Context, thread chat.ThreadID, stream llm.StreamFunc) (Result, error) {
	text, err := seedText(a.o.DataDir, a.o.Language)
	if err != nil {
		return Result{Reply: ErrorReply(err)}, fmt.Errorf("seed %s: %w", thread, err)
	}
	return a.Turn(ctx, Input{Thread: thread, Text: strings.TrimSpace(text), Kind: KindSeed, Stream: stream})
}

// Turn runs one turn. See the package documentation for what it guarantees.
// On failure the Result still carries a user-facing Reply (ErrorReply) and
// whatever was done before the failure.
func (a *Agent) Turn(ctx context.Context, in Input) (Result, error) {
	start := a.o.Now()
	if in.Kind == "" {
		in.Kind = KindUser
	}
	if err := in.Thread.Validate(); err != nil {
		return Result{Reply: ErrorReply(err)}, fmt.Errorf("turn: %w", err)
	}
	if strings.TrimSpace(in.Text) == "" && (len(in.Attachments) == 0 || in.Kind != KindUser) {
		return Result{Reply: "There is nothing to answer: the message is empty."}, fmt.Errorf("turn on %s: %w", in.Thread, ErrEmptyMessage)
	}
	text, src := in.Text, conversation.SourceConversation
	switch in.Kind {
	case KindSeed:
		text, src = SystemEventPrefix+text, conversation.SourceSeed
	case KindSystemEvent:
		text, src = SystemEventPrefix+text, conversation.SourceSystemEvent
	}
	// The context providers (memory recall above all) need only the
	// message's text: they run while the message is saved and the history
	// read, and the prompt waits for them. Every return waits too.
	blocks := a.startContextBlocks(ctx, in)
	defer blocks()
	if !in.Resume {
		sctx, cancel := a.saveContext(ctx)
		var err error
		if in.Greet && in.Kind == KindUser {
			// The seed comes first in the history, as it would have with
			// a seed turn of its own; a seed that cannot be read only
			// loses the greeting.
			if seed, serr := seedText(a.o.DataDir, a.o.Language); serr != nil {
				a.log.Warn("no conversation seed for the greeting", "err", serr)
			} else {
				_, err = a.o.Conversations.AppendFrom(sctx, in.Thread, conversation.SourceSeed,
					llm.UserText(SystemEventPrefix+strings.TrimSpace(seed)+"\n\n"+GreetNote))
			}
		}
		if err == nil {
			_, err = a.o.Conversations.AppendFrom(sctx, in.Thread, src, userMessage(text, in.Attachments))
		}
		cancel()
		if err != nil {
			err = a.o.Secrets.RedactError(fmt.Errorf("save message on %s: %w: %w", in.Thread, ErrNotSaved, err))
			a.finish(ctx, in, start, Result{}, err)
			return Result{Reply: "Your message could not be saved (" + rootCause(err) + "); please send it again."}, err
		}
		if in.Saved != nil {
			in.Saved()
		}
	}
	var partial partialText
	if in.Stream != nil {
		in.Stream = partial.wrap(in.Stream)
	}
	res, err := a.run(ctx, in, blocks, &partial)
	res.Duration = a.o.Now().Sub(start)
	if err != nil && !errors.Is(err, ErrNotSaved) && !errors.Is(context.Cause(ctx), ErrRestarting) {
		// The reply that did not finish stays in the history with its
		// mark and what was written of it (never sent to the model).
		status := conversation.StatusFailed
		if errors.Is(err, context.Canceled) {
			status, res.Stopped = conversation.StatusStopped, true
		}
		res.Partial = a.o.Secrets.Redact(partial.String())
		note := ErrorReply(a.o.Secrets.RedactError(err))
		sctx, cancel := a.saveContext(ctx)
		if _, serr := a.o.Conversations.AppendMarked(sctx, in.Thread, status, note, llm.AssistantText(res.Partial)); serr != nil {
			a.log.Warn("could not store the unfinished reply", "thread", in.Thread, "err", serr)
		}
		cancel()
	}
	if err != nil {
		// A provider error may echo the API key: what the turn returns,
		// logs, stores and replies never holds a registered secret.
		err = a.o.Secrets.RedactError(err)
		res.Reply = ErrorReply(err)
		if done := DescribeCalls(res.Calls); done != "" {
			res.Reply += "\n\nBefore that, these tool calls ran (do not repeat what already succeeded):\n" + done
		}
		res.Reply = a.o.Secrets.Redact(res.Reply)
	}
	a.finish(ctx, in, start, res, err)
	return res, err
}

// run is Turn after the message is saved; blocks waits for the context
// providers started by Turn.
func (a *Agent) run(ctx context.Context, in Input, blocks func() []string, partial *partialText) (Result, error) {
	var res Result
	tools := a.toolsFor(in.Thread)
	names := make([]string, len(tools))
	for i, t := range tools {
		names[i] = t.Name()
	}

	// Replies that failed or were stopped are shown, never sent. The
	// store keeps the message list and the token count of what is sent
	// with the history it caches, so neither costs a pass over the thread.
	mh, err := a.o.Conversations.ModelHistory(ctx, in.Thread)
	if err != nil {
		return res, fmt.Errorf("read history: %w", err)
	}
	history, historyMsgs, tokens := mh.Stored, mh.Messages, withPriming(mh.Tokens, len(mh.Stored))
	sum, _, err := a.o.Conversations.Summary(ctx, in.Thread)
	if err != nil {
		return res, fmt.Errorf("read summary: %w", err)
	}
	parts, err := a.promptParts(ctx, in, names, blocks)
	if err != nil {
		return res, err
	}
	parts.Summary = sum.Text
	system, turnCtx := prompt.Split(parts)

	model, limits := a.mainModel(ctx, in.Thread)
	toolTokens := a.toolTokens(tools)
	// The turn context goes in the request as a message (withTurnContext).
	turnTokens := 0
	if turnCtx != "" {
		turnTokens = a.o.Counter.Count(TurnContextPrefix+turnCtx) + prompt.MessageOverhead
	}
	sysTokens := a.o.Counter.Count(system) + toolTokens
	threshold := prompt.CompactionThreshold(limits.ContextSize, limits.MaxTokens, sysTokens+turnTokens)
	budget, budgeted := a.historyBudget(threshold)
	if tokens > budget {
		// The oldest turns are summarised in one chunk: with a history
		// budget, down to a share of it (so that the next compaction is
		// many turns away); without, down to the newest KeepRecent
		// messages once the context window is full.
		cut := prompt.CompactionCut(historyMsgs, prompt.KeepRecent)
		if budgeted {
			cut = keepFrom(history, budget*keepNum/keepDen)
		}
		if cut > 0 {
			newSum, _, cerr := a.compact(ctx, in.Thread, sum.Text, history[:cut])
			if cerr != nil {
				a.log.Warn("compaction failed; answering with the recent history only", "thread", in.Thread, "err", cerr)
				if budgeted {
					// The budget holds even so: the request carries the
					// newest turns that fit it, and the next turn tries
					// the compaction again.
					cut = keepFrom(history, budget)
					history, historyMsgs = history[cut:], historyMsgs[cut:]
					tokens = historyTokens(history)
				}
			} else {
				res.Compacted = true
				history, historyMsgs = history[cut:], historyMsgs[cut:]
				tokens = historyTokens(history)
				parts.Summary = newSum
				system, turnCtx = prompt.Split(parts)
				sysTokens = a.o.Counter.Count(system) + toolTokens
				threshold = prompt.CompactionThreshold(limits.ContextSize, limits.MaxTokens, sysTokens+turnTokens)
			}
		}
	}
	res.SystemPrompt = system
	if turnCtx != "" {
		res.SystemPrompt += prompt.SectionSeparator + turnCtx
	}

	msgs, truncated := fitMessages(a.o.Counter, history, historyMsgs, tokens, threshold)
	msgs = a.loadImages(msgs, limits.Vision)
	res.Truncated = truncated
	if truncated > 0 {
		a.log.Info("messages cut for the context window", "thread", in.Thread, "messages", truncated, "budget_tokens", threshold)
	}
	msgs, stable := withTurnContext(msgs, turnCtx)

	req := llm.Request{System: system, Messages: msgs, CachePrefix: stable}
	if in.Kind == KindSeed {
		req.ToolChoice = llm.ToolChoiceNone
	}
	opts := toolloop.Options{
		MaxRounds:      a.o.Loop.MaxRounds,
		Parallel:       a.o.Loop.Parallel,
		CallTimeout:    a.o.Loop.CallTimeout,
		MaxResultChars: a.o.Loop.MaxResultChars,
		MaxRepeats:     a.o.Loop.MaxRepeats,
		Approver:       a.o.Loop.Approver,
		Redact:         a.o.Loop.Redact,
		FenceKey:       a.fenceKey,
		Stream:         in.Stream,
		OnToolCall:     in.OnToolCall,
		OnToolResult:   in.OnToolResult,
		BeforeCall:     in.BeforeToolCall,
	}
	// A round that cannot be stored stops the turn: its reply would be
	// delivered without being in the history (a full disk), and the next
	// rounds could not be stored either.
	loopCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var saveErr error
	opts.OnRound = func(appended []llm.Message) {
		partial.reset()
		if saveErr != nil {
			return
		}
		sctx, cancel := a.saveContext(ctx)
		defer cancel()
		if _, err := a.o.Conversations.Append(sctx, in.Thread, appended...); err != nil {
			saveErr = fmt.Errorf("%w: %w", ErrNotSaved, err)
			a.log.Error("could not save the turn's messages; stopping the turn", "thread", in.Thread, "messages", len(appended), "err", err)
			stop(saveErr)
		}
	}
	callCtx := tool.WithCall(loopCtx, tool.Call{Thread: in.Thread, Agent: "main"})
	lr, err := toolloop.Run(callCtx, model, req, tools, opts)
	res.Calls, res.Usage = lr.Calls, lr.Usage
	if saveErr != nil {
		return res, fmt.Errorf("answer on %s: %w", in.Thread, saveErr)
	}
	if err != nil {
		return res, fmt.Errorf("answer on %s: %w", in.Thread, err)
	}
	res.Reply = strings.TrimSpace(lr.Final.Text())
	res.FollowUps = a.followUps(ctx, in, res)
	return res, nil
}

// promptParts gathers everything of the system prompt but the summary.
func (a *Agent) promptParts(ctx context.Context, in Input, tools []string, blocks func() []string) (prompt.Input, error) {
	base, err := readOptional(joinData(a.o.DataDir, prompt.BaseFile))
	if err != nil {
		return prompt.Input{}, fmt.Errorf("read base prompt: %w", err)
	}
	p := prompt.Input{Mode: prompt.ModeMain, Base: base, Now: a.o.Now(), Location: a.o.Location, Tools: tools}
	if p.Memories, err = a.o.Sources.Memories(ctx); err != nil {
		a.log.Warn("memories unavailable for the prompt", "err", err)
	}
	if p.Pulse, err = a.o.Sources.Pulse(ctx); err != nil {
		a.log.Warn("pulse unavailable for the prompt", "err", err)
	}
	if p.Skills, err = a.o.Sources.Skills(ctx); err != nil {
		a.log.Warn("skills unavailable for the prompt", "err", err)
	}
	if lim := a.o.Limits.SkillsChars; lim > 0 && skillsChars(p.Skills) > lim {
		p.SkillsAsTOC = true
	}
	a.recordSkillLoads(ctx, in.Thread, p.Skills, p.SkillsAsTOC)
	p.Extra = blocks()
	return p, nil
}

// recordSkillLoads tells Sources implementing SkillLoadRecorder which skills
// the prompt carries and how; a failure is logged, never fatal.
func (a *Agent) recordSkillLoads(ctx context.Context, thread chat.ThreadID, skills []prompt.Skill, toc bool) {
	rec, ok := a.o.Sources.(SkillLoadRecorder)
	if !ok || len(skills) == 0 {
		return
	}
	names := make([]string, len(skills))
	for i, s := range skills {
		names[i] = s.Name
	}
	mode := SkillLoadFull
	if toc {
		mode = SkillLoadTOC
	}
	if err := rec.RecordSkillLoads(ctx, thread, names, mode); err != nil {
		a.log.Warn("could not record the skills loaded into the prompt", "thread", thread, "err", err)
	}
}

// startContextBlocks starts the context providers concurrently, each
// bounded by ContextTimeout, and returns the function that waits for them
// and returns their non-empty blocks in priority order. It may be called
// any number of times; the caller must call it at least once.
func (a *Agent) startContextBlocks(ctx context.Context, in Input) func() []string {
	providers := a.o.ContextProviders
	if a.o.MoreContext != nil {
		if more := a.o.MoreContext(); len(more) > 0 {
			providers = append(slices.Clone(providers), more...)
			slices.SortStableFunc(providers, func(a, b extension.ContextProvider) int {
				return cmp.Compare(a.ContextPriority(), b.ContextPriority())
			})
		}
	}
	if len(providers) == 0 {
		return func() []string { return nil }
	}
	out := make([]string, len(providers))
	var wg sync.WaitGroup
	for i, cp := range providers {
		wg.Go(func() {
			growstack.To16K() // recall runs through SQLite's deep frames
			cctx, cancel := context.WithTimeout(ctx, a.o.ContextTimeout)
			defer cancel()
			defer func() {
				if p := recover(); p != nil {
					a.log.Error("context provider panicked; skipped", "provider", fmt.Sprintf("%T", cp), "panic", p)
				}
			}()
			s, err := cp.PromptContext(cctx, extension.ContextRequest{Thread: in.Thread, Query: in.Text, Agent: modelrouter.RoleMain})
			if err != nil {
				a.log.Warn("context provider failed; skipped", "provider", fmt.Sprintf("%T", cp), "err", err)
				return
			}
			out[i] = strings.TrimSpace(s)
		})
	}
	return sync.OnceValue(func() []string {
		wg.Wait()
		return slices.DeleteFunc(out, func(s string) bool { return s == "" })
	})
}

func (a *Agent) toolsFor(thread chat.ThreadID) []tool.Tool {
	if a.o.Tools == nil {
		return nil
	}
	return a.o.Tools(thread)
}

// toolTokens counts the tool definitions sent with every request: they take
// context space like the system prompt.
// Each tool's count is kept and reused while its description and schema stay
// the same (counting ~100 tools' schemas took ~1 ms a turn).
func (a *Agent) toolTokens(tools []tool.Tool) int {
	n := 0
	for _, t := range tools {
		name, desc, schema := t.Name(), t.Description(), t.Schema()
		a.mu.Lock()
		c, ok := a.toolCounts[name]
		a.mu.Unlock()
		if !ok || c.description != desc || !bytes.Equal(c.schema, schema) {
			c = toolCount{description: desc, schema: schema,
				tokens: a.o.Counter.Count(name) + a.o.Counter.Count(desc) + a.o.Counter.Count(string(schema)) + prompt.ToolCallOverhead}
			a.mu.Lock()
			if a.toolCounts == nil {
				a.toolCounts = map[string]toolCount{}
			}
			a.toolCounts[name] = c
			a.mu.Unlock()
		}
		n += c.tokens
	}
	return n
}

// followUps runs the after-reply checks: component sizes, then the
// supervisor check.
func (a *Agent) followUps(ctx context.Context, in Input, res Result) []FollowUp {
	var out []FollowUp
	sizes, err := a.o.Sizes.ComponentSizes(ctx)
	if err != nil {
		a.log.Warn("could not measure prompt components", "err", err)
	} else {
		for _, ex := range a.overLimit(sizes) {
			out = append(out, FollowUp{Thread: in.Thread, Text: ex.Event(), Origin: OriginCondense})
			a.logInteractions(ctx, interactions.Entry{
				Thread: in.Thread, Action: interactions.ActionCondenseRequest,
				Summary: fmt.Sprintf("%s is %d chars (limit %d): condense requested", ex.Component, ex.Chars, ex.Limit),
				Detail:  mustJSON(ex),
			})
		}
	}
	if a.o.DisableSupervisor || in.Kind == KindSeed || in.Origin == OriginSupervisor || strings.HasPrefix(in.Text, SupervisorPrefix) {
		return out
	}
	if m, ok := CheckClaims(a.o.ClaimRules, res.Reply, res.Calls); ok {
		out = append(out, FollowUp{Thread: in.Thread, Text: m.Event(), Origin: OriginSupervisor})
		a.logInteractions(ctx, interactions.Entry{
			Thread: in.Thread, Action: interactions.ActionSupervisorCheck,
			Summary: fmt.Sprintf("claim without a tool call (%s): %q", m.Rule.Name, m.Match),
			Detail: mustJSON(struct {
				Rule  string   `json:"rule"`
				Match string   `json:"match"`
				Tools []string `json:"expected_tools"`
				Calls []string `json:"calls"`
			}{m.Rule.Name, m.Match, m.Rule.Tools, callNames(res.Calls)}),
		})
	}
	return out
}

// overLimit returns the components over their limits that have no condense
// request outstanding, and forgets the requests of components back under.
func (a *Agent) overLimit(s ComponentSizes) []prompt.Exceeded {
	exceeded := prompt.CheckLimits(s.MemoriesChars, s.PulseChars, s.SkillsChars, a.o.Limits)
	a.mu.Lock()
	defer a.mu.Unlock()
	over := map[prompt.Component]bool{}
	var out []prompt.Exceeded
	for _, ex := range exceeded {
		over[ex.Component] = true
		if !a.condensing[ex.Component] {
			a.condensing[ex.Component] = true
			out = append(out, ex)
		}
	}
	for c := range a.condensing {
		if !over[c] {
			delete(a.condensing, c)
		}
	}
	return out
}

// finish logs the turn's interactions and publishes its event.
func (a *Agent) finish(ctx context.Context, in Input, start time.Time, res Result, err error) {
	action := interactions.ActionInference
	switch in.Kind {
	case KindSystemEvent:
		action = interactions.ActionSystemEvent
	case KindSeed:
		action = interactions.ActionSeed
	}
	errText := ""
	if err != nil {
		errText = err.Error()
	}
	names := callNames(res.Calls)
	entries := make([]interactions.Entry, 0, 1+len(res.Calls))
	entries = append(entries, interactions.Entry{
		At: start, Thread: in.Thread, Action: action,
		Summary: prompt.MidTruncate(oneLine(cmp.Or(res.Reply, in.Text)), 160),
		Detail: mustJSON(struct {
			Kind      Kind     `json:"kind"`
			Origin    Origin   `json:"origin,omitempty"`
			Input     string   `json:"input"`
			ToolCalls []string `json:"tool_calls,omitempty"`
			Compacted bool     `json:"compacted,omitempty"`
			Truncated int      `json:"truncated_messages,omitempty"`
			FollowUps int      `json:"follow_ups,omitempty"`
		}{in.Kind, in.Origin, prompt.MidTruncate(in.Text, 2000), names, res.Compacted, res.Truncated, len(res.FollowUps)}),
		InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens,
		Duration: res.Duration, Error: errText,
	})
	for _, c := range res.Calls {
		e := interactions.Entry{
			At: start, Thread: in.Thread, Action: interactions.ActionToolCall,
			Summary: c.Name,
			Detail: mustJSON(struct {
				ID        string          `json:"id"`
				Name      string          `json:"name"`
				Arguments json.RawMessage `json:"arguments,omitempty"`
				Result    string          `json:"result"`
				IsError   bool            `json:"is_error,omitempty"`
				Round     int             `json:"round"`
			}{c.ID, c.Name, validJSON(c.Arguments), prompt.MidTruncate(c.Result, 2000), c.IsError, c.Round}),
			Duration: c.Duration,
		}
		if c.IsError {
			e.Summary += " (failed)"
			if c.Err != nil {
				e.Error = c.Err.Error()
			}
		}
		entries = append(entries, e)
	}
	// The log entry and the episodes are written at once, so that the
	// group commit they go through (sqlite.Committer) can carry both in
	// one transaction; the turn's event follows once both are stored.
	var wg sync.WaitGroup
	if err == nil {
		wg.Go(func() {
			growstack.To16K() // the write runs through SQLite's deep frames
			a.recordEpisodes(ctx, in, start, res)
		})
	}
	a.logInteractions(ctx, entries...)
	wg.Wait()

	if a.o.Events == nil {
		return
	}
	var topic string
	var payload any
	if err != nil {
		topic, payload = TopicTurnFailed, struct {
			Thread     chat.ThreadID `json:"thread"`
			Kind       Kind          `json:"kind"`
			Error      string        `json:"error"`
			DurationMS int64         `json:"duration_ms"`
		}{in.Thread, in.Kind, errText, res.Duration.Milliseconds()}
	} else {
		topic, payload = TopicTurnCompleted, struct {
			Thread     chat.ThreadID `json:"thread"`
			Kind       Kind          `json:"kind"`
			Usage      llm.Usage     `json:"usage"`
			ToolCalls  []string      `json:"tool_calls"`
			DurationMS int64         `json:"duration_ms"`
		}{in.Thread, in.Kind, res.Usage, append([]string{}, names...), res.Duration.Milliseconds()}
	}
	if in.EndEvent != nil {
		in.EndEvent(topic, payload)
		return
	}
	pctx, cancel := a.saveContext(ctx)
	defer cancel()
	if err := a.o.Events.Publish(pctx, topic, payload); err != nil {
		a.log.Warn("could not publish the turn event", "thread", in.Thread, "err", err)
	}
}

// recordEpisodes stores an answered user turn as episodes; a failure is
// logged and never fails the turn.
func (a *Agent) recordEpisodes(ctx context.Context, in Input, start time.Time, res Result) {
	if a.o.Episodes == nil || in.Kind != KindUser || in.Thread.IsSubSession() || strings.TrimSpace(in.Text) == "" {
		return
	}
	ectx, cancel := a.saveContext(ctx)
	defer cancel()
	at := in.Received
	if at.IsZero() {
		at = start
	}
	msg := chat.Inbound{Address: chat.Address{Channel: in.Thread.Channel(), Thread: in.Thread}, Sender: in.Sender, Text: in.Text, Received: at}
	if err := a.o.Episodes.RecordEpisodes(ectx, msg, res.Reply, in.Replaces); err != nil {
		a.log.Warn("could not store the turn as episodes", "thread", in.Thread, "err", err)
	}
}

func (a *Agent) logInteractions(ctx context.Context, entries ...interactions.Entry) {
	if a.o.Interactions == nil || len(entries) == 0 {
		return
	}
	lctx, cancel := a.saveContext(ctx)
	defer cancel()
	if err := a.o.Interactions.Log(lctx, entries...); err != nil {
		a.log.Warn("could not write the interaction log", "entries", len(entries), "err", err)
	}
}

// saveContext detaches from ctx's cancellation (a cancelled turn still
// saves what happened) but keeps a bound.
func (a *Agent) saveContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), saveTimeout)
}

// historyTokens counts h as a request carries it.
func historyTokens(h []conversation.StoredMessage) int {
	n := 0
	for _, m := range h {
		n += m.Tokens
	}
	return withPriming(n, len(h))
}

// withPriming adds the reply priming to the tokens of a history of n
// messages, as a request carries them.
func withPriming(tokens, n int) int {
	if n == 0 {
		return 0
	}
	return tokens + prompt.ReplyPriming
}

func messagesOf(h []conversation.StoredMessage) []llm.Message {
	out := make([]llm.Message, len(h))
	for i, m := range h {
		out[i] = m.Message
	}
	return out
}

func callNames(calls []toolloop.CallRecord) []string {
	if len(calls) == 0 {
		return nil
	}
	out := make([]string, len(calls))
	for i, c := range calls {
		out[i] = c.Name
	}
	return out
}

func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		b, _ = json.Marshal(err.Error())
	}
	return b
}

func validJSON(b json.RawMessage) json.RawMessage {
	if len(b) == 0 || json.Valid(b) {
		return b
	}
	return mustJSON(string(b))
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i] + " …"
	}
	return s
}

func runeLen(s string) int { return utf8.RuneCountInString(s) }

// GreetNote follows the seed prompt when the greeting and the answer to the
// user's first message are one reply (Input.Greet).
const GreetNote = "The user has already written their first message (it follows). Open with one short sentence of greeting, then answer that message fully, using tools if it needs them; do not ask what you can help with."

// partialText collects the text deltas of the round being streamed, so that
// a stopped or failed reply keeps what was written of it. The tool loop
// calls the stream and OnRound from the turn's goroutine.
type partialText struct {
	mu sync.Mutex
	b  strings.Builder
}

func (p *partialText) wrap(next llm.StreamFunc) llm.StreamFunc {
	return func(ev llm.Event) {
		if ev.Kind == llm.EventTextDelta {
			p.mu.Lock()
			p.b.WriteString(ev.Text)
			p.mu.Unlock()
		}
		if next != nil {
			next(ev)
		}
	}
}

func (p *partialText) reset() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.b.Reset()
}

func (p *partialText) String() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return strings.TrimSpace(p.b.String())
}
