package scheduler

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"time"
	"unicode/utf8"
)

// maxReasonChars bounds a receipt's reason.
const maxReasonChars = 1000

// writeTimeout bounds the receipt writes made after a run, on a context
// detached from shutdown.
const writeTimeout = 10 * time.Second

// errNoExecutor is the failure of a task run without an Executor.
var errNoExecutor = errors.New("nothing can execute tasks (no executor configured)")

// execute runs t and completes its receipt.
func (s *Scheduler) execute(ctx context.Context, t Task, at time.Time, catchUp bool, receipt int64) {
	start := s.now()
	t.NextRun = at // the run time being executed
	timeout := s.o.RunTimeout
	if t.Kind == KindJob {
		s.mu.Lock()
		timeout = max(timeout, s.jobTimeouts[t.Job])
		s.mu.Unlock()
	}
	rctx, cancel := context.WithTimeout(ctx, timeout)
	rep, err := s.call(rctx, t)
	cancel()
	dur := s.now().Sub(start)

	outcome, reason := OutcomeFired, rep.Note
	interrupted := false
	switch {
	case err != nil && ctx.Err() != nil:
		outcome, reason, interrupted = OutcomeSkipped, "interrupted by shutdown; it runs again at the next start (catch-up)", true
	case err != nil && errors.Is(err, context.DeadlineExceeded) && rctx.Err() != nil:
		outcome, reason = OutcomeFailed, fmt.Sprintf("timed out after %s: %v", timeout, err)
	case err != nil:
		outcome, reason = OutcomeFailed, err.Error()
	case rep.Skipped:
		outcome = OutcomeSkipped
	}
	if utf8.RuneCountInString(reason) > maxReasonChars {
		reason = string([]rune(reason)[:maxReasonChars-1]) + "…"
	}

	wctx, wcancel := context.WithTimeout(context.WithoutCancel(ctx), writeTimeout)
	defer wcancel()
	werr := s.tx(wctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(wctx, `UPDATE scheduler_receipts SET outcome = ?, reason = ?, duration_ms = ?,
			input_tokens = ?, output_tokens = ?, delivered_to = ? WHERE id = ?`,
			string(outcome), reason, dur.Milliseconds(), rep.Usage.InputTokens, rep.Usage.OutputTokens, string(rep.DeliveredTo), receipt); err != nil {
			return err
		}
		var err error
		switch {
		case interrupted:
			// Give the run time back so that the next start catches it up.
			_, err = tx.ExecContext(wctx, `UPDATE scheduler_tasks SET next_run = ?, status = 'active', updated_at = ?
				WHERE id = ? AND status IN ('active', 'done')`, nanos(at), nanos(s.now()), t.ID)
		case outcome == OutcomeFailed:
			_, err = tx.ExecContext(wctx, `UPDATE scheduler_tasks SET last_run = ?, last_outcome = 'failed', runs = runs + 1,
				failures = failures + 1, updated_at = ? WHERE id = ?`, nanos(start), nanos(s.now()), t.ID)
		case rep.DeliveredTo != "":
			_, err = tx.ExecContext(wctx, `UPDATE scheduler_tasks SET last_run = ?, last_outcome = ?, runs = runs + 1,
				failures = 0, delivered_to = ?, updated_at = ? WHERE id = ?`, nanos(start), string(outcome), string(rep.DeliveredTo), nanos(s.now()), t.ID)
		default:
			_, err = tx.ExecContext(wctx, `UPDATE scheduler_tasks SET last_run = ?, last_outcome = ?, runs = runs + 1,
				failures = 0, updated_at = ? WHERE id = ?`, nanos(start), string(outcome), nanos(s.now()), t.ID)
		}
		return err
	})
	if werr != nil {
		s.log.Error("could not record a run", "id", t.ID, "receipt", receipt, "err", werr)
	}

	attrs := []any{"id", t.ID, "kind", t.Kind, "scheduled", at, "outcome", outcome, "duration", dur.Round(time.Millisecond),
		"tokens", rep.Usage.Total()}
	if catchUp {
		attrs = append(attrs, "catch_up", true)
	}
	switch outcome {
	case OutcomeFailed:
		s.log.Warn("task run failed", append(attrs, "reason", reason)...)
		s.publish(wctx, t, TopicFailed, outcome, reason)
	case OutcomeFired:
		if t.Kind == KindJob {
			s.log.Debug("job ran", attrs...)
		} else {
			s.log.Info("task ran", attrs...)
			s.publish(wctx, t, TopicFired, outcome, reason)
		}
	default:
		s.log.Debug("task run skipped", append(attrs, "reason", reason)...)
	}
}

// call runs the body of t, turning a panic into an error.
func (s *Scheduler) call(ctx context.Context, t Task) (rep RunReport, err error) {
	defer func() {
		if p := recover(); p != nil {
			s.log.Error("task run panicked", "id", t.ID, "panic", p, "stack", string(debug.Stack()))
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	if t.Kind == KindJob {
		s.mu.Lock()
		fn := s.jobs[t.Job]
		s.mu.Unlock()
		if fn == nil {
			return RunReport{}, errors.New("the job is not registered")
		}
		return fn(ctx)
	}
	ex := s.o.Executor
	if ex == nil {
		return RunReport{}, errNoExecutor
	}
	switch t.Kind {
	case KindReminder:
		to, err := ex.Remind(ctx, t.Thread, ReminderText(t))
		if err != nil {
			return RunReport{}, err
		}
		return RunReport{DeliveredTo: to, Note: "delivered to " + string(to)}, nil
	case KindAITask:
		return ex.RunAIPrompt(ctx, t)
	default:
		return RunReport{}, fmt.Errorf("unknown task kind %q", t.Kind)
	}
}

// ReminderText is what a plain reminder delivers.
func ReminderText(t Task) string { return "Reminder: " + t.Text }

// TaskEvent is the payload of the scheduler.task.* events.
type TaskEvent struct {
	ID      string   `json:"id"`
	Kind    TaskKind `json:"kind"`
	Title   string   `json:"title"`
	Outcome Outcome  `json:"outcome"`
	Reason  string   `json:"reason,omitempty"`
}

func (s *Scheduler) publish(ctx context.Context, t Task, topic string, outcome Outcome, reason string) {
	if s.o.Events == nil {
		return
	}
	if err := s.o.Events.Publish(ctx, topic, TaskEvent{ID: t.ID, Kind: t.Kind, Title: t.Title(), Outcome: outcome, Reason: reason}); err != nil {
		s.log.Warn("could not publish a scheduler event", "topic", topic, "err", err)
	}
}

// maybePrune deletes old receipts and finished tasks, at most once a day.
func (s *Scheduler) maybePrune(ctx context.Context, now time.Time) {
	s.mu.Lock()
	due := now.Sub(s.pruned) >= 24*time.Hour
	if due {
		s.pruned = now
	}
	s.mu.Unlock()
	if !due {
		return
	}
	if n, err := s.Prune(ctx, now.Add(-s.o.ReceiptRetention)); err != nil {
		s.log.Warn("prune scheduler receipts", "err", err)
	} else if n > 0 {
		s.log.Info("pruned old scheduler receipts and finished tasks", "count", n)
	}
}

// Prune deletes receipts started before cutoff and done or cancelled tasks
// last changed before it (with their receipts). It returns the rows
// deleted.
func (s *Scheduler) Prune(ctx context.Context, cutoff time.Time) (int64, error) {
	res, err := s.exec(ctx, `DELETE FROM scheduler_receipts WHERE started_at < ? AND outcome <> 'running'`, nanos(cutoff))
	if err != nil {
		return 0, fmt.Errorf("prune receipts: %w", err)
	}
	n, _ := res.RowsAffected()
	res, err = s.exec(ctx, `DELETE FROM scheduler_tasks WHERE status IN ('done', 'cancelled') AND updated_at < ?`, nanos(cutoff))
	if err != nil {
		return n, fmt.Errorf("prune finished tasks: %w", err)
	}
	m, _ := res.RowsAffected()
	return n + m, nil
}
