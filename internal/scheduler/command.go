package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
)

// RemindUsage explains the /remind command.
const RemindUsage = "Usage: /remind WHEN TEXT — WHEN is in 20m, in 2h, 18:30, tomorrow 9:00 or 2026-03-30 09:00. " +
	"The reminder comes back to this conversation as \"Reminder: TEXT\", with no model call."

// ErrRemindUsage: /remind's arguments do not say when and what.
var ErrRemindUsage = errors.New(RemindUsage)

// remindRefusal is ParseRemind's error: what in the arguments it could not
// read, as a phrase ("\"9am dentist\" does not start with a time"). It is an
// ErrRemindUsage.
type remindRefusal struct{ reason string }

func (r remindRefusal) Error() string { return r.reason }
func (r remindRefusal) Unwrap() error { return ErrRemindUsage }

// ParseRemind reads the arguments of /remind ("in 20m stretch",
// "18:30 call mum", "at 18:30 call mum", "tomorrow 9:00 dentist",
// "2026-03-30 09:00 taxes") into the time it is due and the reminder text.
// Times are in loc. Arguments it cannot read are an ErrRemindUsage whose
// text says why.
func ParseRemind(args string, now time.Time, loc *time.Location) (time.Time, string, error) {
	words := strings.Fields(args)
	if len(words) > 0 && strings.EqualFold(words[0], "in") {
		if len(words) < 3 {
			return time.Time{}, "", remindRefusal{fmt.Sprintf("nothing to remind you of after %q", strings.Join(words, " "))}
		}
		d, err := ParseDuration(words[1])
		if err != nil {
			return time.Time{}, "", remindRefusal{fmt.Sprintf("%q is not a duration (use e.g. 20m, 2h, 1d)", words[1])}
		}
		if d <= 0 {
			return time.Time{}, "", remindRefusal{fmt.Sprintf("%q is not in the future", strings.Join(words[:2], " "))}
		}
		return now.Add(d), strings.Join(words[2:], " "), nil
	}
	// "at 18:30 call mum" as "18:30 call mum".
	if len(words) > 0 && strings.EqualFold(words[0], "at") {
		words = words[1:]
	}
	// The longest leading run of words that reads as a time, with at
	// least one word of text after it.
	for n := min(3, len(words)-1); n >= 1; n-- {
		at, err := ParseWhen(strings.Join(words[:n], " "), now, loc)
		if err == nil {
			return at, strings.Join(words[n:], " "), nil
		}
	}
	for n := min(3, len(words)); n >= 1; n-- {
		if _, err := ParseWhen(strings.Join(words[:n], " "), now, loc); err == nil {
			return time.Time{}, "", remindRefusal{fmt.Sprintf("nothing to remind you of after %q", strings.Join(words[:n], " "))}
		}
	}
	return time.Time{}, "", remindRefusal{fmt.Sprintf("%q does not start with a time", strings.Join(strings.Fields(args), " "))}
}

// Remind is the /remind command: a one-time reminder delivered to thread.
// It returns the confirmation to show. Arguments it cannot use (no time, no
// text, a time that has passed) are answered, not failed: what was wrong,
// that nothing was set, and how to write it.
func (s *Scheduler) Remind(ctx context.Context, thread chat.ThreadID, args string) (string, error) {
	if strings.TrimSpace(args) == "" {
		return RemindUsage, nil
	}
	at, text, err := ParseRemind(args, s.now(), s.o.Location)
	if errors.Is(err, ErrRemindUsage) {
		return fmt.Sprintf("No reminder was set: %v.\n%s", err, RemindUsage), nil
	}
	if err != nil {
		return "", err
	}
	t, err := s.Add(ctx, NewTask{Text: text, Thread: thread, Spec: Spec{Kind: Once, At: at}})
	if errors.Is(err, ErrPast) {
		return fmt.Sprintf("No reminder was set: %s is in the past (it is %s now).", FormatTime(at, s.o.Location),
			FormatTime(s.now(), s.o.Location)), nil
	}
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("I'll remind you on %s: %s (%s; /reminders lists them).", FormatTime(t.NextRun, s.o.Location), t.Text, t.ID), nil
}
