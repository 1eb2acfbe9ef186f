package scheduler

import (
	"context"
	"errors"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestParseRemind(t *testing.T) {
	loc := berlin(t)
	now := time.Date(2026, 4, 1, 8, 0, 0, 0, loc)
	for _, c := range []struct {
		name, args string
		at         time.Time
		text       string
		err        string
	}{
		{"relative", "in 20m stretch your legs", now.Add(20 * time.Minute), "stretch your legs", ""},
		{"relative days", "IN 1d water the plants", now.Add(24 * time.Hour), "water the plants", ""},
		{"time of day", "18:30 call mum", time.Date(2026, 4, 1, 18, 30, 0, 0, loc), "call mum", ""},
		{"passed time of day is tomorrow", "07:00 run", time.Date(2026, 4, 2, 7, 0, 0, 0, loc), "run", ""},
		{"tomorrow", "tomorrow 9:00 dentist at 10", time.Date(2026, 4, 2, 9, 0, 0, 0, loc), "dentist at 10", ""},
		{"date and time", "2026-04-30 09:00 file the taxes", time.Date(2026, 4, 30, 9, 0, 0, 0, loc), "file the taxes", ""},
		{"no text", "in 20m", time.Time{}, "", "Usage: /remind"},
		{"no time", "call mum", time.Time{}, "", "Usage: /remind"},
		{"bad duration", "in soon call mum", time.Time{}, "", "Usage: /remind"},
	} {
		t.Run(c.name, func(t *testing.T) {
			at, text, err := ParseRemind(c.args, now, loc)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("ParseRemind(%q) = %v, %q, %v; want an error with %q", c.args, at, text, err, c.err)
				}
				return
			}
			if err != nil || !at.Equal(c.at) || text != c.text {
				t.Fatalf("ParseRemind(%q) = %v, %q, %v; want %v, %q", c.args, at, text, err, c.at, c.text)
			}
		})
	}
}

// /remind sets a one-time reminder for the thread it is typed in; when due
// it is delivered there as "Reminder: …" and /reminders lists it among the
// delivered ones, with when and where.
func TestRemindCommand(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		loc := berlin(t)
		begin := time.Date(2026, 4, 1, 8, 0, 0, 0, loc)
		sleepUntil(begin)
		rec := &recorder{}
		s := open(t, openDB(t), Options{Executor: rec, Location: loc})
		start(t, s)
		ctx := context.Background()

		usage, err := s.Remind(ctx, "telegram:5", "")
		if err != nil || usage != RemindUsage {
			t.Errorf("/remind alone = %q, %v", usage, err)
		}
		if _, err := s.Remind(ctx, "telegram:5", "sometime call mum"); !errors.Is(err, ErrRemindUsage) {
			t.Errorf("/remind without a time: %v", err)
		}
		got, err := s.Remind(ctx, "telegram:5", "in 20m stretch")
		if err != nil || !strings.HasPrefix(got, "I'll remind you on Wed 2026-04-01 08:20 CEST: stretch (t_") {
			t.Fatalf("/remind = %q, %v", got, err)
		}
		sleepUntil(begin.Add(time.Hour))
		ds := rec.deliveries()
		if len(ds) != 1 || ds[0].Thread != "telegram:5" || ds[0].Text != "Reminder: stretch" || !ds[0].At.Equal(begin.Add(20*time.Minute)) {
			t.Fatalf("deliveries %+v", ds)
		}
		sum, err := s.Summary(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(sum, "Delivered in the last week:") || !strings.Contains(sum, `reminder "stretch"`) ||
			!strings.Contains(sum, "last: fired Wed 2026-04-01 08:20 CEST to telegram:5") {
			t.Errorf("/reminders after the delivery:\n%s", sum)
		}
	})
}
