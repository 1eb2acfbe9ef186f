package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/tool"
)

// SystemThread is the thread argument that makes a system task: its
// result goes to the main assistant as a system event, not to a chat.
const SystemThread = "system"

// scheduleArgs is the recurring form of set_reminder.
type scheduleArgs struct {
	Kind        Kind     `json:"kind" jsonschema:"daily, weekly, monthly, interval or cron (once: use when or in instead)"`
	Time        string   `json:"time,omitempty" jsonschema:"time of day HH:MM for daily, weekly and monthly"`
	Weekdays    []string `json:"weekdays,omitempty" jsonschema:"weekly: days such as [\"mon\",\"thu\"]"`
	Day         int      `json:"day,omitempty" jsonschema:"monthly: day of the month 1-31 (the last day in shorter months)"`
	Every       string   `json:"every,omitempty" jsonschema:"interval: period such as 30m, 2h, 1d (at least 1m)"`
	WindowStart string   `json:"window_start,omitempty" jsonschema:"interval: only run between window_start and window_end (HH:MM), e.g. 08:00"`
	WindowEnd   string   `json:"window_end,omitempty" jsonschema:"interval: end of the daily window (HH:MM), e.g. 20:00"`
	Cron        string   `json:"cron,omitempty" jsonschema:"cron: five-field expression, e.g. 0 9 * * 1-5"`
}

type setReminderArgs struct {
	Text       string        `json:"text" jsonschema:"what to remind the user of (delivered as is, no model call); for an AI task a short title"`
	When       string        `json:"when,omitempty" jsonschema:"one-time: local date and time such as 2026-03-30 09:00, tomorrow 09:00, 18:30 (next occurrence), or ISO-8601 with offset; for a schedule: not before / first run"`
	In         string        `json:"in,omitempty" jsonschema:"one-time, relative to now: 20m, 2h, 1d"`
	Schedule   *scheduleArgs `json:"schedule,omitempty" jsonschema:"for a recurring reminder or task"`
	AIPrompt   string        `json:"ai_prompt,omitempty" jsonschema:"makes it an AI task: when due, this prompt runs as a separate inference with your tools and its answer is delivered"`
	SubSession bool          `json:"sub_session,omitempty" jsonschema:"run the AI task as a background worker (sub-session) instead of one inference"`
	Thread     string        `json:"thread,omitempty" jsonschema:"where it is delivered: default this conversation; \"system\" for a background task whose result comes to you as a system event"`
	Zone       string        `json:"zone,omitempty" jsonschema:"IANA time zone for this schedule, e.g. America/New_York (default: the configured zone)"`
}

type taskView struct {
	ID          string `json:"id"`
	Kind        string `json:"kind"`
	Title       string `json:"title"`
	Schedule    string `json:"schedule"`
	Status      string `json:"status"`
	NextRun     string `json:"next_run,omitempty"`
	Thread      string `json:"thread,omitempty"`
	AIPrompt    string `json:"ai_prompt,omitempty"`
	SubSession  bool   `json:"sub_session,omitempty"`
	LastRun     string `json:"last_run,omitempty"`
	LastOutcome string `json:"last_outcome,omitempty"`
	Failures    int    `json:"consecutive_failures,omitempty"`
}

func (s *Scheduler) view(t Task) taskView {
	v := taskView{ID: t.ID, Kind: string(t.Kind), Title: t.Title(), Schedule: t.Description, Status: string(t.Status),
		Thread: string(t.Thread), AIPrompt: t.AIPrompt, SubSession: t.SubSession, LastOutcome: string(t.LastOutcome),
		Failures: t.Failures}
	if t.Kind == KindAITask && t.Thread == "" {
		v.Thread = SystemThread
	}
	if !t.NextRun.IsZero() {
		v.NextRun = t.NextRun.In(s.o.Location).Format(time.RFC3339) + " (" + FormatTime(t.NextRun, s.o.Location) + ")"
	}
	if !t.LastRun.IsZero() {
		v.LastRun = FormatTime(t.LastRun, s.o.Location)
	}
	return v
}

// Tools returns the reminder and task tools: set_reminder, list_reminders,
// cancel_reminder and task_control (pause / resume). The thread a reminder
// is delivered to defaults to the calling turn's thread (tool.CallFrom).
func (s *Scheduler) Tools() []tool.Tool {
	return []tool.Tool{s.setReminderTool(), s.listRemindersTool(), s.cancelReminderTool(), s.taskControlTool()}
}

func (s *Scheduler) setReminderTool() tool.Tool {
	return tool.New("set_reminder",
		"Set a reminder or a scheduled task. One-time: give when (local time) or in (relative). Recurring: give schedule "+
			"(daily/weekly/monthly at a time, every N with an optional daily window, or cron). Plain reminders deliver text "+
			"to this conversation without any model call; with ai_prompt the prompt runs when due and its answer is delivered. "+
			"Times without an offset are in the user's configured time zone.",
		func(ctx context.Context, a setReminderArgs) (any, error) {
			nt, err := s.newTaskFromArgs(ctx, a)
			if err != nil {
				return nil, err
			}
			t, err := s.Add(ctx, nt)
			if err != nil {
				return nil, err
			}
			return struct {
				Set  bool     `json:"set"`
				Task taskView `json:"task"`
			}{true, s.view(t)}, nil
		},
		tool.WithEnum("schedule.weekdays", WeekdayValues...),
		tool.SendsOutTo(reminderDestinations),
		tool.WithCategories("orchestration"))
}

// reminderDestinations: a reminder or an AI task's answer delivered to a
// thread other than this conversation (or "system", the main assistant)
// is a message to whoever is there, as send_to_channel's is.
func reminderDestinations(a setReminderArgs) []tool.Destination {
	th := strings.TrimSpace(a.Thread)
	if th == "" || strings.EqualFold(th, SystemThread) {
		return nil
	}
	data := a.Text
	if p := strings.TrimSpace(a.AIPrompt); p != "" {
		data = strings.TrimSpace(a.Text + "\n" + p)
	}
	return []tool.Destination{{Thread: th, Data: data}}
}

func (s *Scheduler) newTaskFromArgs(ctx context.Context, a setReminderArgs) (NewTask, error) {
	now := s.now()
	loc := s.o.Location
	if z := strings.TrimSpace(a.Zone); z != "" {
		l, err := time.LoadLocation(z)
		if err != nil || z == "Local" {
			return NewTask{}, fmt.Errorf("%w %q (use an IANA name such as \"Europe/Berlin\")", ErrUnknownZone, z)
		}
		loc = l
	}
	nt := NewTask{Text: a.Text, AIPrompt: a.AIPrompt, SubSession: a.SubSession}
	if taint, ok := tool.TaintFrom(ctx); ok {
		// Set from a conversation holding untrusted input: the task's
		// run carries it on.
		nt.Taint = taint.Source
	}
	switch th := strings.TrimSpace(a.Thread); {
	case strings.EqualFold(th, SystemThread):
	case th != "":
		nt.Thread = chat.ThreadID(th)
	default:
		call, ok := tool.CallFrom(ctx)
		switch {
		case !ok || call.Thread == "":
			return NewTask{}, errors.New("no conversation to deliver to: give thread (a thread id, or \"system\")")
		case call.Thread.IsSubSession():
			// A background worker's thread is never shown: its
			// reminders go to the main assistant.
		default:
			nt.Thread = call.Thread
		}
	}
	var at time.Time
	if strings.TrimSpace(a.When) != "" && strings.TrimSpace(a.In) != "" {
		return NewTask{}, fmt.Errorf("%w: give when or in, not both", ErrInvalidSpec)
	}
	if w := strings.TrimSpace(a.When); w != "" {
		t, err := ParseWhen(w, now, loc)
		if err != nil {
			return NewTask{}, err
		}
		at = t
	}
	if in := strings.TrimSpace(a.In); in != "" {
		d, err := ParseDuration(strings.TrimPrefix(in, "+"))
		if err != nil {
			return NewTask{}, err
		}
		if d <= 0 {
			return NewTask{}, fmt.Errorf("%w: in must be positive", ErrInvalidSpec)
		}
		at = now.Add(d)
	}
	switch sc := a.Schedule; {
	case sc == nil || sc.Kind == Once:
		if at.IsZero() {
			return NewTask{}, fmt.Errorf("%w: give when or in for a one-time reminder, or schedule for a recurring one", ErrInvalidSpec)
		}
		nt.Spec = Spec{Kind: Once, At: at}
	default:
		sp := Spec{Kind: sc.Kind, Time: sc.Time, Weekdays: sc.Weekdays, Day: sc.Day, WindowStart: sc.WindowStart,
			WindowEnd: sc.WindowEnd, Cron: sc.Cron, Start: at}
		if e := strings.TrimSpace(sc.Every); e != "" {
			d, err := ParseDuration(e)
			if err != nil {
				return NewTask{}, err
			}
			sp.Every = Duration(d)
		}
		nt.Spec = sp
	}
	if loc != s.o.Location {
		nt.Spec.Zone = loc.String()
	}
	return nt, nil
}

type listRemindersArgs struct {
	IncludeFinished bool   `json:"include_finished,omitempty" jsonschema:"also list done and cancelled ones"`
	Thread          string `json:"thread,omitempty" jsonschema:"only those delivered to this thread (default: all)"`
}

func (s *Scheduler) listRemindersTool() tool.Tool {
	return tool.New("list_reminders",
		"List reminders and scheduled tasks with their ids, schedules, next run times and last outcomes.",
		func(ctx context.Context, a listRemindersArgs) (any, error) {
			opts := ListOptions{Thread: chat.ThreadID(strings.TrimSpace(a.Thread)), Limit: 200}
			if a.IncludeFinished {
				opts.Statuses = []Status{StatusActive, StatusPaused, StatusDone, StatusCancelled}
			}
			ts, err := s.List(ctx, opts)
			if err != nil {
				return nil, err
			}
			out := struct {
				Now   string     `json:"now"`
				Tasks []taskView `json:"tasks"`
			}{Now: FormatTime(s.now(), s.o.Location), Tasks: []taskView{}}
			for _, t := range ts {
				out.Tasks = append(out.Tasks, s.view(t))
			}
			return out, nil
		},
		tool.ReadOnly(), tool.WithCategories("orchestration"))
}

type idArgs struct {
	ID string `json:"id" jsonschema:"the task id from set_reminder or list_reminders, e.g. t_1a2b3c4d"`
}

func (s *Scheduler) cancelReminderTool() tool.Tool {
	return tool.New("cancel_reminder",
		"Cancel a reminder or scheduled task for good. To stop one only for a while, use task_control with pause.",
		func(ctx context.Context, a idArgs) (any, error) {
			t, err := s.Cancel(ctx, a.ID)
			if err != nil {
				return nil, notFoundHint(err)
			}
			return struct {
				Cancelled bool     `json:"cancelled"`
				Task      taskView `json:"task"`
			}{true, s.view(t)}, nil
		}, tool.WithCategories("orchestration"))
}

// Action is a task_control action.
type Action string

// EnumValues lists the actions (tool.Enumerator).
func (Action) EnumValues() []string { return []string{"pause", "resume"} }

type controlArgs struct {
	ID     string `json:"id" jsonschema:"the task id"`
	Action Action `json:"action" jsonschema:"pause: stop running until resumed (missed runs are not caught up); resume: run again from now on"`
}

func (s *Scheduler) taskControlTool() tool.Tool {
	return tool.New("task_control",
		"Pause or resume a reminder or scheduled task (including background jobs) by id.",
		func(ctx context.Context, a controlArgs) (any, error) {
			var (
				t   Task
				err error
			)
			switch a.Action {
			case "pause":
				t, err = s.Pause(ctx, a.ID)
			case "resume":
				t, err = s.Resume(ctx, a.ID)
			default:
				return nil, fmt.Errorf("unknown action %q (want pause or resume)", a.Action)
			}
			if err != nil {
				return nil, notFoundHint(err)
			}
			return struct {
				Task taskView `json:"task"`
			}{s.view(t)}, nil
		}, tool.WithCategories("orchestration"))
}

func notFoundHint(err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w; list_reminders shows the ids", err)
	}
	return err
}

// ParseWhen reads a point in time for a one-time reminder, relative to now
// in loc: an ISO-8601 time with offset; a naive local date and time
// ("2026-03-30 09:00", "2026-03-30T09:00:05"); "today 18:30",
// "tomorrow 9:00"; or a bare time of day "18:30" (its next occurrence).
// Naive wall times follow the DST rules of Spec.
func ParseWhen(s string, now time.Time, loc *time.Location) (time.Time, error) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04Z07:00", "2006-01-02 15:04:05Z07:00", "2006-01-02 15:04Z07:00"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	ln := now.In(loc)
	lower := strings.ToLower(s)
	dayOffset := -1
	for word, off := range map[string]int{"today": 0, "tomorrow": 1} {
		if rest, ok := strings.CutPrefix(lower, word); ok {
			dayOffset = off
			lower = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(rest), "at"))
		}
	}
	if dayOffset >= 0 || !strings.ContainsAny(lower, "-/") {
		c, err := parseClock("when", lower)
		if err != nil {
			return time.Time{}, fmt.Errorf("%w: when %q: want a date and time such as 2026-03-30 09:00, tomorrow 09:00, or 18:30", ErrInvalidSpec, s)
		}
		y, m, d := ln.Date()
		if dayOffset >= 0 {
			return wallTime(y, m, d+dayOffset, c, loc), nil
		}
		t := wallTime(y, m, d, c, loc)
		if !t.After(now) {
			t = wallTime(y, m, d+1, c, loc)
		}
		return t, nil
	}
	for _, layout := range []string{"2006-01-02T15:04:05", "2006-01-02T15:04", "2006-01-02 15:04:05", "2006-01-02 15:04"} {
		if t, err := time.Parse(layout, s); err == nil {
			if t.Second() != 0 {
				// wallTime works in minutes; keep the seconds.
				return wallTime(t.Year(), t.Month(), t.Day(), clock{t.Hour(), t.Minute()}, loc).Add(time.Duration(t.Second()) * time.Second), nil
			}
			return wallTime(t.Year(), t.Month(), t.Day(), clock{t.Hour(), t.Minute()}, loc), nil
		}
	}
	if _, err := time.Parse(time.DateOnly, s); err == nil {
		return time.Time{}, fmt.Errorf("%w: when %q has no time of day (add one, e.g. %s 09:00)", ErrInvalidSpec, s, s)
	}
	return time.Time{}, fmt.Errorf("%w: when %q: want a date and time such as 2026-03-30 09:00, tomorrow 09:00, or an ISO-8601 time", ErrInvalidSpec, s)
}
