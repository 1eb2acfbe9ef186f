package workflow

import (
	"bufio"
	"context"
	"errors"
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

	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/textclip"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// sideEffects is a tool "send" whose every call has an effect the test
// counts: started and finished calls per text. A callGate, when set for a
// text, holds the first such call until released (ignoring ctx) or, with
// untilCancelled, until the call's context ends.
type sideEffects struct {
	mu       sync.Mutex
	started  map[string]int
	finished map[string]int
	gates    map[string]callGate
}

type callGate struct {
	entered        chan struct{}
	release        chan struct{}
	untilCancelled bool
}

func newSideEffects() *sideEffects {
	return &sideEffects{started: map[string]int{}, finished: map[string]int{}, gates: map[string]callGate{}}
}

func (s *sideEffects) hold(text string, untilCancelled bool) callGate {
	s.mu.Lock()
	defer s.mu.Unlock()
	g := callGate{entered: make(chan struct{}), release: make(chan struct{}), untilCancelled: untilCancelled}
	s.gates[text] = g
	return g
}

func (s *sideEffects) counts(text string) (started, finished int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.started[text], s.finished[text]
}

func (s *sideEffects) tools() []tool.Tool {
	send := func(ctx context.Context, a struct {
		Text string `json:"text"`
	}) (any, error) {
		s.mu.Lock()
		s.started[a.Text]++
		g, held := s.gates[a.Text]
		delete(s.gates, a.Text) // only the first call is held
		s.mu.Unlock()
		if held {
			close(g.entered)
			if g.untilCancelled {
				<-ctx.Done()
				return nil, ctx.Err()
			}
			<-g.release
		}
		s.mu.Lock()
		s.finished[a.Text]++
		s.mu.Unlock()
		return "sent " + a.Text, nil
	}
	return []tool.Tool{tool.New("send", "send a message", send, tool.WithCategories("execution"))}
}

// withTools gives the workers fx's tools and runs one call at a time, so
// that "between two calls" is well defined.
func withTools(fx *sideEffects) envOption {
	return func(o *Options) {
		o.Tools = fx.tools
		o.Loop.Parallel = 1
	}
}

// twoSends is a worker's model: one round sending "first" and "second",
// then a report naming the results it saw.
func twoSends(ctx context.Context, req llm.Request) (llm.Response, error) {
	for _, m := range slices.Backward(req.Messages) {
		if m.Role == llm.RoleAssistant {
			return reply(fmt.Sprintf("reported after %d messages", len(req.Messages))), nil
		}
	}
	return callTools(call("send", map[string]string{"text": "first"}), call("send", map[string]string{"text": "second"})), nil
}

// checkValid fails unless msgs is a list both providers accept: every
// tool call answered by exactly one result, the results right after the
// message that made the calls, and no other tool results.
func checkValid(t testing.TB, msgs []llm.Message) {
	t.Helper()
	for i := 0; i < len(msgs); i++ {
		m := msgs[i]
		if m.Role == llm.RoleTool {
			t.Fatalf("message %d: a tool result that follows no call: %s", i, describe(msgs))
		}
		calls := m.ToolCalls()
		if len(calls) == 0 {
			continue
		}
		want := map[string]bool{}
		for _, c := range calls {
			want[c.ID] = true
		}
		for range calls {
			i++
			id, ok := "", false
			if i < len(msgs) {
				id, ok = resultID(msgs[i])
			}
			if !ok || !want[id] {
				t.Fatalf("message %d: call of message %d not answered in place: %s", i, i-1, describe(msgs))
			}
			delete(want, id)
		}
	}
}

func describe(msgs []llm.Message) string {
	var s []string
	for _, m := range msgs {
		switch id, ok := resultID(m); {
		case ok:
			s = append(s, "result "+id)
		case len(m.ToolCalls()) > 0:
			var ids []string
			for _, c := range m.ToolCalls() {
				ids = append(ids, c.ID)
			}
			s = append(s, string(m.Role)+" calls "+strings.Join(ids, ","))
		default:
			s = append(s, string(m.Role)+": "+textclip.Line(m.Text(), 40))
		}
	}
	return "[" + strings.Join(s, " | ") + "]"
}

// A stop (or crash) between two calls of one round, then a restart on the
// same database: the first call's result was saved before the second
// started, so it is not run again; the second, which never finished, runs
// once; the resumed list is valid and shows the model both results.
func TestStopBetweenCallsOfARound(t *testing.T) {
	tests := []struct {
		name string
		// secondStarted: the stop came while the second call ran (its
		// cancelled result is not saved) rather than before it started.
		secondStarted bool
	}{
		{"before the second call starts", false},
		{"while the second call runs", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				file := filepath.Join(t.TempDir(), "reverie.db")
				fx := newSideEffects()
				first := newModel()
				first.on("notify", twoSends)
				e1 := openEnv(t, file, first, withTools(fx))
				held := "first"
				if tt.secondStarted {
					held = "second"
				}
				g := fx.hold(held, tt.secondStarted)
				a := e1.spawn(SpawnRequest{Objective: "notify"})
				<-g.entered

				if tt.secondStarted {
					synctest.Wait()
					// Saved while the second call runs: the assistant
					// message and the first result.
					msgs, err := e1.m.Messages(context.Background(), a.ID)
					if err != nil {
						t.Fatal(err)
					}
					if got := describe(msgs); got != "[user: "+textclip.Line(startNote, 40)+" | assistant calls c0,c1 | result c0]" {
						t.Errorf("saved while the second call runs: %s", got)
					}
					if n := e1.node(a.ID); n.ToolCalls != 1 {
						t.Errorf("tool calls while the second runs: %d", n.ToolCalls)
					}
					e1.stop()
				} else {
					// The first call finishes after the stop began: the
					// second never starts.
					stopped := make(chan struct{})
					go func() { e1.stop(); close(stopped) }()
					synctest.Wait()
					close(g.release)
					<-stopped
				}
				if started, finished := fx.counts("first"); started != 1 || finished != 1 {
					t.Fatalf("first call before the restart: started %d, finished %d", started, finished)
				}
				if n := e1.node(a.ID); n.State != StateRunning || n.ToolCalls != 1 {
					t.Fatalf("before the restart: %+v", n)
				}
				e1.db.Close()

				second := newModel()
				second.on("notify", twoSends)
				e2 := openEnv(t, file, second, withTools(fx))
				got := e2.deliver.wait(t, 1)
				contains(t, got[0].Text, "reported after 5 messages")
				if started, finished := fx.counts("first"); started != 1 || finished != 1 {
					t.Errorf("first call repeated: started %d, finished %d", started, finished)
				}
				wantStarts := 1
				if tt.secondStarted {
					wantStarts = 2
				}
				if started, finished := fx.counts("second"); started != wantStarts || finished != 1 {
					t.Errorf("second call: started %d, finished %d", started, finished)
				}
				reqs := second.reqs("notify")
				if len(reqs) != 1 {
					t.Fatalf("%d model calls after the restart, want 1 (the report)", len(reqs))
				}
				checkValid(t, reqs[0].Messages)
				want := "[user: " + textclip.Line(startNote, 40) + " | assistant calls c0,c1 | result c0 | result c1 | user: " + textclip.Line(resumeNote, 40) + "]"
				if got := describe(reqs[0].Messages); got != want {
					t.Errorf("resumed with\n%s\nwant\n%s", got, want)
				}
				contains(t, reqs[0].Messages[2].Parts[0].(llm.ToolResult).Content, "sent first")
				contains(t, reqs[0].Messages[3].Parts[0].(llm.ToolResult).Content, "sent second")

				e2.stop()
				msgs, err := e2.m.Messages(context.Background(), a.ID)
				if err != nil {
					t.Fatal(err)
				}
				checkValid(t, msgs)
				if len(msgs) != 6 || msgs[5].Text() != "reported after 5 messages" {
					t.Errorf("final list %s", describe(msgs))
				}
				if n := e2.node(a.ID); n.State != StateCompleted || n.ToolCalls != 2 {
					t.Errorf("after the restart: %+v", n)
				}
			})
		})
	}
}

// A run that times out between two calls of a round: the continuation
// does not repeat the finished call and runs the one the timeout cut off.
func TestTimeoutBetweenCallsOfARound(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fx := newSideEffects()
		e := newEnv(t, withTools(fx))
		e.model.on("notify", twoSends)
		fx.hold("second", true) // runs until the worker's minute is up
		start := time.Now()
		a := e.spawn(SpawnRequest{Objective: "notify", Timeout: time.Minute})
		got := e.deliver.wait(t, 1)
		if d := time.Since(start); d < time.Minute || d > time.Minute+time.Second {
			t.Errorf("took %s of fake time, want one timeout", d)
		}
		contains(t, got[0].Text, "after 1 continuation(s)")
		contains(t, got[0].Text, "reported after 5 messages")
		if started, finished := fx.counts("first"); started != 1 || finished != 1 {
			t.Errorf("first call: started %d, finished %d", started, finished)
		}
		if started, finished := fx.counts("second"); started != 2 || finished != 1 {
			t.Errorf("second call: started %d, finished %d", started, finished)
		}
		reqs := e.model.reqs("notify")
		last := reqs[len(reqs)-1]
		checkValid(t, last.Messages)
		contains(t, last.Messages[4].Text(), "continuation 1 of at most 3")

		w, err := e.m.GetWorkflow(context.Background(), a.Workflow)
		if err != nil || len(w.Nodes) != 2 {
			t.Fatalf("workflow %+v, %v", w, err)
		}
		if w.Nodes[0].ToolCalls != 1 || w.Nodes[1].ToolCalls != 1 {
			t.Errorf("tool calls per hop: %d, %d", w.Nodes[0].ToolCalls, w.Nodes[1].ToolCalls)
		}
		for _, n := range w.Nodes {
			msgs, err := e.m.Messages(context.Background(), n.ID)
			if err != nil {
				t.Fatal(err)
			}
			if n.State == StateCompleted {
				checkValid(t, msgs)
			}
		}
	})
}

// Results saved in completion order (parallel calls), and a note appended
// while a round was unfinished, load in call order.
func TestInCallOrder(t *testing.T) {
	asst := func(ids ...string) llm.Message {
		m := llm.Message{Role: llm.RoleAssistant}
		for _, id := range ids {
			m.Parts = append(m.Parts, llm.ToolCall{ID: id, Name: "send"})
		}
		return m
	}
	res := func(id string) llm.Message {
		return llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: id, Name: "send"}}}
	}
	user, final := llm.UserText("note"), llm.AssistantText("done")
	tests := []struct {
		name          string
		in, want      []llm.Message
		wantUnanswerd []string
	}{
		{"empty", nil, []llm.Message{}, nil},
		{"already in order", []llm.Message{user, asst("a", "b"), res("a"), res("b"), final},
			[]llm.Message{user, asst("a", "b"), res("a"), res("b"), final}, nil},
		{"completion order", []llm.Message{user, asst("a", "b", "c"), res("c"), res("a"), res("b")},
			[]llm.Message{user, asst("a", "b", "c"), res("a"), res("b"), res("c")}, nil},
		{"note before the rest of the round", []llm.Message{user, asst("a", "b", "c"), res("b"), user, res("c"), user},
			[]llm.Message{user, asst("a", "b", "c"), res("b"), res("c"), user, user}, []string{"a"}},
		{"unfinished round", []llm.Message{user, asst("a", "b"), res("a"), user},
			[]llm.Message{user, asst("a", "b"), res("a"), user}, []string{"b"}},
		{"no result yet", []llm.Message{user, asst("a", "b")}, []llm.Message{user, asst("a", "b")}, []string{"a", "b"}},
		{"ids reused by a later round", []llm.Message{user, asst("a"), res("a"), asst("a", "b"), res("b"), user, res("a")},
			[]llm.Message{user, asst("a"), res("a"), asst("a", "b"), res("a"), res("b"), user}, nil},
		{"a result after a final answer stays", []llm.Message{asst("a"), res("a"), final, res("a")},
			[]llm.Message{asst("a"), res("a"), final, res("a")}, nil},
		{"a result answering nothing stays", []llm.Message{asst("a"), res("x"), res("a")},
			[]llm.Message{asst("a"), res("a"), res("x")}, nil},
		{"a second result for a call stays", []llm.Message{asst("a", "b"), res("a"), user, res("a"), res("b")},
			[]llm.Message{asst("a", "b"), res("a"), res("b"), user, res("a")}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := inCallOrder(tt.in)
			if describe(got) != describe(tt.want) || len(got) != len(tt.want) {
				t.Errorf("inCallOrder\n got %s\nwant %s", describe(got), describe(tt.want))
			}
			var ids []string
			for _, c := range unanswered(got) {
				ids = append(ids, c.ID)
			}
			if !slices.Equal(ids, tt.wantUnanswerd) {
				t.Errorf("unanswered = %v, want %v", ids, tt.wantUnanswerd)
			}
		})
	}
}

const helperCallsEnv = "WORKFLOW_RESTART_HELPER_EFFECTS"

// fileEffects is a tool "send" that records "started <text>" and
// "finished <text>" lines in a file shared by the processes of a test;
// with block, a call for "second" never finishes.
func fileEffects(path string, block bool) []tool.Tool {
	record := func(line string) error {
		f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintln(f, line)
		return errors.Join(err, f.Close())
	}
	send := func(ctx context.Context, a struct {
		Text string `json:"text"`
	}) (any, error) {
		if err := record("started " + a.Text); err != nil {
			return nil, err
		}
		if block && a.Text == "second" {
			fmt.Println("READY")
			<-ctx.Done() // killed long before
			return nil, ctx.Err()
		}
		if err := record("finished " + a.Text); err != nil {
			return nil, err
		}
		return "sent " + a.Text, nil
	}
	return []tool.Tool{tool.New("send", "send a message", send, tool.WithCategories("execution"))}
}

// killedBetweenCalls is the process TestKilledBetweenCallsOfARound kills:
// its worker's first call finishes, the second runs when it says READY.
func killedBetweenCalls(file, effects string) error {
	ctx := context.Background()
	db, err := sqlite.Open(ctx, file)
	if err != nil {
		return err
	}
	model := newModel()
	model.on("notify", twoSends)
	m, err := Open(ctx, Options{DB: db, Model: model, Deliver: newRecorder(),
		Tools: func() []tool.Tool { return fileEffects(effects, true) }, Loop: toolloop.Options{Parallel: 1}})
	if err != nil {
		return err
	}
	go m.Run(ctx)
	if _, err := m.Spawn(ctx, SpawnRequest{Objective: "notify", Parent: thread}); err != nil {
		return err
	}
	time.Sleep(time.Minute) // killed long before
	return errors.New("not killed")
}

// A real process killed (SIGKILL) while the second call of a round runs:
// after the restart the first call is not repeated and the second runs.
func TestKilledBetweenCallsOfARound(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	file, effects := filepath.Join(dir, "reverie.db"), filepath.Join(dir, "effects.txt")
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+file, helperCallsEnv+"="+effects)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make(chan bool, 1)
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			if sc.Text() == "READY" {
				ready <- true
				return
			}
		}
		ready <- false
	}()
	select {
	case ok := <-ready:
		if !ok {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatal("helper process ended before it was ready")
		}
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
	model.on("notify", twoSends)
	e := openEnv(t, file, model, func(o *Options) {
		o.Tools = func() []tool.Tool { return fileEffects(effects, false) }
		o.Loop.Parallel = 1
	})
	got := e.deliver.wait(t, 1)
	contains(t, got[0].Text, "reported after 5 messages")
	b, err := os.ReadFile(effects)
	if err != nil {
		t.Fatal(err)
	}
	want := "started first\nfinished first\nstarted second\nstarted second\nfinished second\n"
	if string(b) != want {
		t.Errorf("side effects:\n%s\nwant\n%s", b, want)
	}
	reqs := model.reqs("notify")
	if len(reqs) != 1 {
		t.Fatalf("%d model calls after the restart, want 1", len(reqs))
	}
	checkValid(t, reqs[0].Messages)
	e.stop()
	var id string
	if err := e.db.QueryRow(`SELECT id FROM workflow_nodes`).Scan(&id); err != nil {
		t.Fatal(err)
	}
	msgs, err := e.m.Messages(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	checkValid(t, msgs)
	if n := e.node(id); len(msgs) != 6 || n.State != StateCompleted || n.ToolCalls != 2 {
		t.Errorf("after the restart: %s, %+v", describe(msgs), n)
	}
}
