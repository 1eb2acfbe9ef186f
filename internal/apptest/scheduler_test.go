package apptest

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
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
	msgs := h.Channel.WaitFor(t, "alice", 3)
	if msgs[1].Text != "Done: I'll remind you." {
		t.Fatalf("reply %+v", msgs[1])
	}
	if msgs[2].Text != "Reminder: stretch" || msgs[2].Kind != chat.Notify {
		t.Fatalf("reminder %+v", msgs[2])
	}
	requests := len(h.Model.Requests())

	s := h.App.Scheduler
	ctx := context.Background()
	thread := chat.NewThreadID(ChannelName, "alice")
	soon := time.Now().Add(time.Second)
	ai, err := s.Add(ctx, scheduler.NewTask{Text: "backups", AIPrompt: "Check the backups", Thread: thread,
		Spec: scheduler.Spec{Kind: scheduler.Once, At: soon}})
	if err != nil {
		t.Fatal(err)
	}
	msgs = h.Channel.WaitFor(t, "alice", 4)
	if msgs[3].Text != "The backups look fine." || msgs[3].Kind != chat.Notify {
		t.Fatalf("AI task answer %+v", msgs[3])
	}
	if got := len(h.Model.Requests()) - requests; got != 1 {
		t.Errorf("the reminder or the AI task made %d model calls, want 1 (the AI task)", got)
	}
	rs, err := s.Receipts(ctx, ai.ID, 1)
	if err != nil || len(rs) != 1 || rs[0].Outcome != scheduler.OutcomeFired || rs[0].Usage.InputTokens != 70 {
		t.Errorf("AI task receipt %+v, %v", rs, err)
	}

	// A system task's report goes to the main agent on the user's thread.
	if _, err := s.Add(ctx, scheduler.NewTask{AIPrompt: "Check the disk", Spec: scheduler.Spec{Kind: scheduler.Once, At: time.Now().Add(time.Second)}}); err != nil {
		t.Fatal(err)
	}
	msgs = h.Channel.WaitFor(t, "alice", 5)
	if !strings.HasPrefix(msgs[4].Text, "Heads-up from a background check") {
		t.Errorf("system task result %+v", msgs[4])
	}

	if _, err := s.Add(ctx, scheduler.NewTask{Text: "water the plants", Thread: thread,
		Spec: scheduler.Spec{Kind: scheduler.Daily, Time: "09:00"}}); err != nil {
		t.Fatal(err)
	}
	h.Send(t, "alice", "/reminders")
	msgs = h.Channel.WaitFor(t, "alice", 6)
	if !strings.Contains(msgs[5].Text, `reminder "water the plants" — daily at 09:00`) || !strings.Contains(msgs[5].Text, "next: ") {
		t.Errorf("/reminders:\n%s", msgs[5].Text)
	}
}
