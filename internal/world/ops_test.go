package world

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
	"time"
)

func sample() *State {
	s := Default(fixed)
	s.Identity.UserName = "Ada"
	s.Topics = []string{"notes", "Bernoulli numbers"}
	s.Goals = []Goal{{Text: "publish the notes", Status: GoalActive}}
	s.Rules = []string{"answer briefly"}
	return s
}

func TestOps(t *testing.T) {
	tests := []struct {
		name string
		ops  string
		want func(s *State) // applied to sample() to give the expected state
	}{
		{"set user name", `[{"op":"set_user_name","value":"  Ada Lovelace "}]`, func(s *State) { s.Identity.UserName = "Ada Lovelace" }},
		{"clear user name", `[{"op":"set_user_name"}]`, func(s *State) { s.Identity.UserName = "" }},
		{"set agent name", `[{"op":"set_agent_name","value":"Mnemo"}]`, func(s *State) { s.Identity.AgentName = "Mnemo" }},
		{"clear agent name falls back", `[{"op":"set_agent_name","value":""}]`, func(s *State) { s.Identity.AgentName = DefaultAgentName }},
		{"set location", `[{"op":"set_location","value":"London"}]`, func(s *State) { s.Identity.UserLocation = "London" }},
		{"set time zone", `[{"op":"set_timezone","value":"Europe/London"}]`, func(s *State) { s.TimeZone = "Europe/London" }},
		{"UTC is a zone", `[{"op":"set_timezone","value":"UTC"}]`, func(s *State) { s.TimeZone = "UTC" }},
		{"set project", `[{"op":"set_project","value":"analytical engine"}]`, func(s *State) { s.Project = "analytical engine" }},
		{"add topic", `[{"op":"add_topic","value":"tea"}]`, func(s *State) { s.Topics = append(s.Topics, "tea") }},
		{"add existing topic is a no-op", `[{"op":"add_topic","value":"bernoulli   NUMBERS"}]`, func(*State) {}},
		{"remove topic case-insensitively", `[{"op":"remove_topic","value":"NOTES"}]`, func(s *State) { s.Topics = []string{"Bernoulli numbers"} }},
		{"add goal", `[{"op":"add_goal","value":"meet Babbage"}]`, func(s *State) {
			s.Goals = append(s.Goals, Goal{Text: "meet Babbage", Status: GoalActive})
		}},
		{"goal done", `[{"op":"set_goal_status","value":"Publish the notes","status":"done"}]`, func(s *State) { s.Goals[0].Status = GoalDone }},
		{"remove goal", `[{"op":"remove_goal","value":"publish the notes"}]`, func(s *State) { s.Goals = []Goal{} }},
		{"add rule", `[{"op":"add_rule","value":"answer in German"}]`, func(s *State) { s.Rules = append(s.Rules, "answer in German") }},
		{"remove rule", `[{"op":"remove_rule","value":"answer briefly"}]`, func(s *State) { s.Rules = []string{} }},
		{"several in order", `[{"op":"add_topic","value":"tea"},{"op":"remove_topic","value":"tea"},{"op":"add_goal","value":"x"},{"op":"set_goal_status","value":"x","status":"done"}]`,
			func(s *State) { s.Goals = append(s.Goals, Goal{Text: "x", Status: GoalDone}) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ops, err := DecodeOps([]byte(tc.ops))
			if err != nil {
				t.Fatal(err)
			}
			before := sample()
			got, err := ApplyOps(before, ops)
			if err != nil {
				t.Fatal(err)
			}
			want := sample()
			tc.want(want)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("got  %+v\nwant %+v", got, want)
			}
			if !reflect.DeepEqual(before, sample()) {
				t.Error("ApplyOps changed its input")
			}
		})
	}
}

func TestOpsBadInput(t *testing.T) {
	tests := []struct {
		name   string
		ops    string
		reason string
	}{
		{"not an array", `{"op":"add_topic","value":"x"}`, "decode world ops"},
		{"unknown op", `[{"op":"set_mood","value":"happy"}]`, `unknown op "set_mood"`},
		{"missing op", `[{"value":"x"}]`, `missing "op"`},
		{"unknown field", `[{"op":"add_topic","topic":"x"}]`, "unknown field"},
		{"wrong type", `[{"op":"add_topic","value":3}]`, "cannot unmarshal"},
		{"trailing data", `[] []`, "data after"},
		{"status on another op", `[{"op":"add_goal","value":"x","status":"done"}]`, "takes no status"},
		{"status missing", `[{"op":"set_goal_status","value":"publish the notes"}]`, "needs a status"},
		{"bad status", `[{"op":"set_goal_status","value":"publish the notes","status":"maybe"}]`, `status "maybe"`},
		{"empty topic", `[{"op":"add_topic","value":"  "}]`, "value is empty"},
		{"unknown goal", `[{"op":"remove_goal","value":"fly"}]`, `no goal "fly"; the goals are: "publish the notes"`},
		{"unknown rule", `[{"op":"remove_rule","value":"x"}]`, `no rule "x"`},
		{"unknown topic", `[{"op":"remove_topic","value":"x"}]`, `no topic "x"`},
		{"bad zone", `[{"op":"set_timezone","value":"Mars/Olympus_Mons"}]`, "IANA"},
		{"Local zone", `[{"op":"set_timezone","value":"Local"}]`, "not allowed"},
		{"line break", `[{"op":"set_user_name","value":"Ada\nLovelace"}]`, "line break"},
		{"too long", `[{"op":"set_project","value":"` + strings.Repeat("x", MaxNameChars+1) + `"}]`, "at most"},
		{"no ops", `[]`, "no ops"},
		{"bad op after good ones", `[{"op":"add_topic","value":"tea"},{"op":"remove_goal","value":"fly"}]`, "op 2 (remove_goal)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := sample()
			ops, err := DecodeOps([]byte(tc.ops))
			if err == nil {
				_, err = ApplyOps(before, ops)
			}
			if err == nil || !strings.Contains(err.Error(), tc.reason) {
				t.Fatalf("error = %v, want one containing %q", err, tc.reason)
			}
			if !reflect.DeepEqual(before, sample()) {
				t.Error("state changed on a failed op")
			}
		})
	}
}

func TestOpsLimits(t *testing.T) {
	s := Default(fixed)
	var ops []Op
	for i := range MaxTopics + 1 {
		ops = append(ops, AddTopic{Topic: strings.Repeat("t", i+1)})
	}
	if _, err := ApplyOps(s, ops); err == nil || !strings.Contains(err.Error(), "already 30 topics") {
		t.Errorf("too many topics: %v", err)
	}
	ops = make([]Op, MaxOps+1)
	for i := range ops {
		ops[i] = SetProject{Project: "x"}
	}
	if _, err := ApplyOps(s, ops); err == nil || !strings.Contains(err.Error(), "at most 50") {
		t.Errorf("too many ops: %v", err)
	}
	if _, err := ApplyOps(s, []Op{nil}); err == nil {
		t.Error("nil op accepted")
	}
}

func TestSummary(t *testing.T) {
	if got := Default(fixed).Summary(); got != "" {
		t.Errorf("default summary = %q, want empty", got)
	}
	s := sample()
	s.Identity.UserLocation = "London"
	s.TimeZone = "Europe/London"
	s.Identity.AgentName = "Mnemo"
	s.Project = "analytical engine"
	s.Goals = append(s.Goals, Goal{Text: "meet Babbage", Status: GoalDone})
	want := `User: Ada
User's location: London
User's time zone: Europe/London
Your name: Mnemo
Current project: analytical engine
Topics: notes; Bernoulli numbers
Goals:
- publish the notes (active)
- meet Babbage (done)
Standing rules from the user:
- answer briefly`
	if got := s.Summary(); got != want {
		t.Errorf("summary:\n%s\nwant:\n%s", got, want)
	}
}

// A whole document (the web page's editor, PUT /api/v1/world) is held to
// the bounds the model's ops enforce.
func TestBoundedHoldsADocumentToTheOpsLimits(t *testing.T) {
	long := strings.Repeat("x", MaxNameChars+1)
	longText := strings.Repeat("y", MaxTextChars+1)
	many := func(n int, prefix string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%s %d", prefix, i)
		}
		return out
	}
	base := func() *State { return Default(time.Unix(0, 0)) }
	for _, tc := range []struct {
		name   string
		change func(*State)
		want   string // "" for accepted
	}{
		{"default", func(*State) {}, ""},
		{"full lists", func(s *State) {
			s.Topics = many(MaxTopics, "topic")
			s.Rules = many(MaxRules, "rule")
			for _, g := range many(MaxGoals, "goal") {
				s.Goals = append(s.Goals, Goal{Text: g, Status: GoalDone})
			}
		}, ""},
		{"long user name", func(s *State) { s.Identity.UserName = long }, "identity.user_name"},
		{"long agent name", func(s *State) { s.Identity.AgentName = long }, "identity.agent_name"},
		{"long location", func(s *State) { s.Identity.UserLocation = long }, "identity.user_location"},
		{"bad zone", func(s *State) { s.TimeZone = "Mars/Base" }, "timezone"},
		{"long project", func(s *State) { s.Project = long }, "project"},
		{"multi-line project", func(s *State) { s.Project = "a\nb" }, "project"},
		{"too many topics", func(s *State) { s.Topics = many(MaxTopics+1, "topic") }, "topics[30]"},
		{"long topic", func(s *State) { s.Topics = []string{long} }, "topics[0]"},
		{"empty topic", func(s *State) { s.Topics = []string{" "} }, "topics[0]"},
		{"too many goals", func(s *State) {
			for _, g := range many(MaxGoals+1, "goal") {
				s.Goals = append(s.Goals, Goal{Text: g, Status: GoalActive})
			}
		}, "goals[50]"},
		{"long goal", func(s *State) { s.Goals = []Goal{{Text: longText, Status: GoalActive}} }, "goals[0]"},
		{"bad goal status", func(s *State) { s.Goals = []Goal{{Text: "g", Status: "maybe"}} }, "goals[0].status"},
		{"too many rules", func(s *State) { s.Rules = many(MaxRules+1, "rule") }, "rules[50]"},
		{"huge rule", func(s *State) { s.Rules = []string{strings.Repeat("z", 800_000)} }, "rules[0]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := base()
			tc.change(s)
			got, err := Bounded(s)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				if !sameContent(got, s) {
					t.Fatalf("changed the document:\n%+v\n%+v", got, s)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), tc.want+":") {
				t.Fatalf("err = %v, want one naming %s", err, tc.want)
			}
		})
	}
}

// DecodeOps decodes a JSON array of ops strictly (unknown fields, wrong
// types and trailing data are errors) and parses them.
func DecodeOps(data []byte) ([]Op, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var specs []OpSpec
	if err := dec.Decode(&specs); err != nil {
		return nil, fmt.Errorf("decode world ops: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, errors.New("decode world ops: data after the JSON array")
	}
	ops, err := ParseOps(specs)
	if err != nil {
		return nil, fmt.Errorf("decode world ops: %w", err)
	}
	return ops, nil
}
