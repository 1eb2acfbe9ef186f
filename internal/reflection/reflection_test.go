package reflection

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

type fakeOutcomes struct {
	mu    sync.Mutex
	list  []workflow.Outcome // newest first
	reads int                // one per rule run, so one per cycle
}

func (f *fakeOutcomes) Outcomes(context.Context, workflow.OutcomeFilter) ([]workflow.Outcome, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	return slices.Clone(f.list), nil
}

// cycles is how many cycles ran so far.
func (f *fakeOutcomes) cycles() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reads
}

func (f *fakeOutcomes) add(o workflow.Outcome) {
	f.mu.Lock()
	defer f.mu.Unlock()
	o.SessionID = "sub_" + strconv.Itoa(len(f.list)+1)
	f.list = append([]workflow.Outcome{o}, f.list...)
}

type fakeTasks struct {
	mu     sync.Mutex
	tasks  []scheduler.Task
	paused []string
}

func (f *fakeTasks) List(context.Context, scheduler.ListOptions) ([]scheduler.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.tasks), nil
}

func (f *fakeTasks) setFailures(i, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tasks[i].Failures = n
}

func (f *fakeTasks) pausedIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.paused)
}
func (f *fakeTasks) Receipts(context.Context, string, int) ([]scheduler.Receipt, error) {
	return nil, nil
}
func (f *fakeTasks) Pause(_ context.Context, id string) (scheduler.Task, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := range f.tasks {
		if f.tasks[i].ID == id {
			f.tasks[i].Status = scheduler.StatusPaused
			f.paused = append(f.paused, id)
			return f.tasks[i], nil
		}
	}
	return scheduler.Task{}, errors.New("no such task")
}

type recorder struct {
	mu     sync.Mutex
	topics []string
	spawns []workflow.SpawnRequest
}

func (r *recorder) Publish(_ context.Context, topic string, _ any) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.topics = append(r.topics, topic)
	return nil
}

func (r *recorder) Spawn(_ context.Context, req workflow.SpawnRequest) (workflow.SpawnResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.spawns = append(r.spawns, req)
	return workflow.SpawnResult{ID: "sub_fix"}, nil
}

type fixture struct {
	dir   string
	outs  *fakeOutcomes
	tasks *fakeTasks
	rec   *recorder
	log   *interactions.Store
	r     *Reflector
	mu    sync.Mutex
	calls int
	reply string
	block bool // the model waits for its context to end
}

// model is the scripted reflection model: it answers f.reply.
func (f *fixture) model() Model {
	return llmtest.Func(func(ctx context.Context, _ llm.Request) (llm.Response, error) {
		f.mu.Lock()
		f.calls++
		reply, block := f.reply, f.block
		f.mu.Unlock()
		if block {
			<-ctx.Done()
			return llm.Response{}, ctx.Err()
		}
		return llm.Response{Message: llm.AssistantText(reply)}, nil
	})
}

func (f *fixture) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

func newFixture(t *testing.T, now func() time.Time) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := datadir.Bootstrap(dir, nil); err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ilog, err := interactions.Open(ctx, db, interactions.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{dir: dir, outs: &fakeOutcomes{}, tasks: &fakeTasks{tasks: []scheduler.Task{{ID: "t_1", Status: scheduler.StatusActive},
		{ID: "t_2", Status: scheduler.StatusActive}}}, rec: &recorder{}, log: ilog,
		reply: `{"summary":"The daily news task fails because its source moved.","recommend_change":false,"change":""}`}
	f.r, err = New(ctx, Options{DB: db, DataDir: dir, Outcomes: f.outs, Tasks: f.tasks, Spawner: f.rec, Model: f.model(),
		Events: f.rec, Log: ilog, Now: now})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func rules(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule+":"+f.Subject)
	}
	slices.Sort(out)
	return out
}

func TestRules(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	clk := func() time.Time { return now }
	cases := []struct {
		name   string
		setup  func(f *fixture)
		want   []string
		paused []string
	}{
		{"nothing", func(f *fixture) {}, nil, nil},
		{"two failures are not a pattern", func(f *fixture) {
			f.outs.add(workflow.Outcome{TaskID: "t_1", Status: workflow.StateFailed, FinishedAt: now})
			f.outs.add(workflow.Outcome{TaskID: "t_1", Status: workflow.StateFailed, FinishedAt: now})
		}, nil, nil},
		{"three failures pause the task", func(f *fixture) {
			f.outs.add(workflow.Outcome{TaskID: "t_1", Status: workflow.StateCompleted, ResultChars: 500, FinishedAt: now})
			for range 3 {
				f.outs.add(workflow.Outcome{TaskID: "t_1", Status: workflow.StateFailed, Error: "fetch failed", FinishedAt: now})
			}
		}, []string{"consecutive_failures:t_1"}, []string{"t_1"}},
		{"failed runs of an inference task pause it", func(f *fixture) {
			f.tasks.tasks[1].Failures = 3
		}, []string{"consecutive_failures:t_2"}, []string{"t_2"}},
		{"three timeouts", func(f *fixture) {
			for range 3 {
				f.outs.add(workflow.Outcome{TaskID: "t_1", Status: workflow.StateTimeout, FinishedAt: now})
			}
		}, []string{"consecutive_failures:t_1", "timeout_pattern:t_1"}, []string{"t_1"}},
		{"short outputs", func(f *fixture) {
			for range 3 {
				f.outs.add(workflow.Outcome{TaskID: "t_2", Status: workflow.StateCompleted, ResultChars: 12, FinishedAt: now})
			}
		}, []string{"stale_task:t_2"}, nil},
		{"skill in failed sessions", func(f *fixture) {
			for i := range 3 {
				f.outs.add(workflow.Outcome{TaskID: "x" + strconv.Itoa(i), Status: workflow.StateFailed, SkillsLoaded: []string{"deploy-blog"}, FinishedAt: now})
			}
			f.outs.add(workflow.Outcome{Status: workflow.StateFailed, SkillsLoaded: []string{"old"}, FinishedAt: now.Add(-30 * 24 * time.Hour)})
		}, []string{"skill_correlation:deploy-blog"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, clk)
			c.setup(f)
			got, err := f.r.Rules(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(rules(got), c.want) {
				t.Fatalf("findings %v, want %v", rules(got), c.want)
			}
			if !slices.Equal(f.tasks.paused, c.paused) {
				t.Fatalf("paused %v, want %v", f.tasks.paused, c.paused)
			}
			// Reported once: the same evidence finds nothing new.
			again, _ := f.r.Rules(context.Background())
			if len(again) != 0 {
				t.Fatalf("reported again: %v", rules(again))
			}
			entries, _ := f.log.List(context.Background(), interactions.Filter{Action: interactions.ActionReflectionRule})
			if len(entries) != len(c.want) {
				t.Fatalf("%d reflection_rule entries, want %d", len(entries), len(c.want))
			}
			if slices.Contains(c.want, "skill_correlation:deploy-blog") && !slices.Contains(f.rec.topics, TopicSkillFlagged) {
				t.Fatalf("no %s event: %v", TopicSkillFlagged, f.rec.topics)
			}
		})
	}
}

func TestCycle(t *testing.T) {
	now := time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)
	f := newFixture(t, func() time.Time { return now })
	ctx := context.Background()
	rep, err := f.r.Cycle(ctx, "test")
	if err != nil || len(rep.Findings) != 0 || f.calls != 0 {
		t.Fatalf("quiet cycle: %+v, %v, %d model calls", rep, err, f.calls)
	}
	for range 3 {
		f.outs.add(workflow.Outcome{TaskID: "t_1", Status: workflow.StateFailed, SkillsLoaded: []string{"news"}, FinishedAt: now})
	}
	f.reply = "```json\n" + `{"summary":"The news skill points at a dead feed.","recommend_change":true,"change":"Update skill news: the feed moved to /rss."}` + "\n```"
	rep, err = f.r.Cycle(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	if f.calls != 1 || rep.Analysis == "" || rep.Mutation != "sub_fix" {
		t.Fatalf("cycle %+v, %d calls", rep, f.calls)
	}
	sp := f.rec.spawns[0]
	if !strings.Contains(sp.Objective, "feed moved") || !slices.Equal(sp.ToolNames, []string{"read_file", "read_skill", "add_skill", "append_memory"}) || sp.Parent != "" || sp.MaxRounds != 5 {
		t.Fatalf("mutation request %+v", sp)
	}
	if !slices.Contains(f.rec.topics, TopicAnalysisComplete) || !slices.Contains(f.rec.topics, TopicFinding) {
		t.Fatalf("events %v", f.rec.topics)
	}
	entries, _ := f.log.List(ctx, interactions.Filter{Action: interactions.ActionReflectionAnalysis})
	if len(entries) != 1 {
		t.Fatalf("%d analysis entries", len(entries))
	}
	// Nothing new: no model call.
	if _, err := f.r.Cycle(ctx, "test"); err != nil || f.calls != 1 {
		t.Fatalf("repeat cycle: %v, %d calls", err, f.calls)
	}
}
