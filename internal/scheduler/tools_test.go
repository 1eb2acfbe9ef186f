package scheduler

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/tool"
)

// callTool validates args against the tool's schema (as the tool loop
// does) and calls it from a turn of thread.
func callTool(t *testing.T, s *Scheduler, thread chat.ThreadID, name, args string) (map[string]any, error) {
	t.Helper()
	var tl tool.Tool
	for _, x := range s.Tools() {
		if x.Name() == name {
			tl = x
		}
	}
	if tl == nil {
		t.Fatalf("no tool %s", name)
	}
	if err := tool.Validate(tl, json.RawMessage(args)); err != nil {
		return nil, err
	}
	ctx := context.Background()
	if thread != "" {
		ctx = tool.WithCall(ctx, tool.Call{Thread: thread, Agent: "main"})
	}
	res, err := tl.Call(ctx, json.RawMessage(args))
	if err != nil {
		return nil, err
	}
	var out map[string]any
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatalf("%s result %q: %v", name, res.Content, err)
	}
	return out, nil
}

func TestTools(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		tokyo, err := time.LoadLocation("Asia/Tokyo")
		if err != nil {
			t.Fatal(err)
		}
		sleepUntil(time.Date(2026, 6, 1, 22, 0, 0, 0, tokyo))
		rec := &recorder{}
		s := open(t, openDB(t), Options{Executor: rec, Location: tokyo})
		start(t, s)
		ctx := context.Background()

		// A reminder for tomorrow 9:00 goes to the calling turn's thread.
		out, err := callTool(t, s, "telegram:7", "set_reminder", `{"text":"stand-up","when":"tomorrow 9:00"}`)
		if err != nil {
			t.Fatal(err)
		}
		task := out["task"].(map[string]any)
		id := task["id"].(string)
		if task["thread"] != "telegram:7" || !strings.HasPrefix(task["next_run"].(string), "2026-06-02T09:00:00+09:00") {
			t.Errorf("set_reminder result %v", out)
		}
		// Recurring, system and relative forms.
		if _, err := callTool(t, s, "web:a", "set_reminder", `{"text":"gym","schedule":{"kind":"weekly","weekdays":["mon","thu"],"time":"07:00"}}`); err != nil {
			t.Fatal(err)
		}
		out, err = callTool(t, s, "web:a", "set_reminder", `{"text":"backups","ai_prompt":"Check the backups","thread":"system","schedule":{"kind":"interval","every":"2h","window_start":"08:00","window_end":"20:00"}}`)
		if err != nil {
			t.Fatal(err)
		}
		if task := out["task"].(map[string]any); task["thread"] != SystemThread || task["kind"] != "ai_task" || task["schedule"] != "every 2h between 08:00 and 20:00" {
			t.Errorf("system task %v", task)
		}
		out, err = callTool(t, s, "sub_9", "set_reminder", `{"text":"tea","in":"20m"}`)
		if err != nil {
			t.Fatal(err)
		}
		if task := out["task"].(map[string]any); task["kind"] != "reminder" || task["thread"] != nil {
			t.Errorf("a sub-session's reminder should go to the user's main conversation: %v", task)
		}
		out, err = callTool(t, s, "web:a", "set_reminder", `{"text":"NY call","when":"2026-06-02 09:00","zone":"America/New_York"}`)
		if err != nil {
			t.Fatal(err)
		}
		if ny := out["task"].(map[string]any); !strings.HasPrefix(ny["next_run"].(string), "2026-06-02T22:00:00+09:00") {
			t.Errorf("zoned reminder %v", ny)
		}

		// Bad input is an error for the model; nothing is stored.
		for _, bad := range []struct{ thread, args, want string }{
			{"web:a", `{"text":"x"}`, "give when or in"},
			{"web:a", `{"text":"x","when":"2026-06-01 08:00"}`, "not after now"},
			{"web:a", `{"text":"x","when":"18:00","in":"2h"}`, "not both"},
			{"web:a", `{"text":"x","when":"soonish"}`, "want a date and time"},
			{"web:a", `{"text":"x","in":"2h","zone":"Mars/Base"}`, "unknown time zone"},
			{"web:a", `{"text":"x","schedule":{"kind":"cron","cron":"99 * * * *"}}`, "invalid schedule"},
			{"web:a", `{"text":"x","schedule":{"kind":"interval","every":"0s"}}`, "must be positive"},
			{"web:a", `{"text":"x","schedule":{"kind":"weekly","weekdays":["someday"],"time":"07:00"}}`, "someday"},
			{"", `{"text":"x","in":"1h"}`, "no conversation"},
			{"web:a", `{"text":"x","in":"1h","colour":"red"}`, "colour"},
		} {
			if _, err := callTool(t, s, chat.ThreadID(bad.thread), "set_reminder", bad.args); err == nil || !strings.Contains(err.Error(), bad.want) {
				t.Errorf("set_reminder %s: err = %v, want it to mention %q", bad.args, err, bad.want)
			}
		}

		out, err = callTool(t, s, "web:a", "list_reminders", `{}`)
		if err != nil {
			t.Fatal(err)
		}
		if tasks := out["tasks"].([]any); len(tasks) != 5 || tasks[0].(map[string]any)["title"] != "tea" {
			t.Errorf("list_reminders %v", out)
		}
		out, err = callTool(t, s, "web:a", "list_reminders", `{"thread":"telegram:7"}`)
		if err != nil || len(out["tasks"].([]any)) != 1 {
			t.Errorf("list_reminders for a thread: %v, %v", out, err)
		}

		if _, err := callTool(t, s, "web:a", "task_control", `{"id":"`+id+`","action":"pause"}`); err != nil {
			t.Fatal(err)
		}
		if got, _ := s.Get(ctx, id); got.Status != StatusPaused {
			t.Errorf("paused status %s", got.Status)
		}
		if _, err := callTool(t, s, "web:a", "task_control", `{"id":"`+id+`","action":"resume"}`); err != nil {
			t.Fatal(err)
		}
		if _, err := callTool(t, s, "web:a", "task_control", `{"id":"`+id+`","action":"explode"}`); err == nil {
			t.Error("unknown action accepted")
		}
		out, err = callTool(t, s, "web:a", "cancel_reminder", `{"id":"`+id+`"}`)
		if err != nil || out["cancelled"] != true {
			t.Fatalf("cancel: %v, %v", out, err)
		}
		if _, err := callTool(t, s, "web:a", "cancel_reminder", `{"id":"t_deadbeef"}`); err == nil || !strings.Contains(err.Error(), "list_reminders shows the ids") {
			t.Errorf("hallucinated id: %v", err)
		}

		sleepUntil(time.Date(2026, 6, 2, 10, 0, 0, 0, tokyo))
		var tea []delivery
		for _, d := range rec.deliveries() {
			if d.Kind == KindReminder && d.Thread == chat.DefaultThread && d.Text == "Reminder: tea" {
				tea = append(tea, d)
			}
		}
		if len(tea) != 1 || !tea[0].At.Equal(time.Date(2026, 6, 1, 22, 20, 0, 0, tokyo)) {
			t.Errorf("tea ran %+v", tea)
		}
		if got := rec.byText("stand-up"); len(got) != 0 {
			t.Errorf("cancelled reminder ran %v", got)
		}
		sum, err := s.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"reminder \"gym\" — weekly on mon, thu at 07:00", "AI task \"backups\"", "next: ", "last: fired"} {
			if !strings.Contains(sum, want) {
				t.Errorf("summary lacks %q:\n%s", want, sum)
			}
		}
	})
}
