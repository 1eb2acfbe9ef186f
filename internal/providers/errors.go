package providers

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"syscall"
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
	// ErrUnreachable is wrapped together with ErrUnavailable when no HTTP
	// response arrived because the server could not be reached at all:
	// connection refused, unknown host, no route, a TLS handshake that
	// failed. It usually means a wrong base URL or a server that is not
	// running, not a passing outage.
	ErrUnreachable = errors.New("server unreachable")
)

// Explain says in words what a failed model call means for the person
// waiting on it and what to do about it, keeping the provider's own reason
// (a 400's message, a 429's wait). It names no backend, model, HTTP status
// or retry count: those internal labels stay in the error itself (the log,
// the turn's details). ok is false when err is not a provider's *Error.
func Explain(err error) (words string, ok bool) {
	var pe *Error
	if !errors.As(err, &pe) {
		return "", false
	}
	reason := ""
	if pe.Err != nil {
		reason = pe.Err.Error()
	}
	for _, s := range []error{ErrUnavailable, ErrUnreachable, ErrAuth, ErrNotFound, ErrBadRequest, ErrBadResponse} {
		reason = strings.TrimPrefix(reason, s.Error()+": ")
	}
	if r := []rune(strings.TrimSpace(reason)); len(r) > 300 {
		reason = string(r[:300]) + "…"
	}
	// said is the provider's reason, quoted in parentheses (or nothing).
	said := ""
	if reason = strings.TrimSpace(reason); reason != "" {
		said = " (" + reason + ")"
	}
	switch {
	case errors.Is(err, ErrUnreachable):
		addr, why, _ := Unreachable(err)
		where := "the model server"
		if addr != "" {
			where += " at " + addr
		}
		if why != "" {
			where += " (" + why + ")"
		}
		return "Could not reach " + where + ". Check that the server is running and that its base URL is right.", true
	case pe.Status == http.StatusTooManyRequests:
		wait := "a minute"
		if pe.RetryAfter > 0 {
			wait = roundWait(pe.RetryAfter)
		}
		return "The model provider is limiting how often it can be asked" + said + ". Wait " + wait + " and send it again; if it keeps happening, check the plan or quota of the API key.", true
	case errors.Is(err, errDeadline):
		return "The model took too long to answer. Send it again, or use a faster model or a longer timeout (models.backends.<name>.timeout).", true
	case errors.Is(err, ErrAuth):
		return "The model provider refused the API key" + said + ". Check the key.", true
	case errors.Is(err, ErrNotFound):
		return "The model or its API was not found" + said + ". Check the model name, and the base URL (an OpenAI-compatible server's usually ends in /v1).", true
	case errors.Is(err, ErrUnavailable):
		return "The model server had a problem" + said + ". Try again in a moment; if it lasts, the provider may be down.", true
	case errors.Is(err, ErrBadRequest):
		return "The model refused the request" + said + ". A new conversation (/new) or a shorter message may help.", true
	case errors.Is(err, ErrBadResponse):
		return "The model sent a reply that could not be read" + said + ". Try again.", true
	}
	return "The model call failed" + said + ".", true
}

// roundWait says a wait the way a person would: "12 seconds", "2 minutes".
func roundWait(d time.Duration) string {
	switch {
	case d < 2*time.Second:
		return "a second"
	case d < 90*time.Second:
		return fmt.Sprintf("%d seconds", int(d.Round(time.Second)/time.Second))
	default:
		return fmt.Sprintf("%d minutes", int(d.Round(time.Minute)/time.Minute))
	}
}

// Unreachable reports the address a call could not reach and why
// ("connection refused", "no such host", …), when err is such a failure.
func Unreachable(err error) (addr, why string, ok bool) {
	if !errors.Is(err, ErrUnreachable) {
		return "", "", false
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return dns.Name, "no such host", true
	}
	var op *net.OpError
	if errors.As(err, &op) {
		if op.Addr != nil {
			addr = op.Addr.String()
		}
		why = op.Err.Error()
		if i := strings.LastIndex(why, ": "); i >= 0 {
			why = why[i+2:]
		}
		return addr, why, true
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		if u, perr := url.Parse(ue.URL); perr == nil {
			addr = u.Host
		}
		return addr, ue.Err.Error(), true
	}
	return "", err.Error(), true
}

// unreachable reports whether err (with no HTTP response) means the server
// could not be reached: a failed dial, an unknown host, a failed TLS
// handshake or plain HTTP answering an https URL.
func unreachable(err error) bool {
	var dns *net.DNSError
	var op *net.OpError
	var rh tls.RecordHeaderError
	var cv *tls.CertificateVerificationError
	switch {
	case errors.As(err, &dns), errors.As(err, &rh), errors.As(err, &cv):
		return true
	case errors.As(err, &op):
		return op.Op == "dial"
	}
	return errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH)
}

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
	// Attempts is how many attempts were made when retries ran out (0 or
	// 1: the failure was not retried).
	Attempts int
}

func (e *Error) Error() string {
	name := e.Provider
	if name == "" {
		name = "provider"
	}
	if e.Model != "" {
		name += " model " + e.Model
	}
	tried := ""
	if e.Attempts > 1 {
		tried = fmt.Sprintf(" (gave up after %d attempts)", e.Attempts)
	}
	if e.Status != 0 {
		return fmt.Sprintf("%s: HTTP %d: %v%s", name, e.Status, e.Err, tried)
	}
	return fmt.Sprintf("%s: %v%s", name, e.Err, tried)
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
