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

// ErrorReply is the text a user sees when a turn fails with err. Every text
// says that the message is saved, because it is.
func ErrorReply(err error) string {
	cause := describe(err)
	switch {
	case errors.Is(err, modelrouter.ErrNoModel):
		return modelrouter.NoModelMessage
	case errors.Is(err, ErrNotSaved):
		return "The answer could not be saved (" + cause + "), so it is not shown; your message is saved. Try again once the problem is fixed."

	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "The answer was interrupted before it was finished (" + cause + "); your message is saved."
	case errors.Is(err, providers.ErrAuth):
		return "The model provider rejected the credentials (" + cause + "); check the API key. Your message is saved."
	case errors.Is(err, providers.ErrNotFound):
		return "The configured model was not found (" + cause + "); check the model name. Your message is saved."
	case errors.Is(err, providers.ErrUnavailable):
		return "The model is unavailable right now (" + cause + "); your message is saved. Try again in a moment."
	case errors.Is(err, providers.ErrBadRequest):
		return "The model rejected the request (" + cause + "); your message is saved."
	case errors.Is(err, providers.ErrBadResponse):
		return "The model sent an invalid response (" + cause + "); your message is saved. Try again."
	default:
		return "Something went wrong while answering (" + cause + "); your message is saved."
	}
}

// describe is a short cause for ErrorReply: provider, model and HTTP status
// when known, else the error text, cut.
func describe(err error) string {
	var pe *providers.Error
	if errors.As(err, &pe) {
		s := pe.Provider
		if pe.Model != "" {
			s += "/" + pe.Model
		}
		if pe.Status != 0 {
			s += fmt.Sprintf(", HTTP %d", pe.Status)
		}
		if s != "" {
			return s
		}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	if errors.Is(err, context.Canceled) {
		return "cancelled"
	}
	return prompt.MidTruncate(strings.TrimSpace(err.Error()), 200)
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
