package app

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/scheduler"
)

// apiTasks serves schedules and receipts from the scheduler.
type apiTasks struct{ s *scheduler.Scheduler }

func taskError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, scheduler.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, scheduler.ErrFinished), errors.Is(err, scheduler.ErrJobTask):
		return fmt.Errorf("%w: %w", api.ErrConflict, err)
	case errors.Is(err, scheduler.ErrInvalidTask), errors.Is(err, scheduler.ErrInvalidSpec),
		errors.Is(err, scheduler.ErrPast), errors.Is(err, scheduler.ErrUnknownZone):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func scheduleOf(sp scheduler.Spec) api.Schedule {
	out := api.Schedule{Kind: string(sp.Kind), At: api.TimePtr(sp.At), Time: sp.Time, Weekdays: sp.Weekdays, Day: sp.Day,
		WindowStart: sp.WindowStart, WindowEnd: sp.WindowEnd, Cron: sp.Cron, Start: api.TimePtr(sp.Start), Zone: sp.Zone}
	if sp.Every != 0 {
		out.Every = time.Duration(sp.Every).String()
	}
	return out
}

func specOf(s api.Schedule) (scheduler.Spec, error) {
	sp := scheduler.Spec{Kind: scheduler.Kind(s.Kind), Time: s.Time, Weekdays: s.Weekdays, Day: s.Day,
		WindowStart: s.WindowStart, WindowEnd: s.WindowEnd, Cron: s.Cron, Zone: s.Zone}
	if s.At != nil {
		sp.At = *s.At
	}
	if s.Start != nil {
		sp.Start = *s.Start
	}
	if s.Every != "" {
		d, err := scheduler.ParseDuration(s.Every)
		if err != nil {
			return sp, err
		}
		sp.Every = scheduler.Duration(d)
	}
	return sp, nil
}

func taskOf(t scheduler.Task) api.Task {
	return api.Task{ID: t.ID, Kind: string(t.Kind), Text: t.Text, AIPrompt: t.AIPrompt, Thread: string(t.Thread),
		SubSession: t.SubSession, Job: t.Job, Schedule: scheduleOf(t.Spec), Description: t.Description,
		Status: string(t.Status), NextRun: api.TimePtr(t.NextRun), LastRun: api.TimePtr(t.LastRun),
		LastOutcome: string(t.LastOutcome), DeliveredTo: string(t.DeliveredTo), Runs: t.Runs, Failures: t.Failures, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func (t apiTasks) List(ctx context.Context, q api.TaskQuery) ([]api.Task, error) {
	var sts []scheduler.Status
	for _, s := range q.Statuses {
		sts = append(sts, scheduler.Status(s))
	}
	list, err := t.s.List(ctx, scheduler.ListOptions{Thread: q.Thread, Statuses: sts, Jobs: q.Jobs})
	if err != nil {
		return nil, taskError(err)
	}
	out := make([]api.Task, len(list))
	for i, x := range list {
		out[i] = taskOf(x)
	}
	return out, nil
}

func (t apiTasks) one(x scheduler.Task, err error) (api.Task, error) {
	if err != nil {
		return api.Task{}, taskError(err)
	}
	return taskOf(x), nil
}

func (t apiTasks) Get(ctx context.Context, id string) (api.Task, error) {
	return t.one(t.s.Get(ctx, id))
}

func (t apiTasks) Add(ctx context.Context, in api.TaskInput) (api.Task, error) {
	sp, err := specOf(in.Schedule)
	if err != nil {
		return api.Task{}, taskError(err)
	}
	return t.one(t.s.Add(ctx, scheduler.NewTask{Text: in.Text, AIPrompt: in.AIPrompt, Thread: chat.ThreadID(in.Thread),
		SubSession: in.SubSession, Spec: sp}))
}

func (t apiTasks) Pause(ctx context.Context, id string) (api.Task, error) {
	return t.one(t.s.Pause(ctx, id))
}

func (t apiTasks) Resume(ctx context.Context, id string) (api.Task, error) {
	return t.one(t.s.Resume(ctx, id))
}

func (t apiTasks) Cancel(ctx context.Context, id string) (api.Task, error) {
	return t.one(t.s.Cancel(ctx, id))
}

func (t apiTasks) Receipts(ctx context.Context, q api.ReceiptQuery) ([]api.Receipt, error) {
	rs, err := t.s.Receipts(ctx, q.TaskID, q.Limit)
	if err != nil {
		return nil, taskError(err)
	}
	out := make([]api.Receipt, len(rs))
	for i, r := range rs {
		out[i] = receiptOf(r)
	}
	return out, nil
}

func receiptOf(r scheduler.Receipt) api.Receipt {
	return api.Receipt{ID: r.ID, TaskID: r.TaskID, ScheduledAt: r.ScheduledAt, StartedAt: r.StartedAt,
		Outcome: string(r.Outcome), Reason: r.Reason, Count: r.Count, CatchUp: r.CatchUp, DeliveredTo: string(r.DeliveredTo),
		DurationMS: r.Duration.Milliseconds(), Usage: api.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}}
}
