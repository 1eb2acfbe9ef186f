package router

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/llm"
)

// ActionKind is a change of a thread's last turns that runs a turn again.
type ActionKind string

// Actions (Redo, HandleRedo).
const (
	// ActionRegenerate answers the last user message again: the replies
	// after it go to a branch (conversation.SegmentBranch), kept readable.
	ActionRegenerate ActionKind = "regenerate"
	// ActionRetry is ActionRegenerate for a reply that failed or was
	// stopped (or never came); ErrNotRetryable otherwise.
	ActionRetry ActionKind = "retry"
	// ActionEdit replaces a user message with new text: it and everything
	// after it go to a branch, and the new text is answered.
	ActionEdit ActionKind = "edit"
)

// Errors of Redo and HandleRedo (besides the acceptance errors of Receive).
var (
	// ErrNothingToRedo: the conversation has no message of the user to
	// answer again.
	ErrNothingToRedo = errors.New("there is no message to answer again in this conversation")
	// ErrNotRetryable: the last reply did not fail (use regenerate).
	ErrNotRetryable = errors.New("the last reply did not fail or stop; regenerate it instead")
	// ErrNotEditable: the message is not one the user wrote that is still
	// in the conversation.
	ErrNotEditable = errors.New("only a message you wrote that is still in the conversation can be edited")
	// ErrUnknownAction: Action.Kind is none of the actions.
	ErrUnknownAction = errors.New("unknown action")
)

// Action is a regeneration, a retry or an edit of a thread.
type Action struct {
	Kind   ActionKind
	Thread chat.ThreadID
	// Channel delivers the reply ("" = the thread's channel).
	Channel string
	// MessageID (edit) is the user message replaced, Text its new text.
	MessageID int64
	Text      string
}

// Redo queues a regeneration, retry or edit in the thread's order, like
// Submit: the new reply is delivered (streamed) through the channel, and
// the returned channel receives nil or the error that ended the turn. The
// action is checked against the thread as it is now (ErrNothingToRedo,
// ErrNotRetryable, ErrNotEditable) and again when it runs.
func (r *Router) Redo(ctx context.Context, a Action) (<-chan error, error) {
	j, err := r.redoJob(ctx, a)
	if err != nil {
		return nil, err
	}
	j.finished = make(chan error, 1)
	if err := r.accept(ctx, j); err != nil {
		return nil, err
	}
	return j.finished, nil
}

// HandleRedo is Redo run synchronously, like Handle: nothing is delivered
// to a channel and the turn's result is returned.
func (r *Router) HandleRedo(ctx context.Context, a Action) (agent.Result, error) {
	return r.handleRedo(ctx, a, false)
}

// PostRedo is HandleRedo with the new reply also delivered through the
// channel, as Post is Handle's (the web API's regenerate, retry and edit).
func (r *Router) PostRedo(ctx context.Context, a Action) (agent.Result, error) {
	return r.handleRedo(ctx, a, true)
}

func (r *Router) handleRedo(ctx context.Context, a Action, deliver bool) (agent.Result, error) {
	j, err := r.redoJob(ctx, a)
	if err != nil {
		return agent.Result{}, err
	}
	j.done, j.deliver = make(chan outcome, 1), deliver
	if err := r.accept(ctx, j); err != nil {
		return agent.Result{}, err
	}
	select {
	case o := <-j.done:
		return o.res, o.err
	case <-ctx.Done():
		return agent.Result{}, fmt.Errorf("wait for the reply on %s: %w", j.thread, ctx.Err())
	}
}

func (r *Router) redoJob(ctx context.Context, a Action) (*job, error) {
	if err := a.Thread.Validate(); err != nil {
		return nil, err
	}
	j := &job{kind: jobKind(a.Kind), thread: a.Thread, channel: a.Channel, received: r.o.Now(), target: a.MessageID}
	if j.channel == "" {
		j.channel = a.Thread.Channel()
	}
	switch a.Kind {
	case ActionRegenerate, ActionRetry:
	case ActionEdit:
		if strings.TrimSpace(a.Text) == "" {
			return nil, ErrEmptyText
		}
		if len(a.Text) > r.o.MaxMessageBytes {
			return nil, fmt.Errorf("%w: %d bytes, the limit is %d", ErrTooLarge, len(a.Text), r.o.MaxMessageBytes)
		}
		j.text = a.Text
	default:
		return nil, fmt.Errorf("%w %q", ErrUnknownAction, a.Kind)
	}
	if _, err := r.redoPlan(ctx, j); err != nil {
		return nil, err
	}
	return j, nil
}

// redoPlan is what a redo job does to the thread as it is now: branch from
// the message id From (0: nothing to take out), then answer Text (stored
// as a new message) or, when Resume, the last user message again.
type redoPlan struct {
	From   int64
	Text   string
	Resume bool
	// Replaces is the text of the first user message taken out (the
	// edited one) or answered again, whose episodes the turn replaces;
	// At is when that message was stored (zero for an edit: the new text
	// is said now).
	Replaces string
	At       time.Time
}

func (r *Router) redoPlan(ctx context.Context, j *job) (redoPlan, error) {
	msgs, err := r.o.Threads.Messages(ctx, j.thread, conversation.MessageQuery{})
	if err != nil {
		return redoPlan{}, fmt.Errorf("read the conversation %s: %w", j.thread, err)
	}
	isUser := func(m conversation.StoredMessage) bool {
		return m.Message.Role == llm.RoleUser && m.Source == conversation.SourceConversation
	}
	if j.kind == jobEdit {
		i := slices.IndexFunc(msgs, func(m conversation.StoredMessage) bool { return m.ID == j.target })
		switch {
		case i >= 0 && isUser(msgs[i]):
			return redoPlan{From: j.target, Text: j.text, Replaces: msgs[i].Message.Text()}, nil
		case i >= 0 || !j.started:
			return redoPlan{}, ErrNotEditable
		}
		// A restart interrupted the edit after its branch: answer the new
		// text, stored again unless it is already there.
		return resumePlan(msgs, isUser, j.text), nil
	}
	return r.resumePlanFor(j, msgs, isUser)
}

// resumePlan answers text as a new message after taking out what follows the
// last user message when it is text (an interrupted edit).
func resumePlan(msgs []conversation.StoredMessage, isUser func(conversation.StoredMessage) bool, text string) redoPlan {
	for i := len(msgs) - 1; i >= 0; i-- {
		if isUser(msgs[i]) {
			if msgs[i].Message.Text() == text {
				if i+1 < len(msgs) {
					return redoPlan{From: msgs[i+1].ID, Resume: true}
				}
				return redoPlan{Resume: true}
			}
			break
		}
	}
	return redoPlan{Text: text}
}

// resumePlanFor plans a regeneration or retry: the last user message is
// answered again, what followed it taken out.
func (r *Router) resumePlanFor(j *job, msgs []conversation.StoredMessage, isUser func(conversation.StoredMessage) bool) (redoPlan, error) {
	last := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if isUser(msgs[i]) {
			last = i
			break
		}
	}
	if last < 0 {
		return redoPlan{}, ErrNothingToRedo
	}
	after := msgs[last+1:]
	if j.kind == jobRetry && !j.started {
		// Retryable: no finished reply after the message (it failed, was
		// stopped, or never came).
		finished := slices.ContainsFunc(after, func(m conversation.StoredMessage) bool {
			return m.Message.Role == llm.RoleAssistant && !m.Marked() && len(m.Message.ToolCalls()) == 0
		})
		if finished {
			return redoPlan{}, ErrNotRetryable
		}
	}
	p := redoPlan{Resume: true, Replaces: msgs[last].Message.Text(), At: msgs[last].CreatedAt}
	if len(after) > 0 {
		p.From = after[0].ID
	}
	return p, nil
}

// processRedo runs a regeneration, retry or edit in the thread's queue: the
// replaced messages go to a branch, then the turn runs.
func (r *Router) processRedo(ctx context.Context, j *job) outcome {
	start := r.o.Now()
	if j.started {
		// A restart interrupted it: run it again if nothing with side
		// effects ran, as an interrupted message is.
		calls, err := r.turnCalls(ctx, j.id)
		if err != nil {
			return outcome{err: fmt.Errorf("check the interrupted turn on %s: %w", j.thread, err)}
		}
		if j.attempts >= MaxTurnStarts || !sideEffectFree(calls) {
			return r.reportInterrupted(ctx, j, calls)
		}
	}
	fail := func(err error) outcome {
		r.forget(ctx, j)
		res := agent.Result{Reply: "Could not " + string(j.kind) + ": " + err.Error() + "."}
		if j.delivers() {
			r.send(ctx, j.channel, chat.Outbound{Address: chat.Address{Channel: j.channel, Thread: j.thread}, Kind: chat.Error, Text: res.Reply})
		}
		return outcome{res: res, err: err}
	}
	plan, err := r.redoPlan(ctx, j)
	if err != nil {
		return fail(err)
	}
	if plan.From > 0 {
		if _, err := r.o.Threads.Branch(ctx, j.thread, plan.From); err != nil {
			return fail(fmt.Errorf("keep the replaced messages: %w", err))
		}
	}
	in := agent.Input{Thread: j.thread, Sender: j.sender, Kind: agent.KindUser, Text: plan.Text, Replaces: plan.Replaces, Received: plan.At}
	if plan.Resume {
		// The message is stored: the turn answers the history as it is.
		j.resume = true
		in.Text = "(answer again)"
		if msgs, err := r.o.Threads.Messages(ctx, j.thread, conversation.MessageQuery{}); err == nil {
			for i := len(msgs) - 1; i >= 0; i-- {
				if msgs[i].Message.Role == llm.RoleUser && msgs[i].Source == conversation.SourceConversation {
					in.Text = cmp.Or(strings.TrimSpace(msgs[i].Message.Text()), in.Text)
					break
				}
			}
		}
	}
	res, err := r.turn(ctx, j, in, j.delivers(), chat.Reply)
	r.publishReplied(ctx, j, start, res, err)
	if err == nil && j.delivers() {
		// Spoken like the reply to a typed message: the user asked for it
		// with a click or by typing, so voice.replies when_spoken_to does
		// not speak it, always does.
		r.speak(ctx, j, res.Reply)
	}
	return outcome{res, err}
}
