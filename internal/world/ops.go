package world

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Limits on what ops may write. Files edited by hand are not held to them.
const (
	// MaxOps is the most ops one Apply takes.
	MaxOps = 50
	// MaxNameChars bounds names, the location, the zone, the project and
	// topics.
	MaxNameChars = 200
	// MaxTextChars bounds a goal or a rule.
	MaxTextChars = 500
	// MaxTopics, MaxGoals and MaxRules bound the lists.
	MaxTopics = 30
	MaxGoals  = 50
	MaxRules  = 50
)

// OpName names an op on the wire.
type OpName string

// The ops.
const (
	OpSetUserName        OpName = "set_user_name"
	OpSetSessionUserName OpName = "set_session_user_name"
	OpSetAgentName       OpName = "set_agent_name"
	OpSetLocation        OpName = "set_location"
	OpSetTimezone        OpName = "set_timezone"
	OpSetProject         OpName = "set_project"
	OpAddTopic           OpName = "add_topic"
	OpRemoveTopic        OpName = "remove_topic"
	OpAddGoal            OpName = "add_goal"
	OpSetGoalStatus      OpName = "set_goal_status"
	OpRemoveGoal         OpName = "remove_goal"
	OpAddRule            OpName = "add_rule"
	OpRemoveRule         OpName = "remove_rule"
)

var opNames = []OpName{
	OpSetUserName, OpSetSessionUserName, OpSetAgentName, OpSetLocation, OpSetTimezone, OpSetProject,
	OpAddTopic, OpRemoveTopic, OpAddGoal, OpSetGoalStatus, OpRemoveGoal, OpAddRule, OpRemoveRule,
}

// EnumValues lists the op names (tool.Enumerator).
func (OpName) EnumValues() []string {
	out := make([]string, len(opNames))
	for i, n := range opNames {
		out[i] = string(n)
	}
	return out
}

// EnumValues lists the goal states (tool.Enumerator).
func (GoalStatus) EnumValues() []string { return []string{string(GoalActive), string(GoalDone)} }

// Op is one typed change to the world state. The set is closed: the types
// below are all there is.
type Op interface {
	// Name is the op's wire name.
	Name() OpName
	// apply changes s or says why it cannot; s may be left half-changed on
	// error (Apply works on a copy).
	apply(s *State) error
}

// The ops. Set ops with an empty value clear the field (the agent name
// falls back to DefaultAgentName). Add ops of something already there change
// nothing; remove ops and set_goal_status match case-insensitively, ignoring
// repeated spaces, and fail when nothing matches.
type (
	SetUserName        struct{ UserName string }
	SetSessionUserName struct{ UserName string }
	SetAgentName       struct{ AgentName string }
	SetLocation        struct{ Location string }
	SetTimezone        struct{ Zone string }
	SetProject         struct{ Project string }
	AddTopic           struct{ Topic string }
	RemoveTopic        struct{ Topic string }
	AddGoal            struct{ Goal string }
	SetGoalStatus      struct {
		Goal   string
		Status GoalStatus
	}
	RemoveGoal struct{ Goal string }
	AddRule    struct{ Rule string }
	RemoveRule struct{ Rule string }
)

func (SetUserName) Name() OpName        { return OpSetUserName }
func (SetSessionUserName) Name() OpName { return OpSetSessionUserName }
func (SetAgentName) Name() OpName       { return OpSetAgentName }
func (SetLocation) Name() OpName        { return OpSetLocation }
func (SetTimezone) Name() OpName        { return OpSetTimezone }
func (SetProject) Name() OpName         { return OpSetProject }
func (AddTopic) Name() OpName           { return OpAddTopic }
func (RemoveTopic) Name() OpName        { return OpRemoveTopic }
func (AddGoal) Name() OpName            { return OpAddGoal }
func (SetGoalStatus) Name() OpName      { return OpSetGoalStatus }
func (RemoveGoal) Name() OpName         { return OpRemoveGoal }
func (AddRule) Name() OpName            { return OpAddRule }
func (RemoveRule) Name() OpName         { return OpRemoveRule }

func (o SetUserName) apply(s *State) error {
	v, err := optionalText(o.UserName, MaxNameChars)
	s.Identity.UserName = v
	return err
}

func (o SetSessionUserName) apply(s *State) error {
	v, err := optionalText(o.UserName, MaxNameChars)
	s.Identity.SessionUserName = v
	return err
}

func (o SetAgentName) apply(s *State) error {
	v, err := optionalText(o.AgentName, MaxNameChars)
	if v == "" {
		v = DefaultAgentName
	}
	s.Identity.AgentName = v
	return err
}

func (o SetLocation) apply(s *State) error {
	v, err := optionalText(o.Location, MaxNameChars)
	s.Identity.UserLocation = v
	return err
}

func (o SetTimezone) apply(s *State) error {
	v, err := optionalText(o.Zone, MaxNameChars)
	if err != nil {
		return err
	}
	if err := checkZone(v); err != nil {
		return err
	}
	s.TimeZone = v
	return nil
}

func (o SetProject) apply(s *State) error {
	v, err := optionalText(o.Project, MaxNameChars)
	s.Project = v
	return err
}

func (o AddTopic) apply(s *State) error {
	v, err := requiredText(o.Topic, MaxNameChars)
	if err != nil {
		return err
	}
	if find(s.Topics, v) >= 0 {
		return nil
	}
	if len(s.Topics) >= MaxTopics {
		return fmt.Errorf("there are already %d topics (the most); remove one first", MaxTopics)
	}
	s.Topics = append(s.Topics, v)
	return nil
}

func (o RemoveTopic) apply(s *State) error {
	i, err := findOrFail(s.Topics, o.Topic, "topic")
	if err != nil {
		return err
	}
	s.Topics = slices.Delete(s.Topics, i, i+1)
	return nil
}

func (o AddGoal) apply(s *State) error {
	v, err := requiredText(o.Goal, MaxTextChars)
	if err != nil {
		return err
	}
	if find(goalTexts(s.Goals), v) >= 0 {
		return nil
	}
	if len(s.Goals) >= MaxGoals {
		return fmt.Errorf("there are already %d goals (the most); remove one first", MaxGoals)
	}
	s.Goals = append(s.Goals, Goal{Text: v, Status: GoalActive})
	return nil
}

func (o SetGoalStatus) apply(s *State) error {
	switch o.Status {
	case GoalActive, GoalDone:
	default:
		return fmt.Errorf("status %q is not %q or %q", o.Status, GoalActive, GoalDone)
	}
	i, err := findOrFail(goalTexts(s.Goals), o.Goal, "goal")
	if err != nil {
		return err
	}
	s.Goals[i].Status = o.Status
	return nil
}

func (o RemoveGoal) apply(s *State) error {
	i, err := findOrFail(goalTexts(s.Goals), o.Goal, "goal")
	if err != nil {
		return err
	}
	s.Goals = slices.Delete(s.Goals, i, i+1)
	return nil
}

func (o AddRule) apply(s *State) error {
	v, err := requiredText(o.Rule, MaxTextChars)
	if err != nil {
		return err
	}
	if find(s.Rules, v) >= 0 {
		return nil
	}
	if len(s.Rules) >= MaxRules {
		return fmt.Errorf("there are already %d rules (the most); remove one first", MaxRules)
	}
	s.Rules = append(s.Rules, v)
	return nil
}

func (o RemoveRule) apply(s *State) error {
	i, err := findOrFail(s.Rules, o.Rule, "rule")
	if err != nil {
		return err
	}
	s.Rules = slices.Delete(s.Rules, i, i+1)
	return nil
}

// Bounded rebuilds s through the ops (as if the model had written it op
// by op), so a whole document given at once — the web page's editor —
// is held to exactly the bounds the ops enforce: lengths, single lines,
// the number of topics, goals and rules, and valid zones. Duplicates are
// merged as the ops merge them; values are trimmed. Version and
// UpdatedAt are copied; the error names the field.
func Bounded(s *State) (*State, error) {
	out := Default(s.UpdatedAt)
	out.Version, out.UpdatedAt = s.Version, s.UpdatedAt
	type step struct {
		what string
		op   interface{ apply(*State) error }
	}
	steps := []step{
		{"identity.user_name", SetUserName{UserName: s.Identity.UserName}},
		{"identity.session_user_name", SetSessionUserName{UserName: s.Identity.SessionUserName}},
		{"identity.agent_name", SetAgentName{AgentName: s.Identity.AgentName}},
		{"identity.user_location", SetLocation{Location: s.Identity.UserLocation}},
		{"timezone", SetTimezone{Zone: s.TimeZone}},
		{"project", SetProject{Project: s.Project}},
	}
	for i, t := range s.Topics {
		steps = append(steps, step{fmt.Sprintf("topics[%d]", i), AddTopic{Topic: t}})
	}
	for i, g := range s.Goals {
		steps = append(steps, step{fmt.Sprintf("goals[%d]", i), AddGoal{Goal: g.Text}})
		if g.Status != GoalActive {
			steps = append(steps, step{fmt.Sprintf("goals[%d].status", i), SetGoalStatus{Goal: g.Text, Status: g.Status}})
		}
	}
	for i, r := range s.Rules {
		steps = append(steps, step{fmt.Sprintf("rules[%d]", i), AddRule{Rule: r}})
	}
	for _, st := range steps {
		if err := st.op.apply(out); err != nil {
			return nil, fmt.Errorf("%s: %w", st.what, err)
		}
	}
	return out, nil
}

// ApplyOps applies ops to a copy of s, in order, and returns the copy; on
// the first failing op it returns an error naming it, and s is unchanged
// either way. UpdatedAt is not touched.
func ApplyOps(s *State, ops []Op) (*State, error) {
	if len(ops) == 0 {
		return nil, errors.New("no ops given")
	}
	if len(ops) > MaxOps {
		return nil, fmt.Errorf("%d ops given; at most %d at a time", len(ops), MaxOps)
	}
	next := s.Clone()
	for i, op := range ops {
		if op == nil {
			return nil, fmt.Errorf("op %d is empty", i+1)
		}
		if err := op.apply(next); err != nil {
			return nil, fmt.Errorf("op %d (%s): %w; nothing was changed", i+1, op.Name(), err)
		}
	}
	return next, nil
}

// OpSpec is an op as JSON: {"op": "add_topic", "value": "tea"}. Every op
// takes value; set_goal_status also takes status. It is the wire form of
// the world_apply_ops tool (its schema is derived from this type).
type OpSpec struct {
	Op     OpName     `json:"op" jsonschema:"what to change"`
	Value  string     `json:"value,omitempty" jsonschema:"the new name, location, IANA time zone or project (empty clears it); the topic, goal or rule to add or remove; for set_goal_status the goal's text"`
	Status GoalStatus `json:"status,omitempty" jsonschema:"set_goal_status only: active or done"`
}

// Parse turns the wire form into the typed op, checking that it carries
// exactly the fields that op takes.
func (o OpSpec) Parse() (Op, error) {
	if o.Status != "" && o.Op != OpSetGoalStatus {
		return nil, fmt.Errorf("%s takes no status (only set_goal_status does)", o.Op)
	}
	switch o.Op {
	case OpSetUserName:
		return SetUserName{UserName: o.Value}, nil
	case OpSetSessionUserName:
		return SetSessionUserName{UserName: o.Value}, nil
	case OpSetAgentName:
		return SetAgentName{AgentName: o.Value}, nil
	case OpSetLocation:
		return SetLocation{Location: o.Value}, nil
	case OpSetTimezone:
		return SetTimezone{Zone: o.Value}, nil
	case OpSetProject:
		return SetProject{Project: o.Value}, nil
	case OpAddTopic:
		return AddTopic{Topic: o.Value}, nil
	case OpRemoveTopic:
		return RemoveTopic{Topic: o.Value}, nil
	case OpAddGoal:
		return AddGoal{Goal: o.Value}, nil
	case OpSetGoalStatus:
		if o.Status == "" {
			return nil, fmt.Errorf("set_goal_status needs a status (%q or %q)", GoalActive, GoalDone)
		}
		return SetGoalStatus{Goal: o.Value, Status: o.Status}, nil
	case OpRemoveGoal:
		return RemoveGoal{Goal: o.Value}, nil
	case OpAddRule:
		return AddRule{Rule: o.Value}, nil
	case OpRemoveRule:
		return RemoveRule{Rule: o.Value}, nil
	case "":
		return nil, errors.New(`missing "op"`)
	default:
		return nil, fmt.Errorf("unknown op %q (want one of %s)", o.Op, strings.Join(OpName("").EnumValues(), ", "))
	}
}

// ParseOps parses every spec; the first bad one is an error naming it.
func ParseOps(specs []OpSpec) ([]Op, error) {
	ops := make([]Op, 0, len(specs))
	for i, spec := range specs {
		op, err := spec.Parse()
		if err != nil {
			return nil, fmt.Errorf("op %d: %w", i+1, err)
		}
		ops = append(ops, op)
	}
	return ops, nil
}

// optionalText cleans a single-line value that may be empty.
func optionalText(v string, limit int) (string, error) {
	v = strings.TrimSpace(v)
	if n := len([]rune(v)); n > limit {
		return "", fmt.Errorf("value is %d characters long; at most %d", n, limit)
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		return "", fmt.Errorf("value contains a control character or line break at byte %d; give one line of text", i)
	}
	return v, nil
}

// requiredText is optionalText that must not be empty.
func requiredText(v string, limit int) (string, error) {
	v, err := optionalText(v, limit)
	if err == nil && v == "" {
		err = errors.New("value is empty")
	}
	return v, err
}

// fold is the form values are matched in.
func fold(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), " ")) }

func find(list []string, v string) int {
	f := fold(v)
	return slices.IndexFunc(list, func(x string) bool { return fold(x) == f })
}

func findOrFail(list []string, v, what string) (int, error) {
	if strings.TrimSpace(v) == "" {
		return -1, fmt.Errorf("which %s? value is empty", what)
	}
	if i := find(list, v); i >= 0 {
		return i, nil
	}
	if len(list) == 0 {
		return -1, fmt.Errorf("no %s %q: there are none", what, v)
	}
	return -1, fmt.Errorf("no %s %q; the %ss are: %s", what, v, what, strings.Join(quoteAll(list), ", "))
}

func quoteAll(list []string) []string {
	out := make([]string, len(list))
	for i, s := range list {
		out[i] = fmt.Sprintf("%q", s)
	}
	return out
}

func goalTexts(goals []Goal) []string {
	out := make([]string, len(goals))
	for i, g := range goals {
		out[i] = g.Text
	}
	return out
}

// checkZone accepts "" and IANA zone names ("Europe/Berlin", "UTC"), not
// "Local" (it means whatever the host says).
func checkZone(zone string) error {
	if zone == "" {
		return nil
	}
	if zone == "Local" {
		return errors.New(`time zone "Local" is not allowed; give an IANA name such as "Europe/Berlin"`)
	}
	if _, err := time.LoadLocation(zone); err != nil {
		return fmt.Errorf("time zone %q is not an IANA zone name (such as \"Europe/Berlin\")", zone)
	}
	return nil
}

// Clone returns a deep copy of s.
func (s *State) Clone() *State {
	c := *s
	c.Topics = slices.Clone(s.Topics)
	c.Goals = slices.Clone(s.Goals)
	c.Rules = slices.Clone(s.Rules)
	c.normalize()
	return &c
}

// Summary renders s for the model and the tool's answer, one fact per line;
// it is "" when nothing is known beyond the defaults.
func (s *State) Summary() string {
	var b strings.Builder
	line := func(label, v string) {
		if v != "" {
			fmt.Fprintf(&b, "%s: %s\n", label, v)
		}
	}
	line("User", s.Identity.UserName)
	if s.Identity.SessionUserName != s.Identity.UserName {
		line("User's name in this session", s.Identity.SessionUserName)
	}
	line("User's location", s.Identity.UserLocation)
	line("User's time zone", s.TimeZone)
	if s.Identity.AgentName != DefaultAgentName {
		line("Your name", s.Identity.AgentName)
	}
	line("Current project", s.Project)
	if len(s.Topics) > 0 {
		line("Topics", strings.Join(s.Topics, "; "))
	}
	if len(s.Goals) > 0 {
		b.WriteString("Goals:\n")
		for _, g := range s.Goals {
			fmt.Fprintf(&b, "- %s (%s)\n", g.Text, g.Status)
		}
	}
	if len(s.Rules) > 0 {
		b.WriteString("Standing rules from the user:\n")
		for _, r := range s.Rules {
			fmt.Fprintf(&b, "- %s\n", r)
		}
	}
	return strings.TrimRight(b.String(), "\n")
}
