package apptest

import (
	"context"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/scheduler"
)

// TestCommandRefusalsAreAnswers: a slash command given words it does not
// take answers what was wrong and how to say it, as a reply, never as
// "/x failed: …" (which channels show as an error and `reverie send`
// exits 1 on), and changes nothing.
func TestCommandRefusalsAreAnswers(t *testing.T) {
	h := Start(t)
	ctx := context.Background()
	thread := chat.NewThreadID(ChannelName, "erin")
	for _, c := range []struct{ text, want string }{
		{"/pulse bogus", "Usage: /pulse (the active items), or /pulse all (recently closed items too)."},
		{"/voice loud", `Unknown voice mode "loud": nothing changed. Use /voice off, /voice when_spoken_to, /voice always or /voice default.`},
		{"/remind 9am dentist", "No reminder was set: \"9am dentist\" does not start with a time.\n" +
			"Usage: /remind WHEN TEXT — WHEN is in 20m, in 2h, 18:30, tomorrow 9:00 or 2026-03-30 09:00. " +
			"The reminder comes back to this conversation as \"Reminder: TEXT\", with no model call."},
		{"/dream revert 99", "Dream #99 not found."},
	} {
		t.Run(c.text, func(t *testing.T) {
			res, err := h.App.Router.Handle(ctx, chat.Inbound{Address: chat.Address{Channel: ChannelName, Thread: thread}, Text: c.text})
			if err != nil || res.Reply != c.want {
				t.Errorf("%s = %q, %v\nwant %q", c.text, res.Reply, err, c.want)
			}
		})
	}
	if mode, own, err := h.App.Voice.Mode(ctx, thread); err != nil || own {
		t.Errorf("the refused /voice set the mode: %q, own %v, %v", mode, own, err)
	}
	if tasks, err := h.App.Scheduler.List(ctx, scheduler.ListOptions{Thread: thread}); err != nil || len(tasks) != 0 {
		t.Errorf("the refused /remind left tasks: %+v, %v", tasks, err)
	}
}
