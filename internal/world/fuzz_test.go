package world

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"
)

// fuzzBase is a state with a little of everything, for ops to act on.
func fuzzBase() *State {
	s := Default(time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC))
	s.Identity.UserName = "Ada"
	s.Topics = []string{"tea", "Go"}
	s.Goals = []Goal{{Text: "ship 1.0", Status: GoalActive}}
	s.Rules = []string{"answer in English"}
	return s
}

// FuzzApplyOps decodes arbitrary bytes as the world_apply_ops arguments and
// applies them. Properties: no panic; a refusal leaves the state unchanged;
// a success gives a state that validates, keeps every bound the ops
// enforce (list sizes, single-line values within their lengths, no
// duplicates), survives Encode and Decode unchanged and renders a summary.
func FuzzApplyOps(f *testing.F) {
	for _, s := range []string{
		`[{"op":"add_topic","value":"tea"}]`,
		`[{"op":"set_user_name","value":"  Grace  "},{"op":"set_timezone","value":"Europe/Berlin"}]`,
		`[{"op":"add_goal","value":"learn Rust"},{"op":"set_goal_status","value":"LEARN  rust","status":"done"}]`,
		`[{"op":"remove_topic","value":"TEA"},{"op":"remove_rule","value":"nope"}]`,
		`[{"op":"set_timezone","value":"Local"}]`, `[{"op":"set_agent_name","value":""}]`,
		`[{"op":"add_rule","value":"line\nbreak"}]`, `[{"op":"add_topic","value":"x","status":"done"}]`,
		`[{"op":"frobnicate"}]`, `[]`, `{}`, `[{"op":"set_project","value":"p"}] trailing`,
		`[{"op":"set_location","value":"Zürich"},{"op":"remove_goal","value":"ship 1.0"}]`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ops, err := DecodeOps(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty decode error")
			}
			return
		}
		base := fuzzBase()
		before := base.Clone()
		next, err := ApplyOps(base, ops)
		if !reflect.DeepEqual(base, before) {
			t.Fatalf("ApplyOps changed its input: %+v → %+v", before, base)
		}
		if err != nil {
			if next != nil || !strings.Contains(err.Error(), "nothing was changed") && !strings.Contains(err.Error(), "ops given") {
				t.Fatalf("ApplyOps = %+v, %v; want no state and a message saying nothing changed", next, err)
			}
			return
		}
		if err := next.Validate(); err != nil {
			t.Fatalf("ops %s gave an invalid state: %v", data, err)
		}
		if len(next.Topics) > MaxTopics || len(next.Goals) > MaxGoals || len(next.Rules) > MaxRules {
			t.Fatalf("list bounds exceeded: %d topics, %d goals, %d rules", len(next.Topics), len(next.Goals), len(next.Rules))
		}
		single := func(what, v string, limit int) {
			if utf8.RuneCountInString(v) > limit || strings.IndexFunc(v, unicode.IsControl) >= 0 || v != strings.TrimSpace(v) {
				t.Fatalf("%s %q breaks the op bounds", what, v)
			}
		}
		single("user name", next.Identity.UserName, MaxNameChars)
		single("agent name", next.Identity.AgentName, MaxNameChars)
		single("location", next.Identity.UserLocation, MaxNameChars)
		single("project", next.Project, MaxNameChars)
		if next.Identity.AgentName == "" {
			t.Fatal("the agent lost its name")
		}
		seen := map[string]bool{}
		for _, list := range [][]string{next.Topics, goalTexts(next.Goals), next.Rules} {
			clear(seen)
			for _, v := range list {
				if seen[fold(v)] {
					t.Fatalf("duplicate %q in %q", v, list)
				}
				seen[fold(v)] = true
			}
		}
		enc, err := Encode(next)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(enc)
		if err != nil {
			t.Fatalf("Decode(Encode(state)) failed: %v\n%s", err, enc)
		}
		if !reflect.DeepEqual(back, next) {
			t.Fatalf("round trip changed the state:\n%+v\n%+v", next, back)
		}
		_ = next.Summary()
	})
}

// FuzzDecode feeds arbitrary bytes as world_state.json. Properties: no
// panic; an accepted file gives a valid state that encodes and decodes to
// itself.
func FuzzDecode(f *testing.F) {
	for _, name := range []string{"v0_minimal.json", "v0_thalamus.json", "v1.json"} {
		if data, err := os.ReadFile(filepath.Join("testdata", name)); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{`{}`, `{"version":2}`, `{"version":99}`, `{"version":-1}`, `[]`, `null`, `{"version":2,"goals":[{"text":"","status":"active"}]}`, `{"version":2,"timezone":"Mars/Olympus"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Decode(data)
		if err != nil {
			if s != nil || err.Error() == "" {
				t.Fatalf("Decode = %+v, %v", s, err)
			}
			return
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("Decode accepted an invalid state: %v", err)
		}
		enc, err := Encode(s)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Decode(enc)
		if err != nil || !reflect.DeepEqual(back, s) {
			t.Fatalf("round trip: %+v, %v; want %+v", back, err, s)
		}
		var generic map[string]any
		if json.Unmarshal(enc, &generic) != nil {
			t.Fatalf("Encode wrote invalid JSON: %s", enc)
		}
	})
}
