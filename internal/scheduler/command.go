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

// ParseRemind reads the arguments of /remind ("in 20m stretch",
// "18:30 call mum", "tomorrow 9:00 dentist", "2026-03-30 09:00 taxes")
// into the time it is due and the reminder text. Times are in loc.
func ParseRemind(args string, now time.Time, loc *time.Location) (time.Time, string, error) {
	words := strings.Fields(args)
	if len(words) >= 3 && strings.EqualFold(words[0], "in") {
		d, err := ParseDuration(words[1])
		if err != nil {
			return time.Time{}, "", fmt.Errorf("%w\n%s", err, RemindUsage)
		}
		if d <= 0 {
			return time.Time{}, "", fmt.Errorf("%w: in must be positive\n%s", ErrInvalidSpec, RemindUsage)
		}
		return now.Add(d), strings.Join(words[2:], " "), nil
	}
	// The longest leading run of words that reads as a time, with at
	// least one word of text after it.
	for n := min(3, len(words)-1); n >= 1; n-- {
		at, err := ParseWhen(strings.Join(words[:n], " "), now, loc)
		if err == nil {
			return at, strings.Join(words[n:], " "), nil
		}
	}
	return time.Time{}, "", ErrRemindUsage
}

// Remind is the /remind command: a one-time reminder delivered to thread.
// It returns the confirmation to show.
func (s *Scheduler) Remind(ctx context.Context, thread chat.ThreadID, args string) (string, error) {
	if strings.TrimSpace(args) == "" {
		return RemindUsage, nil
	}
	at, text, err := ParseRemind(args, s.now(), s.o.Location)
	if err != nil {
		return "", err
	}
	t, err := s.Add(ctx, NewTask{Text: text, Thread: thread, Spec: Spec{Kind: Once, At: at}})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("I'll remind you on %s: %s (%s; /reminders lists them).", FormatTime(t.NextRun, s.o.Location), t.Text, t.ID), nil
}
