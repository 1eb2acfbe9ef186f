package scheduler

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

// fakeRouter records what the dispatcher queues.
type fakeRouter struct {
	mu       sync.Mutex
	notified []chat.Outbound
	events   []struct {
		Thread chat.ThreadID
		Text   string
	}
}

func (r *fakeRouter) Notify(ctx context.Context, out chat.Outbound) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.notified = append(r.notified, out)
	return nil
}

func (r *fakeRouter) EnqueueSystemEvent(ctx context.Context, thread chat.ThreadID, text string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, struct {
		Thread chat.ThreadID
		Text   string
	}{thread, text})
	return nil
}

type fakeSubSessions struct{ got []SubSessionRequest }

func (f *fakeSubSessions) SpawnScheduled(ctx context.Context, req SubSessionRequest) (string, error) {
	f.got = append(f.got, req)
	return "sub_42", nil
}

// Each kind of task through the real Dispatcher: a reminder is delivered
// with no model call; an AI task runs one isolated inference (no history,
// with tools, the thread in the tool context) whose answer goes to the
// thread and whose tokens land on the receipt; a system AI task's answer
// goes to the main thread as a system event; sub_session tasks go to the
// workflow runtime, or run isolated when it is absent.
func TestDispatcher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loc := berlin(t)
		begin := time.Date(2026, 4, 1, 8, 0, 0, 0, loc)
		sleepUntil(begin)
		var toolThread chat.ThreadID
		echo := tool.New("lookup", "look something up", func(ctx context.Context, a struct {
			Q string `json:"q"`
		}) (any, error) {
			call, _ := tool.CallFrom(ctx)
			toolThread = call.Thread
			return "sunny", nil
		})
		model := llmtest.NewScripted(t,
			llmtest.CallTool("lookup", `{"q":"weather"}`).WithUsage(usage(100, 10)).WithCheck(func(r llm.Request) error {
				if len(r.Messages) != 1 || !strings.Contains(r.Messages[0].Text(), "What's the weather?") {
					return errors.New("the isolated inference should see only the task")
				}
				if !strings.Contains(r.System, "sent to the user") || !strings.Contains(r.System, "# Current Time") {
					return errors.New("system prompt lacks the thread-task instructions or the time: " + r.System)
				}
				return nil
			}),
			llmtest.Reply("It is sunny.").WithUsage(usage(120, 5)),
			llmtest.Reply("Nothing needs attention.").WithUsage(usage(50, 5)).WithCheck(func(r llm.Request) error {
				if !strings.Contains(r.System, "system event") {
					return errors.New("system task instructions missing")
				}
				return nil
			}),
		)
		rt := &fakeRouter{}
		subs := &fakeSubSessions{}
		d := &Dispatcher{
			Router:      rt,
			MainThread:  func(context.Context) chat.ThreadID { return "telegram:1" },
			Model:       model,
			Tools:       func() []tool.Tool { return []tool.Tool{echo} },
			Location:    loc,
			SubSessions: subs,
		}
		s := open(t, openDB(t), Options{Executor: d, Location: loc})
		start(t, s)
		at := begin.Add(time.Hour)
		once := Spec{Kind: Once, At: at}
		rem := mustAdd(t, s, NewTask{Text: "call mom", Thread: "web:a", Spec: once})
		// Without a thread, a reminder goes to the main conversation.
		bare := mustAdd(t, s, NewTask{Text: "stretch", Spec: once})
		ai := mustAdd(t, s, NewTask{Text: "weather", AIPrompt: "What's the weather?", Thread: "web:a", Spec: once})
		sleepUntil(at.Add(time.Minute))
		sys := mustAdd(t, s, NewTask{AIPrompt: "Check the backups", Spec: Spec{Kind: Once, At: at.Add(time.Hour)}})
		sleepUntil(at.Add(2 * time.Hour))
		sub := mustAdd(t, s, NewTask{AIPrompt: "Research flights", Thread: "web:a", SubSession: true, Spec: Spec{Kind: Once, At: at.Add(3 * time.Hour)}})
		sleepUntil(at.Add(5 * time.Hour))
		model.AssertDone()

		rt.mu.Lock()
		defer rt.mu.Unlock()
		want := []chat.Outbound{
			{Address: chat.Address{Channel: "web", Thread: "web:a"}, Kind: chat.Notify, Text: "Reminder: call mom"},
			{Address: chat.Address{Channel: "telegram", Thread: "telegram:1"}, Kind: chat.Notify, Text: "Reminder: stretch"},
			{Address: chat.Address{Channel: "web", Thread: "web:a"}, Kind: chat.Notify, Text: "It is sunny."},
		}
		if len(rt.notified) != len(want) {
			t.Fatalf("notified %+v", rt.notified)
		}
		// The reminder and the AI task are due at the same time; their
		// order is not fixed.
		for _, w := range want {
			found := false
			for _, n := range rt.notified {
				found = found || n == w
			}
			if !found {
				t.Errorf("missing %+v in %+v", w, rt.notified)
			}
		}
		if toolThread != "web:a" {
			t.Errorf("tool saw thread %q", toolThread)
		}
		if len(rt.events) != 1 || rt.events[0].Thread != "telegram:1" || !strings.Contains(rt.events[0].Text, "Nothing needs attention.") {
			t.Errorf("system events %+v", rt.events)
		}
		if len(subs.got) != 1 || subs.got[0].Objective != "Research flights" || subs.got[0].Thread != "web:a" || subs.got[0].TaskID != sub.ID {
			t.Errorf("sub-sessions %+v", subs.got)
		}
		check := func(id string, want llm.Usage, reason string) {
			t.Helper()
			rs := receipts(t, s, id)
			if len(rs) != 1 || rs[0].Outcome != OutcomeFired || rs[0].Usage != want || !strings.Contains(rs[0].Reason, reason) {
				t.Errorf("receipts of %s: %+v", id, rs)
			}
		}
		check(rem.ID, llm.Usage{}, "delivered to web:a")
		check(bare.ID, llm.Usage{}, "delivered to telegram:1")
		// The receipt and the done task say where each went.
		for id, want := range map[string]chat.ThreadID{rem.ID: "web:a", bare.ID: "telegram:1", ai.ID: "web:a", sys.ID: ""} {
			if rs := receipts(t, s, id); len(rs) != 1 || rs[0].DeliveredTo != want {
				t.Errorf("receipt of %s delivered to %+v, want %q", id, rs, want)
			}
			if got, err := s.Get(context.Background(), id); err != nil || got.DeliveredTo != want || got.Status != StatusDone {
				t.Errorf("task %s: %+v, %v; want delivered to %q", id, got, err, want)
			}
		}
		check(ai.ID, usage(220, 15), "")
		check(sys.ID, usage(50, 5), "")
		check(sub.ID, llm.Usage{}, "sub-session sub_42 started")
	})
}

func TestDispatcherFailures(t *testing.T) {
	d := &Dispatcher{Router: &fakeRouter{}}
	if _, err := d.RunAIPrompt(context.Background(), Task{ID: "t_1", AIPrompt: "x", Thread: "web:a"}); err == nil {
		t.Error("AI task without a model succeeded")
	}
	d.Model = llmtest.NewScripted(t, llmtest.Reply("  "), llmtest.Fail(errors.New("provider down")))
	if _, err := d.RunAIPrompt(context.Background(), Task{ID: "t_1", AIPrompt: "x", Thread: "web:a"}); err == nil || !strings.Contains(err.Error(), "empty answer") {
		t.Errorf("empty answer: %v", err)
	}
	if _, err := d.RunAIPrompt(context.Background(), Task{ID: "t_1", AIPrompt: "x", Thread: "web:a"}); err == nil || !strings.Contains(err.Error(), "provider down") {
		t.Errorf("provider failure: %v", err)
	}
	d.Model = llmtest.NewScripted(t, llmtest.Reply("Ran without sub-sessions.").WithUsage(usage(1, 1)))
	rep, err := d.RunAIPrompt(context.Background(), Task{ID: "t_1", AIPrompt: "x", Thread: "web:a", SubSession: true})
	if err != nil || rep.Usage != usage(1, 1) || !strings.Contains(rep.Note, "sub-sessions are not available") {
		t.Errorf("sub-session task without sub-sessions: %+v, %v", rep, err)
	}
	if _, err := (&Dispatcher{}).Remind(context.Background(), "web:a", "x"); err == nil {
		t.Error("reminder without a router succeeded")
	}
}
