package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/api"
)

// diskFullMessage is the answer (507) to every request that failed because
// the disk is full.
const diskFullMessage = "the disk holding the data directory is full; free some space and try again"

// errBodyTooLarge is returned by decodeBody for an oversized body.
var errBodyTooLarge = errors.New("request body too large")

// writeJSON answers v with status.
func writeJSON(rw http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status = http.StatusInternalServerError
		b = []byte(`{"error":"could not encode the answer"}`)
	}
	rw.Header().Set("Content-Type", "application/json; charset=utf-8")
	rw.WriteHeader(status)
	_, _ = rw.Write(append(b, '\n'))
}

// writeError answers {"error": msg}.
func writeError(rw http.ResponseWriter, status int, msg string) {
	writeJSON(rw, status, api.ErrorBody{Error: msg})
}

func unauthorized(rw http.ResponseWriter) {
	rw.Header().Set("WWW-Authenticate", `Bearer realm="reverie"`)
	writeError(rw, http.StatusUnauthorized, "unauthorized")
}

func notEnabled(rw http.ResponseWriter, feature string) {
	writeError(rw, http.StatusNotImplemented, feature+" is not enabled")
}

// statusOf maps a service error to an HTTP status.
func statusOf(err error) int {
	switch {
	case api.IsDiskFull(err): // first: a full disk can surface wrapped in anything
		return http.StatusInsufficientStorage
	case errors.Is(err, api.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, api.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, api.ErrConflict):
		return http.StatusConflict
	case errors.Is(err, api.ErrTooLarge), errors.Is(err, errBodyTooLarge):
		return http.StatusRequestEntityTooLarge
	case errors.Is(err, api.ErrBusy):
		return http.StatusTooManyRequests
	case errors.Is(err, api.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, api.ErrTurnFailed):
		return http.StatusBadGateway
	case errors.Is(err, api.ErrTestFailed):
		return http.StatusUnprocessableEntity
	}
	return http.StatusInternalServerError
}

// serviceError answers a service's error, with every registered secret
// redacted. Internal errors are logged and answered without detail.
func (w *Web) serviceError(rw http.ResponseWriter, r *http.Request, err error) {
	status := statusOf(err)
	switch status {
	case http.StatusInternalServerError:
		w.log.Error("API request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(rw, status, "internal error; see the agent's log")
		return
	case http.StatusInsufficientStorage:
		w.log.Error("API request failed: the disk is full", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(rw, status, diskFullMessage)
		return
	}
	// The reason is for a person: without the sentinel's words, which the
	// status says.
	writeError(rw, status, w.host.Redact(api.Reason(err)))
}

// reply answers a service call: its result as 200 JSON, or its error.
func (w *Web) reply(rw http.ResponseWriter, r *http.Request, v any, err error) {
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, v)
}

// decodeBody decodes a JSON body into v, strictly (unknown fields are an
// error); the body is already capped by the limits middleware.
func decodeBody(r *http.Request, v any) error {
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var mbe *http.MaxBytesError
		switch {
		case errors.As(err, &mbe):
			return fmt.Errorf("%w (limit %d bytes)", errBodyTooLarge, mbe.Limit)
		case errors.Is(err, io.EOF):
			return fmt.Errorf("%w: empty body, expected a JSON object", api.ErrInvalid)
		}
		return fmt.Errorf("%w: malformed JSON body: %s", api.ErrInvalid, jsonMessage(err))
	}
	if dec.More() {
		return fmt.Errorf("%w: more than one JSON value in the body", api.ErrInvalid)
	}
	return nil
}

// jsonMessage strips the "json: " prefix of encoding/json errors.
func jsonMessage(err error) string { return strings.TrimPrefix(err.Error(), "json: ") }

// query reads optional query parameters, collecting the first error.
type query struct {
	r   *http.Request
	err error
}

func (q *query) str(name string) string { return q.r.URL.Query().Get(name) }

func (q *query) list(name string) []string {
	var out []string
	for _, v := range q.r.URL.Query()[name] {
		for p := range strings.SplitSeq(v, ",") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	return out
}

func (q *query) int(name string, def, lo, hi int64) int64 {
	s := q.str(name)
	if s == "" {
		return def
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		q.fail("%s must be a whole number from %d to %d", name, lo, hi)
		return def
	}
	return n
}

func (q *query) bool(name string) bool {
	s := q.str(name)
	if s == "" {
		return false
	}
	b, err := strconv.ParseBool(s)
	if err != nil {
		q.fail("%s must be true or false", name)
	}
	return b
}

func (q *query) time(name string) time.Time {
	s := q.str(name)
	if s == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		q.fail("%s must be an RFC 3339 time such as 2025-05-01T08:00:00Z", name)
	}
	return t
}

func (q *query) day(name string) string {
	s := q.str(name)
	if s == "" {
		return ""
	}
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		q.fail("%s must be a date YYYY-MM-DD", name)
	}
	return s
}

func (q *query) fail(format string, args ...any) {
	if q.err == nil {
		q.err = fmt.Errorf("%w: %s", api.ErrInvalid, fmt.Sprintf(format, args...))
	}
}

// pathID parses the {id} path value as a positive integer.
func pathID(r *http.Request) (int64, error) {
	s := r.PathValue("id")
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("%w: %q is not an id", api.ErrInvalid, s)
	}
	return n, nil
}
