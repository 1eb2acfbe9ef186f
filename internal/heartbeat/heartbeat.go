// Package heartbeat is the periodic review of what the assistant is working
// on: every interval (a scheduler job) it computes a digest of the pulse
// (its revision), the tasks due soon or failing, and notable bus events since
// the last review. When nothing changed it makes no model call at all;
// otherwise it asks the cheap scout role one structured question — does
// anything need attention now? — and escalates (background work to a
// full-mode sub-session when a Worker is set; otherwise) to the main agent, as a
// system event on the main thread, only when the scout says so.
//
// # Guarantees
//
//   - An unchanged digest and no new watched events: zero model tokens.
//     The state is stored in SQLite (component "heartbeat"), so a restart
//     does not count as a change either.
//   - The first review ever records a baseline without a model call.
//   - A failed scout call (or escalation) is returned as the run's error
//     (the scheduler's receipt says failed) and the state is not advanced:
//     the next tick looks again.
//   - Quiet hours: a tick inside them does nothing and is recorded as
//     skipped; what changed meanwhile is reviewed after them.
//   - Every tick's tokens are on its scheduler receipt (RunReport.Usage).
//
// This is an internal package wired by the app (DESIGN places it in
// extensions/pulse, but extensions may not import the scheduler and pulse
// stores it reads).
//
// # Concurrency
//
// Tick is called by the scheduler, which never overlaps runs of one job; a
// *Heartbeat is nevertheless safe for concurrent use (ticks are
// serialised). It starts no goroutines.
package heartbeat

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/llm"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Component is the name under which the schema is versioned.
const Component = "heartbeat"

// Owner and Job name the heartbeat's scheduled job, JobName
// ("heartbeat/review"), which it offers as a SchedulerProvider.
const (
	Owner   = "heartbeat"
	Job     = "review"
	JobName = Owner + "/" + Job
)

// DefaultInterval is the review period when Options.Interval is zero.
const DefaultInterval = time.Hour

// DefaultWatch are the event topic prefixes a review looks at: failures and
// findings, not ordinary conversation traffic.
var DefaultWatch = []string{"turn.failed", scheduler.TopicFailed, "sub_session.failed", "sub_session.timeout",
	"workflow.failed", "reflection."}

// Limits of what one review reads and shows.
const (
	maxEventPages  = 20
	eventPage      = 500
	maxShownEvents = 20
	maxPayload     = 300
	maxShownTasks  = 30
)

// Pulse is the working memory (*pulse.Store).
type Pulse interface {
	Revision(ctx context.Context) (int64, time.Time, error)
	Format(ctx context.Context) (string, error)
}

// Tasks lists scheduled tasks (*scheduler.Scheduler).
type Tasks interface {
	List(ctx context.Context, opts scheduler.ListOptions) ([]scheduler.Task, error)
}

// Events reads bus events after a cursor (*eventbus.Bus).
type Events interface {
	Recent(ctx context.Context, prefix string, afterID int64, limit int) ([]extension.Event, error)
}

// Worker starts a full-mode sub-session for background work
// (*workflow.Manager).
type Worker interface {
	Spawn(ctx context.Context, req workflow.SpawnRequest) (workflow.SpawnResult, error)
}

// Escalator hands a system event to the main agent (*router.Router).
type Escalator interface {
	EnqueueSystemEvent(ctx context.Context, thread chat.ThreadID, text string) error
}

// Options configure a Heartbeat.
type Options struct {
	// DB holds the review state (required).
	DB *sql.DB
	// Model is the scout role (required).
	Model toolloop.Model
	// Escalate receives the system event when the scout asks for
	// attention (required).
	Escalate Escalator
	// Worker, when set, takes escalations the scout marks as background
	// work (a full-mode sub-session whose result reaches the main thread).
	Worker Worker
	// MainThread names the thread to escalate to (nil: chat.DefaultThread).
	MainThread func(ctx context.Context) chat.ThreadID
	// Pulse, Tasks and Events are the sources; a nil one is left out.
	Pulse  Pulse
	Tasks  Tasks
	Events Events
	// Interval is the review period (default 1h); tasks due within it
	// count as due.
	Interval time.Duration
	// QuietStart and QuietEnd are wall times (HH:MM) in Location between
	// which no review runs; both empty: none.
	QuietStart, QuietEnd string
	// Location is the configured zone (nil: UTC).
	Location *time.Location
	// Watch are the event topic prefixes that count (nil: DefaultWatch).
	Watch []string
	Now   func() time.Time
	// Logger (nil: discard).
	Logger *slog.Logger
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// Heartbeat reviews periodically. Create it with New and register Job on
// the scheduler.
type Heartbeat struct {
	o          Options
	quiet      bool
	qs, qe     int // minutes of the day
	mu         sync.Mutex
	log        *slog.Logger
	respFormat *llm.ResponseFormat
}

// Verdict is the scout's answer.
type Verdict struct {
	Attention bool   `json:"attention"`
	Reason    string `json:"reason"`
	Nudge     string `json:"nudge"`
	// Work marks a nudge that is background work needing no user (look
	// something up, check, prepare): it goes to a full-mode sub-session
	// instead of the main agent.
	Work bool `json:"work"`
}

var verdictSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"attention":{"type":"boolean","description":"true only if the assistant should act now"},` +
	`"reason":{"type":"string","description":"one sentence: why, or why not"},` +
	`"nudge":{"type":"string","description":"when attention is true: what the assistant should do or tell the user; else empty"},` +
	`"work":{"type":"boolean","description":"true when the nudge is background work that needs no user (research, checking, preparing); false when the user should be told or asked"}},` +
	`"required":["attention","reason","nudge"],"additionalProperties":false}`)

// ScoutInstructions is the scout's system prompt.
const ScoutInstructions = `You are the scout of a personal AI assistant: a quick, cheap check that runs in the background every so often.
You see the assistant's working memory (pulse items: active goals, deadlines, open questions), scheduled tasks that are due soon or failing, and notable events since the last check.
Decide whether the assistant should act now: a deadline is close and nothing is planned, a task or background job keeps failing, something the user is waiting for is stuck, a follow-up is overdue.
Most checks need nothing: then answer attention=false. Do not ask for attention for things that are already scheduled and fine.
When attention is needed, set work=true if the nudge is work that can be done in the background without the user (look something up, check on a failing job, prepare something), and work=false when the user should be told or asked.
Answer only with JSON matching the schema.`

// New migrates the state table and returns a Heartbeat.
func New(ctx context.Context, opts Options) (*Heartbeat, error) {
	switch {
	case opts.DB == nil:
		return nil, errors.New("heartbeat: no database")
	case opts.Model == nil:
		return nil, errors.New("heartbeat: no scout model")
	case opts.Escalate == nil:
		return nil, errors.New("heartbeat: nothing to escalate to")
	}
	sub, err := fs.Sub(migrationFiles, "migrations")
	if err != nil {
		return nil, fmt.Errorf("open heartbeat: %w", err)
	}
	if err := opts.Migrations.Migrate(ctx, opts.DB, Component, sub, "."); err != nil {
		return nil, fmt.Errorf("open heartbeat: %w", err)
	}
	if opts.Interval <= 0 {
		opts.Interval = DefaultInterval
	}
	if opts.Location == nil {
		opts.Location = time.UTC
	}
	if opts.Watch == nil {
		opts.Watch = DefaultWatch
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	h := &Heartbeat{o: opts, log: opts.Logger,
		respFormat: &llm.ResponseFormat{Name: "heartbeat_verdict", Schema: verdictSchema, Strict: true}}
	if (opts.QuietStart == "") != (opts.QuietEnd == "") {
		return nil, errors.New("heartbeat: give both quiet hours or neither")
	}
	if opts.QuietStart != "" {
		qs, err1 := time.Parse("15:04", opts.QuietStart)
		qe, err2 := time.Parse("15:04", opts.QuietEnd)
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("heartbeat: quiet hours %q–%q are not HH:MM", opts.QuietStart, opts.QuietEnd)
		}
		h.quiet, h.qs, h.qe = true, qs.Hour()*60+qs.Minute(), qe.Hour()*60+qe.Minute()
	}
	return h, nil
}

// ScheduledJobs offers the review as a job ("@every <interval>"),
// registered under Owner like an extension's (scheduler.ExtensionJob);
// every tick's tokens, and whether it had nothing to do, go into its
// receipt.
func (h *Heartbeat) ScheduledJobs() []extension.Job {
	return []extension.Job{{Name: Job, Schedule: "@every " + h.o.Interval.String(), Report: func(ctx context.Context) (extension.JobReport, error) {
		r, err := h.Tick(ctx)
		return extension.JobReport{Usage: r.Usage, Note: r.Note, Skipped: r.Skipped}, err
	}}}
}

var _ extension.SchedulerProvider = (*Heartbeat)(nil)

// Quiet reports whether t falls into the quiet hours.
func (h *Heartbeat) Quiet(t time.Time) bool {
	if !h.quiet {
		return false
	}
	l := t.In(h.o.Location)
	m := l.Hour()*60 + l.Minute()
	if h.qs <= h.qe {
		return m >= h.qs && m < h.qe
	}
	return m >= h.qs || m < h.qe // across midnight
}

// state is the stored review state.
type state struct {
	digest string
	cursor int64
	found  bool
}

func (h *Heartbeat) load(ctx context.Context) (state, error) {
	var st state
	err := h.o.DB.QueryRowContext(ctx, `SELECT digest, event_cursor FROM heartbeat_state WHERE id = 1`).Scan(&st.digest, &st.cursor)
	if errors.Is(err, sql.ErrNoRows) {
		return st, nil
	}
	if err != nil {
		return st, fmt.Errorf("read the heartbeat state: %w", err)
	}
	st.found = true
	return st, nil
}

func (h *Heartbeat) save(ctx context.Context, st state, now time.Time, verdict string) error {
	var called any
	if verdict != "" {
		called = now.UnixNano()
	}
	_, err := h.o.DB.ExecContext(ctx, `INSERT INTO heartbeat_state (id, digest, event_cursor, reviewed_at, called_at, verdict)
		VALUES (1, ?, ?, ?, ?, ?)
		ON CONFLICT (id) DO UPDATE SET digest = excluded.digest, event_cursor = excluded.event_cursor,
			reviewed_at = excluded.reviewed_at,
			called_at = COALESCE(excluded.called_at, heartbeat_state.called_at),
			verdict = CASE WHEN excluded.verdict = '' THEN heartbeat_state.verdict ELSE excluded.verdict END`,
		st.digest, st.cursor, now.UnixNano(), called, verdict)
	if err != nil {
		return fmt.Errorf("save the heartbeat state: %w", err)
	}
	return nil
}

// snapshot is what one review sees.
type snapshot struct {
	Revision int64            `json:"pulse_revision"`
	Due      []string         `json:"due"`     // "id@next_run"
	Failing  []string         `json:"failing"` // "id:failures"
	pulse    string           // formatted, for the prompt
	dueTasks []scheduler.Task // for the prompt
	failing  []scheduler.Task
	events   []extension.Event // new watched events (the newest maxShownEvents)
	nEvents  int               // new watched events in all
	cursor   int64             // the last event id read
}

func (s snapshot) digest() string {
	b, _ := json.Marshal(s)
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

func (h *Heartbeat) snapshot(ctx context.Context, now time.Time, cursor int64, fromStart bool) (snapshot, error) {
	snap := snapshot{Due: []string{}, Failing: []string{}, cursor: cursor}
	if h.o.Pulse != nil {
		rev, _, err := h.o.Pulse.Revision(ctx)
		if err != nil {
			return snap, fmt.Errorf("read the pulse revision: %w", err)
		}
		snap.Revision = rev
	}
	if h.o.Tasks != nil {
		due, err := h.o.Tasks.List(ctx, scheduler.ListOptions{DueBefore: now.Add(h.o.Interval), Limit: maxShownTasks})
		if err != nil {
			return snap, fmt.Errorf("read due tasks: %w", err)
		}
		for _, t := range due {
			snap.Due = append(snap.Due, t.ID+"@"+t.NextRun.UTC().Format(time.RFC3339))
		}
		snap.dueTasks = due
		failing, err := h.o.Tasks.List(ctx, scheduler.ListOptions{Failing: true, Jobs: true, Limit: maxShownTasks})
		if err != nil {
			return snap, fmt.Errorf("read failing tasks: %w", err)
		}
		for _, t := range failing {
			if t.Job == JobName {
				continue // its own failures show as failed receipts
			}
			snap.Failing = append(snap.Failing, fmt.Sprintf("%s:%d", t.ID, t.Failures))
			snap.failing = append(snap.failing, t)
		}
		slices.Sort(snap.Due)
		slices.Sort(snap.Failing)
	}
	if h.o.Events != nil {
		for range maxEventPages {
			evs, err := h.o.Events.Recent(ctx, "", snap.cursor, eventPage)
			if err != nil {
				return snap, fmt.Errorf("read new events: %w", err)
			}
			for _, ev := range evs {
				snap.cursor = ev.ID
				if fromStart || !h.watched(ev.Topic) {
					continue
				}
				snap.nEvents++
				snap.events = append(snap.events, ev)
				if len(snap.events) > maxShownEvents {
					snap.events = snap.events[1:]
				}
			}
			if len(evs) < eventPage {
				break
			}
		}
	}
	return snap, nil
}

func (h *Heartbeat) watched(topic string) bool {
	for _, p := range h.o.Watch {
		if strings.HasPrefix(topic, p) {
			return true
		}
	}
	return false
}

// Tick is one review (the scheduler job's body).
func (h *Heartbeat) Tick(ctx context.Context) (scheduler.RunReport, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.o.Now()
	if h.Quiet(now) {
		return scheduler.RunReport{Skipped: true, Note: "quiet hours"}, nil
	}
	st, err := h.load(ctx)
	if err != nil {
		return scheduler.RunReport{}, err
	}
	snap, err := h.snapshot(ctx, now, st.cursor, !st.found)
	if err != nil {
		return scheduler.RunReport{}, err
	}
	digest := snap.digest()
	next := state{digest: digest, cursor: snap.cursor}
	switch {
	case !st.found:
		return scheduler.RunReport{Note: "first review: baseline recorded, no model call"}, h.save(ctx, next, now, "")
	case digest == st.digest && snap.nEvents == 0:
		return scheduler.RunReport{Note: "nothing changed: no model call"}, h.save(ctx, next, now, "")
	}

	v, usage, err := h.ask(ctx, now, snap)
	rep := scheduler.RunReport{Usage: usage}
	if err != nil {
		return rep, fmt.Errorf("ask the scout: %w", err)
	}
	raw, _ := json.Marshal(v)
	if v.Attention {
		if err := h.escalate(ctx, v); err != nil {
			return rep, err
		}
		rep.Note = "escalated: " + v.Reason
	} else {
		rep.Note = "scout: nothing needs attention (" + v.Reason + ")"
	}
	h.log.Info("heartbeat review", "attention", v.Attention, "reason", v.Reason, "tokens", usage.Total())
	return rep, h.save(ctx, next, now, string(raw))
}

func (h *Heartbeat) ask(ctx context.Context, now time.Time, snap snapshot) (Verdict, llm.Usage, error) {
	if h.o.Pulse != nil {
		p, err := h.o.Pulse.Format(ctx)
		if err != nil {
			return Verdict{}, llm.Usage{}, fmt.Errorf("read the pulse: %w", err)
		}
		snap.pulse = p
	}
	req := llm.Request{System: ScoutInstructions, Messages: []llm.Message{llm.UserText(h.describe(now, snap))},
		ResponseFormat: h.respFormat}
	res, err := toolloop.Run(ctx, h.o.Model, req, nil, toolloop.Options{})
	if err != nil {
		return Verdict{}, res.Usage, err
	}
	var v Verdict
	if err := json.Unmarshal([]byte(res.Final.Text()), &v); err != nil {
		return Verdict{}, res.Usage, fmt.Errorf("decode the verdict: %w", err)
	}
	return v, res.Usage, nil
}

// describe is the scout's user message.
func (h *Heartbeat) describe(now time.Time, snap snapshot) string {
	loc := h.o.Location
	var b strings.Builder
	fmt.Fprintf(&b, "Now: %s\n\n## Pulse (revision %d)\n", scheduler.FormatTime(now, loc), snap.Revision)
	if strings.TrimSpace(snap.pulse) == "" {
		b.WriteString("(empty)\n")
	} else {
		b.WriteString(strings.TrimSpace(snap.pulse) + "\n")
	}
	fmt.Fprintf(&b, "\n## Tasks due before %s\n", scheduler.FormatTime(now.Add(h.o.Interval), loc))
	if len(snap.dueTasks) == 0 {
		b.WriteString("(none)\n")
	}
	for _, t := range snap.dueTasks {
		fmt.Fprintf(&b, "- %s %s %q (%s) at %s\n", t.ID, t.Kind, t.Title(), t.Description, scheduler.FormatTime(t.NextRun, loc))
	}
	if len(snap.failing) > 0 {
		b.WriteString("\n## Failing tasks\n")
		for _, t := range snap.failing {
			title := t.Title()
			if t.Kind == scheduler.KindJob {
				title = t.Job
			}
			fmt.Fprintf(&b, "- %s %q: %d failed runs in a row, last %s\n", t.ID, title, t.Failures, scheduler.FormatTime(t.LastRun, loc))
		}
	}
	fmt.Fprintf(&b, "\n## New events since the last check (%d)\n", snap.nEvents)
	if snap.nEvents == 0 {
		b.WriteString("(none)\n")
	}
	if snap.nEvents > len(snap.events) {
		fmt.Fprintf(&b, "(the %d most recent)\n", len(snap.events))
	}
	for _, ev := range snap.events {
		p := strings.Join(strings.Fields(string(ev.Payload)), " ")
		if utf8.RuneCountInString(p) > maxPayload {
			p = string([]rune(p)[:maxPayload]) + "…"
		}
		fmt.Fprintf(&b, "- %s %s %s\n", scheduler.FormatTime(ev.Time, loc), ev.Topic, p)
	}
	return b.String()
}

func (h *Heartbeat) escalate(ctx context.Context, v Verdict) error {
	thread := chat.DefaultThread
	if h.o.MainThread != nil {
		if t := h.o.MainThread(ctx); t != "" {
			thread = t
		}
	}
	if v.Work && h.o.Worker != nil && strings.TrimSpace(v.Nudge) != "" {
		res, err := h.o.Worker.Spawn(ctx, workflow.SpawnRequest{
			Objective: strings.TrimSpace(v.Nudge),
			Context:   "The periodic review of the pulse and the scheduled tasks found: " + v.Reason,
			Mode:      prompt.ModeFull,
			Parent:    thread,
		})
		if err != nil {
			return fmt.Errorf("escalate to a sub-session: %w", err)
		}
		h.log.Info("heartbeat escalated to a sub-session", "session", res.ID, "thread", thread)
		return nil
	}
	text := "Heartbeat review: something may need your attention. " + v.Reason
	if n := strings.TrimSpace(v.Nudge); n != "" {
		text += "\nSuggested: " + n
	}
	text += "\nDecide whether to act or to tell the user; if it is nothing, do nothing."
	if err := h.o.Escalate.EnqueueSystemEvent(ctx, thread, text); err != nil {
		return fmt.Errorf("escalate to %s: %w", thread, err)
	}
	return nil
}
