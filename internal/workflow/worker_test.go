package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/llm"
)

// A worker that runs out of time is continued from its saved messages; the
// continuation succeeds on hop 2.
func TestTimeoutContinuationSucceedsOnHop2(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		var calls atomic.Int32
		e.model.on("slow task", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			n := calls.Add(1)
			switch {
			case n == 1:
				return callTools(call("lookup", map[string]string{"q": "step one"})), nil
			case n <= 3: // hop 0 after its first round, then hop 1
				return blockUntilDone(ctx, req)
			}
			return reply("finished after all"), nil
		})
		start := time.Now()
		a := e.spawn(SpawnRequest{Objective: "slow task", Timeout: time.Minute})
		got := e.deliver.wait(t, 1)
		if d := time.Since(start); d < 2*time.Minute || d > 2*time.Minute+time.Second {
			t.Errorf("took %s of fake time, want two timeouts", time.Since(start))
		}
		contains(t, got[0].Text, "completed")
		contains(t, got[0].Text, "after 2 continuation(s)")
		contains(t, got[0].Text, "finished after all")

		w, err := e.m.GetWorkflow(context.Background(), a.Workflow)
		if err != nil {
			t.Fatal(err)
		}
		if len(w.Nodes) != 3 || w.State != StateCompleted {
			t.Fatalf("workflow: %+v", w)
		}
		for i, n := range w.Nodes {
			wantState := StateTimeout
			if i == 2 {
				wantState = StateCompleted
			}
			if n.Hop != i || n.State != wantState {
				t.Errorf("hop %d: %s %s", i, n.ID, n.State)
			}
			if i > 0 && n.ContinuationOf != w.Nodes[i-1].ID {
				t.Errorf("hop %d continues %s", i, n.ContinuationOf)
			}
		}
		// The final hop saw everything before it: the first round's tool
		// call and result and both continuation notes.
		reqs := e.model.reqs("slow task")
		last := reqs[len(reqs)-1]
		var roles []string
		for _, m := range last.Messages {
			roles = append(roles, string(m.Role))
		}
		if got := strings.Join(roles, ","); got != "user,assistant,tool,user,user" {
			t.Errorf("continuation messages = %s", got)
		}
		contains(t, last.Messages[2].Parts[0].(llm.ToolResult).Content, "result for step one")
		contains(t, last.Messages[4].Text(), "continuation 2 of at most 3")
		contains(t, last.System, "You are continuation 2.")

		e.stop()
		var statuses []string
		for _, o := range e.outcomes() {
			statuses = append(statuses, string(o.Status))
			if o.Objective != "slow task" {
				t.Errorf("outcome objective %q", o.Objective)
			}
		}
		if !slices.Equal(statuses, []string{"timeout", "timeout", "completed"}) {
			t.Errorf("outcomes = %v", statuses)
		}
		if os := e.outcomes(); os[0].ToolCalls != 1 || os[2].ContinuationDepth != 2 || os[0].Duration < time.Minute || os[0].Duration > time.Minute+time.Second {
			t.Errorf("outcome rows = %+v", os)
		}
		if got := e.topics("sub_session.timeout"); len(got) != 2 {
			t.Errorf("timeout events: %v", got)
		}
	})
}

// After the third continuation also times out, the session fails with the
// reason; dependents fail with it.
func TestTimeoutGivesUpAfterThreeHops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.model.on("hopeless", blockUntilDone)
		start := time.Now()
		a := e.spawn(SpawnRequest{Objective: "hopeless"})
		dep := e.spawn(SpawnRequest{Objective: "after", DependsOn: []string{a.ID}})
		got := e.deliver.wait(t, 1)
		if d := time.Since(start); d < 4*DefaultTimeout || d > 4*DefaultTimeout+time.Second {
			t.Errorf("gave up after %s, want 4 × %s", d, DefaultTimeout)
		}
		contains(t, got[0].Text, "failed")
		contains(t, got[0].Text, "timed out after 5m0s on continuation 3 of 3; giving up")
		contains(t, got[0].Text, "- "+dep.ID)
		if n := e.node(dep.ID); n.State != StateFailed {
			t.Errorf("dependent: %s", n.State)
		}
		e.stop()
		var statuses []string
		for _, o := range e.outcomes() {
			statuses = append(statuses, string(o.Status))
		}
		// Every run timed out (the last one's session failed with it).
		if !slices.Equal(statuses, []string{"timeout", "timeout", "timeout", "timeout"}) {
			t.Errorf("outcomes = %v", statuses)
		}
	})
}

// The message list is saved as it grows, so it is there while the worker
// still runs (savecall_test.go checks the saves between calls).
func TestMessagesSavedEveryRound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		second := make(chan struct{})
		release := make(chan struct{})
		e.model.on("two rounds", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			switch len(req.Messages) {
			case 1:
				return callTools(call("lookup", map[string]string{"q": "a"}), call("write_note", map[string]string{"q": "b"})), nil
			case 4:
				close(second)
				<-release
				return reply("all done"), nil
			}
			return llm.Response{}, errors.New("unexpected")
		})
		a := e.spawn(SpawnRequest{Objective: "two rounds"})
		<-second
		msgs, err := e.m.Messages(context.Background(), a.ID)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 4 || msgs[0].Text() != startNote || len(msgs[1].ToolCalls()) != 2 {
			t.Fatalf("saved while running: %+v", msgs)
		}
		if n := e.node(a.ID); n.ToolCalls != 2 || n.State != StateRunning {
			t.Errorf("node while running: %+v", n)
		}
		close(release)
		e.deliver.wait(t, 1)
		msgs, _ = e.m.Messages(context.Background(), a.ID)
		if len(msgs) != 5 || msgs[4].Text() != "all done" {
			t.Errorf("final list: %+v", msgs)
		}
		entries, err := e.log.List(context.Background(), interactions.Filter{Thread: chat.ThreadID(a.ID)})
		if err != nil || len(entries) != 3 {
			t.Fatalf("interaction log: %+v, %v", entries, err)
		}
	})
}

// Tools follow the mode and profile: only full workers orchestrate, and
// spawn only below the depth limit.
func TestWorkerToolsByMode(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		tests := []struct {
			name     string
			req      SpawnRequest
			want     []string
			warnings int
		}{
			{"minimal default", SpawnRequest{Objective: "m"}, []string{"lookup", "write_note", "read_file"}, 0},
			{"none", SpawnRequest{Objective: "n", Mode: "none"}, []string{"lookup", "write_note", "read_file"}, 0},
			{"profile", SpawnRequest{Objective: "p", Profile: "researcher"}, []string{"lookup", "read_file"}, 0},
			{"named with unknown", SpawnRequest{Objective: "t", ToolNames: []string{"append_memory", "nope", "send_to_channel", ToolSpawn}},
				[]string{"append_memory"}, 3},
			{"full", SpawnRequest{Objective: "f", Mode: "full"},
				[]string{"lookup", "write_note", "read_file", "append_memory", "read_skill", "add_skill", "send_to_channel", "request_restart", ToolList, ToolCancel, ToolSpawn}, 0},
			{"full named", SpawnRequest{Objective: "fn", Mode: "full", ToolNames: []string{"lookup", ToolSpawn}},
				[]string{"lookup", ToolList, ToolCancel, ToolSpawn}, 0},
		}
		for i, tt := range tests {
			res := e.spawn(tt.req)
			if len(res.Warnings) != tt.warnings {
				t.Errorf("%s: warnings %v", tt.name, res.Warnings)
			}
			e.deliver.wait(t, i+1)
			reqs := e.model.reqs(tt.req.Objective)
			if len(reqs) == 0 {
				t.Fatalf("%s: no model call", tt.name)
			}
			if got := toolNamesOf(reqs[0]); !slices.Equal(got, tt.want) {
				t.Errorf("%s: tools %v, want %v", tt.name, got, tt.want)
			}
		}
		// Prompt modes.
		min := e.model.reqs("m")[0].System
		contains(t, min, "# Execution Instructions")
		contains(t, min, "# Task\n## Objective\nm")
		if s := e.model.reqs("n")[0].System; !strings.HasPrefix(s, "# Task\n") {
			t.Errorf("none mode prompt: %q", s)
		}
		contains(t, e.model.reqs("f")[0].System, "You may delegate parts of the task with spawn_sub_session")
	})
}

// A full worker spawns children (depth 2) that cannot spawn; their results
// arrive once, aggregated, in the root thread, even when they finish at the
// same instant.
func TestNestedAggregationExactlyOnce(t *testing.T) {
	for range 5 {
		synctest.Test(t, func(t *testing.T) {
			e := newEnv(t)
			const kids = 4
			var mu sync.Mutex
			started := 0
			all := make(chan struct{})
			e.model.on("plan trip", func(ctx context.Context, req llm.Request) (llm.Response, error) {
				if len(req.Messages) == 1 {
					var cs []llm.ToolCall
					for _, o := range []string{"flights", "hotels", "trains", "weather"} {
						cs = append(cs, call(ToolSpawn, map[string]any{"objective": o, "system_prompt_mode": "full"}))
					}
					return callTools(cs...), nil
				}
				return reply("I delegated four searches."), nil
			})
			kid := func(ctx context.Context, req llm.Request) (llm.Response, error) {
				if slices.Contains(toolNamesOf(req), ToolSpawn) {
					t.Errorf("a depth-2 worker was offered %s", ToolSpawn)
				}
				mu.Lock()
				started++
				if started == kids {
					close(all)
				}
				mu.Unlock()
				<-all // all finish at the same instant
				return reply("found " + objectiveOf(req)), nil
			}
			for _, o := range []string{"flights", "hotels", "trains", "weather"} {
				e.model.on(o, kid)
			}
			p := e.spawn(SpawnRequest{Objective: "plan trip", Mode: "full"})
			got := e.deliver.wait(t, 2)
			synctest.Wait()
			e.stop()
			if got = e.deliver.all(); len(got) != 2 {
				t.Fatalf("deliveries: %d: %+v", len(got), got)
			}
			contains(t, got[0].Text, "Sub-session "+p.ID+" completed")
			agg := got[1].Text
			if got[1].Thread != thread {
				t.Errorf("aggregate went to %s", got[1].Thread)
			}
			contains(t, agg, "The 4 sub-sessions started by background worker "+p.ID)
			contains(t, agg, "(4 completed)")
			for _, o := range []string{"flights", "hotels", "trains", "weather"} {
				contains(t, agg, "found "+o)
			}
			w, _ := e.m.GetWorkflow(context.Background(), p.Workflow)
			for _, n := range w.Nodes {
				if !n.Delivered {
					t.Errorf("%s not marked delivered", n.ID)
				}
				if n.ID != p.ID && (n.Depth != 2 || n.Parent != p.ID || n.RootThread != string(thread)) {
					t.Errorf("child %+v", n)
				}
			}
		})
	}
}

// The depth limit and the full-mode rule hold for the API too.
func TestDepthLimitAndOnlyFullSpawns(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		hold := make(chan struct{})
		wait := func(ctx context.Context, req llm.Request) (llm.Response, error) {
			<-hold
			return reply("ok"), nil
		}
		e.model.on("minimal worker", wait)
		e.model.on("full worker", wait)
		e.model.on("nested full", wait)
		minimal := e.spawn(SpawnRequest{Objective: "minimal worker"})
		full := e.spawn(SpawnRequest{Objective: "full worker", Mode: "full"})
		synctest.Wait() // both running
		ctx := context.Background()
		if _, err := e.m.Spawn(ctx, SpawnRequest{Objective: "x", Parent: chat.ThreadID(minimal.ID)}); !errors.Is(err, ErrNotAllowed) {
			t.Errorf("spawn from a minimal worker: %v", err)
		}
		nested, err := e.m.Spawn(ctx, SpawnRequest{Objective: "nested full", Mode: "full", Parent: chat.ThreadID(full.ID)})
		if err != nil || nested.Depth != 2 {
			t.Fatalf("nested: %+v, %v", nested, err)
		}
		if _, err := e.m.Spawn(ctx, SpawnRequest{Objective: "too deep", Parent: chat.ThreadID(nested.ID)}); !errors.Is(err, ErrDepth) {
			t.Errorf("depth 3: %v", err)
		}
		close(hold)
		e.deliver.wait(t, 3)
	})
}

// A worker that claims a spawn it did not make is corrected once; the
// verdict is in its outcome.
func TestSupervisorVerdictForWorkers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.model.on("boss", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			last := lastMessage(req)
			switch {
			case strings.Contains(last.Text(), "[SUPERVISOR]"):
				return callTools(call(ToolSpawn, map[string]any{"objective": "helper"})), nil
			case last.Role == llm.RoleTool:
				return reply("Now the helper really runs."), nil
			}
			return reply("I've spawned a sub-session for that."), nil
		})
		e.model.on("liar", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			return reply("I have started a background worker to do it."), nil
		})
		e.spawn(SpawnRequest{Objective: "boss", Mode: "full"})
		e.spawn(SpawnRequest{Objective: "liar"})
		e.deliver.wait(t, 3) // boss, liar, the helper's aggregate
		e.stop()
		verdicts := map[string]string{}
		for _, o := range e.outcomes() {
			verdicts[o.Objective] = o.SupervisorVerdict
		}
		want := map[string]string{"boss": "corrected:spawn", "liar": "claim_without_call:spawn", "helper": "ok"}
		for k, v := range want {
			if verdicts[k] != v {
				t.Errorf("%s: verdict %q, want %q", k, verdicts[k], v)
			}
		}
	})
}

// Cancelling a running session stops it and fails its dependents;
// cancelling a workflow cancels everything in it without noise.
func TestCancel(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.model.on("forever", blockUntilDone)
		ctx := context.Background()
		a := e.spawn(SpawnRequest{Objective: "forever"})
		b := e.spawn(SpawnRequest{Objective: "then", DependsOn: []string{a.ID}})
		synctest.Wait()
		cancelled, err := e.m.Cancel(ctx, a.ID, "user changed their mind")
		if err != nil || !slices.Equal(cancelled, []string{a.ID}) {
			t.Fatalf("cancel: %v, %v", cancelled, err)
		}
		got := e.deliver.wait(t, 1)
		contains(t, got[0].Text, "was not run")
		contains(t, got[0].Text, "dependency "+a.ID+" was cancelled")
		if n := e.node(a.ID); n.State != StateCancelled || n.Error != "user changed their mind" {
			t.Errorf("a: %+v", n)
		}
		if _, err := e.m.Cancel(ctx, a.ID, ""); !errors.Is(err, ErrFinished) || err.Error() != "sub-session "+a.ID+" has already finished (cancelled)" {
			t.Errorf("cancel twice: %v", err)
		}
		if _, err := e.m.Cancel(ctx, "sub_unknown", ""); !errors.Is(err, ErrNotFound) || err.Error() != `sub-session "sub_unknown" not found` {
			t.Errorf("cancel unknown: %v", err)
		}
		_ = b

		// A whole workflow through the tool.
		c := e.spawn(SpawnRequest{Objective: "forever"})
		d := e.spawn(SpawnRequest{Objective: "later", DependsOn: []string{c.ID}})
		args, _ := json.Marshal(map[string]string{"id": c.Workflow})
		res, err := e.m.Tools(thread)[1].Call(ctx, args)
		if err != nil {
			t.Fatal(err)
		}
		contains(t, res.Content, c.ID)
		contains(t, res.Content, d.ID)
		synctest.Wait()
		e.stop()
		if n := len(e.deliver.all()); n != 1 {
			t.Errorf("cancelling a workflow delivered %d events", n)
		}
		w, _ := e.m.GetWorkflow(ctx, c.Workflow)
		if w.State != StateCancelled {
			t.Errorf("workflow state %s", w.State)
		}
		if _, err := e.m.Cancel(ctx, c.Workflow, ""); !errors.Is(err, ErrFinished) || err.Error() != "workflow "+c.Workflow+" has already finished" {
			t.Errorf("cancel a finished workflow: %v", err)
		}
	})
}

// Past outcomes of similar objectives become historical feedback.
func TestHistoricalFeedback(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t, func(o *Options) { o.DefaultTimeout = time.Minute; o.MaxContinuations = -1 })
		e.model.on("Research the price of tomatoes in Berlin markets", blockUntilDone)
		e.spawn(SpawnRequest{Objective: "Research the price of tomatoes in Berlin markets"})
		e.deliver.wait(t, 1)
		e.spawn(SpawnRequest{Objective: "Compile a list of birds"})
		e.deliver.wait(t, 2)
		e.spawn(SpawnRequest{Objective: "Research the price of potatoes in Berlin markets"})
		e.deliver.wait(t, 3)
		sys := e.model.reqs("Research the price of potatoes in Berlin markets")[0].System
		contains(t, sys, "## Historical feedback\nSimilar tasks ran before:\n- \"Research the price of tomatoes in Berlin markets\" → timeout after 1m0s, 0 tool calls")
		contains(t, sys, "Similar work timed out before: pace yourself")
		if s := e.model.reqs("Compile a list of birds")[0].System; strings.Contains(s, "Historical feedback") {
			t.Errorf("unrelated objective got feedback:\n%s", s)
		}
	})
}

// Deliveries the thread's queue refuses are retried.
func TestDeliveryRetried(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.deliver.fail = 2
		start := time.Now()
		e.spawn(SpawnRequest{Objective: "x"})
		e.deliver.wait(t, 1)
		if d := time.Since(start); d < 3*time.Second || d > 4*time.Second {
			t.Errorf("delivered after %s, want 1s+2s of backoff", d)
		}
	})
}

// A spawn's round cap applies, and the outcome names the skills the worker
// read.
func TestMaxRoundsAndSkillsLoaded(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := newEnv(t)
		e.model.on("curious", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			if req.ToolChoice == llm.ToolChoiceNone {
				return reply("out of rounds"), nil
			}
			return callTools(call("read_skill", map[string]string{"name": "deploy"}),
				call("read_file", map[string]string{"path": "skills/backup.md"}),
				call("add_skill", map[string]string{"name": "new-one"})), nil
		})
		e.spawn(SpawnRequest{Objective: "curious", ToolNames: []string{"read_skill", "read_file", "add_skill"}, MaxRounds: 2})
		got := e.deliver.wait(t, 1)
		contains(t, got[0].Text, "out of rounds")
		if n := len(e.model.reqs("curious")); n != 3 {
			t.Errorf("%d model calls, want 2 rounds and the final answer", n)
		}
		e.stop()
		o := e.outcomes()[0]
		if !slices.Equal(o.SkillsLoaded, []string{"backup", "deploy"}) || o.ToolCalls != 6 {
			t.Errorf("outcome: skills %v, tool calls %d", o.SkillsLoaded, o.ToolCalls)
		}
	})
}

// fixedSources are the full-mode prompt sources of a test.
type fixedSources struct{ skills []prompt.Skill }

func (fixedSources) Memories(context.Context) (string, error)         { return "", nil }
func (fixedSources) Pulse(context.Context) (string, error)            { return "", nil }
func (f fixedSources) Skills(context.Context) ([]prompt.Skill, error) { return f.skills, nil }

// Seed 001's skill_correlation counts a skill "loaded in" a failed
// sub-session, and seed 003 puts the skills into a full-mode prompt: the
// outcome of a full-mode worker names the skills of its prompt as well as
// the ones it read, whether it failed or completed; other modes carry no
// skills in their prompt.
func TestSkillsInPromptCountAsLoaded(t *testing.T) {
	skills := []prompt.Skill{
		{Name: "deploy", Body: "# Deploy\nRun the playbook."},
		{Name: "backup", Summary: "Nightly backups", Body: "Copy the disk."},
		{Name: "  ", Body: "no name"},
		{Name: "empty"},
	}
	cases := []struct {
		name string
		mode prompt.Mode
		fail bool
		want []string
	}{
		{name: "full mode, failed", mode: prompt.ModeFull, fail: true, want: []string{"backup", "deploy", "notes"}},
		{name: "full mode, completed", mode: prompt.ModeFull, want: []string{"backup", "deploy", "notes"}},
		{name: "minimal mode, failed", mode: prompt.ModeMinimal, fail: true, want: []string{"notes"}},
		{name: "base_only mode, failed", mode: prompt.ModeBaseOnly, fail: true, want: []string{"notes"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				e := newEnv(t, func(o *Options) { o.Sources = fixedSources{skills: skills} })
				var calls atomic.Int32
				e.model.on("work", func(ctx context.Context, req llm.Request) (llm.Response, error) {
					if calls.Add(1) == 1 {
						return callTools(call("read_skill", map[string]string{"name": "notes"})), nil
					}
					if tc.fail {
						return llm.Response{}, errors.New("the model server is down")
					}
					return reply("done"), nil
				})
				e.spawn(SpawnRequest{Objective: "work", Mode: tc.mode, ToolNames: []string{"read_skill"}})
				e.deliver.wait(t, 1)
				e.stop()
				o := e.outcomes()[0]
				if failed := o.Status == StateFailed; failed != tc.fail {
					t.Fatalf("status %s, want failed=%v", o.Status, tc.fail)
				}
				if !slices.Equal(o.SkillsLoaded, tc.want) {
					t.Errorf("skills loaded %v, want %v", o.SkillsLoaded, tc.want)
				}
			})
		})
	}
}
