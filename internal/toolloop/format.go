package toolloop

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/reverie-ai/reverie/llm"
)

// format validates structured output against a ResponseFormat's schema,
// compiled once per Run.
type format struct {
	rf       *llm.ResponseFormat
	resolved *jsonschema.Resolved
}

func newFormat(rf *llm.ResponseFormat) (*format, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(rf.Schema, &s); err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return &format{rf: rf, resolved: resolved}, nil
}

// check returns the JSON text of reply when it is valid against the schema.
// Surrounding whitespace and a Markdown code fence are removed first.
func (f *format) check(reply string) (string, error) {
	text := stripFence(strings.TrimSpace(reply))
	if text == "" {
		return "", errors.New("the reply is empty")
	}
	var v any
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", fmt.Errorf("the reply is not JSON (%v)", err)
	}
	if err := f.resolved.Validate(v); err != nil {
		return "", fmt.Errorf("the JSON does not match the schema: %s", cleanValidation(err))
	}
	return text, nil
}

var fenceRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile("(?s)^```[a-zA-Z]*\\s*\\n(.*?)\\n?```$") })

func stripFence(s string) string {
	if m := fenceRE().FindStringSubmatch(s); m != nil {
		return strings.TrimSpace(m[1])
	}
	return s
}

var validatingPrefixRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`validating [^:]*: `) })

// cleanValidation keeps the deepest schema location and the reason of a
// jsonschema validation error, e.g. "at /properties/route: enum: …".
func cleanValidation(err error) string {
	msg := err.Error()
	locs := validatingPrefixRE().FindAllStringIndex(msg, -1)
	if len(locs) == 0 {
		return msg
	}
	last := locs[len(locs)-1]
	where := strings.TrimSuffix(strings.TrimPrefix(msg[last[0]:last[1]], "validating "), ": ")
	reason := msg[last[1]:]
	if where == "root" {
		return reason
	}
	return "at " + where + ": " + reason
}
