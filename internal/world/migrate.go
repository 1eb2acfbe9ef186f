package world

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// document is a world state file's top-level fields as the migrations see
// them: the JSON boundary, before the strict decode into State.
type document map[string]json.RawMessage

// migrations[n] upgrades a document from version n to n+1 in place; there
// is one for every version below Version. Add a function (and a testdata
// fixture of the old version) whenever State changes shape: a file is never
// read by guessing.
var migrations = []func(document) error{
	0: fromV0,
	1: fromV1,
	2: fromV2,
}

// migrate upgrades doc from version from to Version.
func migrate(doc document, from int) error {
	if len(migrations) != Version {
		return fmt.Errorf("world state: %d migrations for version %d (a migration is missing)", len(migrations), Version)
	}
	for v := from; v < Version; v++ {
		if err := migrations[v](doc); err != nil {
			return fmt.Errorf("migrate world state from version %d to %d: %w", v, v+1, err)
		}
		doc["version"] = json.RawMessage(strconv.Itoa(v + 1))
	}
	return nil
}

// v0Keys are the fields of an unversioned world state: llm_thalamus's
// world_state.json (seed 002, §8.1).
var v0Keys = []string{"updated_at", "project", "topics", "goals", "rules", "identity", "tz"}

// v0Identity is llm_thalamus's identity object.
type v0Identity struct {
	UserName        *string `json:"user_name"`
	SessionUserName *string `json:"session_user_name"`
	AgentName       *string `json:"agent_name"`
	UserLocation    *string `json:"user_location"`
}

// v0Item is a goal or rule of an unversioned file: a string, or an object
// naming its text (and, for goals, a status) under one of several keys.
type v0Item struct {
	Text   string
	Status string
}

func (it *v0Item) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		it.Text = s
		return nil
	}
	var o struct {
		Text        *string `json:"text"`
		Goal        *string `json:"goal"`
		Rule        *string `json:"rule"`
		Title       *string `json:"title"`
		Description *string `json:"description"`
		Status      *string `json:"status"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return fmt.Errorf("want a string or an object with a text: %w", err)
	}
	for _, p := range []*string{o.Text, o.Goal, o.Rule, o.Title, o.Description} {
		if p != nil && strings.TrimSpace(*p) != "" {
			it.Text = *p
			break
		}
	}
	if o.Status != nil {
		it.Status = *o.Status
	}
	return nil
}

// fromV0 turns llm_thalamus's unversioned layout into version 1: identity
// with session_user_name kept (and filling user_name when that is empty;
// version 1 had no session name, but the key rides along to fromV2), goals
// as {text, status}, rules as strings, a parseable updated_at. Unknown
// fields make the file unusable (it is then kept aside, not guessed at).
// The time zone ("tz") has no place in version 1 and is left for fromV1.
func fromV0(doc document) error {
	for k := range doc {
		if !slices.Contains(v0Keys, k) {
			return fmt.Errorf("unknown field %q in an unversioned world state", k)
		}
	}
	var v0 struct {
		UpdatedAt *string     `json:"updated_at"`
		Project   *string     `json:"project"`
		Topics    []string    `json:"topics"`
		Goals     []v0Item    `json:"goals"`
		Rules     []v0Item    `json:"rules"`
		Identity  *v0Identity `json:"identity"`
	}
	raw, err := json.Marshal(doc)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, &v0); err != nil {
		return err
	}
	out := document{}
	set := func(key string, v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out[key] = b
		return nil
	}
	var errs []error
	if v0.UpdatedAt != nil {
		if t, ok := parseLooseTime(*v0.UpdatedAt); ok {
			errs = append(errs, set("updated_at", t))
		}
	}
	errs = append(errs, set("project", deref(v0.Project)))
	topics := []string{}
	for _, t := range v0.Topics {
		if t = strings.TrimSpace(t); t != "" {
			topics = append(topics, t)
		}
	}
	errs = append(errs, set("topics", topics))
	goals := []Goal{}
	for _, g := range v0.Goals {
		if text := strings.TrimSpace(g.Text); text != "" {
			goals = append(goals, Goal{Text: text, Status: v0GoalStatus(g.Status)})
		}
	}
	errs = append(errs, set("goals", goals))
	rules := []string{}
	for _, r := range v0.Rules {
		if text := strings.TrimSpace(r.Text); text != "" {
			rules = append(rules, text)
		}
	}
	errs = append(errs, set("rules", rules))
	id := Identity{AgentName: DefaultAgentName}
	if v0.Identity != nil {
		id.UserName = strings.TrimSpace(deref(v0.Identity.UserName))
		if id.UserName == "" {
			id.UserName = strings.TrimSpace(deref(v0.Identity.SessionUserName))
		}
		if name := strings.TrimSpace(deref(v0.Identity.AgentName)); name != "" {
			id.AgentName = name
		}
		id.UserLocation = strings.TrimSpace(deref(v0.Identity.UserLocation))
		id.SessionUserName = strings.TrimSpace(deref(v0.Identity.SessionUserName))
	}
	errs = append(errs, set("identity", id))
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	if tz, ok := doc["tz"]; ok {
		out["tz"] = tz
	}
	clear(doc)
	for k, v := range out {
		doc[k] = v
	}
	return nil
}

// v0GoalStatus maps llm_thalamus's free-form goal states to ours.
func v0GoalStatus(s string) GoalStatus {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "done", "complete", "completed", "achieved", "finished", "closed":
		return GoalDone
	}
	return GoalActive
}

// parseLooseTime reads the timestamps llm_thalamus wrote (ISO 8601 with or
// without a zone; naive times are taken as UTC).
func parseLooseTime(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", time.DateOnly} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC().Truncate(time.Second), true
		}
	}
	return time.Time{}, false
}

// fromV1 adds the time zone (version 2). A document migrated from version 0
// brings llm_thalamus's "tz", which becomes the zone when it names a valid
// IANA zone and is dropped otherwise (the original file is kept as a
// backup by Load).
func fromV1(doc document) error {
	zone := ""
	if raw, ok := doc["tz"]; ok {
		var tz string
		if json.Unmarshal(raw, &tz) == nil && checkZone(strings.TrimSpace(tz)) == nil {
			zone = strings.TrimSpace(tz)
		}
		delete(doc, "tz")
	}
	b, err := json.Marshal(zone)
	if err != nil {
		return err
	}
	doc["timezone"] = b
	return nil
}

// fromV2 adds identity.session_user_name (version 3), empty unless a
// document migrated from llm_thalamus's layout brought it.
func fromV2(doc document) error {
	var id map[string]json.RawMessage
	if raw, ok := doc["identity"]; ok && string(raw) != "null" {
		if err := json.Unmarshal(raw, &id); err != nil {
			return fmt.Errorf("identity: %w", err)
		}
	}
	if id == nil {
		return nil // the strict decode fills the default identity
	}
	if _, ok := id["session_user_name"]; !ok {
		id["session_user_name"] = json.RawMessage(`""`)
	}
	b, err := json.Marshal(id)
	if err != nil {
		return err
	}
	doc["identity"] = b
	return nil
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
