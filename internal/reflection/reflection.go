// Package reflection is the reflection cycle of seed 001: an event-driven
// feedback loop that watches how background work went and adapts the
// system, in three tiers ordered by cost.
//
//  1. Rules (no model): consecutive_failures (a task whose last N runs or
//     sub-sessions failed is paused), timeout_pattern (3+ consecutive
//     timeouts of a task: a warning), stale_task (a task whose recent runs
//     produced almost no output: a warning), skill_correlation (a skill
//     loaded in 3+ failed sub-sessions recently, read by the worker or carried
//     by a full-mode prompt: flagged, event
//     reflection.skill_flagged). Each finding is reported once (table
//     reflection_findings), logged as reflection_rule and published as
//     reflection.finding.
//  2. Analysis (one direct call to the reflection role,
//     prompts/REFLECTION_PROMPT.txt) only when the rules found something new;
//     logged as reflection_analysis, published as
//     reflection.analysis_completed.
//  3. A mutation: a constrained sub-session (read_file, add_skill,
//     append_memory; 5 tool rounds) only when the analysis recommends a
//     change.
//
// # Triggers (no polling, durable)
//
// sub_session.failed (and .timeout), and scheduler.task.failed of an AI task
// (which may have run as an isolated inference, with no sub-session), run a
// cycle at once; every BatchThreshold (10) sub_session.completed events run
// one; a fallback timer runs one when no trigger did for Fallback (6 h,
// counted from the last cycle, across restarts).
//
// The events come from the event bus through the durable subscriber
// SubscriberName (Options.Subscribe), not through the in-memory watch that
// drops events when its buffer is full: the bus delivers every event at
// least once, and after a restart redelivers what was not acknowledged. The
// handler only records, in one UPDATE of table reflection_trigger, that a
// cycle is owed (and counts completions); the event is acknowledged after
// that commit. Run reads that row at start and whenever the handler wakes
// it, so a failure burst seen before a crash runs its cycle after the
// restart. A redelivered event (its id not above the last one counted) is
// not counted twice.
//
// Debounce: a cycle runs Debounce (10 s) after the event that made it owed,
// so a burst of failures (a task's parallel sub-sessions failing together)
// runs one cycle, not one per event. An event arriving while a cycle runs
// makes another one owed, Debounce after that cycle ends. The owed cycle is
// cleared only after the cycle ran (at least once: a crash during a cycle
// runs it again after the restart).
//
// # Concurrency
//
// Run owns the only goroutine of the Reflector; the bus calls the handler
// on its own delivery goroutine and the handler only writes the trigger row
// and signals Run. Cycle may also be called directly (tests, commands) and
// is serialised with Run's cycles.
package reflection

import (
	"cmp"
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/textclip"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/llm"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Component is the migration component name.
const Component = "reflection"

// SubscriberName is the durable event-bus subscriber the sub-session
// triggers arrive through (its cursor lives in the bus's tables);
// TaskSubscriberName is the one for failed scheduled AI tasks.
const (
	SubscriberName     = "reflection"
	TaskSubscriberName = "reflection.tasks"
)

// Event topics.
const (
	TopicFinding          = "reflection.finding"
	TopicSkillFlagged     = "reflection.skill_flagged"
	TopicAnalysisComplete = "reflection.analysis_completed"
)

// Rule names.
const (
	RuleConsecutiveFailures = "consecutive_failures"
	RuleTimeoutPattern      = "timeout_pattern"
	RuleStaleTask           = "stale_task"
	RuleSkillCorrelation    = "skill_correlation"
)

// Outcomes reads sub-session outcomes.
type Outcomes interface {
	Outcomes(ctx context.Context, f workflow.OutcomeFilter) ([]workflow.Outcome, error)
}

// Tasks reads and pauses scheduled tasks.
type Tasks interface {
	List(ctx context.Context, opts scheduler.ListOptions) ([]scheduler.Task, error)
	Receipts(ctx context.Context, taskID string, limit int) ([]scheduler.Receipt, error)
	Pause(ctx context.Context, id string) (scheduler.Task, error)
}

// Spawner starts the mutation worker.
type Spawner interface {
	Spawn(ctx context.Context, req workflow.SpawnRequest) (workflow.SpawnResult, error)
}

// Model is the reflection role.
type Model interface {
	Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error)
}

// Publisher publishes events.
type Publisher interface {
	Publish(ctx context.Context, topic string, payload any) error
}

// Log records interactions.
type Log interface {
	Log(ctx context.Context, entries ...interactions.Entry) error
}

// Settings are the thresholds of seed 001.
type Settings struct {
	ConsecutiveFailures int           // 3
	TimeoutPattern      int           // 3
	StaleRuns           int           // 3 consecutive short outputs
	StaleOutputChars    int           // 40
	SkillFailures       int           // 3
	Window              time.Duration // 7 days of outcomes for skill_correlation
	BatchThreshold      int           // 10 completions
	Fallback            time.Duration // 6h
	Debounce            time.Duration // 10s: a burst of events runs one cycle
	MutationRounds      int           // 5
	CallTimeout         time.Duration // 2m
}

// DefaultSettings are the seed's numbers.
func DefaultSettings() Settings {
	return Settings{ConsecutiveFailures: 3, TimeoutPattern: 3, StaleRuns: 3, StaleOutputChars: 40, SkillFailures: 3,
		Window: 7 * 24 * time.Hour, BatchThreshold: 10, Fallback: 6 * time.Hour, Debounce: 10 * time.Second, MutationRounds: 5,
		CallTimeout: 2 * time.Minute}
}

// Options configure New.
type Options struct {
	DB       *sql.DB
	DataDir  string
	Outcomes Outcomes // required
	Tasks    Tasks    // nil: task rules use outcomes only and nothing is paused
	Spawner  Spawner  // nil: no mutations
	Model    Model    // nil: no analysis
	Events   Publisher
	Log      Log
	// Subscribe registers the durable trigger subscriber (the event bus's
	// Subscribe; New calls it, so New must run before the bus runs). nil:
	// only the fallback timer triggers cycles.
	Subscribe func(name, prefix string, h extension.Handler) error
	Settings  Settings
	Now       func() time.Time
	Logger    *slog.Logger
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// Finding is one thing the rules found.
type Finding struct {
	Rule    string `json:"rule"`
	Subject string `json:"subject"` // task id or skill name
	Detail  string `json:"detail"`
	// Action is what was done about it ("paused task t_3", "warning").
	Action string `json:"action"`
	key    string
}

// Report is the outcome of a cycle.
type Report struct {
	Trigger  string    `json:"trigger"`
	Findings []Finding `json:"findings"` // new ones only
	Analysis string    `json:"analysis,omitempty"`
	Mutation string    `json:"mutation,omitempty"` // the worker's session id
}

// Reflector runs reflection cycles.
type Reflector struct {
	o    Options
	set  Settings
	log  *slog.Logger
	mu   sync.Mutex
	wake chan struct{} // the handler tells Run that the trigger row changed
}

// New migrates the findings table and returns the Reflector.
func New(ctx context.Context, o Options) (*Reflector, error) {
	if o.DB == nil || o.Outcomes == nil {
		return nil, errors.New("reflection: DB and Outcomes are required")
	}
	if err := o.Migrations.Migrate(ctx, o.DB, Component, migrations, "migrations"); err != nil {
		return nil, err
	}
	if o.Settings == (Settings{}) {
		o.Settings = DefaultSettings()
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	r := &Reflector{o: o, set: o.Settings, log: o.Logger, wake: make(chan struct{}, 1)}
	if o.Subscribe != nil {
		if err := o.Subscribe(SubscriberName, "sub_session.", r.handle); err != nil {
			return nil, fmt.Errorf("reflection: subscribe to sub-session events: %w", err)
		}
		if err := o.Subscribe(TaskSubscriberName, scheduler.TopicFailed, r.handleTask); err != nil {
			return nil, fmt.Errorf("reflection: subscribe to scheduler events: %w", err)
		}
	}
	return r, nil
}

// Rules runs the rule engine: it finds problems, applies the automatic
// actions (pausing tasks), and returns the findings not reported before.
func (r *Reflector) Rules(ctx context.Context) ([]Finding, error) {
	outs, err := r.o.Outcomes.Outcomes(ctx, workflow.OutcomeFilter{Limit: 1000})
	if err != nil {
		return nil, fmt.Errorf("reflection: read outcomes: %w", err)
	}
	var found []Finding
	byTask := map[string][]workflow.Outcome{} // newest first
	for _, o := range outs {
		if o.TaskID != "" {
			byTask[o.TaskID] = append(byTask[o.TaskID], o)
		}
	}
	tasks := map[string]scheduler.Task{}
	if r.o.Tasks != nil {
		ts, err := r.o.Tasks.List(ctx, scheduler.ListOptions{})
		if err != nil {
			return nil, fmt.Errorf("reflection: list tasks: %w", err)
		}
		for _, t := range ts {
			tasks[t.ID] = t
			if _, ok := byTask[t.ID]; !ok {
				byTask[t.ID] = nil
			}
		}
	}
	ids := make([]string, 0, len(byTask))
	for id := range byTask {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		hist := byTask[id]
		task, known := tasks[id]
		// consecutive_failures: from sub-sessions of the task, or the
		// scheduler's own count of failed runs.
		if n := leading(hist, func(o workflow.Outcome) bool {
			return o.Status == workflow.StateFailed || o.Status == workflow.StateTimeout
		}); n >= r.set.ConsecutiveFailures {
			found = append(found, Finding{Rule: RuleConsecutiveFailures, Subject: id,
				Detail: fmt.Sprintf("the last %d sub-sessions of task %s failed (latest: %s)", n, id, cmp.Or(textclip.Line(hist[0].Error, 200), "no error text")),
				key:    RuleConsecutiveFailures + ":" + id + ":" + hist[0].SessionID})
		} else if known && task.Failures >= r.set.ConsecutiveFailures {
			found = append(found, Finding{Rule: RuleConsecutiveFailures, Subject: id,
				Detail: fmt.Sprintf("the last %d runs of task %s (%s) failed", task.Failures, id, task.Title()),
				key:    fmt.Sprintf("%s:%s:runs:%d", RuleConsecutiveFailures, id, task.Runs)})
		}
		if n := leading(hist, func(o workflow.Outcome) bool { return o.Status == workflow.StateTimeout }); n >= r.set.TimeoutPattern {
			found = append(found, Finding{Rule: RuleTimeoutPattern, Subject: id, Action: "warning",
				Detail: fmt.Sprintf("the last %d sub-sessions of task %s timed out: give it a longer timeout or a simpler prompt", n, id),
				key:    RuleTimeoutPattern + ":" + id + ":" + hist[0].SessionID})
		}
		if n := leading(hist, func(o workflow.Outcome) bool {
			return o.Status == workflow.StateCompleted && o.ResultChars < r.set.StaleOutputChars
		}); n >= r.set.StaleRuns {
			found = append(found, Finding{Rule: RuleStaleTask, Subject: id, Action: "warning",
				Detail: fmt.Sprintf("the last %d runs of task %s produced almost nothing (under %d characters): its ai_prompt may need work", n, id, r.set.StaleOutputChars),
				key:    RuleStaleTask + ":" + id + ":" + hist[0].SessionID})
		}
	}
	// skill_correlation over the window.
	since := r.o.Now().Add(-r.set.Window)
	failedWith := map[string][]string{}
	for _, o := range outs {
		if o.FinishedAt.Before(since) || (o.Status != workflow.StateFailed && o.Status != workflow.StateTimeout) {
			continue
		}
		for _, s := range o.SkillsLoaded {
			failedWith[s] = append(failedWith[s], o.SessionID)
		}
	}
	skillNames := make([]string, 0, len(failedWith))
	for s := range failedWith {
		skillNames = append(skillNames, s)
	}
	slices.Sort(skillNames)
	for _, s := range skillNames {
		if sess := failedWith[s]; len(sess) >= r.set.SkillFailures {
			found = append(found, Finding{Rule: RuleSkillCorrelation, Subject: s, Action: "flagged for review",
				Detail: fmt.Sprintf("skill %q was loaded in %d failed sub-sessions in the last %s", s, len(sess), r.set.Window),
				key:    RuleSkillCorrelation + ":" + s + ":" + sess[0]})
		}
	}

	var fresh []Finding
	for _, f := range found {
		isNew, err := r.remember(ctx, f)
		if err != nil {
			return fresh, err
		}
		if !isNew {
			continue
		}
		if f.Rule == RuleConsecutiveFailures {
			f.Action = "warning"
			if t, ok := tasks[f.Subject]; ok && r.o.Tasks != nil {
				if t.Status == scheduler.StatusPaused {
					f.Action = "task already paused"
				} else if _, err := r.o.Tasks.Pause(ctx, f.Subject); err != nil {
					f.Action = "could not pause the task: " + err.Error()
				} else {
					f.Action = "paused task " + f.Subject
				}
			}
		}
		r.report(ctx, f)
		fresh = append(fresh, f)
	}
	return fresh, nil
}

// leading counts the outcomes at the head (newest first) satisfying p.
func leading(os []workflow.Outcome, p func(workflow.Outcome) bool) int {
	n := 0
	for _, o := range os {
		if !p(o) {
			break
		}
		n++
	}
	return n
}

// remember stores a finding's key; it reports whether it was new.
func (r *Reflector) remember(ctx context.Context, f Finding) (bool, error) {
	res, err := r.o.DB.ExecContext(ctx, `INSERT INTO reflection_findings (key, rule, subject, detail, found_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT(key) DO NOTHING`,
		f.key, f.Rule, f.Subject, f.Detail, r.o.Now().UnixNano())
	if err != nil {
		return false, fmt.Errorf("reflection: record finding: %w", err)
	}
	n, _ := res.RowsAffected()
	return n == 1, nil
}

func (r *Reflector) report(ctx context.Context, f Finding) {
	r.log.Info("reflection finding", "rule", f.Rule, "subject", f.Subject, "action", f.Action, "detail", f.Detail)
	detail, _ := json.Marshal(f)
	if r.o.Log != nil {
		if err := r.o.Log.Log(ctx, interactions.Entry{Action: interactions.ActionReflectionRule,
			Summary: f.Rule + ": " + f.Detail + " (" + f.Action + ")", Detail: detail}); err != nil {
			r.log.Warn("could not log a reflection finding", "err", err)
		}
	}
	if r.o.Events != nil {
		if err := r.o.Events.Publish(ctx, TopicFinding, f); err != nil {
			r.log.Warn("could not publish a reflection finding", "err", err)
		}
		if f.Rule == RuleSkillCorrelation {
			if err := r.o.Events.Publish(ctx, TopicSkillFlagged, struct {
				Skill  string `json:"skill"`
				Detail string `json:"detail"`
			}{f.Subject, f.Detail}); err != nil {
				r.log.Warn("could not publish a flagged skill", "err", err)
			}
		}
	}
}

var analysisFormat = &llm.ResponseFormat{Name: "reflection_analysis", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "summary": {"type": "string"},
    "recommend_change": {"type": "boolean"},
    "change": {"type": "string"}
  },
  "required": ["summary", "recommend_change", "change"],
  "additionalProperties": false
}`)}

// Cycle runs the rules and, when they found something new, the one-shot
// analysis and (when it recommends a change) the mutation worker.
func (r *Reflector) Cycle(ctx context.Context, trigger string) (Report, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	rep := Report{Trigger: trigger}
	found, err := r.Rules(ctx)
	rep.Findings = found
	if err != nil || len(found) == 0 || r.o.Model == nil {
		return rep, err
	}
	var b strings.Builder
	for _, f := range found {
		fmt.Fprintf(&b, "- [%s] %s (%s)\n", f.Rule, f.Detail, f.Action)
	}
	tmpl, err := os.ReadFile(filepath.Join(r.o.DataDir, datadir.ReflectionPrompt))
	if err != nil {
		return rep, fmt.Errorf("reflection: read %s: %w", datadir.ReflectionPrompt, err)
	}
	start := r.o.Now()
	cctx, cancel := context.WithTimeout(ctx, r.set.CallTimeout)
	resp, err := r.o.Model.Generate(cctx, llm.Request{
		Messages:       []llm.Message{llm.UserText(prompt.Render(string(tmpl), map[string]string{"content": strings.TrimRight(b.String(), "\n")}))},
		ResponseFormat: analysisFormat,
	}, nil)
	cancel()
	entry := interactions.Entry{Action: interactions.ActionReflectionAnalysis, Duration: r.o.Now().Sub(start),
		InputTokens: resp.Usage.InputTokens, OutputTokens: resp.Usage.OutputTokens}
	if err != nil {
		entry.Summary, entry.Error = "reflection analysis failed", err.Error()
		r.logEntry(ctx, entry)
		return rep, fmt.Errorf("reflection analysis: %w", err)
	}
	var ans struct {
		Summary   string `json:"summary"`
		Recommend bool   `json:"recommend_change"`
		Change    string `json:"change"`
	}
	if err := decodeJSON(resp.Message.Text(), &ans); err != nil {
		entry.Summary, entry.Error = "reflection analysis did not parse", err.Error()
		r.logEntry(ctx, entry)
		return rep, fmt.Errorf("reflection analysis: %w", err)
	}
	rep.Analysis = ans.Summary
	if ans.Recommend && strings.TrimSpace(ans.Change) != "" && r.o.Spawner != nil {
		res, err := r.o.Spawner.Spawn(ctx, workflow.SpawnRequest{
			Objective: "Make this change to the assistant's skills or memories, then say in one line what you changed:\n" + ans.Change,
			Context:   "Why: " + ans.Summary + "\n\nFindings:\n" + b.String(),
			ToolNames: []string{"read_file", "read_skill", "add_skill", "append_memory"},
			MaxRounds: r.set.MutationRounds,
		})
		if err != nil {
			r.log.Warn("reflection: could not start the change worker", "err", err)
		} else {
			rep.Mutation = res.ID
		}
	}
	detail, _ := json.Marshal(struct {
		Summary  string   `json:"summary"`
		Change   string   `json:"change,omitempty"`
		Mutation string   `json:"mutation_session,omitempty"`
		Findings []string `json:"findings"`
	}{ans.Summary, ans.Change, rep.Mutation, keys(found)})
	entry.Summary, entry.Detail = ans.Summary, detail
	r.logEntry(ctx, entry)
	if r.o.Events != nil {
		if err := r.o.Events.Publish(ctx, TopicAnalysisComplete, struct {
			Summary  string `json:"summary"`
			Change   string `json:"change,omitempty"`
			Mutation string `json:"mutation_session,omitempty"`
		}{ans.Summary, ans.Change, rep.Mutation}); err != nil {
			r.log.Warn("could not publish the reflection analysis", "err", err)
		}
	}
	return rep, nil
}

func keys(fs []Finding) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Rule + ":" + f.Subject
	}
	return out
}

func (r *Reflector) logEntry(ctx context.Context, e interactions.Entry) {
	if r.o.Log == nil {
		return
	}
	if err := r.o.Log.Log(ctx, e); err != nil {
		r.log.Warn("could not log the reflection analysis", "err", err)
	}
}

// Run runs the owed cycles (see Triggers in the package doc) and the
// fallback until ctx ends. A cycle's error is logged; Run returns nil when
// ctx ends.
func (r *Reflector) Run(ctx context.Context) error {
	st, err := r.trigger(ctx)
	if err != nil {
		r.log.Warn("reflection: could not read the owed cycle", "err", err)
	}
	fallbackIn := r.set.Fallback
	if st.lastCycle > 0 {
		fallbackIn = max(0, time.Unix(0, st.lastCycle).Add(r.set.Fallback).Sub(r.o.Now()))
	}
	fallback := time.NewTimer(fallbackIn)
	defer fallback.Stop()
	var (
		debounce *time.Timer
		due      <-chan time.Time // debounce.C while a cycle is owed
	)
	defer func() {
		if debounce != nil {
			debounce.Stop()
		}
	}()
	arm := func(st triggerState) {
		if st.pending == "" || due != nil {
			return
		}
		wait := max(0, time.Unix(0, st.pendingSince).Add(r.set.Debounce).Sub(r.o.Now()))
		debounce = time.NewTimer(wait)
		due = debounce.C
	}
	arm(st)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-r.wake:
			st, err := r.trigger(ctx)
			if err != nil {
				r.log.Warn("reflection: could not read the owed cycle", "err", err)
				continue
			}
			arm(st)
		case <-due:
			debounce, due = nil, nil
			st, err := r.trigger(ctx)
			if err != nil {
				r.log.Warn("reflection: could not read the owed cycle", "err", err)
				continue
			}
			if st.pending == "" {
				continue
			}
			if !r.runCycle(ctx, st.pending) {
				return nil
			}
			if err := r.settle(ctx, st.generation); err != nil && ctx.Err() == nil {
				r.log.Warn("reflection: could not record the cycle", "err", err)
			}
			fallback.Reset(r.set.Fallback)
			if st, err := r.trigger(ctx); err == nil {
				arm(st) // owed again by an event that came during the cycle
			}
		case <-fallback.C:
			if !r.runCycle(ctx, "fallback") {
				return nil
			}
			if _, err := r.o.DB.ExecContext(ctx, `UPDATE reflection_trigger SET last_cycle = ? WHERE id = 1`, r.o.Now().UnixNano()); err != nil && ctx.Err() == nil {
				r.log.Warn("reflection: could not record the cycle", "err", err)
			}
			fallback.Reset(r.set.Fallback)
		}
	}
}

// runCycle runs one cycle for Run; false when ctx ended (the owed cycle
// then stays owed for the next start).
func (r *Reflector) runCycle(ctx context.Context, trigger string) bool {
	_, err := r.Cycle(ctx, trigger)
	if ctx.Err() != nil {
		return false
	}
	if err != nil {
		r.log.Warn("reflection cycle failed", "trigger", trigger, "err", err)
	}
	return true
}

// Pending triggers.
const (
	triggerFailure = "failure"
	triggerBatch   = "batch"
)

// triggerState is the reflection_trigger row.
type triggerState struct {
	pending      string
	pendingSince int64
	generation   int64
	lastCycle    int64
}

func (r *Reflector) trigger(ctx context.Context) (triggerState, error) {
	var st triggerState
	err := r.o.DB.QueryRowContext(ctx, `SELECT pending, pending_since, generation, last_cycle FROM reflection_trigger WHERE id = 1`).
		Scan(&st.pending, &st.pendingSince, &st.generation, &st.lastCycle)
	if err != nil {
		return st, fmt.Errorf("read the reflection trigger: %w", err)
	}
	return st, nil
}

// settle clears the owed cycle that Run just ran, unless an event made one
// owed again meanwhile (generation moved on): that one is then owed from
// now, so it waits a full Debounce after this cycle.
func (r *Reflector) settle(ctx context.Context, generation int64) error {
	now := r.o.Now().UnixNano()
	_, err := r.o.DB.ExecContext(ctx, `UPDATE reflection_trigger SET
		pending = CASE WHEN generation = ?1 THEN '' ELSE pending END,
		pending_since = CASE WHEN generation = ?1 THEN 0 ELSE ?2 END,
		last_cycle = ?2
		WHERE id = 1`, generation, now)
	return err
}

// handle is the durable subscriber's handler: it records in one statement
// that a cycle is owed (a failure or timeout; the BatchThreshold-th
// completion), then wakes Run. The bus acknowledges the event only after it
// returns nil, and redelivers it after an error or a crash; an event whose
// id is not above the last one counted is ignored.
func (r *Reflector) handle(ctx context.Context, ev extension.Event) error {
	now := r.o.Now().UnixNano()
	var err error
	switch ev.Topic {
	case workflow.TopicFailed, workflow.TopicTimeout:
		_, err = r.o.DB.ExecContext(ctx, `UPDATE reflection_trigger SET last_event = ?1,
			pending = ?3,
			pending_since = CASE WHEN pending = '' THEN ?2 ELSE pending_since END,
			generation = generation + 1
			WHERE id = 1 AND last_event < ?1`, ev.ID, now, triggerFailure)
	case workflow.TopicCompleted:
		_, err = r.o.DB.ExecContext(ctx, `UPDATE reflection_trigger SET last_event = ?1,
			completions = CASE WHEN completions + 1 >= ?3 THEN 0 ELSE completions + 1 END,
			pending = CASE WHEN completions + 1 >= ?3 AND pending = '' THEN ?4 ELSE pending END,
			pending_since = CASE WHEN completions + 1 >= ?3 AND pending = '' THEN ?2 ELSE pending_since END,
			generation = generation + CASE WHEN completions + 1 >= ?3 THEN 1 ELSE 0 END
			WHERE id = 1 AND last_event < ?1`, ev.ID, now, max(r.set.BatchThreshold, 1), triggerBatch)
	default:
		return nil
	}
	if err != nil {
		return fmt.Errorf("reflection: record %s event %d: %w", ev.Topic, ev.ID, err)
	}
	r.signal()
	return nil
}

// handleTask is the trigger for a failed scheduled AI task: one that ran as
// an isolated inference fails without a sub-session, so it would otherwise
// never reach the rule engine (a task run as a sub-session also publishes
// sub_session.failed). The cycle is owed as for a failed sub-session. It is
// idempotent, so the event id is not compared with the sub-session
// subscriber's (the two are delivered independently).
func (r *Reflector) handleTask(ctx context.Context, ev extension.Event) error {
	var te scheduler.TaskEvent
	if ev.Topic != scheduler.TopicFailed || json.Unmarshal(ev.Payload, &te) != nil || te.Kind != scheduler.KindAITask {
		return nil
	}
	_, err := r.o.DB.ExecContext(ctx, `UPDATE reflection_trigger SET pending = ?2,
		pending_since = CASE WHEN pending = '' THEN ?1 ELSE pending_since END,
		generation = generation + 1
		WHERE id = 1`, r.o.Now().UnixNano(), triggerFailure)
	if err != nil {
		return fmt.Errorf("reflection: record %s event %d: %w", ev.Topic, ev.ID, err)
	}
	r.signal()
	return nil
}

// signal tells Run that the trigger row changed.
func (r *Reflector) signal() {
	select {
	case r.wake <- struct{}{}:
	default: // Run is already due to read the row
	}
}

// decodeJSON decodes the first JSON object in s.
func decodeJSON(s string, v any) error {
	start, end := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
	if start < 0 || end < start {
		return errors.New("no JSON object in the answer")
	}
	return json.Unmarshal([]byte(s[start:end+1]), v)
}
