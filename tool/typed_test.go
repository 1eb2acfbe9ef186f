package tool

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

// Unit is an argument type that declares its own enum.
type Unit string

func (Unit) EnumValues() []string { return []string{"celsius", "fahrenheit"} }

type dateRange struct {
	From string `json:"from" jsonschema:"first day, YYYY-MM-DD"`
	To   string `json:"to,omitempty" jsonschema:"last day, YYYY-MM-DD; defaults to from"`
}

type searchArgs struct {
	Query   string    `json:"query" jsonschema:"what to search for"`
	Limit   *int      `json:"limit" jsonschema:"maximum number of results (default 10)"`
	Sources []string  `json:"sources,omitempty" jsonschema:"where to search"`
	Unit    Unit      `json:"unit" jsonschema:"temperature unit of the results"`
	AltUnit *Unit     `json:"alt_unit" jsonschema:"also show this unit"`
	Range   dateRange `json:"range" jsonschema:"dates to search"`
	Skipped string    `json:"-"`
}

type noArgs struct{}

func searchTool() Tool {
	return New("search_notes", "Search the notes.",
		func(ctx context.Context, a searchArgs) (any, error) {
			return map[string]any{"query": a.Query, "unit": a.Unit}, nil
		},
		WithEnum("sources", "notes", "journal", "web"),
		ReadOnly(), WithCategories("research"))
}

func TestNewSchemaGolden(t *testing.T) {
	tests := []struct {
		name   string
		golden string
		tool   Tool
	}{
		{"search args", "search_args.json", searchTool()},
		{"no args", "no_args.json", New("now", "Current time.", func(context.Context, noArgs) (any, error) { return "t", nil })},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got bytes.Buffer
			if err := json.Indent(&got, tc.tool.Schema(), "", "  "); err != nil {
				t.Fatalf("schema is not JSON: %v", err)
			}
			got.WriteByte('\n')
			path := filepath.Join("testdata", tc.golden)
			if *update {
				if err := os.WriteFile(path, got.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("read golden (run with -update to create): %v", err)
			}
			if got.String() != string(want) {
				t.Errorf("schema mismatch (run with -update to accept)\ngot:\n%s\nwant:\n%s", got.String(), want)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	tl := searchTool()
	valid := `{"query":"q","unit":"celsius","range":{"from":"2024-01-01"}}`
	tests := []struct {
		name    string
		args    string
		wantErr string // substring; empty means valid
	}{
		{"valid minimal", valid, ""},
		{"valid with optionals", `{"query":"q","unit":"fahrenheit","range":{"from":"a","to":"b"},"limit":3,"sources":["web"]}`, ""},
		{"explicit null for pointer", `{"query":"q","unit":"celsius","range":{"from":"a"},"limit":null}`, ""},
		{"integral float accepted", `{"query":"q","unit":"celsius","range":{"from":"a"},"limit":2.0}`, ""},
		{"optional enum pointer set", `{"query":"q","unit":"celsius","range":{"from":"a"},"alt_unit":"fahrenheit"}`, ""},
		{"optional enum pointer null", `{"query":"q","unit":"celsius","range":{"from":"a"},"alt_unit":null}`, ""},
		{"optional enum pointer invalid", `{"query":"q","unit":"celsius","range":{"from":"a"},"alt_unit":"kelvin"}`, `property "alt_unit": enum`},
		{"missing required", `{"unit":"celsius","range":{"from":"a"}}`, `missing properties: ["query"]`},
		{"missing nested required", `{"query":"q","unit":"celsius","range":{}}`, `property "range": required: missing properties: ["from"]`},
		{"wrong type", `{"query":5,"unit":"celsius","range":{"from":"a"}}`, `property "query": type`},
		{"enum from Enumerator", `{"query":"q","unit":"kelvin","range":{"from":"a"}}`, `property "unit": enum`},
		{"enum from WithEnum on items", `{"query":"q","unit":"celsius","range":{"from":"a"},"sources":["mail"]}`, `property "sources[]": enum`},
		{"fractional integer", `{"query":"q","unit":"celsius","range":{"from":"a"},"limit":1.5}`, `property "limit": type`},
		{"unknown property", `{"query":"q","unit":"celsius","range":{"from":"a"},"extra":1}`, `unexpected additional properties ["extra"]`},
		{"unknown nested property", `{"query":"q","unit":"celsius","range":{"from":"a","until":"b"}}`, `property "range": unexpected additional properties ["until"]`},
		{"array", `[1,2]`, "must be a JSON object, got an array"},
		{"null", `null`, "must be a JSON object, got null"},
		{"string", `"x"`, "must be a JSON object, got a string"},
		{"malformed", `{"query":`, "not valid JSON"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := Validate(tl, json.RawMessage(tc.args))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatalf("Validate: unexpected error %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate: want error containing %q, got nil", tc.wantErr)
			}
			if !errors.Is(err, ErrInvalidArguments) {
				t.Errorf("error %v does not wrap ErrInvalidArguments", err)
			}
			if !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %q does not contain %q", err, tc.wantErr)
			}
		})
	}
}

type echoResult struct {
	Got  string `json:"got"`
	Note string `json:"note,omitempty"`
}

func TestTypedCall(t *testing.T) {
	type args struct {
		Text string `json:"text"`
	}
	errBoom := errors.New("boom")
	tests := []struct {
		name    string
		fn      func(context.Context, args) (any, error)
		args    string
		want    string
		wantErr error
	}{
		{"string passed through", func(_ context.Context, a args) (any, error) { return "plain " + a.Text, nil }, `{"text":"x"}`, "plain x", nil},
		{"struct marshalled", func(_ context.Context, a args) (any, error) { return echoResult{Got: a.Text}, nil }, `{"text":"<b>"}`, `{"got":"\u003cb\u003e"}`, nil},
		{"raw JSON passed through", func(context.Context, args) (any, error) { return json.RawMessage(`{"a":1}`), nil }, `{"text":"x"}`, `{"a":1}`, nil},
		{"Result passed through", func(context.Context, args) (any, error) { return Result{Content: "r"}, nil }, `{"text":"x"}`, "r", nil},
		{"nil is null", func(context.Context, args) (any, error) { return nil, nil }, `{"text":"x"}`, "null", nil},
		{"empty args decode to zero value", func(_ context.Context, a args) (any, error) { return "[" + a.Text + "]", nil }, ``, "[]", nil},
		{"handler error returned", func(context.Context, args) (any, error) { return "ignored", errBoom }, `{"text":"x"}`, "", errBoom},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tl := New("echo", "Echo.", tc.fn)
			res, err := tl.Call(t.Context(), json.RawMessage(tc.args))
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Call error = %v, want %v", err, tc.wantErr)
			}
			if res.Content != tc.want {
				t.Errorf("Content = %q, want %q", res.Content, tc.want)
			}
		})
	}
}

func TestTypedMetadata(t *testing.T) {
	tl := searchTool()
	if tl.Name() != "search_notes" || tl.Description() != "Search the notes." {
		t.Errorf("name/description = %q/%q", tl.Name(), tl.Description())
	}
	if !IsReadOnly(tl) {
		t.Error("IsReadOnly = false, want true")
	}
	if got := CategoriesOf(tl); len(got) != 1 || got[0] != "research" {
		t.Errorf("CategoriesOf = %v, want [research]", got)
	}
	plain := New("plain", "p", func(context.Context, noArgs) (any, error) { return "", nil })
	if IsReadOnly(plain) || CategoriesOf(plain) != nil {
		t.Errorf("plain tool: IsReadOnly=%v categories=%v, want false, nil", IsReadOnly(plain), CategoriesOf(plain))
	}
	spec := Spec(tl)
	if spec.Name != "search_notes" || string(spec.Parameters) != string(tl.Schema()) {
		t.Errorf("Spec = %+v", spec)
	}
}

func TestNewPanics(t *testing.T) {
	type strArgs struct {
		S string `json:"s"`
		N int    `json:"n"`
	}
	noop := func(context.Context, strArgs) (any, error) { return nil, nil }
	tests := []struct {
		name  string
		build func()
		want  string
	}{
		{"invalid name", func() { New("bad name", "d", noop) }, "invalid tool name"},
		{"long name", func() { New(strings.Repeat("a", 65), "d", noop) }, "invalid tool name"},
		{"nil handler", func() { New[strArgs]("ok", "d", nil) }, "nil handler"},
		{"non-struct args", func() { New("ok", "d", func(context.Context, string) (any, error) { return nil, nil }) }, "must be a struct"},
		{"unsupported field", func() {
			New("ok", "d", func(context.Context, struct{ C chan int }) (any, error) { return nil, nil })
		}, "derive schema"},
		{"enum on unknown property", func() { New("ok", "d", noop, WithEnum("missing", "a")) }, `no property "missing"`},
		{"enum on non-string", func() { New("ok", "d", noop, WithEnum("n", "a")) }, "not a string"},
		{"enum without values", func() { New("ok", "d", noop, WithEnum("s")) }, "no values"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				r := recover()
				if r == nil {
					t.Fatal("New did not panic")
				}
				if msg, _ := r.(string); !strings.Contains(msg, tc.want) {
					t.Errorf("panic %q does not contain %q", r, tc.want)
				}
			}()
			tc.build()
		})
	}
}

func TestNewRawAndChecked(t *testing.T) {
	handler := func(_ context.Context, args json.RawMessage) (Result, error) {
		return Result{Content: string(args)}, nil
	}
	schema := json.RawMessage(`{
		"type": "object",
		"properties": {"path": {"type": "string"}},
		"required": ["path"]
	}`)
	rt, err := NewRaw("read_file", "Read a file.", schema, handler, ReadOnly())
	if err != nil {
		t.Fatalf("NewRaw: %v", err)
	}
	if got := string(rt.Schema()); got != `{"type":"object","properties":{"path":{"type":"string"}},"required":["path"]}` {
		t.Errorf("schema not compacted: %s", got)
	}
	if !IsReadOnly(rt) {
		t.Error("ReadOnly option lost")
	}
	if err := Validate(rt, json.RawMessage(`{"path":"a"}`)); err != nil {
		t.Errorf("valid args rejected: %v", err)
	}
	if err := Validate(rt, json.RawMessage(`{}`)); err == nil || !strings.Contains(err.Error(), `"path"`) {
		t.Errorf("missing path: err = %v", err)
	}
	res, err := rt.Call(t.Context(), json.RawMessage(`{"path":"a"}`))
	if err != nil || res.Content != `{"path":"a"}` {
		t.Errorf("Call = %q, %v", res.Content, err)
	}

	badTests := []struct {
		name   string
		tname  string
		schema string
		opts   []Option
		want   string
	}{
		{"bad name", "a b", `{"type":"object"}`, nil, "invalid tool name"},
		{"not JSON", "x", `{`, nil, "parse schema"},
		{"not an object schema", "x", `{"type":"string"}`, nil, "must describe an object"},
		{"enum option", "x", `{"type":"object"}`, []Option{WithEnum("a", "b")}, "WithEnum"},
	}
	for _, tc := range badTests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewRaw(tc.tname, "d", json.RawMessage(tc.schema), handler, tc.opts...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("NewRaw error = %v, want containing %q", err, tc.want)
			}
		})
	}

	// A foreign Tool implementation gains a compiled validator through Checked.
	ft := foreignTool{schema: schema}
	if _, ok := Tool(ft).(Validator); ok {
		t.Fatal("foreignTool must not implement Validator for this test")
	}
	if err := Validate(ft, json.RawMessage(`{"path":1}`)); err == nil {
		t.Error("Validate on foreign tool accepted a wrong type")
	}
	ct, err := Checked(ft)
	if err != nil {
		t.Fatalf("Checked: %v", err)
	}
	if _, ok := ct.(Validator); !ok {
		t.Fatal("Checked result does not implement Validator")
	}
	if err := Validate(ct, json.RawMessage(`{"path":1}`)); err == nil || !strings.Contains(err.Error(), `property "path"`) {
		t.Errorf("checked validation error = %v", err)
	}
	if same, _ := Checked(rt); same != rt {
		t.Error("Checked wrapped a tool that already validates")
	}
	if _, err := Checked(foreignTool{schema: json.RawMessage(`{"type":`)}); err == nil {
		t.Error("Checked accepted a broken schema")
	}
}

type foreignTool struct{ schema json.RawMessage }

func (foreignTool) Name() string              { return "foreign" }
func (foreignTool) Description() string       { return "A tool implemented elsewhere." }
func (f foreignTool) Schema() json.RawMessage { return f.schema }
func (foreignTool) Call(context.Context, json.RawMessage) (Result, error) {
	return Result{Content: "ok"}, nil
}
