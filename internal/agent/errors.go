package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/toolloop"
)

// ErrNotSaved is wrapped by Turn's error when the message or the turn's
// messages could not be stored (a full disk, for instance). A turn whose
// messages cannot be stored stops, and its answer is not delivered as one:
// the caller gets this error, so that nothing is shown that the history
// does not have.
var ErrNotSaved = errors.New("could not be saved")

// ErrRestarting is the cancellation cause (context.Cause) of a turn the
// process's shutdown cut off: its caller resumes or reports it at the next
// start, so the turn does not store its unfinished reply as stopped.
var ErrRestarting = errors.New("the assistant is restarting")

// StoppedNote is the reply (and the stored note) of a turn that was stopped:
// a stop is not a failure (no provider or model name, nothing to fix).
const StoppedNote = "Stopped before the answer was finished; your message is saved."

// ErrorReply is the text a user sees when a turn fails with err: what
// happened, in words, with the provider's own reason when it gave one, and
// what to do about it (providers.Explain). Every text says that the message
// is saved, because it is.
func ErrorReply(err error) string {
	const saved = " Your message is saved."
	switch {
	case errors.Is(err, modelrouter.ErrNoModel):
		return modelrouter.NoModelMessage
	case errors.Is(err, ErrNotSaved):
		return "The answer could not be saved (" + rootCause(err) + "), so it is not shown. Free some disk space or fix the data directory, then send it again." + saved
	case errors.Is(err, context.Canceled):
		return StoppedNote
	}
	if words, ok := providers.Explain(err); ok {
		return words + saved
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "The answer took too long and was stopped. Send it again, or ask for less at once." + saved
	}
	return "Something went wrong while answering (" + rootCause(err) + ")." + saved
}

// ErrorCause is what went wrong, without the chain of what was being done:
// the text of the innermost error, cut.
func ErrorCause(err error) string { return rootCause(err) }

// rootCause is the text of the innermost error (the last one of a join),
// cut: what went wrong without the chain of what was being done.
func rootCause(err error) string {
	for {
		var next error
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			if es := u.Unwrap(); len(es) > 0 {
				next = es[len(es)-1]
			}
		case interface{ Unwrap() error }:
			next = u.Unwrap()
		}
		if next == nil {
			return prompt.MidTruncate(strings.TrimSpace(err.Error()), 200)
		}
		err = next
	}
}

// Limits of DescribeCalls' lines.
const (
	describeArgsChars   = 160
	describeResultChars = 160
	describeMaxCalls    = 20
)

// DescribeCalls lists tool calls for the user, one line each — name, short
// arguments and result — so that a turn that failed or was interrupted
// after its tools ran still says what was done (and the user does not
// repeat it). An Interrupted call is marked as stopped with its effect
// unknown. It returns "" for no calls.
func DescribeCalls(calls []toolloop.CallRecord) string {
	var b strings.Builder
	for i, c := range calls {
		if i == describeMaxCalls {
			fmt.Fprintf(&b, "- … and %d more\n", len(calls)-i)
			break
		}
		b.WriteString("- ")
		b.WriteString(c.Name)
		if args := strings.TrimSpace(string(c.Arguments)); args != "" && args != "{}" {
			b.WriteString(" ")
			b.WriteString(prompt.MidTruncate(oneLine(args), describeArgsChars))
		}
		switch {
		case c.Interrupted:
			b.WriteString(" → stopped before it finished; its effect is unknown")
		case c.IsError:
			b.WriteString(" → failed: ")
			b.WriteString(prompt.MidTruncate(oneLine(c.Result), describeResultChars))
		default:
			b.WriteString(" → ")
			b.WriteString(prompt.MidTruncate(oneLine(c.Result), describeResultChars))
		}
		b.WriteString("\n")
	}
	return strings.TrimSuffix(b.String(), "\n")
}
