package tool

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"testing"
)

// FuzzValidateArgs feeds arbitrary bytes as the arguments of a typed tool
// (strings, a nullable integer, an enum list, an enum, a nested object).
// Properties: validation never panics; a refusal wraps ErrInvalidArguments;
// anything accepted is a JSON object the handler then receives (decoding
// never fails after validation passed) with every enum value in its
// declared set; accepting is stable (validating again gives the same).
func FuzzValidateArgs(f *testing.F) {
	for _, s := range []string{
		`{"query":"tea","unit":"celsius","range":{"from":"2026-01-01"}}`,
		`{"query":"tea","limit":3,"sources":["notes","web"],"unit":"fahrenheit","alt_unit":null,"range":{"from":"a","to":"b"}}`,
		`{"query":"tea","limit":"3","unit":"celsius","range":{"from":"a"}}`,
		`{"query":1}`, `[]`, `"{\"query\":\"x\"}"`, `null`, `{`, ``, `{"query":"x","limit":2.0,"unit":"celsius","range":{"from":"a"}}`,
		`{"query":"x","unit":"kelvin","range":{"from":"a"}}`, `{"query":"\ud800","unit":"celsius","range":{"from":"a"}}`,
	} {
		f.Add([]byte(s))
	}
	got := make(chan searchArgs, 1)
	tl := New("search_notes", "Search the notes.",
		func(ctx context.Context, a searchArgs) (any, error) {
			got <- a
			return "ok", nil
		},
		WithEnum("sources", "notes", "journal", "web"))
	f.Fuzz(func(t *testing.T, args []byte) {
		err := Validate(tl, args)
		if err != nil {
			if !errors.Is(err, ErrInvalidArguments) {
				t.Fatalf("Validate(%q) = %v; want an error wrapping ErrInvalidArguments", args, err)
			}
			if err.Error() == "" {
				t.Fatal("empty validation message")
			}
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(args, &obj) != nil {
			t.Fatalf("Validate accepted %q, which is not a JSON object", args)
		}
		if err2 := Validate(tl, args); err2 != nil {
			t.Fatalf("Validate(%q) is not stable: nil, then %v", args, err2)
		}
		res, err := tl.Call(t.Context(), args)
		if err != nil {
			t.Fatalf("Validate accepted %q but Call failed: %v", args, err)
		}
		a := <-got
		if res.Content != "ok" {
			t.Fatalf("Call = %+v", res)
		}
		for _, s := range a.Sources {
			if !slices.Contains([]string{"notes", "journal", "web"}, s) {
				t.Fatalf("accepted source %q outside the enum", s)
			}
		}
		if !slices.Contains(Unit("").EnumValues(), string(a.Unit)) && a.Unit != "" {
			t.Fatalf("accepted unit %q outside the enum", a.Unit)
		}
		if a.AltUnit != nil && !slices.Contains(Unit("").EnumValues(), string(*a.AltUnit)) {
			t.Fatalf("accepted alt_unit %q outside the enum", *a.AltUnit)
		}
	})
}
