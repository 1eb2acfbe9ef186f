package scheduler

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

// TaskKind says what a task does when it runs.
type TaskKind string

// Task kinds.
const (
	// KindReminder delivers "Reminder: "+Text to Thread (when empty: the
	// conversation the user wrote in most recently), with no model call.
	KindReminder TaskKind = "reminder"
	// KindAITask runs AIPrompt as an isolated inference (or a sub-session)
	// and delivers the answer to Thread, or to the main agent as a system
	// event when Thread is empty.
	KindAITask TaskKind = "ai_task"
	// KindJob runs a registered job (an extension's scheduled job).
	KindJob TaskKind = "job"
)

// Status is a task's state.
type Status string

// Task states.
const (
	// StatusActive tasks are armed: NextRun is set.
	StatusActive Status = "active"
	// StatusPaused tasks keep their schedule but do not run; runs falling
	// into the pause are not caught up.
	StatusPaused Status = "paused"
	// StatusDone: a one-time task that has run (or was skipped).
	StatusDone Status = "done"
	// StatusCancelled tasks never run again.
	StatusCancelled Status = "cancelled"
	// StatusInactive: a job whose extension did not register it at the
	// last start.
	StatusInactive Status = "inactive"
)

// Outcome is what became of one run.
type Outcome string

// Run outcomes.
const (
	// OutcomeRunning: the run has started and not finished; a receipt left
	// running by a crash is marked failed at the next start.
	OutcomeRunning Outcome = "running"
	OutcomeFired   Outcome = "fired"
	OutcomeSkipped Outcome = "skipped"
	OutcomeFailed  Outcome = "failed"
)

// Limits of task fields.
const (
	MaxTextChars     = 4000
	MaxAIPromptChars = 16000
)

// Errors of the task API.
var (
	// ErrNotFound: no task has that id. Errors read `task "t_1" not
	// found`.
	ErrNotFound = errors.New("not found")
	// ErrInvalidTask: the task's fields are unusable (no text, too long,
	// bad thread id); wrapped with the detail.
	ErrInvalidTask = errors.New("invalid task")
	// ErrFinished: the task is done or cancelled and cannot be paused or
	// resumed. Errors read "task t_1 has finished (cancelled)".
	ErrFinished = errors.New("has finished")
	// ErrJobTask: jobs belong to their extension and cannot be cancelled
	// (pause them instead).
	ErrJobTask = errors.New("is a job of its extension")
)

// NewTask is a task to add.
type NewTask struct {
	// Text is the reminder's text, or an AI task's title (default: the
	// start of AIPrompt).
	Text string
	// AIPrompt makes the task an AI task.
	AIPrompt string
	// Thread receives reminders and AI task answers. Empty: a reminder
	// goes to the conversation the user wrote in most recently (resolved
	// when it fires), an AI task's answer to the main agent as a system
	// event.
	Thread chat.ThreadID
	// SubSession runs an AI task as a sub-session instead of an isolated
	// inference (when the workflow runtime is available).
	SubSession bool
	Spec       Spec
	// Taint names the untrusted input in the conversation the task was
	// set from ("": none; tool.Taint). An AI task's run inherits it.
	Taint string
}

// Task is a stored task.
type Task struct {
	ID         string        `json:"id"`
	Kind       TaskKind      `json:"kind"`
	Text       string        `json:"text,omitempty"`
	AIPrompt   string        `json:"ai_prompt,omitempty"`
	Thread     chat.ThreadID `json:"thread,omitempty"`
	SubSession bool          `json:"sub_session,omitempty"`
	// Job is "<extension>/<job>" for KindJob.
	Job    string `json:"job,omitempty"`
	Spec   Spec   `json:"spec"`
	Status Status `json:"status"`
	// NextRun is zero when the task is not armed.
	NextRun     time.Time `json:"next_run,omitzero"`
	LastRun     time.Time `json:"last_run,omitzero"`
	LastOutcome Outcome   `json:"last_outcome,omitempty"`
	Runs        int       `json:"runs"`
	// Failures counts consecutive failed runs (reflection pauses tasks that
	// keep failing).
	Failures  int       `json:"failures"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Description describes the schedule ("daily at 09:00").
	Description string `json:"description"`
	// Taint is NewTask.Taint.
	Taint string `json:"taint,omitempty"`
	// DeliveredTo is the thread the newest fired run delivered to.
	DeliveredTo chat.ThreadID `json:"delivered_to,omitempty"`
}

// Title is the task's short name: its text, or the start of its prompt.
func (t Task) Title() string {
	s := t.Text
	if s == "" {
		s = t.AIPrompt
	}
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) > 80 {
		r := []rune(s)
		s = string(r[:79]) + "…"
	}
	return s
}

// Receipt records one run of a task (or a group of skipped runs).
type Receipt struct {
	ID     int64  `json:"id"`
	TaskID string `json:"task_id"`
	// ScheduledAt is the run time the receipt is for (the first of a
	// group of skipped runs).
	ScheduledAt time.Time `json:"scheduled_at"`
	StartedAt   time.Time `json:"started_at"`
	Outcome     Outcome   `json:"outcome"`
	Reason      string    `json:"reason,omitempty"`
	// Count is the number of run times covered (1 unless skipped runs were
	// grouped).
	Count int `json:"count"`
	// CatchUp marks a run executed late, after downtime.
	CatchUp bool `json:"catch_up,omitempty"`
	// DeliveredTo is the thread the run delivered to ("": none).
	DeliveredTo chat.ThreadID `json:"delivered_to,omitempty"`
	Duration    time.Duration `json:"duration"`
	Usage       llm.Usage     `json:"usage"`
}

// ListOptions select tasks for List.
type ListOptions struct {
	// Thread keeps only the tasks of one thread ("" = every thread).
	Thread chat.ThreadID
	// Statuses to include; nil means active and paused.
	Statuses []Status
	// Jobs includes extension jobs.
	Jobs bool
	// DueBefore keeps active tasks whose next run is before it.
	DueBefore time.Time
	// Failing keeps tasks whose last run failed (Failures > 0).
	Failing bool
	// Limit caps the result (0 = 1000).
	Limit int
}

const taskColumns = `id, kind, text, ai_prompt, thread, sub_session, job, spec, status, next_run, last_run,
	last_outcome, runs, failures, created_at, updated_at, taint, delivered_to`

func (s *Scheduler) scanTask(r sqlite.Scanner) (Task, error) {
	var (
		t                 Task
		thread, spec      string
		sub               int
		next, last        sql.NullInt64
		created, updated  int64
		kind, status, out string
		delivered         string
	)
	if err := r.Scan(&t.ID, &kind, &t.Text, &t.AIPrompt, &thread, &sub, &t.Job, &spec, &status, &next, &last,
		&out, &t.Runs, &t.Failures, &created, &updated, &t.Taint, &delivered); err != nil {
		return Task{}, err
	}
	t.Kind, t.Status, t.LastOutcome = TaskKind(kind), Status(status), Outcome(out)
	t.Thread, t.SubSession, t.DeliveredTo = chat.ThreadID(thread), sub != 0, chat.ThreadID(delivered)
	t.NextRun, t.LastRun = fromNull(next), fromNull(last)
	t.CreatedAt, t.UpdatedAt = fromNanos(created), fromNanos(updated)
	if err := json.Unmarshal([]byte(spec), &t.Spec); err != nil {
		t.Description = "unreadable schedule"
		return t, nil
	}
	if sch, err := s.compileTask(t); err == nil {
		t.Description = sch.Describe()
	} else {
		t.Description = "invalid schedule: " + err.Error()
	}
	return t, nil
}

func (s *Scheduler) compileTask(t Task) (*Schedule, error) {
	minEvery := MinInterval
	if t.Kind == KindJob {
		minEvery = minJobInterval
	}
	return compile(t.Spec, s.o.Location, minEvery)
}

func nanos(t time.Time) int64 { return t.UnixNano() }

func nullNanos(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time { return time.Unix(0, n).UTC() }

func fromNull(n sql.NullInt64) time.Time {
	if !n.Valid {
		return time.Time{}
	}
	return fromNanos(n.Int64)
}

func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "t_" + hex.EncodeToString(b[:])
}

// Add validates nt, stores it armed with its first run time and wakes the
// timer. A Once time that has passed is ErrPast; bad fields are
// ErrInvalidTask, bad schedules ErrInvalidSpec or ErrUnknownZone.
func (s *Scheduler) Add(ctx context.Context, nt NewTask) (Task, error) {
	now := s.now()
	t := Task{Text: strings.TrimSpace(nt.Text), AIPrompt: strings.TrimSpace(nt.AIPrompt), Thread: nt.Thread,
		SubSession: nt.SubSession, Status: StatusActive, CreatedAt: now, UpdatedAt: now, Taint: nt.Taint}
	t.Kind = KindReminder
	if t.AIPrompt != "" {
		t.Kind = KindAITask
	}
	if t.Text == "" && t.AIPrompt == "" {
		return Task{}, fmt.Errorf("%w: give the reminder text or an ai_prompt", ErrInvalidTask)
	}
	if n := utf8.RuneCountInString(t.Text); n > MaxTextChars {
		return Task{}, fmt.Errorf("%w: text has %d characters, the limit is %d", ErrInvalidTask, n, MaxTextChars)
	}
	if n := utf8.RuneCountInString(t.AIPrompt); n > MaxAIPromptChars {
		return Task{}, fmt.Errorf("%w: ai_prompt has %d characters, the limit is %d", ErrInvalidTask, n, MaxAIPromptChars)
	}
	if t.SubSession && t.AIPrompt == "" {
		return Task{}, fmt.Errorf("%w: sub_session needs an ai_prompt", ErrInvalidTask)
	}
	if t.Thread != "" {
		if err := t.Thread.Validate(); err != nil {
			return Task{}, fmt.Errorf("%w: %w", ErrInvalidTask, err)
		}
	}
	spec := nt.Spec
	if spec.Kind == Interval && spec.Start.IsZero() {
		spec.Start = now // anchor the runs at creation
	}
	sch, err := compile(spec, s.o.Location, MinInterval)
	if err != nil {
		return Task{}, err
	}
	t.Spec = sch.Spec()
	if t.Spec.Kind == Once && !t.Spec.At.After(now) {
		return Task{}, fmt.Errorf("%w: %s is not after now (%s)", ErrPast, FormatTime(t.Spec.At, sch.Location()), FormatTime(now, sch.Location()))
	}
	t.NextRun = sch.Next(now)
	if t.NextRun.IsZero() {
		return Task{}, fmt.Errorf("%w: the schedule has no run after now", ErrInvalidSpec)
	}
	t.Description = sch.Describe()
	spec2, err := json.Marshal(t.Spec)
	if err != nil {
		return Task{}, fmt.Errorf("add task: encode schedule: %w", err)
	}
	for range 3 {
		t.ID = newID()
		_, err = s.exec(ctx, `INSERT INTO scheduler_tasks (`+taskColumns+`)
			VALUES (?, ?, ?, ?, ?, ?, '', ?, ?, ?, NULL, '', 0, 0, ?, ?, ?, '')`,
			t.ID, string(t.Kind), t.Text, t.AIPrompt, string(t.Thread), boolInt(t.SubSession), string(spec2),
			string(t.Status), nanos(t.NextRun), nanos(now), nanos(now), t.Taint)
		if err == nil || !strings.Contains(err.Error(), "UNIQUE") {
			break
		}
	}
	if err != nil {
		return Task{}, fmt.Errorf("add task: %w", err)
	}
	s.log.Info("task added", "id", t.ID, "kind", t.Kind, "schedule", t.Description, "next_run", t.NextRun)
	s.signal()
	return t, nil
}

func marshalSpec(sp Spec) (string, error) {
	b, err := json.Marshal(sp)
	if err != nil {
		return "", fmt.Errorf("encode schedule: %w", err)
	}
	return string(b), nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Get returns the task with id, or ErrNotFound.
func (s *Scheduler) Get(ctx context.Context, id string) (Task, error) {
	row := s.db.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM scheduler_tasks WHERE id = ?`, strings.TrimSpace(id))
	t, err := s.scanTask(row)
	if errors.Is(err, sql.ErrNoRows) {
		return Task{}, fmt.Errorf("task %q %w", id, ErrNotFound)
	}
	if err != nil {
		return Task{}, fmt.Errorf("read task %s: %w", id, err)
	}
	return t, nil
}

// List returns tasks in next-run order (unarmed ones last, newest first).
func (s *Scheduler) List(ctx context.Context, opts ListOptions) ([]Task, error) {
	statuses := opts.Statuses
	if statuses == nil {
		statuses = []Status{StatusActive, StatusPaused}
	}
	var (
		where []string
		args  []any
	)
	if len(statuses) > 0 {
		ph := make([]string, len(statuses))
		for i, st := range statuses {
			ph[i] = "?"
			args = append(args, string(st))
		}
		where = append(where, "status IN ("+strings.Join(ph, ",")+")")
	}
	if opts.Thread != "" {
		where = append(where, "thread = ?")
		args = append(args, string(opts.Thread))
	}
	if !opts.Jobs {
		where = append(where, "kind <> 'job'")
	}
	if opts.Failing {
		where = append(where, "failures > 0")
	}
	if !opts.DueBefore.IsZero() {
		where = append(where, "status = 'active' AND next_run < ?")
		args = append(args, nanos(opts.DueBefore))
	}
	limit := opts.Limit
	if limit <= 0 {
		limit = 1000
	}
	q := `SELECT ` + taskColumns + ` FROM scheduler_tasks`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += ` ORDER BY next_run IS NULL, next_run, created_at DESC LIMIT ?`
	args = append(args, limit)
	out, err := sqlite.Rows(ctx, s.db, s.scanTask, q, args...)
	if err != nil {
		return nil, fmt.Errorf("list tasks: %w", err)
	}
	return out, nil
}

// Cancel stops a task for good (its receipts stay). Cancelling a cancelled
// or done task is not an error; jobs cannot be cancelled (ErrJobTask).
func (s *Scheduler) Cancel(ctx context.Context, id string) (Task, error) {
	return s.change(ctx, id, func(t *Task, now time.Time) error {
		if t.Kind == KindJob {
			return fmt.Errorf("task %s %w and cannot be cancelled; pause it instead", t.ID, ErrJobTask)
		}
		if t.Status == StatusCancelled || t.Status == StatusDone {
			return nil
		}
		t.Status, t.NextRun = StatusCancelled, time.Time{}
		return nil
	})
}

// Pause stops a task from running until Resume. Runs that fall into the
// pause are not caught up.
func (s *Scheduler) Pause(ctx context.Context, id string) (Task, error) {
	return s.change(ctx, id, func(t *Task, now time.Time) error {
		switch t.Status {
		case StatusPaused:
			return nil
		case StatusActive:
			t.Status, t.NextRun = StatusPaused, time.Time{}
			return nil
		default:
			return fmt.Errorf("task %s %w (%s)", t.ID, ErrFinished, t.Status)
		}
	})
}

// Resume re-arms a paused task from now on. A one-time task whose time
// passed during the pause runs right away.
func (s *Scheduler) Resume(ctx context.Context, id string) (Task, error) {
	return s.change(ctx, id, func(t *Task, now time.Time) error {
		switch t.Status {
		case StatusActive:
			return nil
		case StatusPaused:
		default:
			return fmt.Errorf("task %s %w (%s)", t.ID, ErrFinished, t.Status)
		}
		sch, err := s.compileTask(*t)
		if err != nil {
			return err
		}
		next := sch.Next(now)
		if t.Spec.Kind == Once && next.IsZero() {
			next = now
		}
		t.Status, t.NextRun, t.Failures = StatusActive, next, 0
		return nil
	})
}

// change applies fn to the task in one transaction and wakes the timer.
func (s *Scheduler) change(ctx context.Context, id string, fn func(t *Task, now time.Time) error) (Task, error) {
	var out Task
	err := s.tx(ctx, func(tx *sql.Tx) error {
		t, err := s.scanTask(tx.QueryRowContext(ctx, `SELECT `+taskColumns+` FROM scheduler_tasks WHERE id = ?`, strings.TrimSpace(id)))
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("task %q %w", id, ErrNotFound)
		}
		if err != nil {
			return err
		}
		now := s.now()
		before := t
		if err := fn(&t, now); err != nil {
			return err
		}
		out = t
		if t.Status == before.Status && t.NextRun.Equal(before.NextRun) && t.Failures == before.Failures {
			return nil
		}
		t.UpdatedAt = now
		out = t
		_, err = tx.ExecContext(ctx, `UPDATE scheduler_tasks SET status = ?, next_run = ?, failures = ?, updated_at = ? WHERE id = ?`,
			string(t.Status), nullNanos(t.NextRun), t.Failures, nanos(now), t.ID)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrFinished) || errors.Is(err, ErrJobTask) ||
			errors.Is(err, ErrInvalidSpec) || errors.Is(err, ErrUnknownZone) {
			return Task{}, err
		}
		return Task{}, fmt.Errorf("update task %s: %w", id, err)
	}
	s.log.Info("task changed", "id", out.ID, "status", out.Status, "next_run", out.NextRun)
	s.signal()
	return out, nil
}

// Receipts returns the newest receipts of a task (taskID "" = of every
// task), newest first.
func (s *Scheduler) Receipts(ctx context.Context, taskID string, limit int) ([]Receipt, error) {
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	q := `SELECT ` + receiptColumns + ` FROM scheduler_receipts`
	var args []any
	if taskID != "" {
		q += ` WHERE task_id = ?`
		args = append(args, taskID)
	}
	q += ` ORDER BY id DESC LIMIT ?`
	args = append(args, limit)
	out, err := sqlite.Rows(ctx, s.db, scanReceipt, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read receipts: %w", err)
	}
	return out, nil
}

// receiptColumns are the columns scanReceipt reads, in its order.
const receiptColumns = `id, task_id, scheduled_at, started_at, outcome, reason, count, catch_up, duration_ms, input_tokens, output_tokens, delivered_to`

func scanReceipt(row sqlite.Scanner) (Receipt, error) {
	var (
		r              Receipt
		sched, started int64
		outcome        string
		catchUp        int
		ms             int64
		delivered      string
	)
	if err := row.Scan(&r.ID, &r.TaskID, &sched, &started, &outcome, &r.Reason, &r.Count, &catchUp, &ms,
		&r.Usage.InputTokens, &r.Usage.OutputTokens, &delivered); err != nil {
		return Receipt{}, err
	}
	r.DeliveredTo = chat.ThreadID(delivered)
	r.ScheduledAt, r.StartedAt = fromNanos(sched), fromNanos(started)
	r.Outcome, r.CatchUp, r.Duration = Outcome(outcome), catchUp != 0, time.Duration(ms)*time.Millisecond
	return r, nil
}

// UsageSince sums the tokens recorded on receipts started at or after
// since, per task id (heartbeat ticks, AI tasks).
func (s *Scheduler) UsageSince(ctx context.Context, since time.Time) (map[string]llm.Usage, error) {
	out := map[string]llm.Usage{}
	err := sqlite.Each(ctx, s.db, func(rows *sql.Rows) error {
		var (
			id string
			u  llm.Usage
		)
		if err := rows.Scan(&id, &u.InputTokens, &u.OutputTokens); err != nil {
			return err
		}
		if u.Total() > 0 {
			out[id] = u
		}
		return nil
	}, `SELECT task_id, SUM(input_tokens), SUM(output_tokens) FROM scheduler_receipts
		WHERE started_at >= ? GROUP BY task_id`, nanos(since))
	if err != nil {
		return nil, fmt.Errorf("read scheduler usage: %w", err)
	}
	return out, nil
}
