package toolloop

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzNormalizeArgs feeds arbitrary bytes as a tool call's arguments.
// Properties: normalizeArgs never panics; it returns either an error with a
// message or a JSON object; normalizing its own output changes nothing;
// the double-encoded form of an accepted object is accepted as the same
// object.
func FuzzNormalizeArgs(f *testing.F) {
	for _, s := range []string{
		`{"a":1}`, ` {"a":[1,2,{"b":null}]} `, `"{\"a\":1}"`, `"\"{\\\"a\\\":1}\""`, `""`, `null`, ``, `  `,
		`[1]`, `true`, `12`, `"just text"`, `{"a":`, `"{not json}"`, "\"\\u007b\\\"a\\\":1}\"", `{"a":"\ud800"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		out, err := normalizeArgs(raw)
		if err != nil {
			if err.Error() == "" || out != nil {
				t.Fatalf("normalizeArgs(%q) = %q, %v; want no output and a message", raw, out, err)
			}
			return
		}
		var obj map[string]any
		if err := json.Unmarshal(out, &obj); err != nil || obj == nil {
			t.Fatalf("normalizeArgs(%q) = %q: not a JSON object (%v)", raw, out, err)
		}
		again, err := normalizeArgs(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("normalizeArgs is not idempotent on %q: %q, %v", out, again, err)
		}
		// Double encoding: the same object (json.Marshal writes invalid
		// UTF-8 as U+FFFD, as decoding the original would).
		double, _ := json.Marshal(string(out))
		inner, err := normalizeArgs(double)
		var innerObj map[string]any
		if err != nil || json.Unmarshal(inner, &innerObj) != nil || !reflect.DeepEqual(innerObj, obj) {
			t.Fatalf("double-encoded %q normalized to %q, %v; want %q", double, inner, err, out)
		}
	})
}
