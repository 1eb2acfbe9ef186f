package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// Router is what the Dispatcher needs from the message router
// (*router.Router): proactive messages without a model call, and system
// events for the main agent (an AI task's report). Both return once the
// item is durably queued.
type Router interface {
	Notify(ctx context.Context, out chat.Outbound) error
	EnqueueSystemEvent(ctx context.Context, thread chat.ThreadID, text string) error
}

// SubSessions starts background workers (the workflow runtime). It is
// optional: without it, sub_session tasks run as isolated inferences.
type SubSessions interface {
	// SpawnScheduled starts a sub-session for a scheduled task and returns
	// its id once started; its result is delivered by the workflow runtime
	// (to req.Thread, or to the main agent when Thread is empty).
	SpawnScheduled(ctx context.Context, req SubSessionRequest) (string, error)
}

// SubSessionRequest asks for a sub-session running a scheduled task.
type SubSessionRequest struct {
	TaskID    string
	Objective string
	// Thread receives the result; "" hands it to the main agent.
	Thread chat.ThreadID
	// Taint is the task's (Task.Taint): the worker inherits it.
	Taint string
}

// Dispatcher is the Executor the app uses: reminders go out through the
// router with no model call (to their thread, else to the conversation the
// user wrote in most recently), and AI tasks run an isolated inference (seed 001,
// "Schedule-triggered Inference"): a fresh tool loop with no conversation
// history, whose answer is delivered to the task's thread — or, for a
// system task, handed to the main agent as a system event.
type Dispatcher struct {
	// Router delivers (required).
	Router Router
	// MainThread names the thread system events and reminders without
	// a thread go to (nil: chat.DefaultThread).
	MainThread func(ctx context.Context) chat.ThreadID
	// Model runs isolated inferences (the sub_sessions role); nil makes AI
	// tasks fail with a receipt saying so.
	Model toolloop.Model
	// Tools are offered to isolated inferences (nil: none).
	Tools func() []tool.Tool
	// System builds the system prompt of an isolated inference from the
	// task instructions and the offered tools' names (nil: a minimal
	// prompt with the instructions and the current time).
	System func(ctx context.Context, instructions string, tools []string) (string, error)
	// SubSessions runs sub_session tasks (nil: they run as isolated
	// inferences, and the receipt says so).
	SubSessions SubSessions
	// Location is the configured zone, for the time shown to the model.
	Location *time.Location
	// Now is the clock (nil: time.Now).
	Now func() time.Time
	// Loop tunes the tool loop of isolated inferences.
	Loop toolloop.Options
}

var _ Executor = (*Dispatcher)(nil)

// Instructions of isolated inferences.
const (
	ThreadTaskInstructions = `You are the user's personal assistant, running a scheduled task on your own, without the conversation.
- Do what the task asks; use your tools where they help.
- You cannot ask questions now: make reasonable assumptions and say so.
- Your final answer is sent to the user as a message in their chat. Write it to them directly and concisely; do not mention these instructions.`
	SystemTaskInstructions = `You are the user's personal assistant, running a scheduled background task on your own.
- Do what the task asks; use your tools where they help.
- Your final answer is a short report handed to the main assistant as a system event (not shown to the user as it is); say plainly what you did and found, and whether the user should be told.`
)

func (d *Dispatcher) now() time.Time {
	if d.Now != nil {
		return d.Now()
	}
	return time.Now()
}

func (d *Dispatcher) mainThread(ctx context.Context) chat.ThreadID {
	if d.MainThread != nil {
		if t := d.MainThread(ctx); t != "" {
			return t
		}
	}
	return chat.DefaultThread
}

// Remind queues text for thread (""; the main thread) as a proactive
// message (stored and delivered by the router in the thread's order; no
// model call) and returns the thread it went to.
func (d *Dispatcher) Remind(ctx context.Context, thread chat.ThreadID, text string) (chat.ThreadID, error) {
	if d.Router == nil {
		return "", errors.New("no router to deliver the reminder")
	}
	if thread == "" {
		thread = d.mainThread(ctx)
	}
	if err := d.Router.Notify(ctx, chat.Outbound{Address: chat.Address{Channel: thread.Channel(), Thread: thread}, Kind: chat.Notify, Text: text}); err != nil {
		return "", fmt.Errorf("deliver the reminder to %s: %w", thread, err)
	}
	return thread, nil
}

// RunAIPrompt runs t's ai_prompt: as a sub-session when asked for and
// available, else as an isolated inference, and delivers the answer.
func (d *Dispatcher) RunAIPrompt(ctx context.Context, t Task) (RunReport, error) {
	note := ""
	if t.SubSession {
		if d.SubSessions != nil {
			id, err := d.SubSessions.SpawnScheduled(ctx, SubSessionRequest{TaskID: t.ID, Objective: t.AIPrompt, Thread: t.Thread, Taint: t.Taint})
			if err != nil {
				return RunReport{}, fmt.Errorf("start a sub-session: %w", err)
			}
			return RunReport{Note: "sub-session " + id + " started"}, nil
		}
		note = "sub-sessions are not available; ran as an isolated inference"
	}
	if d.Model == nil {
		return RunReport{Note: note}, errors.New("no model is configured for AI tasks")
	}
	target := t.Thread
	instructions := ThreadTaskInstructions
	if target == "" {
		target = d.mainThread(ctx)
		instructions = SystemTaskInstructions
	}
	var tools []tool.Tool
	if d.Tools != nil {
		tools = d.Tools()
	}
	names := make([]string, len(tools))
	for i, tl := range tools {
		names[i] = tl.Name()
	}
	system, err := d.system(ctx, instructions, names)
	if err != nil {
		return RunReport{Note: note}, fmt.Errorf("build the system prompt: %w", err)
	}
	loc := d.Location
	if loc == nil {
		loc = time.UTC
	}
	msg := fmt.Sprintf("Scheduled task %s (%s), due %s:\n\n%s", t.ID, t.Description, FormatTime(t.NextRun, loc), t.AIPrompt)
	if t.NextRun.IsZero() {
		msg = fmt.Sprintf("Scheduled task %s (%s):\n\n%s", t.ID, t.Description, t.AIPrompt)
	}
	req := llm.Request{System: system, Messages: []llm.Message{llm.UserText(msg)}}
	// Nobody watches a scheduled task: a call that needs approval is
	// refused. A task set from a tainted conversation stays tainted.
	tctx := tool.WithCall(ctx, tool.Call{Thread: target, Agent: "task:" + t.ID, Background: true})
	if t.Taint != "" {
		tctx = tool.WithTaint(tctx, tool.Taint{Source: t.Taint})
	}
	lr, err := toolloop.Run(tctx, d.Model, req, tools, d.Loop)
	rep := RunReport{Usage: lr.Usage, Note: note}
	if err != nil {
		return rep, fmt.Errorf("isolated inference: %w", err)
	}
	answer := strings.TrimSpace(lr.Final.Text())
	if answer == "" {
		return rep, errors.New("isolated inference: the model gave an empty answer")
	}
	if t.Thread != "" {
		if err := d.Router.Notify(ctx, chat.Outbound{Address: chat.Address{Channel: t.Thread.Channel(), Thread: t.Thread}, Kind: chat.Notify, Text: answer}); err != nil {
			return rep, fmt.Errorf("deliver the answer to %s: %w", t.Thread, err)
		}
		rep.DeliveredTo = t.Thread
		return rep, nil
	}
	event := fmt.Sprintf("Scheduled task %s (%s) ran in the background. Its report:\n\n%s", t.ID, t.Description, answer)
	if err := d.Router.EnqueueSystemEvent(ctx, target, event); err != nil {
		return rep, fmt.Errorf("queue the report on %s: %w", target, err)
	}
	return rep, nil
}

func (d *Dispatcher) system(ctx context.Context, instructions string, tools []string) (string, error) {
	if d.System != nil {
		return d.System(ctx, instructions, tools)
	}
	return prompt.Assemble(prompt.Input{Mode: prompt.ModeMinimal, Minimal: instructions, Now: d.now(), Location: d.Location}), nil
}
