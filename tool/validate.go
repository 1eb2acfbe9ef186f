package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/google/jsonschema-go/jsonschema"
)

// Validator is implemented by tools that check arguments against their own
// compiled schema: every tool built by New, NewRaw or Checked.
type Validator interface {
	// ValidateArgs reports whether args is a JSON object valid against the
	// tool's schema. The error names the offending property.
	ValidateArgs(args json.RawMessage) error
}

// ErrInvalidArguments is wrapped by every error Validate and ValidateArgs
// return for arguments that do not match the schema.
var ErrInvalidArguments = errors.New("invalid arguments")

// Validate checks args against t's schema. Tools implementing Validator use
// their compiled schema; for any other tool the schema is compiled on this
// call (wrap such tools once with Checked to avoid that).
func Validate(t Tool, args json.RawMessage) error {
	if v, ok := t.(Validator); ok {
		return v.ValidateArgs(args)
	}
	resolved, err := compile(t.Schema())
	if err != nil {
		return fmt.Errorf("tool %q: %w", t.Name(), err)
	}
	return validateResolved(resolved, args)
}

// Checked returns t with its schema compiled once, so that the result
// implements Validator. Tools that already implement Validator are returned
// unchanged. It fails when t's name is invalid or its schema is not a valid
// JSON Schema.
func Checked(t Tool) (Tool, error) {
	if err := CheckName(t.Name()); err != nil {
		return nil, err
	}
	if _, ok := t.(Validator); ok {
		return t, nil
	}
	resolved, err := compile(t.Schema())
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name(), err)
	}
	return &checked{Tool: t, resolved: resolved}, nil
}

type checked struct {
	Tool
	resolved *jsonschema.Resolved
}

func (c *checked) ValidateArgs(args json.RawMessage) error {
	return validateResolved(c.resolved, args)
}

// Categories forwards to the wrapped tool.
func (c *checked) Categories() []string { return CategoriesOf(c.Tool) }

// ReadOnly forwards to the wrapped tool.
func (c *checked) ReadOnly() bool { return IsReadOnly(c.Tool) }

// InOrder forwards to the wrapped tool.
func (c *checked) InOrder() bool { return RunsInOrder(c.Tool) }

// ReadsPrivate forwards to the wrapped tool.
func (c *checked) ReadsPrivate() bool { return ReadsPrivate(c.Tool) }

// RawHandler handles the raw JSON arguments of a tool built with NewRaw.
type RawHandler func(ctx context.Context, args json.RawMessage) (Result, error)

// NewRaw builds a tool from a schema given as JSON, for tools whose schema
// is not known at compile time (MCP servers, for instance). The schema must
// be an object schema; it is compiled once here. Options other than WithEnum
// apply; WithEnum is rejected.
func NewRaw(name, description string, schema json.RawMessage, fn RawHandler, opts ...Option) (Tool, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	if fn == nil {
		return nil, fmt.Errorf("tool %q: nil handler", name)
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if len(o.enums) > 0 {
		return nil, fmt.Errorf("tool %q: WithEnum applies only to tools built by New", name)
	}
	if len(bytes.TrimSpace(schema)) == 0 {
		schema = json.RawMessage(`{"type":"object","properties":{}}`)
	}
	resolved, err := compile(schema)
	if err != nil {
		return nil, fmt.Errorf("tool %q: %w", name, err)
	}
	if !isType(resolved.Schema(), "object") {
		return nil, fmt.Errorf("tool %q: schema must describe an object", name)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, schema); err != nil {
		return nil, fmt.Errorf("tool %q: schema: %w", name, err)
	}
	compacted := compact.Bytes()
	return &raw{
		meta: meta{
			name:        name,
			description: o.describer(description),
			schema:      func() json.RawMessage { return compacted },
			resolved:    func() *jsonschema.Resolved { return resolved },
			readOnly:    o.readOnly,
			inOrder:     o.inOrder,
			private:     o.readsPrivate,
			untrusted:   o.untrusted,
			dest:        o.destinations,
			categories:  o.categories,
			timeout:     o.timeout,
			approval:    o.approval,
		},
		fn: fn,
	}, nil
}

type raw struct {
	meta
	fn RawHandler
}

func (r *raw) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	return r.fn(ctx, args)
}

// compile parses and resolves a JSON Schema.
func compile(schema json.RawMessage) (*jsonschema.Resolved, error) {
	var s jsonschema.Schema
	if err := json.Unmarshal(schema, &s); err != nil {
		return nil, fmt.Errorf("parse schema: %w", err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		return nil, fmt.Errorf("compile schema: %w", err)
	}
	return resolved, nil
}

// validateResolved checks that args is a JSON object valid against r.
func validateResolved(r *jsonschema.Resolved, args json.RawMessage) error {
	var v any
	if err := json.Unmarshal(args, &v); err != nil {
		return fmt.Errorf("%w: not valid JSON: %v", ErrInvalidArguments, err)
	}
	if _, ok := v.(map[string]any); !ok {
		return fmt.Errorf("%w: must be a JSON object, got %s", ErrInvalidArguments, jsonKind(v))
	}
	if err := r.Validate(v); err != nil {
		return fmt.Errorf("%w: %s", ErrInvalidArguments, describe(err))
	}
	return nil
}

// jsonKind names the JSON type of a decoded value.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "a boolean"
	case float64:
		return "a number"
	case string:
		return "a string"
	case []any:
		return "an array"
	case map[string]any:
		return "an object"
	}
	return fmt.Sprintf("%T", v)
}

// validatingRE matches the "validating <schema path>: " prefixes the
// validator wraps around its errors.
var validatingRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`validating ([^:]*): `) })

// describe rewrites a jsonschema validation error into a message a model can
// act on: the deepest property path followed by the reason, e.g.
// `property "limit": type: "ten" has type "string", want "integer"`.
func describe(err error) string {
	msg := err.Error()
	matches := validatingRE().FindAllStringSubmatchIndex(msg, -1)
	if len(matches) == 0 {
		return msg
	}
	last := matches[len(matches)-1]
	reason := msg[last[1]:]
	// Each level repeats the full pointer from the root: the last is deepest.
	path := propertyPath(msg[last[2]:last[3]])
	if len(path) == 0 {
		return reason
	}
	return fmt.Sprintf("property %q: %s", strings.Join(path, "."), reason)
}

// propertyPath extracts property names from a schema JSON pointer such as
// "/properties/filter/properties/kind" or "/properties/tags/items".
func propertyPath(pointer string) []string {
	var out []string
	segs := strings.Split(pointer, "/")
	for i := 0; i < len(segs); i++ {
		switch segs[i] {
		case "properties":
			if i+1 < len(segs) {
				out = append(out, unescapePointer(segs[i+1]))
				i++
			}
		case "items":
			out = append(out, "[]")
		}
	}
	// Join array markers onto the preceding name: tags, [] → tags[].
	joined := out[:0]
	for _, s := range out {
		if s == "[]" && len(joined) > 0 {
			joined[len(joined)-1] += "[]"
			continue
		}
		joined = append(joined, s)
	}
	return joined
}

func unescapePointer(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "~1", "/"), "~0", "~")
}
