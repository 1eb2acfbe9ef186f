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
		{"at a time of day", "at 18:30 call mum", time.Date(2026, 4, 1, 18, 30, 0, 0, loc), "call mum", ""},
		{"tomorrow at", "tomorrow at 9:00 dentist", time.Date(2026, 4, 2, 9, 0, 0, 0, loc), "dentist", ""},
		{"no text", "in 20m", time.Time{}, "", `nothing to remind you of after "in 20m"`},
		{"no text after a time", "tomorrow 9:00", time.Time{}, "", `nothing to remind you of after "tomorrow 9:00"`},
		{"no time", "call  mum", time.Time{}, "", `"call mum" does not start with a time`},
		{"bad duration", "in soon call mum", time.Time{}, "", `"soon" is not a duration (use e.g. 20m, 2h, 1d)`},
		{"not in the future", "in 0m now", time.Time{}, "", `"in 0m" is not in the future`},
	} {
		t.Run(c.name, func(t *testing.T) {
			at, text, err := ParseRemind(c.args, now, loc)
			if c.err != "" {
				if err == nil || err.Error() != c.err || !errors.Is(err, ErrRemindUsage) {
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
		// What it cannot use is answered, not failed: why, and how.
		for args, want := range map[string]string{
			"sometime call mum":      "No reminder was set: \"sometime call mum\" does not start with a time.\n" + RemindUsage,
			"2026-03-31 09:00 taxes": "No reminder was set: Tue 2026-03-31 09:00 CEST is in the past (it is Wed 2026-04-01 08:00 CEST now).",
			"in 20m":                 "No reminder was set: nothing to remind you of after \"in 20m\".\n" + RemindUsage,
		} {
			if got, err := s.Remind(ctx, "telegram:5", args); err != nil || got != want {
				t.Errorf("/remind %s = %q, %v; want %q", args, got, err, want)
			}
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
