package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/providers"
)

// ErrorReply is the text a user sees when a turn fails with err. Every text
// says that the message is saved, because it is.
func ErrorReply(err error) string {
	cause := describe(err)
	switch {
	case errors.Is(err, modelrouter.ErrNoModel):
		return modelrouter.NoModelMessage
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
