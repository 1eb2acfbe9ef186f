package scheduler

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/internal/sqlite"
)

// LastReceipts returns the newest receipt of every task that has one, by
// task id.
func (s *Scheduler) LastReceipts(ctx context.Context) (map[string]Receipt, error) {
	last, err := sqlite.Rows(ctx, s.db, scanReceipt, `SELECT `+receiptColumns+`
		FROM scheduler_receipts WHERE id IN (SELECT MAX(id) FROM scheduler_receipts GROUP BY task_id)`)
	if err != nil {
		return nil, fmt.Errorf("read last receipts: %w", err)
	}
	out := make(map[string]Receipt, len(last))
	for _, r := range last {
		out[r.TaskID] = r
	}
	return out, nil
}

// Summary is the text of the /reminders command: active and paused tasks
// with their next run and last receipt, the one-time reminders and tasks
// delivered in the last week (when and where), then the background jobs.
func (s *Scheduler) Summary(ctx context.Context) (string, error) {
	tasks, err := s.List(ctx, ListOptions{Jobs: true, Limit: 500})
	if err != nil {
		return "", err
	}
	last, err := s.LastReceipts(ctx)
	if err != nil {
		return "", err
	}
	loc := s.o.Location
	var user, jobs []Task
	for _, t := range tasks {
		if t.Kind == KindJob {
			jobs = append(jobs, t)
		} else {
			user = append(user, t)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Reminders and scheduled tasks (now %s):", FormatTime(s.now(), loc))
	if len(user) == 0 {
		b.WriteString("\nNone. Ask me to remind you of something, or to do something on a schedule.")
	}
	for _, t := range user {
		writeTask(&b, t, last, loc)
	}
	done, err := s.List(ctx, ListOptions{Statuses: []Status{StatusDone}, Limit: 200})
	if err != nil {
		return "", err
	}
	week := s.now().Add(-7 * 24 * time.Hour)
	var recent []Task
	for _, t := range done {
		if t.LastRun.After(week) && len(recent) < 10 {
			recent = append(recent, t)
		}
	}
	if len(recent) > 0 {
		b.WriteString("\n\nDelivered in the last week:")
		for _, t := range recent {
			writeTask(&b, t, last, loc)
		}
	}
	if len(jobs) > 0 {
		b.WriteString("\n\nBackground jobs:")
		for _, t := range jobs {
			writeTask(&b, t, last, loc)
		}
	}
	return b.String(), nil
}

func writeTask(b *strings.Builder, t Task, last map[string]Receipt, loc *time.Location) {
	what := map[TaskKind]string{KindReminder: "reminder", KindAITask: "AI task", KindJob: "job"}[t.Kind]
	title := t.Title()
	if t.Kind == KindJob {
		title = t.Job
	}
	fmt.Fprintf(b, "\n• %s — %s %q — %s", t.ID, what, title, t.Description)
	switch t.Status {
	case StatusActive:
		fmt.Fprintf(b, "\n  next: %s", FormatTime(t.NextRun, loc))
	default:
		fmt.Fprintf(b, "\n  %s", t.Status)
	}
	if r, ok := last[t.ID]; ok {
		fmt.Fprintf(b, "; last: %s %s", r.Outcome, FormatTime(r.StartedAt, loc))
		if r.Usage.Total() > 0 {
			fmt.Fprintf(b, " (%d tokens)", r.Usage.Total())
		}
		if r.DeliveredTo != "" {
			fmt.Fprintf(b, " to %s", r.DeliveredTo)
		}
		if r.Reason != "" && r.Outcome != OutcomeFired {
			reason := r.Reason
			if len([]rune(reason)) > 120 {
				reason = string([]rune(reason)[:119]) + "…"
			}
			fmt.Fprintf(b, " — %s", reason)
		}
	}
	if t.Failures > 1 {
		fmt.Fprintf(b, "; %d failures in a row", t.Failures)
	}
}
