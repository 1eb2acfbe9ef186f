package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/dreaming"
	"github.com/reverie-ai/reverie/internal/heartbeat"
	"github.com/reverie-ai/reverie/internal/kernel"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/scheduler"
)

// buildScheduler opens the scheduler with the router-backed dispatcher
// (reminders without a model call, AI tasks as isolated inferences on the
// sub_sessions role), adds the reminder tools, replaces the /reminders
// placeholder and adds /remind. The router must exist.
func (a *App) buildScheduler(ctx context.Context) error {
	cfg := a.Config.Scheduler
	loc := a.Config.Location()
	catchUp := cfg.CatchUpWindow
	if catchUp == 0 {
		catchUp = -1 // configured off (the scheduler's zero value is its default)
	}
	d := &scheduler.Dispatcher{
		Router:     a.Router,
		MainThread: a.mainThread,
		Model:      a.Models.Model(modelrouter.RoleSubSessions),
		Tools:      a.turnTools,
		System:     a.taskSystemPrompt,
		Location:   loc,
		Loop:       a.loopOptions(),
		Now:        a.opts.Now,
		// sub_session tasks run as full-mode sub-sessions.
		SubSessions: a.scheduledSubSessions(),
	}
	s, err := scheduler.Open(ctx, scheduler.Options{
		Migrations:       a.migrations,
		DB:               a.DB,
		Executor:         d,
		Location:         loc,
		CatchUpWindow:    catchUp,
		RunTimeout:       cfg.RunTimeout,
		MaxParallel:      cfg.MaxParallel,
		ReceiptRetention: cfg.ReceiptRetention,
		Events:           a.Bus,
		Now:              a.opts.Now,
		Logger:           a.Logger.With("component", "scheduler"),
	})
	if err != nil {
		return fmt.Errorf("open scheduler: %w", err)
	}
	a.Scheduler = s
	a.onClose("scheduler", s.Close)
	a.runtimeTools = append(a.runtimeTools, s.Tools()...)
	if a.opts.OneShot {
		// The core and runtime tools are all built: warm them beside the
		// rest of the start (see warmTools).
		a.warmTools(slices.Concat(a.coreTools, a.runtimeTools))
	}
	if err := a.buildHeartbeat(ctx); err != nil {
		return err
	}
	if err := a.Router.Register(router.Command{
		Name: "reminders",
		Help: "list reminders and scheduled tasks with their next run and last outcome",
		Run: func(ctx context.Context, cc router.CommandContext) (string, error) {
			return s.Summary(ctx)
		},
	}); err != nil {
		return err
	}
	return a.Router.Register(router.Command{
		Name: "remind",
		Help: "remind me here: /remind in 20m stretch, /remind tomorrow 9:00 dentist (no model call)",
		Run: func(ctx context.Context, cc router.CommandContext) (string, error) {
			return s.Remind(ctx, cc.Thread, cc.Args)
		},
	})
}

// buildHeartbeat registers the periodic review on the scheduler when it is
// enabled and a model is configured (a job nobody registers is set
// inactive when the scheduler starts).
func (a *App) buildHeartbeat(ctx context.Context) error {
	cfg := a.Config.Scheduler.Heartbeat
	if !cfg.Enabled || !a.Models.Configured() {
		return nil
	}
	o := heartbeat.Options{
		Migrations: a.migrations,
		DB:         a.DB,
		Model:      a.Models.Model(modelrouter.RoleScout),
		Escalate:   a.Router,
		MainThread: a.mainThread,
		Worker:     a.Workflows,
		Tasks:      a.Scheduler,
		Events:     a.Bus,
		Interval:   cfg.Interval,
		QuietStart: cfg.QuietStart,
		QuietEnd:   cfg.QuietEnd,
		Location:   a.Config.Location(),
		Now:        a.opts.Now,
		Logger:     a.Logger.With("component", "heartbeat"),
	}
	if a.Pulse != nil {
		o.Pulse = a.Pulse
	}
	hb, err := heartbeat.New(ctx, o)
	if err != nil {
		return fmt.Errorf("set up the heartbeat: %w", err)
	}
	a.Heartbeat = hb // its job is registered with the extensions' (registerJobs)
	return nil
}

// builtinJobs are the scheduled jobs of the built-in background features,
// offered through the kernel's capability (extension.SchedulerProvider)
// like the extensions' jobs: the heartbeat (heartbeat/review, when it is
// on) and the nightly dream (dreaming/nightly, when dreaming is enabled
// and a model is configured). A feature left out this start has its job
// set inactive by the scheduler.
func (a *App) builtinJobs() []kernel.ScopedJob {
	type owned struct {
		owner string
		p     extension.SchedulerProvider
	}
	var providers []owned
	if a.Heartbeat != nil {
		providers = append(providers, owned{heartbeat.Owner, a.Heartbeat})
	}
	if a.Config.Dreaming.Enabled && a.Dreamer != nil && a.Models.Configured() {
		h, m, _ := a.Config.Dreaming.DreamTime() // validated
		providers = append(providers, owned{dreaming.Owner, dreaming.Nightly{Dreamer: a.Dreamer, Hour: h, Minute: m}})
	}
	var out []kernel.ScopedJob
	for _, p := range providers {
		for _, j := range p.p.ScheduledJobs() {
			out = append(out, kernel.ScopedJob{Extension: p.owner, Job: j})
		}
	}
	return out
}

// registerJobs puts the built-in features' and the extensions' scheduled
// jobs on the scheduler, each as "<owner>/<job>". It runs once the
// extensions have started and before the scheduler runs; a job that
// cannot be registered (a bad schedule) is logged and left out.
func (a *App) registerJobs(ctx context.Context) {
	builtin := a.builtinJobs()
	owners := map[string]bool{heartbeat.Owner: true, dreaming.Owner: true}
	for i, j := range append(builtin, a.Kernel.Jobs()...) {
		if i >= len(builtin) && owners[j.Extension] {
			a.Logger.Error("extension job not scheduled: its extension id names a built-in feature's jobs", "ext", j.Extension, "job", j.Job.Name)
			continue
		}
		if err := a.Scheduler.RegisterJob(ctx, scheduler.ExtensionJob(j.Extension, j.Job)); err != nil {
			a.Logger.Error("scheduled job not registered", "owner", j.Extension, "job", j.Job.Name, "err", err)
		}
	}
}

// mainThread is where system events go: the conversation the user wrote
// in most recently (chat.DefaultThread when there is none).
func (a *App) mainThread(ctx context.Context) chat.ThreadID {
	threads, err := a.Conversations.Threads(ctx, conversation.ListOptions{Limit: 50})
	if err != nil {
		a.Logger.Warn("could not find the main thread; using the default", "err", err)
		return chat.DefaultThread
	}
	best := chat.DefaultThread
	var at conversation.Thread
	for _, t := range threads {
		if !t.LastUserMessageAt.IsZero() && t.LastUserMessageAt.After(at.LastUserMessageAt) {
			best, at = t.ID, t
		}
	}
	return best
}

// taskSystemPrompt is the system prompt of an AI task's isolated
// inference: the full-mode prompt (core instructions, time, memories,
// pulse, skills as a table of contents) ending with the task instructions.
func (a *App) taskSystemPrompt(ctx context.Context, instructions string, tools []string) (string, error) {
	base, err := os.ReadFile(filepath.Join(a.opts.DataDir, prompt.BaseFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return "", fmt.Errorf("read the base prompt: %w", err)
	}
	in := prompt.Input{Mode: prompt.ModeFull, Base: string(base), Now: a.opts.Now(), Location: a.Config.Location(),
		Tools: tools, Task: instructions}
	if a.Sources != nil {
		if in.Memories, err = a.Sources.Memories(ctx); err != nil {
			a.Logger.Warn("memories unavailable for a scheduled task", "err", err)
		}
		if in.Pulse, err = a.Sources.Pulse(ctx); err != nil {
			a.Logger.Warn("pulse unavailable for a scheduled task", "err", err)
		}
		if in.Skills, err = a.Sources.Skills(ctx); err != nil {
			a.Logger.Warn("skills unavailable for a scheduled task", "err", err)
		}
	}
	return prompt.Assemble(in), nil
}
