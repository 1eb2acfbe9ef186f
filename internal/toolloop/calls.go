package toolloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// PanicError is CallRecord.Err for a tool handler that panicked.
type PanicError struct {
	Tool  string
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("tool %q panicked: %v\n%s", e.Tool, e.Value, e.Stack)
}

// execute runs one validated call under its own timeout.
func execute(ctx context.Context, t tool.Tool, c llm.ToolCall, args json.RawMessage, opts Options) CallRecord {
	rec := CallRecord{ID: c.ID, Name: c.Name, Arguments: args}
	// A tool running a bounded session of its own (an agent) may take
	// longer than one call usually does.
	timeout := max(opts.CallTimeout, tool.CallTimeoutOf(t))
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	start := time.Now()
	res, err := safeCall(callCtx, t, args)
	rec.Duration = time.Since(start)
	if err == nil {
		rec.Result = capContent(opts.redact(res.Content), opts.MaxResultChars)
		for _, img := range res.Images {
			// References only: the agent reads the file when it builds a
			// request for a model that accepts images.
			rec.Images = append(rec.Images, llm.Image{MediaType: img.MediaType, Path: img.Path})
		}
		return rec
	}
	var msg string
	var pe *PanicError
	switch {
	case errors.As(err, &pe):
		msg = fmt.Sprintf("tool %q failed with an internal error (panic: %v)", c.Name, pe.Value)
	case ctx.Err() != nil:
		msg = fmt.Sprintf("tool %q was cancelled: the turn was stopped", c.Name)
		rec.Interrupted = true
	case errors.Is(callCtx.Err(), context.DeadlineExceeded):
		msg = fmt.Sprintf("tool %q timed out after %s", c.Name, timeout)
		err = fmt.Errorf("%s: %w", msg, err)
	default:
		msg = fmt.Sprintf("tool %q failed: %v", c.Name, err)
	}
	rec.IsError = true
	rec.Err = err
	rec.Result = errorContent(opts.redact(msg), opts.MaxResultChars)
	return rec
}

// safeCall runs the tool, turning a panic into a *PanicError.
func safeCall(ctx context.Context, t tool.Tool, args json.RawMessage) (res tool.Result, err error) {
	defer func() {
		if v := recover(); v != nil {
			err = &PanicError{Tool: t.Name(), Value: v, Stack: debug.Stack()}
		}
	}()
	return t.Call(ctx, args)
}

// normalizeArgs returns a call's arguments as a JSON object, repairing what
// models commonly get wrong: empty or null arguments mean {}, and a JSON
// string holding a JSON object (double encoding) is decoded once more.
func normalizeArgs(raw json.RawMessage) (json.RawMessage, error) {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 || string(b) == "null" {
		return json.RawMessage("{}"), nil
	}
	if !json.Valid(b) {
		var v any
		err := json.Unmarshal(b, &v)
		return nil, fmt.Errorf("arguments are not valid JSON (%v); send the arguments as one JSON object", err)
	}
	switch b[0] {
	case '{':
		return b, nil
	case '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return nil, fmt.Errorf("arguments are not valid JSON (%v); send the arguments as one JSON object", err)
		}
		inner := bytes.TrimSpace([]byte(s))
		if len(inner) > 0 && inner[0] == '{' && json.Valid(inner) {
			return inner, nil
		}
		return nil, errors.New("arguments must be a JSON object, got a string")
	case '[':
		return nil, errors.New("arguments must be a JSON object, got an array")
	case 't', 'f':
		return nil, errors.New("arguments must be a JSON object, got a boolean")
	default:
		return nil, errors.New("arguments must be a JSON object, got a number")
	}
}

// errorContent is the tool result for a failed call:
// {"ok":false,"error":{"message":"…"}}.
func errorContent(msg string, limit int) string {
	msg = capContent(msg, limit)
	var b strings.Builder
	b.WriteString(`{"ok":false,"error":{"message":`)
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(msg); err != nil {
		// A Go string always encodes; keep the shape regardless.
		return `{"ok":false,"error":{"message":"tool failed"}}`
	}
	out := strings.TrimSuffix(b.String(), "\n")
	return out + "}}"
}

// capContent cuts s to limit characters, with a note saying so.
func capContent(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	n := utf8.RuneCountInString(s)
	if n <= limit {
		return s
	}
	cut := 0
	for i := range s {
		if cut == limit {
			return fmt.Sprintf("%s\n[truncated: the result has %d characters; only the first %d are shown]", s[:i], n, limit)
		}
		cut++
	}
	return s
}
