package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
)

// Enumerator is implemented by string-kinded argument types whose values
// are restricted to a fixed set. Every field of such a type gets an "enum"
// keyword in the derived schema:
//
//	type Unit string
//	func (Unit) EnumValues() []string { return []string{"celsius", "fahrenheit"} }
//
// EnumValues is called on the zero value, once, when the tool is built.
type Enumerator interface {
	EnumValues() []string
}

// Option adjusts a tool built by New.
type Option func(*options)

type options struct {
	enums        []enumOption
	readOnly     bool
	inOrder      bool
	readsPrivate bool
	untrusted    bool
	destinations func(json.RawMessage) []Destination
	categories   []string
	describe     func() string
	timeout      time.Duration
	approval     ApprovalPolicy
}

type enumOption struct {
	path   string
	values []string
}

// WithEnum restricts the string property at path to values. path is the
// property's JSON name; nested object properties are reached with dots
// ("filter.kind"). For an array of strings the enum applies to its items.
// New panics if path names no string property.
func WithEnum(path string, values ...string) Option {
	return func(o *options) {
		o.enums = append(o.enums, enumOption{path: path, values: slices.Clone(values)})
	}
}

// ReadOnly marks the tool as free of side effects (it only reads). Callers
// may use it to offer the tool in restricted contexts; see IsReadOnly.
func ReadOnly() Option {
	return func(o *options) { o.readOnly = true }
}

// InOrder makes the calls of this tool within one model round run one
// after another, in the order the model issued them, instead of
// concurrently (calls of other tools still run alongside). Use it for tools
// whose result depends on the calls issued before them in the same round
// (spawn_sub_session's depends_on_previous). See RunsInOrder.
func InOrder() Option {
	return func(o *options) { o.inOrder = true }
}

// ReadsPrivateData marks the tool as one whose results carry the user's
// private data (memories, files, stored values). It describes the tool; the
// approval rule does not key on it, since private data is always in the
// prompt (memories): it keys on untrusted input (UntrustedResults) and on
// outward calls (SendsOut). See ReadsPrivate.
func ReadsPrivateData() Option {
	return func(o *options) { o.readsPrivate = true }
}

// WithCategories tags the tool with categories such as "research",
// "execution" or "orchestration". Profiles can select a whole category with
// an "@category" entry; see Profiles.
func WithCategories(categories ...string) Option {
	return func(o *options) { o.categories = append(o.categories, categories...) }
}

// DescribedBy makes the tool's description the text describe returns, asked
// each time the description is needed (New's description is then ignored;
// describe should be cheap): for a description that depends on something
// found out after the tool is built, such as whether execute_shell's
// sandbox works.
func DescribedBy(describe func() string) Option {
	return func(o *options) { o.describe = describe }
}

// WithCallTimeout lets one call of the tool run for up to d, when that is
// longer than the tool loop's per-call limit (toolloop.Options.CallTimeout):
// for a tool that runs a whole bounded session of its own (an agent). See
// CallTimeoutOf.
func WithCallTimeout(d time.Duration) Option {
	return func(o *options) { o.timeout = d }
}

// CallTimeouter is implemented by tools that say how long one call may run
// (every tool built by New or NewRaw; zero: the loop's limit).
type CallTimeouter interface {
	CallTimeout() time.Duration
}

// CallTimeoutOf returns how long one call of t may run by its own account
// (WithCallTimeout), or zero when t leaves it to the tool loop.
func CallTimeoutOf(t Tool) time.Duration {
	if c, ok := t.(CallTimeouter); ok {
		return c.CallTimeout()
	}
	return 0
}

// Categorized is implemented by tools that carry categories (every tool
// built by New or NewRaw).
type Categorized interface {
	Categories() []string
}

// ReadOnlyReporter is implemented by tools that say whether they are free of
// side effects (every tool built by New or NewRaw).
type ReadOnlyReporter interface {
	ReadOnly() bool
}

// PrivateReader is implemented by tools that say whether their results
// carry the user's private data (every tool built by New or NewRaw).
type PrivateReader interface {
	ReadsPrivate() bool
}

// ReadsPrivate reports whether t declared that its results carry private
// data (ReadsPrivateData). Tools that do not say are assumed not to.
func ReadsPrivate(t Tool) bool {
	r, ok := t.(PrivateReader)
	return ok && r.ReadsPrivate()
}

// IsReadOnly reports whether t declared itself read-only. Tools that do not
// say are assumed to have side effects.
func IsReadOnly(t Tool) bool {
	r, ok := t.(ReadOnlyReporter)
	return ok && r.ReadOnly()
}

// InOrderReporter is implemented by tools that say whether their calls of
// one round must run in issue order (every tool built by New or NewRaw).
type InOrderReporter interface {
	InOrder() bool
}

// RunsInOrder reports whether t declared InOrder. Tools that do not say may
// run concurrently.
func RunsInOrder(t Tool) bool {
	r, ok := t.(InOrderReporter)
	return ok && r.InOrder()
}

// CategoriesOf returns the categories t declares, or nil.
func CategoriesOf(t Tool) []string {
	if c, ok := t.(Categorized); ok {
		return c.Categories()
	}
	return nil
}

// New builds a tool whose argument schema is derived from the Go type A,
// which must be a struct. A is the one source of truth for the schema sent
// to the model and for the values the handler receives:
//
//   - property names come from `json` tags (fields tagged "-" are left out);
//   - descriptions come from `jsonschema:"..."` tags;
//   - pointer fields and fields tagged omitempty/omitzero are optional, all
//     others are required;
//   - unknown properties are rejected (additionalProperties: false);
//   - enums come from types implementing Enumerator and from WithEnum.
//
// fn receives the decoded arguments. Its result becomes Result.Content: a
// string or json.RawMessage is used as is, a Result is passed through, and
// anything else is marshalled to JSON.
//
// The schema is derived here; its JSON and its compiled form are made once,
// when first needed. New panics when A cannot be described (not a struct,
// unsupported field types), when name is not a valid tool name, or when an
// option names an unknown property: these are programming errors, found when
// the tool is first built.
func New[A any](name, description string, fn func(ctx context.Context, args A) (any, error), opts ...Option) Tool {
	if err := CheckName(name); err != nil {
		panic(fmt.Sprintf("tool.New: %v", err))
	}
	if fn == nil {
		panic(fmt.Sprintf("tool.New(%q): nil handler", name))
	}
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	schema, err := deriveSchema(reflect.TypeFor[A](), o.enums)
	if err != nil {
		panic(fmt.Sprintf("tool.New(%q): %v", name, err))
	}
	// The schema's JSON is made when a turn first offers the tool, and its
	// compiled form when a call is first validated: an agent builds about a
	// hundred tools at start, and most are never called in a process (a
	// one-shot send, say). The compiled form is made from the JSON, so the
	// derived schema is garbage once marshalled. A derived schema always
	// marshals and compiles; a failure would be a bug in this package,
	// reported with the tool's name where it is first used.
	raw := sync.OnceValue(func() json.RawMessage {
		b, err := json.Marshal(schema)
		if err != nil {
			panic(fmt.Sprintf("tool.New(%q): marshal schema: %v", name, err))
		}
		return b
	})
	resolved := sync.OnceValue(func() *jsonschema.Resolved {
		r, err := compile(raw())
		if err != nil {
			panic(fmt.Sprintf("tool.New(%q): %v", name, err))
		}
		return r
	})
	return &typed[A]{
		meta: meta{
			name:        name,
			description: o.describer(description),
			schema:      raw,
			resolved:    resolved,
			readOnly:    o.readOnly,
			inOrder:     o.inOrder,
			private:     o.readsPrivate,
			untrusted:   o.untrusted,
			dest:        o.destinations,
			categories:  slices.Clone(o.categories),
			timeout:     o.timeout,
			approval:    o.approval,
		},
		fn: fn,
	}
}

// describer is the description: fixed, or DescribedBy's.
func (o options) describer(description string) func() string {
	if o.describe != nil {
		return o.describe
	}
	return func() string { return description }
}

// meta is what every tool built in this package shares.
type meta struct {
	name        string
	description func() string
	// schema returns the schema's JSON, resolved its compiled form; each is
	// made once, when first needed.
	schema     func() json.RawMessage
	resolved   func() *jsonschema.Resolved
	readOnly   bool
	inOrder    bool
	private    bool
	untrusted  bool
	dest       func(json.RawMessage) []Destination
	categories []string
	timeout    time.Duration
	approval   ApprovalPolicy
}

func (m *meta) Name() string            { return m.name }
func (m *meta) Description() string     { return m.description() }
func (m *meta) Schema() json.RawMessage { return m.schema() }
func (m *meta) ReadOnly() bool          { return m.readOnly }
func (m *meta) InOrder() bool           { return m.inOrder }
func (m *meta) ReadsPrivate() bool      { return m.private }
func (m *meta) UntrustedResults() bool  { return m.untrusted }
func (m *meta) SendsOut() bool          { return m.dest != nil }
func (m *meta) CallTimeout() time.Duration {
	return m.timeout
}

// Destinations is SendsOut's function applied to args (nil when the tool
// is not outward).
func (m *meta) Destinations(args json.RawMessage) []Destination {
	if m.dest == nil {
		return nil
	}
	return m.dest(args)
}
func (m *meta) Categories() []string { return slices.Clone(m.categories) }

func (m *meta) DefaultApproval() ApprovalPolicy { return m.approval }

// ValidateArgs checks args against the compiled schema.
func (m *meta) ValidateArgs(args json.RawMessage) error {
	return validateResolved(m.resolved(), args)
}

type typed[A any] struct {
	meta
	fn func(ctx context.Context, args A) (any, error)
}

// Call decodes args into A and runs the handler.
func (t *typed[A]) Call(ctx context.Context, args json.RawMessage) (Result, error) {
	var a A
	if len(args) > 0 {
		if err := json.Unmarshal(args, &a); err != nil {
			// JSON Schema counts 2.0 and 1e2 as integers, encoding/json
			// does not: write integral numbers as integers and try again.
			fixed, ok := integralNumbers(args)
			if !ok || json.Unmarshal(fixed, &a) != nil {
				return Result{}, fmt.Errorf("decode arguments: %w", err)
			}
		}
	}
	v, err := t.fn(ctx, a)
	if err != nil {
		return Result{}, err
	}
	return resultOf(v)
}

// resultOf turns a handler's return value into a Result.
func resultOf(v any) (Result, error) {
	switch x := v.(type) {
	case string:
		return Result{Content: x}, nil
	case json.RawMessage:
		return Result{Content: string(x)}, nil
	case Result:
		return x, nil
	case nil:
		return Result{Content: "null"}, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return Result{}, fmt.Errorf("encode result: %w", err)
	}
	return Result{Content: string(b)}, nil
}

// deriveSchema infers the object schema of t and applies the adjustments New
// documents.
func deriveSchema(t reflect.Type, enums []enumOption) (*jsonschema.Schema, error) {
	if t.Kind() != reflect.Struct {
		return nil, fmt.Errorf("arguments type %v must be a struct", t)
	}
	s, err := jsonschema.ForType(t, nil)
	if err != nil {
		return nil, fmt.Errorf("derive schema: %w", err)
	}
	adjust(t, s)
	for _, e := range enums {
		if err := applyEnum(s, e); err != nil {
			return nil, err
		}
	}
	return s, nil
}

var enumeratorType = reflect.TypeFor[Enumerator]()

// adjust walks the Go type t alongside its inferred schema s: pointer fields
// become optional, Enumerator types get their enum, and objects always carry
// a properties map.
func adjust(t reflect.Type, s *jsonschema.Schema) {
	if s == nil {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() == reflect.String && t.Implements(enumeratorType) {
		setEnum(s, reflect.Zero(t).Interface().(Enumerator).EnumValues())
	}
	switch t.Kind() {
	case reflect.Struct:
		if s.Properties == nil {
			s.Properties = map[string]*jsonschema.Schema{}
		}
		for _, f := range reflect.VisibleFields(t) {
			if f.Anonymous || !f.IsExported() {
				continue
			}
			name, ok := jsonName(f)
			if !ok {
				continue
			}
			ps := s.Properties[name]
			if ps == nil {
				continue
			}
			if f.Type.Kind() == reflect.Pointer {
				s.Required = slices.DeleteFunc(s.Required, func(r string) bool { return r == name })
			}
			adjust(f.Type, ps)
		}
		if len(s.Required) == 0 {
			s.Required = nil
		}
	case reflect.Slice, reflect.Array:
		adjust(t.Elem(), s.Items)
	case reflect.Map:
		adjust(t.Elem(), s.AdditionalProperties)
	}
}

// jsonName returns the JSON property name of a struct field and whether it
// is encoded at all.
func jsonName(f reflect.StructField) (string, bool) {
	tag, ok := f.Tag.Lookup("json")
	if !ok {
		return f.Name, true
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" && !strings.Contains(tag, ",") {
		return "", false
	}
	if name == "" {
		return f.Name, true
	}
	return name, true
}

func applyEnum(root *jsonschema.Schema, e enumOption) error {
	s := root
	for part := range strings.SplitSeq(e.path, ".") {
		for s.Items != nil && isType(s, "array") {
			s = s.Items
		}
		p := s.Properties[part]
		if p == nil {
			return fmt.Errorf("WithEnum(%q): no property %q", e.path, part)
		}
		s = p
	}
	if isType(s, "array") && s.Items != nil {
		s = s.Items
	}
	if !isType(s, "string") {
		return fmt.Errorf("WithEnum(%q): property is not a string", e.path)
	}
	if len(e.values) == 0 {
		return fmt.Errorf("WithEnum(%q): no values", e.path)
	}
	setEnum(s, e.values)
	return nil
}

// setEnum restricts s to values; a nullable property (a pointer field) keeps
// accepting null.
func setEnum(s *jsonschema.Schema, values []string) {
	s.Enum = make([]any, 0, len(values)+1)
	for _, v := range values {
		s.Enum = append(s.Enum, v)
	}
	if isType(s, "null") {
		s.Enum = append(s.Enum, nil)
	}
}

func isType(s *jsonschema.Schema, typ string) bool {
	return s.Type == typ || slices.Contains(s.Types, typ)
}

// integralNumbers rewrites the numbers of a JSON document that have an
// integral value but a fraction or exponent (2.0, 1e2) as plain integers;
// ok is false when there were none.
func integralNumbers(raw json.RawMessage) (json.RawMessage, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return nil, false
	}
	changed := false
	var walk func(v any) any
	walk = func(v any) any {
		switch x := v.(type) {
		case map[string]any:
			for k, e := range x {
				x[k] = walk(e)
			}
		case []any:
			for i, e := range x {
				x[i] = walk(e)
			}
		case json.Number:
			if !strings.ContainsAny(string(x), ".eE") {
				return x
			}
			f, err := x.Float64()
			if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<53 {
				return x
			}
			changed = true
			return json.Number(strconv.FormatInt(int64(f), 10))
		}
		return v
	}
	v = walk(v)
	if !changed {
		return nil, false
	}
	out, err := json.Marshal(v)
	return out, err == nil
}
