package workflow

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

// A restart in the middle of a workflow loses nothing: the running session
// resumes from its saved messages, pending ones stay pending, the time gate
// is re-armed, an undelivered result and a nested aggregate are delivered
// exactly once.
func TestRestartMidWorkflow(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "reverie.db")
		t0 := time.Now()
		first := newModel()
		entered := make(chan string, 10)
		first.on("gather", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			if len(req.Messages) == 1 {
				return callTools(call("lookup", map[string]string{"q": "sources"})), nil
			}
			entered <- "gather"
			return blockUntilDone(ctx, req)
		})
		first.on("orchestrate", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			if len(req.Messages) == 1 {
				return callTools(call(ToolSpawn, map[string]any{"objective": "quick kid"}),
					call(ToolSpawn, map[string]any{"objective": "slow kid"})), nil
			}
			return reply("delegated"), nil
		})
		first.on("slow kid", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			entered <- "slow kid"
			return blockUntilDone(ctx, req)
		})
		e1 := openEnv(t, file, first)
		e1.deliver.fail = 1 << 30 // nothing gets through before the restart
		gather := e1.spawn(SpawnRequest{Objective: "gather"})
		analyse := e1.spawn(SpawnRequest{Objective: "analyse", DependsOn: []string{gather.ID}})
		publish := e1.spawn(SpawnRequest{Objective: "publish", DependsOn: []string{analyse.ID}, NotBefore: t0.Add(2 * time.Hour)})
		e1.spawn(SpawnRequest{Objective: "independent"})
		orch := e1.spawn(SpawnRequest{Objective: "orchestrate", Mode: "full"})
		got := []string{<-entered, <-entered}
		slices.Sort(got)
		if !slices.Equal(got, []string{"gather", "slow kid"}) {
			t.Fatalf("entered %v", got)
		}
		synctest.Wait()
		e1.stop()
		if len(e1.deliver.all()) != 0 {
			t.Fatal("delivered before the restart")
		}
		if n := e1.node(gather.ID); n.State != StateRunning || n.ToolCalls != 1 {
			t.Fatalf("gather before restart: %+v", n)
		}
		e1.db.Close()

		// The restart.
		second := newModel()
		second.on("gather", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			return reply("gathered"), nil
		})
		// The orchestrator may or may not have given its report before the
		// stop; either way it gives it once.
		second.on("orchestrate", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			return reply("delegated"), nil
		})
		e2 := openEnv(t, file, second)
		got2 := e2.deliver.wait(t, 6)
		synctest.Wait()
		e2.stop()
		if got2 = e2.deliver.all(); len(got2) != 6 {
			t.Fatalf("deliveries after restart: %d: %+v", len(got2), got2)
		}
		texts := make([]string, len(got2))
		for i, d := range got2 {
			texts[i] = d.Text
		}
		all := strings.Join(texts, "\n=====\n")
		for _, want := range []string{"done: independent", "delegated", "gathered", "done: analyse", "done: publish",
			"The 2 sub-sessions started by background worker " + orch.ID} {
			if strings.Count(all, want) != 1 {
				t.Errorf("%q delivered %d times", want, strings.Count(all, want))
			}
		}
		// gather resumed from its saved messages.
		reqs := second.reqs("gather")
		if len(reqs) != 1 {
			t.Fatalf("gather resumed with %d calls", len(reqs))
		}
		msgs := reqs[0].Messages
		if len(msgs) != 4 || msgs[1].ToolCalls()[0].Name != "lookup" || !strings.Contains(msgs[3].Text(), "restarted") {
			t.Errorf("resumed messages: %+v", msgs)
		}
		if n := e2.node(gather.ID); n.State != StateCompleted || n.Hop != 0 {
			t.Errorf("gather: %+v", n)
		}
		if n := e2.node(publish.ID); !n.StartedAt.Equal(t0.Add(2 * time.Hour)) {
			t.Errorf("publish started at %s, want the gate %s", n.StartedAt, t0.Add(2*time.Hour))
		}
		ws, err := e2.m.ListWorkflows(context.Background(), ListOptions{Active: true})
		if err != nil || len(ws) != 0 {
			t.Errorf("active workflows left: %+v, %v", ws, err)
		}
	})
}

// A running session interrupted by more restarts than MaxContinuations
// fails instead of crash-looping.
func TestResumeLimit(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		file := filepath.Join(t.TempDir(), "reverie.db")
		model := newModel()
		entered := make(chan struct{}, 10)
		model.on("crashy", func(ctx context.Context, req llm.Request) (llm.Response, error) {
			entered <- struct{}{}
			return blockUntilDone(ctx, req)
		})
		var id string
		for i := 0; i <= DefaultMaxContinuations; i++ {
			e := openEnv(t, file, model)
			if i == 0 {
				id = e.spawn(SpawnRequest{Objective: "crashy"}).ID
			}
			<-entered
			e.stop()
			e.db.Close()
		}
		e := openEnv(t, file, model)
		got := e.deliver.wait(t, 1)
		contains(t, got[0].Text, "interrupted by 4 restarts while running; giving up")
		if n := e.node(id); n.State != StateFailed {
			t.Errorf("state %s", n.State)
		}
	})
}

// The same, across a real process that is killed with SIGKILL in the middle
// of a workflow.
func TestRealProcessRestart(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	file := filepath.Join(t.TempDir(), "reverie.db")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+file)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), "READY "); ok {
				ready <- line
				return
			}
		}
		close(ready)
	}()
	var ids []string
	select {
	case line, ok := <-ready:
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("helper process ended before it was ready")
		}
		ids = strings.Fields(line)
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatal("helper process not ready after 60s")
	}
	if err := cmd.Process.Kill(); err != nil { // SIGKILL: no shutdown at all
		t.Fatal(err)
	}
	cmd.Wait()

	model := newModel()
	e := openEnv(t, file, model)
	// Step one was delivered by the killed process (at least once: it may
	// have died between the hand-over and marking it); two and three now.
	var texts string
	for i := 1; !strings.Contains(texts, "done: step three"); i++ {
		got := e.deliver.wait(t, i)
		texts += got[i-1].Text + "\n"
	}
	if strings.Count(texts, "done: step two") != 1 || strings.Count(texts, "done: step one") > 1 ||
		strings.Index(texts, "done: step two") > strings.Index(texts, "done: step three") {
		t.Fatalf("deliveries: %s", texts)
	}
	reqs := model.reqs("step two")
	if len(reqs) != 1 || !strings.Contains(lastMessage(reqs[0]).Text(), "restarted") {
		t.Errorf("step two was not resumed from its messages: %+v", reqs)
	}
	for _, id := range ids {
		if n := e.node(id); n.State != StateCompleted {
			t.Errorf("%s: %s", id, n.State)
		}
	}
	e.stop()
	if os := e.outcomes(); len(os) != 3 {
		t.Errorf("outcomes: %+v", os)
	}
}

const helperEnv = "WORKFLOW_RESTART_HELPER"

// runHelperProcess is the killed process of TestRealProcessRestart: it
// runs a three-step chain until step two is running, says READY with the
// ids, and waits to be killed.
func runHelperProcess() bool {
	file := os.Getenv(helperEnv)
	if file == "" {
		return false
	}
	fail := func(err error) bool {
		fmt.Fprintln(os.Stderr, "helper:", err)
		os.Exit(3)
		return true
	}
	if effects := os.Getenv(helperCallsEnv); effects != "" {
		if err := killedBetweenCalls(file, effects); err != nil {
			return fail(err)
		}
		return true
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, file)
	if err != nil {
		return fail(err)
	}
	model := newModel()
	var once sync.Once
	running := make(chan struct{})
	model.on("step two", func(ctx context.Context, req llm.Request) (llm.Response, error) {
		once.Do(func() { close(running) })
		return blockUntilDone(ctx, req)
	})
	m, err := Open(ctx, Options{DB: db, Model: model, Deliver: newRecorder()})
	if err != nil {
		return fail(err)
	}
	go m.Run(ctx)
	var ids []string
	for _, obj := range []string{"step one", "step two", "step three"} {
		req := SpawnRequest{Objective: obj, Parent: chat.ThreadID("test:alice")}
		if len(ids) > 0 {
			req.DependsOn = []string{ids[len(ids)-1]}
		}
		res, err := m.Spawn(ctx, req)
		if err != nil {
			return fail(err)
		}
		ids = append(ids, res.ID)
	}
	select {
	case <-running:
	case <-time.After(30 * time.Second):
		return fail(fmt.Errorf("step two did not start"))
	}
	fmt.Printf("READY %s\n", strings.Join(ids, " "))
	time.Sleep(time.Minute) // killed long before
	return fail(fmt.Errorf("not killed"))
}
