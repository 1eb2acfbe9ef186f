package providers

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors classifying a provider failure. Test them with errors.Is
// on the error a provider returns; see the package documentation for what
// maps to each.
var (
	ErrUnavailable = errors.New("backend unavailable")
	ErrAuth        = errors.New("authentication failed")
	ErrNotFound    = errors.New("model or endpoint not found")
	ErrBadRequest  = errors.New("request rejected")
	ErrBadResponse = errors.New("invalid response")
)

// Error is a failed call to a model provider.
type Error struct {
	// Provider is the backend's configured name ("openai", "openrouter", …).
	Provider string
	// Model is the model the request was for.
	Model string
	// Status is the HTTP status of the last response, 0 when none arrived.
	Status int
	// RetryAfter is what the server asked to wait, 0 when it did not say.
	RetryAfter time.Duration
	// Err wraps one of the sentinels (or ctx.Err()) and the cause.
	Err error
}

func (e *Error) Error() string {
	name := e.Provider
	if name == "" {
		name = "provider"
	}
	if e.Model != "" {
		name += " model " + e.Model
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: HTTP %d: %v", name, e.Status, e.Err)
	}
	return fmt.Sprintf("%s: %v", name, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// kindError is an error a provider's request function classified itself
// (an empty choice list, a cut stream); Run turns it into an *Error.
type kindError struct {
	kind  error
	msg   string
	cause error
}

func (e *kindError) Error() string {
	if e.cause != nil {
		return fmt.Sprintf("%v: %s: %v", e.kind, e.msg, e.cause)
	}
	return fmt.Sprintf("%v: %s", e.kind, e.msg)
}

func (e *kindError) Unwrap() []error {
	if e.cause != nil {
		return []error{e.kind, e.cause}
	}
	return []error{e.kind}
}

// BadResponse reports a response that does not make sense (empty choices,
// truncated stream, undecodable body). cause may be nil.
func BadResponse(cause error, format string, args ...any) error {
	return &kindError{kind: ErrBadResponse, msg: fmt.Sprintf(format, args...), cause: cause}
}

// BadRequest reports a request that cannot be sent as given (a tool schema
// that is not JSON, say). cause may be nil.
func BadRequest(cause error, format string, args ...any) error {
	return &kindError{kind: ErrBadRequest, msg: fmt.Sprintf(format, args...), cause: cause}
}

// Unavailable reports a failure of the backend itself that a retry or
// another backend may not have (an error event inside a stream, say).
// cause may be nil.
func Unavailable(cause error, format string, args ...any) error {
	return &kindError{kind: ErrUnavailable, msg: fmt.Sprintf(format, args...), cause: cause}
}

// timeoutError is the cancellation cause when one of the Timeouts fires.
type timeoutError struct {
	what string
	d    time.Duration
}

func (e *timeoutError) Error() string { return fmt.Sprintf("%s (%s)", e.what, e.d) }

// Is makes every provider timeout match context.DeadlineExceeded.
func (e *timeoutError) Is(target error) bool { return target == errDeadline }

// Timeout reports true, as net.Error does.
func (e *timeoutError) Timeout() bool { return true }
