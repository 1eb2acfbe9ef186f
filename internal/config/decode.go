package config

import (
	"encoding"
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// maxDepth bounds nesting (and alias expansion) while decoding.
const maxDepth = 64

// decoder turns a YAML AST into Go values strictly, tracking the dotted key
// path and the line of every value so that errors can name both.
type decoder struct {
	file    string
	envVar  string         // set when decoding an environment variable's value
	lines   map[string]int // key path → line; may be nil
	secrets *secretContext
	warn    func(format string, args ...any)
	anchors map[string]ast.Node
	depth   int
}

var (
	durationType  = reflect.TypeFor[time.Duration]()
	secretType    = reflect.TypeFor[Secret]()
	textUnmarshal = reflect.TypeFor[encoding.TextUnmarshaler]()
	yamlUnmarshal = []reflect.Type{
		reflect.TypeFor[yaml.BytesUnmarshaler](),
		reflect.TypeFor[yaml.BytesUnmarshalerContext](),
		reflect.TypeFor[yaml.InterfaceUnmarshaler](),
		reflect.TypeFor[yaml.InterfaceUnmarshalerContext](),
		reflect.TypeFor[yaml.NodeUnmarshaler](),
		reflect.TypeFor[yaml.NodeUnmarshalerContext](),
	}
)

// errAt builds an *Error at a line.
func (d *decoder) errAt(line int, key, format string, args ...any) *Error {
	e := &Error{Key: key, Msg: fmt.Sprintf(format, args...)}
	if d.envVar != "" {
		e.Var = d.envVar
	} else {
		e.File, e.Line = d.file, line
	}
	return e
}

// errf builds an *Error at a node.
func (d *decoder) errf(n ast.Node, key, format string, args ...any) *Error {
	return d.errAt(lineOf(n), key, format, args...)
}

// parse parses one YAML document and collects its anchors. It returns nil
// for an empty document.
func (d *decoder) parse(data []byte) (ast.Node, error) {
	f, err := parser.ParseBytes(blankCommentLines(data), 0)
	if err != nil {
		var ye yaml.Error
		if errors.As(err, &ye) {
			line, words := plainYAMLError(ye.GetMessage(), ye.GetToken())
			return nil, d.errAt(line, "", "%s", words)
		}
		return nil, d.errAt(0, "", "invalid YAML: %v", err)
	}
	var bodies []ast.Node
	for _, doc := range f.Docs {
		if doc.Body != nil {
			bodies = append(bodies, doc.Body)
		}
	}
	switch len(bodies) {
	case 0:
		return nil, nil
	case 1:
	default:
		return nil, d.errf(bodies[1], "", "only one YAML document is allowed")
	}
	d.anchors = map[string]ast.Node{}
	ast.Walk(anchorCollector(d.anchors), bodies[0])
	return bodies[0], nil
}

// definedAt matches goccy/go-yaml's duplicate-key message (compiled when
// first used).
var definedAt = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^mapping key "(.*)" already defined at \[(\d+):\d+\]$`)
})

// colonHint explains a section given a string that looks like a setting
// missing its colon ("listen 127.0.0.1:8420").
func colonHint(n ast.Node) string {
	s, ok := scalarText(n)
	if !ok || !strings.Contains(s, " ") || strings.Contains(s, ": ") {
		return ""
	}
	key, _, _ := strings.Cut(s, " ")
	return fmt.Sprintf(` (a setting needs a colon and a space after its name: "%s: …")`, key)
}

// plainYAMLError says a YAML syntax error in words a person editing the
// file understands, and finds its line: the line where the offending token
// ends (a plain value runs on over a line indented too far, and the ':'
// that breaks it is on that later line).
func plainYAMLError(msg string, tk *token.Token) (int, string) {
	line, multiLine := 0, false
	if tk != nil && tk.Position != nil {
		n := strings.Count(strings.TrimRight(tk.Origin, " \t\r\n"), "\n")
		line, multiLine = tk.Position.Line+n, n > 0
	}
	switch {
	case strings.Contains(msg, "found character '\t'"):
		return line, "this line is indented with a tab; YAML needs spaces for indentation"
	case strings.HasPrefix(msg, "mapping value is not allowed") || strings.HasPrefix(msg, "value is not allowed"):
		if multiLine || strings.HasPrefix(msg, "value is not allowed") {
			return line, "this line is not lined up with the keys above it: indent it exactly as far as the other keys of its section (with spaces)"
		}
		return line, `a value contains ": " (or a key is missing its line break): put the value in quotes, like key: "a: b"`
	case strings.Contains(msg, "could not find end character of double-quoted text"):
		return line, `a value starting with " has no closing "`
	case strings.Contains(msg, "could not find end character of single-quoted text"):
		return line, "a value starting with ' has no closing '"
	case strings.Contains(msg, "',' or '}' must be specified"), strings.Contains(msg, "'}' not found"):
		return line, "a { … } mapping is not closed with }, or its entries are not separated by commas"
	case strings.Contains(msg, "',' or ']' must be specified"), strings.Contains(msg, "']' not found"):
		return line, "a [ … ] list is not closed with ], or its items are not separated by commas"
	}
	if m := definedAt().FindStringSubmatch(msg); m != nil {
		return line, fmt.Sprintf("the key %q is set twice in the same section (first on line %s); keep one", m[1], m[2])
	}
	return line, "this is not valid YAML: " + msg
}

type anchorCollector map[string]ast.Node

func (a anchorCollector) Visit(n ast.Node) ast.Visitor {
	if an, ok := n.(*ast.AnchorNode); ok && an.Name != nil {
		a[an.Name.GetToken().Value] = an.Value
	}
	return a
}

// resolve strips anchors and tags and follows aliases.
func (d *decoder) resolve(n ast.Node) (ast.Node, error) {
	for range maxDepth {
		switch t := n.(type) {
		case *ast.AnchorNode:
			n = t.Value
		case *ast.TagNode:
			n = t.Value
		case *ast.AliasNode:
			name := ""
			if t.Value != nil {
				name = t.Value.GetToken().Value
			}
			target, ok := d.anchors[name]
			if !ok {
				return nil, d.errf(t, "", "unknown alias *%s", name)
			}
			n = target
		default:
			return n, nil
		}
	}
	return nil, d.errf(n, "", "aliases nested too deeply")
}

// lineOf is the line where a node starts.
func lineOf(n ast.Node) int {
	switch t := n.(type) {
	case nil:
		return 0
	case *ast.MappingNode:
		if len(t.Values) > 0 && !t.IsFlowStyle {
			return lineOf(t.Values[0].Key)
		}
	case *ast.MappingValueNode:
		return lineOf(t.Key)
	}
	if tk := n.GetToken(); tk != nil && tk.Position != nil {
		return tk.Position.Line
	}
	return 0
}

// mappingEntries returns the entries of a mapping node.
func mappingEntries(n ast.Node) ([]*ast.MappingValueNode, bool) {
	switch t := n.(type) {
	case *ast.MappingNode:
		return t.Values, true
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{t}, true
	}
	return nil, false
}

func isNull(n ast.Node) bool {
	if n == nil {
		return true
	}
	_, ok := n.(*ast.NullNode)
	return ok
}

// keyString returns a mapping entry's key as text.
func (d *decoder) keyString(e *ast.MappingValueNode) (string, error) {
	var k ast.Node = e.Key
	if mk, ok := k.(*ast.MappingKeyNode); ok {
		k = mk.Value
	}
	if _, ok := k.(*ast.MergeKeyNode); ok {
		return "", d.errf(e.Key, "", "merge keys (<<) are not supported")
	}
	k, err := d.resolve(k)
	if err != nil {
		return "", err
	}
	switch t := k.(type) {
	case *ast.StringNode:
		return t.Value, nil
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode:
		return t.GetToken().Value, nil
	}
	return "", d.errf(k, "", "a key must be a plain word, got %s", describe(k))
}

// describe names a node's kind for error messages.
func describe(n ast.Node) string {
	switch t := n.(type) {
	case nil, *ast.NullNode:
		return "nothing"
	case *ast.MappingNode, *ast.MappingValueNode:
		return "a mapping"
	case *ast.SequenceNode:
		return "a list"
	case *ast.StringNode:
		return fmt.Sprintf("the string %q", t.Value)
	case *ast.LiteralNode:
		return "a block of text"
	case *ast.IntegerNode, *ast.FloatNode, *ast.InfinityNode, *ast.NanNode:
		return "the number " + t.GetToken().Value
	case *ast.BoolNode:
		return t.GetToken().Value
	}
	return "a " + n.Type().String() + " node"
}

// scalarText returns the text of a scalar node.
func scalarText(n ast.Node) (string, bool) {
	switch t := n.(type) {
	case *ast.StringNode:
		return t.Value, true
	case *ast.LiteralNode:
		if t.Value == nil {
			return "", true
		}
		return t.Value.Value, true
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.InfinityNode, *ast.NanNode:
		return t.GetToken().Value, true
	}
	return "", false
}

// yamlName returns a struct field's key, "" when it is skipped.
func yamlName(f reflect.StructField) string {
	tag, ok := f.Tag.Lookup("yaml")
	if !ok {
		return strings.ToLower(f.Name)
	}
	name, _, _ := strings.Cut(tag, ",")
	if name == "-" {
		return ""
	}
	if name == "" {
		return strings.ToLower(f.Name)
	}
	return name
}

func isInline(f reflect.StructField) bool {
	tag := f.Tag.Get("yaml")
	_, opts, _ := strings.Cut(tag, ",")
	for _, o := range strings.Split(opts, ",") {
		if o == "inline" {
			return true
		}
	}
	return f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct
}

// structFields maps keys to field index paths, flattening inline structs.
func structFields(t reflect.Type) map[string][]int {
	out := map[string][]int{}
	var walk func(t reflect.Type, prefix []int)
	walk = func(t reflect.Type, prefix []int) {
		for i := range t.NumField() {
			f := t.Field(i)
			idx := append(append([]int(nil), prefix...), i)
			if isInline(f) {
				walk(f.Type, idx)
				continue
			}
			if !f.IsExported() {
				continue
			}
			if name := yamlName(f); name != "" {
				if _, dup := out[name]; !dup {
					out[name] = idx
				}
			}
		}
	}
	walk(t, nil)
	return out
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func implementsYAMLUnmarshaler(t reflect.Type) bool {
	pt := reflect.PointerTo(t)
	for _, u := range yamlUnmarshal {
		if t.Implements(u) || pt.Implements(u) {
			return true
		}
	}
	return false
}

// decode decodes node into v (settable) at key path. A null node leaves v
// unchanged.
func (d *decoder) decode(n ast.Node, v reflect.Value, path string) error {
	d.depth++
	defer func() { d.depth-- }()
	if d.depth > maxDepth {
		return d.errf(n, path, "%s: nested too deeply", path)
	}
	n, err := d.resolve(n)
	if err != nil {
		return err
	}
	if isNull(n) {
		return nil
	}
	if done, err := d.decodeSpecial(n, v, path); done {
		return err
	}
	t := v.Type()
	switch t.Kind() {
	case reflect.Struct:
		entries, ok := mappingEntries(n)
		if !ok {
			return d.errf(n, path, "%s: expected a mapping of settings, got %s%s", path, describe(n), colonHint(n))
		}
		return d.decodeStruct(entries, v, path, nil)
	case reflect.Map:
		return d.decodeMap(n, v, path)
	case reflect.Slice, reflect.Array:
		return d.decodeList(n, v, path)
	case reflect.String:
		s, ok := scalarText(n)
		if !ok {
			return d.errf(n, path, "%s: expected a string, got %s", path, describe(n))
		}
		v.SetString(s)
		return nil
	case reflect.Bool:
		b, ok := n.(*ast.BoolNode)
		if !ok {
			return d.errf(n, path, "%s: expected true or false, got %s", path, describe(n))
		}
		v.SetBool(b.Value)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return d.decodeInt(n, v, path)
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return d.decodeUint(n, v, path)
	case reflect.Float32, reflect.Float64:
		return d.decodeFloat(n, v, path)
	}
	return d.errf(n, path, "%s: settings of Go type %s are not supported", path, t)
}

// decodeSpecial decodes the types decoded by what they are rather than by
// their kind: secrets, durations, pointers, YAML and text unmarshalers. It
// reports whether v was one of them.
func (d *decoder) decodeSpecial(n ast.Node, v reflect.Value, path string) (bool, error) {
	t := v.Type()
	switch {
	case t == secretType:
		return true, d.decodeSecret(n, v, path)
	case t == durationType:
		s, ok := scalarText(n)
		if !ok {
			return true, d.errf(n, path, "%s: expected a duration such as \"90s\" or \"5m\", got %s", path, describe(n))
		}
		dur, err := time.ParseDuration(s)
		if err != nil {
			return true, d.errf(n, path, "%s: %q is not a duration (write it like \"90s\", \"5m\" or \"1h30m\")", path, s)
		}
		v.SetInt(int64(dur))
		return true, nil
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return true, d.decode(n, v.Elem(), path)
	case implementsYAMLUnmarshaler(t) || t.Kind() == reflect.Interface:
		if err := yaml.NodeToValue(n, v.Addr().Interface(), yaml.Strict()); err != nil {
			msg := err.Error()
			var ye yaml.Error
			if errors.As(err, &ye) {
				msg = ye.GetMessage()
			}
			return true, d.errf(n, path, "%s: %s", path, msg)
		}
		return true, nil
	case reflect.PointerTo(t).Implements(textUnmarshal):
		s, ok := scalarText(n)
		if !ok {
			return true, d.errf(n, path, "%s: expected a single value, got %s", path, describe(n))
		}
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return true, d.errf(n, path, "%s: %v", path, err)
		}
		return true, nil
	}

	return false, nil
}

// decodeList decodes a sequence into slice or array v.
func (d *decoder) decodeList(n ast.Node, v reflect.Value, path string) error {
	t := v.Type()
	seq, ok := n.(*ast.SequenceNode)
	if !ok {
		return d.errf(n, path, "%s: expected a list, got %s", path, describe(n))
	}
	if t.Kind() == reflect.Array && len(seq.Values) != t.Len() {
		return d.errf(n, path, "%s: expected a list of %d items, got %d", path, t.Len(), len(seq.Values))
	}
	out := v
	if t.Kind() == reflect.Slice {
		out = reflect.MakeSlice(t, len(seq.Values), len(seq.Values))
	}
	for i, item := range seq.Values {
		if err := d.decode(item, out.Index(i), fmt.Sprintf("%s[%d]", path, i)); err != nil {
			return err
		}
	}
	v.Set(out)
	return nil
}

// decodeInt decodes a whole number into signed v, checking its range.
func (d *decoder) decodeInt(n ast.Node, v reflect.Value, path string) error {
	in, ok := n.(*ast.IntegerNode)
	if !ok {
		return d.errf(n, path, "%s: expected a whole number, got %s", path, describe(n))
	}
	var i int64
	switch x := in.Value.(type) {
	case int64:
		i = x
	case uint64:
		if x > math.MaxInt64 {
			return d.errf(n, path, "%s: %d is too large", path, x)
		}
		i = int64(x)
	}
	if v.OverflowInt(i) {
		return d.errf(n, path, "%s: %d is out of range", path, i)
	}
	v.SetInt(i)
	return nil
}

// decodeUint decodes a non-negative whole number into unsigned v.
func (d *decoder) decodeUint(n ast.Node, v reflect.Value, path string) error {
	in, ok := n.(*ast.IntegerNode)
	if !ok {
		return d.errf(n, path, "%s: expected a whole number, got %s", path, describe(n))
	}
	var u uint64
	switch x := in.Value.(type) {
	case int64:
		if x < 0 {
			return d.errf(n, path, "%s: must not be negative, got %d", path, x)
		}
		u = uint64(x)
	case uint64:
		u = x
	}
	if v.OverflowUint(u) {
		return d.errf(n, path, "%s: %d is out of range", path, u)
	}
	v.SetUint(u)
	return nil
}

// decodeFloat decodes a number into v.
func (d *decoder) decodeFloat(n ast.Node, v reflect.Value, path string) error {
	var f float64
	switch x := n.(type) {
	case *ast.FloatNode:
		f = x.Value
	case *ast.IntegerNode:
		switch i := x.Value.(type) {
		case int64:
			f = float64(i)
		case uint64:
			f = float64(i)
		}
	default:
		return d.errf(n, path, "%s: expected a number, got %s", path, describe(n))
	}
	if v.OverflowFloat(f) {
		return d.errf(n, path, "%s: %v is out of range", path, f)
	}
	v.SetFloat(f)
	return nil
}

// decodeStruct decodes mapping entries into struct v; keys in skip are
// ignored.
func (d *decoder) decodeStruct(entries []*ast.MappingValueNode, v reflect.Value, path string, skip map[string]bool) error {
	fields := structFields(v.Type())
	seen := map[string]int{}
	for _, e := range entries {
		key, err := d.keyString(e)
		if err != nil {
			return err
		}
		line := lineOf(e.Key)
		full := join(path, key)
		if prev, dup := seen[key]; dup {
			return d.errAt(line, full, "duplicate key %q (first set on line %d)", full, prev)
		}
		seen[key] = line
		if skip[key] {
			continue
		}
		idx, ok := fields[key]
		if !ok {
			cands := make([]string, 0, len(fields))
			for k := range fields {
				cands = append(cands, k)
			}
			return d.errAt(line, full, "unknown key %q%s", full, suggest(key, cands))
		}
		if d.lines != nil {
			d.lines[full] = line
		}
		fv, err := fieldByIndex(v, idx)
		if err != nil {
			return d.errAt(line, full, "%s: %v", full, err)
		}
		if err := d.decode(e.Value, fv, full); err != nil {
			return err
		}
	}
	return nil
}

// fieldByIndex is reflect.Value.FieldByIndex allocating nil embedded
// pointers.
func fieldByIndex(v reflect.Value, idx []int) (reflect.Value, error) {
	for i, x := range idx {
		if i > 0 && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				if !v.CanSet() {
					return reflect.Value{}, fmt.Errorf("cannot set embedded pointer")
				}
				v.Set(reflect.New(v.Type().Elem()))
			}
			v = v.Elem()
		}
		v = v.Field(x)
	}
	return v, nil
}

func (d *decoder) decodeMap(n ast.Node, v reflect.Value, path string) error {
	t := v.Type()
	if t.Key().Kind() != reflect.String {
		return d.errf(n, path, "%s: maps with %s keys are not supported", path, t.Key())
	}
	entries, ok := mappingEntries(n)
	if !ok {
		return d.errf(n, path, "%s: expected a mapping, got %s", path, describe(n))
	}
	if v.IsNil() {
		v.Set(reflect.MakeMap(t))
	}
	seen := map[string]int{}
	for _, e := range entries {
		key, err := d.keyString(e)
		if err != nil {
			return err
		}
		line := lineOf(e.Key)
		full := join(path, key)
		if prev, dup := seen[key]; dup {
			return d.errAt(line, full, "duplicate key %q (first set on line %d)", full, prev)
		}
		seen[key] = line
		if d.lines != nil {
			d.lines[full] = line
		}
		kv := reflect.ValueOf(key).Convert(t.Key())
		elem := reflect.New(t.Elem()).Elem()
		if old := v.MapIndex(kv); old.IsValid() {
			elem.Set(old)
		}
		if err := d.decode(e.Value, elem, full); err != nil {
			return err
		}
		v.SetMapIndex(kv, elem)
	}
	return nil
}

// setString sets v from an environment variable's text: scalars are parsed
// as their type (strings taken verbatim), lists and mappings as YAML.
func (d *decoder) setString(v reflect.Value, s, path string) error {
	t := v.Type()
	bad := func(want string) error {
		return d.errAt(0, path, "%s: %q is not %s", path, s, want)
	}
	switch {
	case t == secretType:
		v.Set(reflect.ValueOf(Secret{kind: secretLiteral, value: s, ctx: d.secrets, origin: d.envVar}))
		return nil
	case t == durationType:
		dur, err := time.ParseDuration(s)
		if err != nil {
			return bad("a duration (write it like \"90s\", \"5m\" or \"1h30m\")")
		}
		v.SetInt(int64(dur))
		return nil
	case t.Kind() == reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(t.Elem()))
		}
		return d.setString(v.Elem(), s, path)
	case reflect.PointerTo(t).Implements(textUnmarshal):
		// A value from the environment is text: a type with a text form
		// parses it, even when it also reads YAML (a list of Matrix ids
		// "@a:x, @b:y" is no valid YAML, and a password is no YAML at all).
		if err := v.Addr().Interface().(encoding.TextUnmarshaler).UnmarshalText([]byte(s)); err != nil {
			return d.errAt(0, path, "%s: %v", path, err)
		}
		return nil
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(s)
		return nil
	case reflect.Bool:
		b, err := strconv.ParseBool(s)
		if err != nil {
			return bad("true or false")
		}
		v.SetBool(b)
		return nil
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		i, err := strconv.ParseInt(s, 10, t.Bits())
		if err != nil {
			return bad("a whole number in range")
		}
		v.SetInt(i)
		return nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		u, err := strconv.ParseUint(s, 10, t.Bits())
		if err != nil {
			return bad("a non-negative whole number in range")
		}
		v.SetUint(u)
		return nil
	case reflect.Float32, reflect.Float64:
		f, err := strconv.ParseFloat(s, t.Bits())
		if err != nil {
			return bad("a number")
		}
		v.SetFloat(f)
		return nil
	}
	// Lists, mappings, structs and custom types: the value is YAML.
	n, err := d.parse([]byte(s))
	if err != nil {
		return err
	}
	return d.decode(n, v, path)
}
