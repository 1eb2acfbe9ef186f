package apptest

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// The whole app: the model sets a reminder through set_reminder, the
// reminder arrives on the thread without a model call, an AI task runs an
// isolated inference and delivers its answer, a system task reaches the
// main agent as a system event, and /reminders lists what is pending.
func TestRemindersAndTasks(t *testing.T) {
	h := Start(t)
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		last := req.Messages[len(req.Messages)-1]
		user := lastUser(req)
		switch {
		case last.Role == "tool" && strings.Contains(last.Text(), `"set":true`):
			return llmtest.ServerReply{Text: "Done: I'll remind you."}
		case last.Role == "tool":
			return llmtest.ServerReply{Text: "That did not work: " + last.Text()}
		case strings.HasPrefix(user, "Scheduled task"):
			// The isolated inference: no history, only the task.
			if len(req.Messages) != 2 || !strings.Contains(req.Messages[0].Text(), "# Task") {
				return llmtest.ServerReply{Text: "unexpected isolated request"}
			}
			return llmtest.ServerReply{Text: "The backups look fine.", Usage: llm.Usage{InputTokens: 70, OutputTokens: 6}}
		case strings.Contains(user, "Scheduled task") && strings.HasPrefix(user, "[SYSTEM EVENT]"):
			return llmtest.ServerReply{Text: "Heads-up from a background check: " + strings.TrimPrefix(user, "[SYSTEM EVENT] ")[:20]}
		case strings.HasPrefix(user, "[SYSTEM EVENT]"):
			return llmtest.ServerReply{Text: "Hello, I'm Reverie."}
		case strings.Contains(user, "remind me"):
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "set_reminder",
				Arguments: json.RawMessage(`{"text":"stretch","in":"1s"}`)}}}
		default:
			return llmtest.ServerReply{Text: "ok"}
		}
	})

	h.Send(t, "alice", "remind me to stretch in a second")
	msgs := h.Channel.WaitFor(t, "alice", 2)
	if msgs[0].Text != "Done: I'll remind you." {
		t.Fatalf("reply %+v", msgs[0])
	}
	if msgs[1].Text != "Reminder: stretch" || msgs[1].Kind != chat.Notify {
		t.Fatalf("reminder %+v", msgs[1])
	}
	requests := len(h.Model.Requests())

	s := h.App.Scheduler
	ctx, cancelWatch := context.WithCancel(context.Background())
	defer cancelWatch()
	fired := h.App.Bus.Watch(ctx, scheduler.TopicFired, 8)
	thread := chat.NewThreadID(ChannelName, "alice")
	soon := time.Now().Add(time.Second)
	ai, err := s.Add(ctx, scheduler.NewTask{Text: "backups", AIPrompt: "Check the backups", Thread: thread,
		Spec: scheduler.Spec{Kind: scheduler.Once, At: soon}})
	if err != nil {
		t.Fatal(err)
	}
	msgs = h.Channel.WaitFor(t, "alice", 3)
	if msgs[2].Text != "The backups look fine." || msgs[2].Kind != chat.Notify {
		t.Fatalf("AI task answer %+v", msgs[2])
	}
	if got := len(h.Model.Requests()) - requests; got != 1 {
		t.Errorf("the reminder or the AI task made %d model calls, want 1 (the AI task)", got)
	}
	// The receipt is complete once the fired event is out (the answer is
	// delivered before the run is recorded).
	for done := false; !done; {
		select {
		case ev := <-fired:
			done = strings.Contains(string(ev.Payload), `"`+ai.ID+`"`)
		case <-time.After(patience):
			t.Fatal("no fired event for the AI task")
		}
	}
	rs, err := s.Receipts(ctx, ai.ID, 1)
	if err != nil || len(rs) != 1 || rs[0].Outcome != scheduler.OutcomeFired || rs[0].Usage.InputTokens != 70 {
		t.Errorf("AI task receipt %+v, %v", rs, err)
	}

	// A system task's report goes to the main agent on the user's thread.
	if _, err := s.Add(ctx, scheduler.NewTask{AIPrompt: "Check the disk", Spec: scheduler.Spec{Kind: scheduler.Once, At: time.Now().Add(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	msgs = h.Channel.WaitFor(t, "alice", 4)
	if !strings.HasPrefix(msgs[3].Text, "Heads-up from a background check") {
		t.Errorf("system task result %+v", msgs[3])
	}

	if _, err := s.Add(ctx, scheduler.NewTask{Text: "water the plants", Thread: thread,
		Spec: scheduler.Spec{Kind: scheduler.Daily, Time: "09:00"}}); err != nil {
		t.Fatal(err)
	}
	h.Send(t, "alice", "/reminders")
	msgs = h.Channel.WaitFor(t, "alice", 5)
	if !strings.Contains(msgs[4].Text, `reminder "water the plants" — daily at 09:00`) || !strings.Contains(msgs[4].Text, "next: ") {
		t.Errorf("/reminders:\n%s", msgs[4].Text)
	}
	if !strings.Contains(msgs[4].Text, "Delivered in the last week:") || !strings.Contains(msgs[4].Text, `reminder "stretch"`) ||
		!strings.Contains(msgs[4].Text, "to "+string(thread)) {
		t.Errorf("/reminders does not list the delivered reminder with where it went:\n%s", msgs[4].Text)
	}

	// /remind sets one from the channel itself: no model call, then it
	// comes back to the same conversation.
	requests = len(h.Model.Requests())
	h.Send(t, "alice", "/remind in 1s drink water")
	msgs = h.Channel.WaitFor(t, "alice", 7)
	if !strings.HasPrefix(msgs[5].Text, "I'll remind you on ") || msgs[6].Text != "Reminder: drink water" || msgs[6].Kind != chat.Notify {
		t.Errorf("/remind: %+v, %+v", msgs[5], msgs[6])
	}
	if got := len(h.Model.Requests()) - requests; got != 0 {
		t.Errorf("/remind and its reminder made %d model calls, want none", got)
	}
}

// The heartbeat is wired: its job is on the scheduler; a review with
// nothing changed makes no model call; after a pulse change one scout call
// (structured output through the real provider) decides, and its "yes"
// reaches the main agent, which tells the user.
func TestHeartbeat(t *testing.T) {
	// No quiet hours, whatever the time of day the test runs at.
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := "scheduler:\n  heartbeat:\n    quiet_start: \"\"\n    quiet_end: \"\"\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	h := Start(t, WithDataDir(dir))
	if h.App.Config.Scheduler.Heartbeat.QuietStart != "" {
		t.Fatal("quiet hours still set")
	}
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		user := lastUser(req)
		switch {
		case req.ResponseFormat != nil:
			return llmtest.ServerReply{Text: `{"attention":true,"reason":"The passport must be renewed before Friday.","nudge":"Remind the user to renew the passport."}`,
				Usage: llm.Usage{InputTokens: 250, OutputTokens: 25}}
		case strings.HasPrefix(user, "[SYSTEM EVENT] Heartbeat review"):
			return llmtest.ServerReply{Text: "Don't forget the passport before Friday."}
		case strings.HasPrefix(user, "[SYSTEM EVENT]"):
			return llmtest.ServerReply{Text: "Hello, I'm Reverie."}
		default:
			return llmtest.ServerReply{Text: "ok"}
		}
	})
	hb := h.App.Heartbeat
	if hb == nil {
		t.Fatal("no heartbeat")
	}
	ctx := context.Background()
	if job, err := h.App.Scheduler.Get(ctx, "job:heartbeat/review"); err != nil || job.Status != scheduler.StatusActive {
		t.Fatalf("heartbeat job %+v, %v", job, err)
	}
	// The nightly dream is a scheduled job too, offered through the same
	// capability (extension.SchedulerProvider), at dreaming.at.
	if job, err := h.App.Scheduler.Get(ctx, "job:dreaming/nightly"); err != nil || job.Status != scheduler.StatusActive || job.Text != "0 1 * * *" {
		t.Fatalf("dreaming job %+v, %v", job, err)
	}
	h.Send(t, "bob", "hi")
	h.Channel.WaitFor(t, "bob", 1)
	before := len(h.Model.Requests())
	for range 2 { // baseline, then unchanged
		if rep, err := hb.Tick(ctx); err != nil || rep.Usage.Total() != 0 {
			t.Fatalf("idle tick: %+v, %v", rep, err)
		}
	}
	if n := len(h.Model.Requests()) - before; n != 0 {
		t.Fatalf("idle ticks made %d model calls", n)
	}
	if _, err := h.App.Pulse.Add(ctx, pulse.NewItem{Text: "Renew the passport before Friday", Priority: 1}); err != nil {
		t.Fatal(err)
	}
	rep, err := hb.Tick(ctx)
	if err != nil || rep.Usage.Total() != 275 || !strings.HasPrefix(rep.Note, "escalated") {
		t.Fatalf("tick after a change: %+v, %v", rep, err)
	}
	msgs := h.Channel.WaitFor(t, "bob", 2)
	if msgs[1].Text != "Don't forget the passport before Friday." || msgs[1].Kind != chat.Notify {
		t.Errorf("nudge %+v", msgs[1])
	}
	if rep, err := hb.Tick(ctx); err != nil || rep.Usage.Total() != 0 {
		t.Errorf("tick after the review: %+v, %v", rep, err)
	}
}
