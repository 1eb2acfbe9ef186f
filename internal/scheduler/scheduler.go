package scheduler

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Component is the name under which the schema is versioned.
const Component = "scheduler"

// Defaults for the zero values of Options.
const (
	DefaultCatchUpWindow    = 24 * time.Hour
	DefaultRunTimeout       = 10 * time.Minute
	DefaultMaxParallel      = 4
	DefaultMaxSleep         = 15 * time.Minute
	DefaultReceiptRetention = 90 * 24 * time.Hour
)

// lateGrace is how late a run may start and still count as on time.
const lateGrace = time.Minute

// maxSkipRows bounds the receipts written for one group of skipped runs;
// larger groups get one receipt with Count set.
const maxSkipRows = 20

// maxEnumerate bounds how many missed run times are counted one by one.
const maxEnumerate = 100_000

// retryDelay is the wait after a database error in the timer loop.
const retryDelay = 30 * time.Second

// Topics the scheduler publishes (extension jobs publish only failures).
const (
	TopicFired   = "scheduler.task.fired"
	TopicFailed  = "scheduler.task.failed"
	TopicSkipped = "scheduler.task.skipped"
)

// Executor carries out due tasks; the scheduler does not know the router,
// the agent or the models. Calls come from the scheduler's run goroutines,
// at most Options.MaxParallel at once, with a context bounded by
// Options.RunTimeout. Dispatcher is the implementation the app uses.
type Executor interface {
	// Remind delivers a plain reminder to thread ("": the conversation
	// the user wrote in most recently), without a model call, and returns
	// the thread it went to.
	Remind(ctx context.Context, thread chat.ThreadID, text string) (chat.ThreadID, error)
	// RunAIPrompt runs an AI task and delivers its answer; t.NextRun is
	// the run time being executed.
	RunAIPrompt(ctx context.Context, t Task) (RunReport, error)
}

// RunReport is what a run tells its receipt.
type RunReport struct {
	// Usage is the model tokens the run spent.
	Usage llm.Usage
	// Note is recorded as the receipt's reason.
	Note string
	// Skipped records the run as skipped (it decided there was nothing to
	// do, e.g. quiet hours) rather than fired.
	Skipped bool
	// DeliveredTo is the thread the run delivered to ("": none, or a
	// system event).
	DeliveredTo chat.ThreadID
}

// JobFunc is a registered job's body.
type JobFunc func(ctx context.Context) (RunReport, error)

// Job is a recurring job registered at every start (extension jobs, the
// heartbeat). Its task row, next run and receipts persist, so missed runs
// are caught up like any task's.
type Job struct {
	// Name is unique: "<extension>/<job>".
	Name string
	// Schedule is a five-field cron expression or "@every <duration>"
	// (at least 1s).
	Schedule string
	Run      JobFunc
	// Timeout bounds one run when longer than Options.RunTimeout (a
	// nightly dream); zero: RunTimeout.
	Timeout time.Duration
}

// Publisher publishes bus events (*eventbus.Bus).
type Publisher interface {
	Publish(ctx context.Context, topic string, payload any) error
}

// Options configure a Scheduler.
type Options struct {
	// DB holds the tasks and receipts (required).
	DB *sql.DB
	// Executor runs reminders and AI tasks (nil: their runs
	// fail with a receipt saying so).
	Executor Executor
	// Location is the configured time zone (nil: UTC).
	Location *time.Location
	// CatchUpWindow: after downtime, the latest missed run of each task
	// not older than this runs once; older ones are recorded as skipped.
	// Default 24h; a negative value catches nothing up.
	CatchUpWindow time.Duration
	// RunTimeout bounds each run (default 10m).
	RunTimeout time.Duration
	// MaxParallel bounds runs executing at once (default 4).
	MaxParallel int
	// MaxSleep is the longest the timer sleeps before re-reading the next
	// due time (default 15m): a monotonic timer does not advance while the
	// machine is suspended, so a long sleep is re-checked against the wall
	// clock.
	MaxSleep time.Duration
	// ReceiptRetention: receipts, and done or cancelled tasks, older than
	// this are deleted (default 90 days).
	ReceiptRetention time.Duration
	// Events receives scheduler.task.* events (nil: none).
	Events Publisher
	// Now is the clock (nil: time.Now).
	Now    func() time.Time
	Logger *slog.Logger
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// Scheduler runs durable schedules. See the package documentation.
type Scheduler struct {
	o   Options
	db  *sql.DB
	log *slog.Logger

	wake    chan struct{}
	started atomic.Bool

	runs sync.WaitGroup // the runs started by Run
	// wsem serialises the scheduler's own writes, so that its goroutines
	// never wait for each other in SQLite's busy handler. It is a channel
	// rather than a mutex so that waiting honours ctx (and counts as
	// durably blocked under testing/synctest, where the busy handler's
	// sleep must be able to end).
	wsem chan struct{}

	// Prepared statements of the timer loop (parsing dominates their cost).
	stmtDue, stmtNext *sql.Stmt

	mu   sync.Mutex
	jobs map[string]JobFunc
	// jobTimeouts are the registered jobs' own run timeouts (Job.Timeout).
	jobTimeouts map[string]time.Duration
	running     map[string]bool
	pruned      time.Time
}

// Open migrates the scheduler's tables and returns a Scheduler. Nothing runs
// until Run.
func Open(ctx context.Context, opts Options) (*Scheduler, error) {
	if opts.DB == nil {
		return nil, errors.New("open scheduler: no database")
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("open scheduler: %w", err)
	}
	if err := opts.Migrations.Migrate(ctx, opts.DB, Component, sub, "."); err != nil {
		return nil, fmt.Errorf("open scheduler: %w", err)
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.CatchUpWindow == 0 {
		opts.CatchUpWindow = DefaultCatchUpWindow
	}
	if opts.RunTimeout <= 0 {
		opts.RunTimeout = DefaultRunTimeout
	}
	if opts.MaxParallel <= 0 {
		opts.MaxParallel = DefaultMaxParallel
	}
	if opts.MaxSleep <= 0 {
		opts.MaxSleep = DefaultMaxSleep
	}
	if opts.ReceiptRetention <= 0 {
		opts.ReceiptRetention = DefaultReceiptRetention
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Scheduler{
		o: opts, db: opts.DB, log: opts.Logger,
		wake: make(chan struct{}, 1), wsem: make(chan struct{}, 1), jobs: map[string]JobFunc{}, jobTimeouts: map[string]time.Duration{}, running: map[string]bool{},
	}
	if s.stmtDue, err = opts.DB.PrepareContext(ctx, `SELECT `+taskColumns+` FROM scheduler_tasks
		WHERE status = 'active' AND next_run <= ? ORDER BY next_run LIMIT ?`); err != nil {
		return nil, fmt.Errorf("open scheduler: %w", err)
	}
	if s.stmtNext, err = opts.DB.PrepareContext(ctx, `SELECT MIN(next_run) FROM scheduler_tasks WHERE status = 'active'`); err != nil {
		s.stmtDue.Close()
		return nil, fmt.Errorf("open scheduler: %w", err)
	}
	return s, nil
}

// Close releases the prepared statements. Call it after Run has returned
// (or when Run is never called); the database stays open.
func (s *Scheduler) Close() error {
	return errors.Join(s.stmtDue.Close(), s.stmtNext.Close())
}

func (s *Scheduler) now() time.Time { return s.o.Now() }

// Location is the configured time zone.
func (s *Scheduler) Location() *time.Location { return s.o.Location }

// lockWrites takes the write semaphore.
func (s *Scheduler) lockWrites(ctx context.Context) error {
	select {
	case s.wsem <- struct{}{}:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// exec runs a write statement under the write semaphore.
func (s *Scheduler) exec(ctx context.Context, q string, args ...any) (sql.Result, error) {
	if err := s.lockWrites(ctx); err != nil {
		return nil, err
	}
	defer func() { <-s.wsem }()
	return s.db.ExecContext(ctx, q, args...)
}

// tx runs fn in a write transaction under the write semaphore.
func (s *Scheduler) tx(ctx context.Context, fn func(tx *sql.Tx) error) error {
	if err := s.lockWrites(ctx); err != nil {
		return err
	}
	defer func() { <-s.wsem }()
	return sqlite.Tx(ctx, s.db, fn)
}

// signal wakes the timer goroutine to re-read the next due time.
func (s *Scheduler) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// RegisterJob registers (or re-registers) a recurring job: its task row is
// created, or kept with its next run when the schedule is unchanged, so a
// job missed during downtime is caught up. Jobs whose rows exist but that
// are not registered by the time Run starts are set inactive. A paused job
// stays paused.
func (s *Scheduler) RegisterJob(ctx context.Context, j Job) error {
	name := strings.TrimSpace(j.Name)
	if name == "" || j.Run == nil {
		return fmt.Errorf("register job %q: %w: a job needs a name and a function", j.Name, ErrInvalidTask)
	}
	sched := strings.TrimSpace(j.Schedule)
	now := s.now()
	spec := Spec{Kind: Cron, Cron: sched}
	if rest, ok := strings.CutPrefix(sched, "@every "); ok {
		d, err := ParseDuration(rest)
		if err != nil {
			return fmt.Errorf("register job %s: %w", name, err)
		}
		spec = Spec{Kind: Interval, Every: Duration(d), Start: now}
	}
	sch, err := compile(spec, s.o.Location, minJobInterval)
	if err != nil {
		return fmt.Errorf("register job %s: %w", name, err)
	}
	id := "job:" + name
	err = s.tx(ctx, func(tx *sql.Tx) error {
		var (
			text, status string
			next         sql.NullInt64
		)
		err := tx.QueryRowContext(ctx, `SELECT text, status, next_run FROM scheduler_tasks WHERE id = ?`, id).Scan(&text, &status, &next)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			specJSON, err := marshalSpec(sch.Spec())
			if err != nil {
				return err
			}
			_, err = tx.ExecContext(ctx, `INSERT INTO scheduler_tasks (`+taskColumns+`)
				VALUES (?, 'job', ?, '', '', 0, ?, ?, 'active', ?, NULL, '', 0, 0, ?, ?, '', '')`,
				id, sched, name, specJSON, nanos(sch.Next(now)), nanos(now), nanos(now))
			return err
		case err != nil:
			return err
		}
		switch {
		case text == sched && status == string(StatusActive) && next.Valid:
			return nil // unchanged: keep the next run (catch-up after downtime)
		case text == sched && status == string(StatusPaused):
			return nil
		}
		newStatus := StatusActive
		if status == string(StatusPaused) {
			newStatus = StatusPaused
		}
		specJSON, err := marshalSpec(sch.Spec())
		if err != nil {
			return err
		}
		var nextRun any
		if newStatus == StatusActive {
			nextRun = nanos(sch.Next(now))
		}
		_, err = tx.ExecContext(ctx, `UPDATE scheduler_tasks SET text = ?, spec = ?, status = ?, next_run = ?, updated_at = ? WHERE id = ?`,
			sched, specJSON, string(newStatus), nextRun, nanos(now), id)
		return err
	})
	if err != nil {
		return fmt.Errorf("register job %s: %w", name, err)
	}
	s.mu.Lock()
	s.jobs[name] = j.Run
	s.jobTimeouts[name] = j.Timeout
	s.mu.Unlock()
	s.signal()
	return nil
}

// Run owns the timer goroutine: it recovers runs interrupted by a crash,
// then sleeps until the earliest next run, runs what is due (catching up
// missed runs once) and re-arms, until ctx ends. It waits for the runs it
// started before returning. Run may be called once.
func (s *Scheduler) Run(ctx context.Context) error {
	if !s.started.CompareAndSwap(false, true) {
		return errors.New("scheduler: Run called twice")
	}
	defer s.runs.Wait()
	if err := s.recover(ctx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		s.log.Error("recover interrupted runs", "err", err)
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		wait, err := s.tick(ctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			s.log.Error("scheduler tick failed; retrying", "err", err, "in", retryDelay)
			wait = retryDelay
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			return nil
		case <-timer.C:
		case <-s.wake:
		}
	}
}

// recover marks receipts left running by a crash as failed and sets jobs
// that nobody registered inactive.
func (s *Scheduler) recover(ctx context.Context) error {
	res, err := s.exec(ctx, `UPDATE scheduler_receipts SET outcome = 'failed',
		reason = 'interrupted: the process stopped during the run' WHERE outcome = 'running'`)
	if err != nil {
		return err
	}
	if n, _ := res.RowsAffected(); n > 0 {
		s.log.Warn("runs interrupted by the last stop recorded as failed", "count", n)
	}
	s.mu.Lock()
	names := make([]any, 0, len(s.jobs))
	for name := range s.jobs {
		names = append(names, name)
	}
	s.mu.Unlock()
	q := `UPDATE scheduler_tasks SET status = 'inactive', next_run = NULL, updated_at = ? WHERE kind = 'job' AND status = 'active'`
	if len(names) > 0 {
		q += ` AND job NOT IN (?` + strings.Repeat(",?", len(names)-1) + `)`
	}
	_, err = s.exec(ctx, q, append([]any{nanos(s.now())}, names...)...)
	return err
}

// tick runs every due task there is a free slot for and returns how long
// to sleep.
func (s *Scheduler) tick(ctx context.Context) (time.Duration, error) {
	now := s.now()
	s.maybePrune(ctx, now)
	for {
		s.mu.Lock()
		free := s.o.MaxParallel - len(s.running)
		s.mu.Unlock()
		if free <= 0 {
			return s.o.MaxSleep, nil // a finishing run wakes the timer
		}
		due, err := s.dueTasks(ctx, now, free)
		if err != nil {
			return 0, err
		}
		for _, t := range due {
			if err := s.fire(ctx, t, now); err != nil {
				return 0, err
			}
		}
		if len(due) < free {
			break
		}
	}
	var next sql.NullInt64
	if err := s.stmtNext.QueryRowContext(ctx).Scan(&next); err != nil {
		return 0, fmt.Errorf("read the next due time: %w", err)
	}
	if !next.Valid {
		return s.o.MaxSleep, nil
	}
	d := fromNanos(next.Int64).Sub(s.now())
	return max(0, min(d, s.o.MaxSleep)), nil
}

func (s *Scheduler) dueTasks(ctx context.Context, now time.Time, limit int) ([]Task, error) {
	rows, err := s.stmtDue.QueryContext(ctx, nanos(now), limit)
	if err != nil {
		return nil, fmt.Errorf("read due tasks: %w", err)
	}
	defer rows.Close()
	var out []Task
	for rows.Next() {
		t, err := s.scanTask(rows)
		if err != nil {
			return nil, fmt.Errorf("read due tasks: %w", err)
		}
		out = append(out, t)
	}
	return out, rows.Err()
}

// skipGroup is a run of skipped run times with one reason.
type skipGroup struct {
	reason string
	times  []time.Time // the first maxSkipRows
	count  int
	last   time.Time
	more   bool // counting stopped at maxEnumerate
}

func (g *skipGroup) add(t time.Time) {
	if len(g.times) < maxSkipRows {
		g.times = append(g.times, t)
	}
	g.count++
	g.last = t
}

// plan is what to do with a due task.
type plan struct {
	run     time.Time // the run time to execute; zero: none
	catchUp bool
	stale   skipGroup // older than the catch-up window
	merged  skipGroup // superseded by the catch-up run
	next    time.Time // the next run time after now (zero: none)
}

// planDue walks the run times from due up to now: the latest one within the
// catch-up window runs (once), the others are skipped.
func (s *Scheduler) planDue(sch *Schedule, due, now time.Time) plan {
	window := s.o.CatchUpWindow
	cutoff := now.Add(-max(window, 0))
	p := plan{
		stale:  skipGroup{reason: fmt.Sprintf("missed (Reverie was not running, or the machine slept) and older than the %s catch-up window", shortDuration(max(window, 0)))},
		merged: skipGroup{reason: "missed during downtime; caught up by one later run"},
	}
	t := due
	for n := 0; !t.IsZero() && !t.After(now); n++ {
		if t.Before(cutoff) || window < 0 {
			p.stale.add(t)
			if p.stale.count >= maxEnumerate {
				// Too many to count one by one: jump to the window.
				p.stale.more = true
				t = sch.Next(cutoff.Add(-time.Nanosecond))
				continue
			}
		} else {
			if !p.run.IsZero() {
				p.merged.add(p.run)
			}
			p.run = t
		}
		t = sch.Next(t)
	}
	p.next = t
	if !p.run.IsZero() && (p.merged.count > 0 || now.Sub(p.run) > lateGrace) {
		p.catchUp = true
	}
	return p
}

// fire advances a due task and starts its run.
func (s *Scheduler) fire(ctx context.Context, t Task, now time.Time) error {
	sch, err := s.compileTask(t)
	if err != nil {
		// A schedule that no longer compiles (a zone removed from the
		// system) pauses the task, with a receipt saying why.
		return s.commit(ctx, t, now, plan{}, StatusPaused, "", "schedule is invalid: "+err.Error())
	}
	p := s.planDue(sch, t.NextRun, now)
	status := StatusActive
	if p.next.IsZero() {
		status = StatusDone
	}
	s.mu.Lock()
	busy := s.running[t.ID]
	_, jobKnown := s.jobs[t.Job]
	s.mu.Unlock()
	skip := ""
	switch {
	case p.run.IsZero():
	case busy:
		skip = "the previous run is still running"
	case t.Kind == KindJob && !jobKnown:
		skip = "the job is not registered (its extension is not running)"
	}
	return s.commit(ctx, t, now, p, status, skip, "")
}

// commit records a due task's plan in one transaction (next run, skipped
// receipts, the running receipt) and starts the run.
func (s *Scheduler) commit(ctx context.Context, t Task, now time.Time, p plan, status Status, skip, failure string) error {
	var runID int64
	changed := true
	err := s.tx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE scheduler_tasks SET next_run = ?, status = ?, updated_at = ?
			WHERE id = ? AND status = 'active' AND next_run = ?`,
			nullNanos(p.next), string(status), nanos(now), t.ID, nanos(t.NextRun))
		if err != nil {
			return err
		}
		if n, _ := res.RowsAffected(); n == 0 {
			changed = false // cancelled or paused meanwhile
			return nil
		}
		ins := func(sched time.Time, outcome Outcome, reason string, count int, catchUp bool) (int64, error) {
			res, err := tx.ExecContext(ctx, `INSERT INTO scheduler_receipts
				(task_id, scheduled_at, started_at, outcome, reason, count, catch_up) VALUES (?, ?, ?, ?, ?, ?, ?)`,
				t.ID, nanos(sched), nanos(now), string(outcome), reason, count, boolInt(catchUp))
			if err != nil {
				return 0, err
			}
			return res.LastInsertId()
		}
		for _, g := range []skipGroup{p.stale, p.merged} {
			if g.count == 0 {
				continue
			}
			if g.count <= maxSkipRows && !g.more {
				for _, at := range g.times {
					if _, err := ins(at, OutcomeSkipped, g.reason, 1, false); err != nil {
						return err
					}
				}
				continue
			}
			count := fmt.Sprint(g.count)
			if g.more {
				count = "more than " + count
			}
			reason := fmt.Sprintf("%s (%s runs from %s to %s)", g.reason, count,
				FormatTime(g.times[0], s.o.Location), FormatTime(g.last, s.o.Location))
			if _, err := ins(g.times[0], OutcomeSkipped, reason, g.count, false); err != nil {
				return err
			}
		}
		switch {
		case failure != "":
			_, err = ins(t.NextRun, OutcomeFailed, failure, 1, false)
			if err == nil {
				_, err = tx.ExecContext(ctx, `UPDATE scheduler_tasks SET last_outcome = 'failed', failures = failures + 1 WHERE id = ?`, t.ID)
			}
			return err
		case p.run.IsZero():
			return nil
		case skip != "":
			_, err = ins(p.run, OutcomeSkipped, skip, 1, p.catchUp)
			return err
		}
		runID, err = ins(p.run, OutcomeRunning, "", 1, p.catchUp)
		return err
	})
	if err != nil {
		return fmt.Errorf("record the run of task %s: %w", t.ID, err)
	}
	if !changed {
		return nil
	}
	if failure != "" {
		s.log.Error("task paused: its schedule is invalid", "id", t.ID, "reason", failure)
	}
	if n := p.stale.count + p.merged.count; n > 0 {
		s.log.Info("missed runs recorded as skipped", "id", t.ID, "count", n, "catch_up", !p.run.IsZero() && skip == "")
		s.publish(ctx, t, TopicSkipped, Outcome(OutcomeSkipped), fmt.Sprintf("%d missed runs", n))
	}
	if runID == 0 {
		return nil
	}
	s.start(ctx, t, p.run, p.catchUp, runID)
	return nil
}

// start runs t in its own goroutine, owned by Run's WaitGroup.
func (s *Scheduler) start(ctx context.Context, t Task, at time.Time, catchUp bool, receipt int64) {
	s.mu.Lock()
	s.running[t.ID] = true
	s.mu.Unlock()
	s.runs.Go(func() {
		defer func() {
			s.mu.Lock()
			delete(s.running, t.ID)
			s.mu.Unlock()
			s.signal()
		}()
		s.execute(ctx, t, at, catchUp, receipt)
	})
}
