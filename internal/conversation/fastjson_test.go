package conversation

import (
	"encoding/json"
	"reflect"
	"testing"
)

var fastDecodeSeeds = []string{
	`[]`,
	` [ ] `,
	`[{"type":"text","text":"hello"}]`,
	`[{"type":"text","text":"line\nbreak \"quoted\" tab\t slash\/ back\\ \u00e9 \u003cb\u003e \ud83d\ude42"}]`,
	`[{"type":"tool_call","id":"c1","name":"search","arguments":"{\"q\":1}"},{"type":"tool_result","call_id":"c1","name":"search","content":"ok","is_error":true}]`,
	`[{"type":"text","b64":true,"text":"/w=="}]`,
	`[{"type":"text","text":"lone \ud800 surrogate and \udc00 low"}]`,
	`[{"type":"text","text":"x"},]`,
	`[{"type":"text","text":"x"}`,
	`[{"type":"text","text":"x","extra":1}]`,
	`[{"Type":"text","TEXT":"case-insensitive keys"}]`,
	`[{"type":"text","text":null}]`,
	`[{"type":"text","is_error":"no"}]`,
	`[{"type":"text","text":"ctrl ` + "\x01" + `"}]`,
	`[{"type":"text","text":"bad escape \x"}]`,
	`[{"type":"text","text":"\u12"}]`,
	`{"type":"text"}`,
	`[{"type":"text","text":"a"}] trailing`,
	`[{}]`,
	`[{"type":"te\u0078t","text":"escaped key value"}]`,
	"[{\"type\":\"text\",\"text\":\"raw \xff byte\"}]",
}

// fastDecode must agree with encoding/json whenever it accepts the input.
func checkFastDecode(t *testing.T, data string) {
	got, ok := fastDecode([]byte(data))
	if !ok {
		return
	}
	var want []storedPart
	if err := json.Unmarshal([]byte(data), &want); err != nil {
		t.Fatalf("fastDecode accepted %q, encoding/json rejects it: %v", data, err)
	}
	if len(got) == 0 && len(want) == 0 {
		return
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("fastDecode(%q)\n got %#v\nwant %#v", data, got, want)
	}
}

func TestFastDecodeMatchesEncodingJSON(t *testing.T) {
	accepted := 0
	for _, s := range fastDecodeSeeds {
		checkFastDecode(t, s)
		if _, ok := fastDecode([]byte(s)); ok {
			accepted++
		}
	}
	if accepted < 6 {
		t.Errorf("fast path accepted only %d well-formed seeds", accepted)
	}
	// Everything encodeParts writes takes the fast path.
	data, err := encodeParts(nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := fastDecode(data); !ok {
		t.Errorf("fast path rejected %s", data)
	}
}

func FuzzFastDecode(f *testing.F) {
	for _, s := range fastDecodeSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data string) { checkFastDecode(t, data) })
}
