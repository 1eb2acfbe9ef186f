// Package reflection is the reflection cycle of seed 001: an event-driven
// feedback loop that watches how background work went and adapts the
// system, in three tiers ordered by cost.
//
//  1. Rules (no model): consecutive_failures (a task whose last N runs or
//     sub-sessions failed is paused), timeout_pattern (3+ consecutive
//     timeouts of a task: a warning), stale_task (a task whose recent runs
//     produced almost no output: a warning), skill_correlation (a skill
//     loaded in 3+ failed sub-sessions recently: flagged, event
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
// # Triggers (no polling)
//
// sub_session.failed runs the rules at once; every BatchThreshold (10)
// sub_session.completed events run a full cycle; a fallback timer runs one
// every Fallback (6 h) when no event did.
//
// # Concurrency
//
// Run owns the only goroutine; Cycle may also be called directly (tests,
// commands) and is serialised with it.
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
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/llm"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Component is the migration component name.
const Component = "reflection"

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
	MutationRounds      int           // 5
	CallTimeout         time.Duration // 2m
}

// DefaultSettings are the seed's numbers.
func DefaultSettings() Settings {
	return Settings{ConsecutiveFailures: 3, TimeoutPattern: 3, StaleRuns: 3, StaleOutputChars: 40, SkillFailures: 3,
		Window: 7 * 24 * time.Hour, BatchThreshold: 10, Fallback: 6 * time.Hour, MutationRounds: 5, CallTimeout: 2 * time.Minute}
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
	Watch    func(ctx context.Context, prefix string, buffer int) <-chan extension.Event
	Settings Settings
	Now      func() time.Time
	Logger   *slog.Logger
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
	o   Options
	set Settings
	log *slog.Logger
	mu  sync.Mutex
}

// New migrates the findings table and returns the Reflector.
func New(ctx context.Context, o Options) (*Reflector, error) {
	if o.DB == nil || o.Outcomes == nil {
		return nil, errors.New("reflection: DB and Outcomes are required")
	}
	if err := sqlite.MigrateDir(ctx, o.DB, Component, migrations, "migrations"); err != nil {
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
	return &Reflector{o: o, set: o.Settings, log: o.Logger}, nil
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
				Detail: fmt.Sprintf("the last %d sub-sessions of task %s failed (latest: %s)", n, id, clip(hist[0].Error, 200)),
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

// Run reacts to sub-session events until ctx ends: a failure runs the rules
// at once, every BatchThreshold completions run a cycle, and the fallback
// timer runs one when nothing else did for Fallback.
func (r *Reflector) Run(ctx context.Context) error {
	var events <-chan extension.Event
	if r.o.Watch != nil {
		events = r.o.Watch(ctx, "sub_session.", 256)
	}
	fallback := time.NewTimer(r.set.Fallback)
	defer fallback.Stop()
	completions := 0
	cycle := func(trigger string) {
		if _, err := r.Cycle(ctx, trigger); err != nil && ctx.Err() == nil {
			r.log.Warn("reflection cycle failed", "trigger", trigger, "err", err)
		}
		fallback.Reset(r.set.Fallback)
	}
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			switch ev.Topic {
			case workflow.TopicFailed, workflow.TopicTimeout:
				cycle("failure")
			case workflow.TopicCompleted:
				completions++
				if completions >= r.set.BatchThreshold {
					completions = 0
					cycle("batch")
				}
			}
		case <-fallback.C:
			cycle("fallback")
		}
	}
}

func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return cmp.Or(s, "no error text")
	}
	return s[:n] + "…"
}

// decodeJSON decodes the first JSON object in s.
func decodeJSON(s string, v any) error {
	start, end := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}')
	if start < 0 || end < start {
		return errors.New("no JSON object in the answer")
	}
	return json.Unmarshal([]byte(s[start:end+1]), v)
}
