package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

// A and B run in parallel; C (depends_on A and B) starts when both have
// completed and receives both results.
func TestFanIn(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var mu sync.Mutex
		started := map[string]bool{}
		both := make(chan struct{})
		release := make(chan struct{})
		parallel := func(name string) behaviour {
			return func(ctx context.Context, req llm.Request) (llm.Response, error) {
				mu.Lock()
				started[name] = true
				if len(started) == 2 {
					close(both)
				}
				mu.Unlock()
				<-both // proves A and B run at the same time
				<-release
				return reply("result of " + name), nil
			}
		}
		e.model.on("research A", parallel("A"))
		e.model.on("research B", parallel("B"))
		a := e.spawn(SpawnRequest{Objective: "research A"})
		b := e.spawn(SpawnRequest{Objective: "research B"})
		c := e.spawn(SpawnRequest{Objective: "combine", DependsOn: []string{a.ID, b.ID}})
		if c.Waiting != waitDeps || c.State != StatePending {
			t.Errorf("C at spawn: %+v", c)
		}
		close(release)
		got := e.deliver.wait(t, 3)
		if got[2].Thread != thread || !strings.Contains(got[2].Text, c.ID) || !strings.Contains(got[2].Text, "done: combine") {
			t.Errorf("last delivery = %+v", got[2])
		}
		for _, d := range got[:2] {
			contains(t, d.Text, "completed")
		}
		reqs := e.model.reqs("combine")
		if len(reqs) != 1 {
			t.Fatalf("C made %d model calls", len(reqs))
		}
		contains(t, reqs[0].System, "## Results of the sessions this task depends on")
		contains(t, reqs[0].System, "### "+a.ID+": research A\nresult of A")
		contains(t, reqs[0].System, "### "+b.ID+": research B\nresult of B")

		// One workflow: A, B and C, merged from A's and B's.
		w, err := e.m.GetWorkflow(context.Background(), c.Workflow)
		if err != nil {
			t.Fatal(err)
		}
		if w.State != StateCompleted || len(w.Nodes) != 3 || len(w.MergedFrom) != 1 {
			t.Errorf("workflow = %+v", w)
		}
		cn := e.node(c.ID)
		if cn.StartedAt.Before(*e.node(a.ID).FinishedAt) || cn.StartedAt.Before(*e.node(b.ID).FinishedAt) {
			t.Errorf("C started before its dependencies finished")
		}
		e.stop()
		want := map[string]int{"sub_session.started": 3, "sub_session.completed": 3, "workflow.created": 2,
			"workflow.merged": 1, "workflow.completed": 1}
		counts := map[string]int{}
		for _, tp := range append(e.topics("sub_session."), e.topics("workflow.")...) {
			counts[strings.Fields(tp)[0]]++
		}
		for k, v := range want {
			if counts[k] != v {
				t.Errorf("%s published %d times, want %d (all: %v)", k, counts[k], v, counts)
			}
		}
	})
}

// A hallucinated dependency id is dropped with a warning that reaches the
// model, and the session runs on the valid ones.
func TestUnknownDependencyStripped(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		a := e.spawn(SpawnRequest{Objective: "first"})
		e.deliver.wait(t, 1)
		spawn := e.m.Tools(thread)[0]
		args, _ := json.Marshal(map[string]any{"objective": "second", "depends_on": []string{"sub_hallucinated", a.ID, "task-7"}})
		res, err := spawn.Call(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		var out struct {
			OK        bool     `json:"ok"`
			ID        string   `json:"session_id"`
			DependsOn []string `json:"depends_on"`
			Warnings  []string `json:"warnings"`
		}
		if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
			t.Fatal(err)
		}
		if !out.OK || !strings.HasPrefix(out.ID, "sub_") || !slices.Equal(out.DependsOn, []string{a.ID}) || len(out.Warnings) != 2 {
			t.Fatalf("tool result = %s", res.Content)
		}
		contains(t, out.Warnings[0], `"sub_hallucinated" dropped`)
		got := e.deliver.wait(t, 2)
		contains(t, got[1].Text, "done: second")
	})
}

// A failure propagates to every transitive dependent; the user gets one
// report naming the failed session and what was not run because of it.
func TestFailurePropagationThreeLevels(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		gate := make(chan struct{})
		e.model.on("fetch data", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			<-gate
			return llm.Response{}, errors.New("provider exploded")
		})
		a := e.spawn(SpawnRequest{Objective: "fetch data"})
		b := e.spawn(SpawnRequest{Objective: "clean data", DependsOn: []string{a.ID}})
		c := e.spawn(SpawnRequest{Objective: "analyse data", DependsOn: []string{b.ID}})
		d := e.spawn(SpawnRequest{Objective: "report", DependsOn: []string{c.ID}})
		side := e.spawn(SpawnRequest{Objective: "unrelated"})
		e.deliver.wait(t, 1) // the unrelated one
		close(gate)
		got := e.deliver.wait(t, 2)
		if len(got) != 2 {
			t.Fatalf("deliveries: %+v", got)
		}
		text := got[1].Text
		contains(t, text, "Sub-session "+a.ID+" failed")
		contains(t, text, "provider exploded")
		for _, id := range []string{b.ID, c.ID, d.ID} {
			contains(t, text, "- "+id)
			n := e.node(id)
			if n.State != StateFailed || n.StartedAt != nil {
				t.Errorf("%s: %+v", id, n)
			}
		}
		contains(t, e.node(d.ID).Error, "dependency "+c.ID+" failed: dependency "+b.ID+" failed")
		if n := e.node(side.ID); n.State != StateCompleted {
			t.Errorf("unrelated session: %s", n.State)
		}
		// A dependent spawned after the failure fails at once.
		late, err := e.m.Spawn(context.Background(), SpawnRequest{Objective: "too late", DependsOn: []string{d.ID}, Parent: thread})
		if err != nil || late.State != StateFailed {
			t.Errorf("late spawn: %+v, %v", late, err)
		}
		e.deliver.wait(t, 3)
		e.stop()
		var statuses []string
		for _, o := range e.outcomes() {
			statuses = append(statuses, string(o.Status)+":"+o.Objective)
		}
		if !slices.Equal(statuses, []string{"completed:unrelated", "failed:fetch data"}) {
			t.Errorf("outcomes = %v", statuses)
		}
		failed := e.topics("sub_session.failed")
		if len(failed) != 5 {
			t.Errorf("failed events: %v", failed)
		}
	})
}

// not_before is checked after the dependencies, in the configured zone,
// with a timer.
func TestTimeGateInConfiguredZone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		berlin, err := time.LoadLocation("Europe/Berlin")
		if err != nil {
			t.Fatal(err)
		}
		e := newEnv(t, func(o *Options) { o.Location = berlin })
		start := time.Now() // the bubble starts at 2000-01-01 00:00 UTC
		a := e.spawn(SpawnRequest{Objective: "research now"})
		spawn := e.m.Tools(thread)[0]
		// 02:00 naive Berlin time is 01:00 UTC in winter.
		args, _ := json.Marshal(map[string]any{"objective": "upload later", "depends_on": []string{a.ID},
			"not_before": start.In(berlin).Format("2006-01-02") + "T02:00:00"})
		res, err := spawn.Call(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		var out SpawnResult
		json.Unmarshal([]byte(res.Content), &out)
		e.deliver.wait(t, 1)
		synctest.Wait()
		if n := e.node(out.ID); n.State != StatePending || n.Waiting != waitNotBefore {
			t.Fatalf("after its dependency: %+v", n)
		}
		got := e.deliver.wait(t, 2)
		contains(t, got[1].Text, "done: upload later")
		n := e.node(out.ID)
		if want := start.Add(time.Hour); !n.StartedAt.Equal(want) {
			t.Errorf("started at %s, want %s", n.StartedAt.UTC(), want.UTC())
		}
		if !n.NotBefore.Equal(start.Add(time.Hour)) {
			t.Errorf("not_before = %s", n.NotBefore.UTC())
		}
	})
}

func TestParseNotBefore(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	tests := []struct {
		name, in string
		want     time.Time
		err      bool
	}{
		{"empty", "", time.Time{}, false},
		{"naive seconds", "2025-01-15T20:00:00", time.Date(2025, 1, 15, 20, 0, 0, 0, berlin), false},
		{"naive minutes", "2025-01-15T20:00", time.Date(2025, 1, 15, 20, 0, 0, 0, berlin), false},
		{"naive space", "2025-07-15 20:00", time.Date(2025, 7, 15, 20, 0, 0, 0, berlin), false},
		{"date only", "2025-01-15", time.Date(2025, 1, 15, 0, 0, 0, 0, berlin), false},
		{"utc", "2025-01-15T20:00:00Z", time.Date(2025, 1, 15, 20, 0, 0, 0, time.UTC), false},
		{"offset", "2025-01-15T20:00:00+05:30", time.Date(2025, 1, 15, 14, 30, 0, 0, time.UTC), false},
		{"offset no seconds", "2025-01-15T20:00+01:00", time.Date(2025, 1, 15, 19, 0, 0, 0, time.UTC), false},
		{"garbage", "tomorrow evening", time.Time{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseNotBefore(tt.in, berlin)
			if (err != nil) != tt.err {
				t.Fatalf("err = %v", err)
			}
			if !got.Equal(tt.want) {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// Sessions of separate workflows joined by a dependency merge into the
// oldest workflow; the merged id still resolves.
func TestMergeWorkflows(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		hold := make(chan struct{})
		wait := func(ctx context.Context, req llm.Request) (llm.Response, error) {
			<-hold
			return reply("ok"), nil
		}
		e.model.on("one", wait)
		e.model.on("two", wait)
		one := e.spawn(SpawnRequest{Objective: "one"})
		time.Sleep(time.Second) // distinct creation times (fake clock)
		two := e.spawn(SpawnRequest{Objective: "two"})
		if one.Workflow == two.Workflow {
			t.Fatal("independent sessions share a workflow")
		}
		three := e.spawn(SpawnRequest{Objective: "three", DependsOn: []string{two.ID, one.ID}})
		if three.Workflow != one.Workflow {
			t.Errorf("merged into %s, want the older %s", three.Workflow, one.Workflow)
		}
		w, err := e.m.GetWorkflow(context.Background(), two.Workflow)
		if err != nil || w.ID != one.Workflow || !slices.Equal(w.MergedFrom, []string{two.Workflow}) || len(w.Nodes) != 3 {
			t.Fatalf("merged workflow via old id: %+v, %v", w, err)
		}
		if w.State != StateRunning {
			t.Errorf("state = %s", w.State)
		}
		close(hold)
		e.deliver.wait(t, 3)
		ws, err := e.m.ListWorkflows(context.Background(), ListOptions{Thread: thread})
		if err != nil || len(ws) != 1 || ws[0].State != StateCompleted {
			t.Errorf("list = %+v, %v", ws, err)
		}
	})
}

// depends_on_previous: within a turn the turn's spawns; for a worker every
// session it spawned.
func TestDependsOnPrevious(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		hold := make(chan struct{})
		e.model.on("older, still running", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			<-hold
			return reply("ok"), nil
		})
		older := e.spawn(SpawnRequest{Objective: "older, still running"})

		tools := e.m.Tools(thread) // one turn
		spawn := func(args map[string]any) SpawnResult {
			b, _ := json.Marshal(args)
			res, err := tools[0].Call(context.Background(), b)
			if err != nil {
				t.Fatal(err)
			}
			var out SpawnResult
			json.Unmarshal([]byte(res.Content), &out)
			return out
		}
		a := spawn(map[string]any{"objective": "a"})
		b := spawn(map[string]any{"objective": "b"})
		c := spawn(map[string]any{"objective": "c", "depends_on_previous": true})
		if !slices.Equal(c.DependsOn, []string{a.ID, b.ID}) {
			t.Errorf("c depends on %v, want this turn's %v", c.DependsOn, []string{a.ID, b.ID})
		}
		// A new turn without spawns of its own: the unfinished ones.
		next := e.m.Tools(thread)[0]
		args, _ := json.Marshal(map[string]any{"objective": "d", "depends_on_previous": true})
		res, err := next.Call(context.Background(), args)
		if err != nil {
			t.Fatal(err)
		}
		var d SpawnResult
		json.Unmarshal([]byte(res.Content), &d)
		if !slices.Contains(d.DependsOn, older.ID) {
			t.Errorf("d depends on %v; want the unfinished %s", d.DependsOn, older.ID)
		}
		close(hold)
		e.deliver.wait(t, 5)

		// A worker's lineage: everything it spawned.
		e.model.on("orchestrate", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			switch len(req.Messages) {
			case 1:
				return callTools(call(ToolSpawn, map[string]any{"objective": "part 1"}),
					call(ToolSpawn, map[string]any{"objective": "part 2"})), nil
			case 4:
				return callTools(call(ToolSpawn, map[string]any{"objective": "merge parts", "depends_on_previous": true})), nil
			}
			return reply("organised"), nil
		})
		p := e.spawn(SpawnRequest{Objective: "orchestrate", Mode: "full"})
		e.deliver.wait(t, 7) // the worker's report and the aggregate
		w, err := e.m.GetWorkflow(context.Background(), p.Workflow)
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]string{}
		var merge Node
		for _, n := range w.Nodes {
			ids[n.Objective] = n.ID
			if n.Objective == "merge parts" {
				merge = n
			}
		}
		deps := slices.Sorted(slices.Values(merge.DependsOn))
		if want := slices.Sorted(slices.Values([]string{ids["part 1"], ids["part 2"]})); !slices.Equal(deps, want) {
			t.Errorf("merge parts depends on %v", merge.DependsOn)
		}
	})
}

func TestSpawnValidation(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		ctx := context.Background()
		tests := []struct {
			name string
			req  SpawnRequest
			want error
		}{
			{"no objective", SpawnRequest{Objective: "  "}, ErrInvalid},
			{"bad mode", SpawnRequest{Objective: "x", Mode: "turbo"}, ErrInvalid},
			{"main mode", SpawnRequest{Objective: "x", Mode: "main"}, ErrInvalid},
			{"unknown profile", SpawnRequest{Objective: "x", Profile: "wizard"}, ErrInvalid},
			{"negative timeout", SpawnRequest{Objective: "x", Timeout: -time.Second}, ErrInvalid},
			{"unknown parent", SpawnRequest{Objective: "x", Parent: "sub_nothere"}, ErrNotFound},
			{"huge objective", SpawnRequest{Objective: strings.Repeat("x", MaxObjectiveChars+1)}, ErrInvalid},
		}
		for _, tt := range tests {
			if tt.req.Parent == "" {
				tt.req.Parent = thread
			}
			if _, err := e.m.Spawn(ctx, tt.req); !errors.Is(err, tt.want) {
				t.Errorf("%s: err = %v, want %v", tt.name, err, tt.want)
			}
		}
		// Bad not_before through the tool: an error for the model.
		args, _ := json.Marshal(map[string]any{"objective": "x", "not_before": "after lunch"})
		if _, err := e.m.Tools(thread)[0].Call(ctx, args); err == nil || !strings.Contains(err.Error(), "ISO-8601") {
			t.Errorf("bad not_before: %v", err)
		}
		ws, _ := e.m.ListWorkflows(ctx, ListOptions{})
		if len(ws) != 0 {
			t.Errorf("rejected spawns left workflows: %+v", ws)
		}
	})
}

// depends_on_previous in one model round of the main agent: the calls run
// through the tool loop (concurrently for other tools), and "previous" is
// what the model issued before the call — never a sibling issued after it,
// always the ones issued before it.
func TestDependsOnPreviousFollowsTheOrderOfTheRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		rounds := 0
		model := llmtest.Func(func(ctx context.Context, req llm.Request) (llm.Response, error) {
			rounds++
			switch rounds {
			case 1:
				return callTools(
					call(ToolSpawn, map[string]any{"objective": "a"}),
					call(ToolSpawn, map[string]any{"objective": "b", "depends_on_previous": true}),
					call(ToolSpawn, map[string]any{"objective": "c"}),
					call(ToolSpawn, map[string]any{"objective": "d", "depends_on_previous": true}),
				), nil
			case 2:
				return callTools(call(ToolSpawn, map[string]any{"objective": "e", "depends_on_previous": true})), nil
			}
			return reply("started"), nil
		})
		ctx := tool.WithCall(context.Background(), tool.Call{Thread: thread, Agent: "main"})
		res, err := toolloop.Run(ctx, model, llm.Request{Messages: []llm.Message{llm.UserText("go")}}, e.m.Tools(thread), toolloop.Options{Parallel: 4})
		if err != nil {
			t.Fatal(err)
		}
		ids := map[string]string{}
		deps := map[string][]string{}
		for _, c := range res.Calls {
			var out SpawnResult
			if err := json.Unmarshal([]byte(c.Result), &out); err != nil || out.ID == "" {
				t.Fatalf("%s: %s", c.Name, c.Result)
			}
			var args spawnArgs
			json.Unmarshal(c.Arguments, &args)
			ids[args.Objective], deps[args.Objective] = out.ID, out.DependsOn
		}
		want := map[string][]string{
			"b": {ids["a"]},
			"d": {ids["a"], ids["b"], ids["c"]},
			"e": {ids["a"], ids["b"], ids["c"], ids["d"]},
		}
		for k, w := range want {
			if got := slices.Sorted(slices.Values(deps[k])); !slices.Equal(got, slices.Sorted(slices.Values(w))) {
				t.Errorf("%s depends on %v, want %v", k, deps[k], w)
			}
		}
		e.deliver.wait(t, 5)
	})
}
