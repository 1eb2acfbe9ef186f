package agent

import (
	"fmt"
	"regexp"
	"regexp/syntax"
	"slices"
	"strings"
	"sync"

	"github.com/reverie-ai/reverie/internal/toolloop"
)

// SupervisorPrefix starts every corrective system event the supervisor check
// raises; turns answering such an event are never checked again (no loops).
const SupervisorPrefix = "[SUPERVISOR]"

// ClaimRule is one row of the supervisor check: a reply matching any of
// Patterns claims an action that only a successful call of one of Tools
// performs.
type ClaimRule struct {
	// Name identifies the rule in logs ("spawn", "reminder", …).
	Name string
	// Claim describes the action for the corrective event ("started a
	// background worker").
	Claim string
	// Patterns match the claim in a reply (case-insensitive expressions).
	Patterns []*regexp.Regexp
	// Tools are the calls that make the claim true.
	Tools []string

	// needs[i], when set, are strings one of which (case-folded: fold)
	// every match of Patterns[i] holds (requiredText): a reply holding
	// none is not run through the pattern. Set for the built-in rules;
	// a rule made elsewhere runs every pattern.
	needs [][]string
}

// Mismatch is a claim without a matching tool call.
type Mismatch struct {
	Rule ClaimRule
	// Match is the text that made the claim.
	Match string
}

// Event is the text of the corrective system event for m.
func (m Mismatch) Event() string {
	return fmt.Sprintf("%s Your last reply claimed you %s (%q), but no successful %s tool call was made. "+
		"Do it now, or correct yourself to the user.", SupervisorPrefix, m.Rule.Claim, m.Match, strings.Join(m.Rule.Tools, "/"))
}

func res(exprs ...string) []*regexp.Regexp {
	out := make([]*regexp.Regexp, len(exprs))
	for i, e := range exprs {
		out[i] = regexp.MustCompile(`(?i)` + e)
	}
	return out
}

// I've / I have / I just / I — the subject of a first-person claim.
const iHave = `\b(?:i(?:'|’)ve|i have|i've just|i have just|i just|i)\s+`

// DefaultClaimRules are the built-in supervisor rules (English, plus a few
// German forms), compiled when first used.
var DefaultClaimRules = sync.OnceValue(func() []ClaimRule {
	rules := defaultClaimRules()
	for i, r := range rules {
		rules[i].needs = make([][]string, len(r.Patterns))
		for j, p := range r.Patterns {
			rules[i].needs[j] = requiredText(p)
		}
	}
	return rules
})

func defaultClaimRules() []ClaimRule {
	return []ClaimRule{
		{
			Name:  "spawn",
			Claim: "started a background worker",
			Patterns: res(
				iHave+`(?:spawned|started|launched|kicked off|dispatched|created|set up|spun up)\s+(?:a|an|the|two|three|four|several|some|\d+)?\s*(?:new\s+|separate\s+|parallel\s+)?(?:background\s+)?(?:sub-?sessions?|sub-sessions?|workers?|background (?:tasks?|jobs?|process(?:es)?)|agents?)\b`,
				`\b(?:a|the|my)\s+(?:background\s+)?(?:worker|sub-?session)\s+(?:is|has been)\s+(?:now\s+)?(?:running|started|working on)`,
				`\bich habe\s+(?:einen|einige|mehrere|\d+)?\s*(?:hintergrund-?)?(?:worker|sub-?sessions?|hintergrundprozess\w*)\s+gestartet`,
			),
			Tools: []string{"spawn_sub_session"},
		},
		{
			Name:  "reminder",
			Claim: "set a reminder",
			Patterns: res(
				`\bi(?:'|’)ll remind you\b`, `\bi will remind you\b`,
				`\breminder\s+(?:is\s+|has been\s+)?(?:now\s+)?(?:set|scheduled|created|added)\b`,
				iHave+`(?:set|scheduled|created|added)\s+(?:up\s+)?(?:a|the|your|an?\s+\w+)?\s*reminders?\b`,
				`\bich (?:werde dich|erinnere dich)\b`, `\berinnerung\s+(?:ist\s+)?(?:gesetzt|eingerichtet|erstellt)\b`,
			),
			Tools: []string{"set_reminder"},
		},
		{
			Name:  "memory",
			Claim: "saved something to memory",
			Patterns: res(
				iHave+`(?:noted|remembered|saved|stored|recorded|added|written|memorized|memorised)\s+(?:that|this|it|your\s+\w+)?\s*(?:down\s+)?(?:to|in|into)\s+(?:my\s+)?(?:long-term\s+)?(?:memory|memories)\b`,
				`\b(?:saved|stored|noted|added)\s+(?:that\s+|this\s+|it\s+)?(?:to|in|into)\s+(?:my\s+)?(?:long-term\s+)?(?:memory|memories)\b`,
				`\bi(?:'|’)ll remember (?:that|this)\b`, `\bi will remember (?:that|this)\b`,
				`\bich habe (?:mir )?(?:das|es)\s+(?:gemerkt|gespeichert|notiert)\b`,
			),
			Tools: []string{"append_memory", "update_memories"},
		},
		{
			Name:  "skill",
			Claim: "saved a skill",
			Patterns: res(
				iHave + `(?:saved|added|stored|created|written|updated)\s+(?:that|this|it|the procedure)?\s*(?:as\s+)?(?:a\s+|the\s+|new\s+)*skill\b`,
			),
			Tools: []string{"add_skill"},
		},
		{
			Name:  "pulse",
			Claim: "updated the pulse",
			Patterns: res(
				iHave+`(?:added|noted|put|updated|recorded|tracked)\s+(?:that|this|it)?\s*(?:to|in|on)\s+(?:my|the|your)\s+pulse\b`,
				`\b(?:added|noted)\s+(?:that\s+|this\s+|it\s+)?(?:to|in)\s+(?:my|the)\s+pulse\b`,
			),
			Tools: []string{"pulse"},
		},
	}
}

// CheckClaims returns the first rule whose claim the reply makes without
// a successful call of one of its tools among calls, or false. Nil rules
// are DefaultClaimRules().
func CheckClaims(rules []ClaimRule, reply string, calls []toolloop.CallRecord) (Mismatch, bool) {
	if rules == nil {
		rules = DefaultClaimRules()
	}
	if reply == "" {
		return Mismatch{}, false
	}
	// The patterns backtrack over the whole reply, each: most are
	// skipped by looking for the words they need (~16 → 1–3 runs).
	var folded string
	for _, r := range rules {
		if made(r.Tools, calls) {
			continue
		}
		for i, p := range r.Patterns {
			if i < len(r.needs) && r.needs[i] != nil {
				if folded == "" {
					folded = fold(reply)
				}
				if !slices.ContainsFunc(r.needs[i], func(s string) bool { return strings.Contains(folded, s) }) {
					continue
				}
			}
			if m := p.FindString(reply); m != "" {
				return Mismatch{Rule: r, Match: strings.TrimSpace(m)}, true
			}
		}
	}
	return Mismatch{}, false
}

func made(tools []string, calls []toolloop.CallRecord) bool {
	for _, c := range calls {
		if c.IsError {
			continue
		}
		for _, t := range tools {
			if c.Name == t {
				return true
			}
		}
	}
	return false
}

// fold maps s to one case, as a case-insensitive pattern compares letters
// (the Kelvin sign is k, a long s is s).
func fold(s string) string { return strings.ToLower(strings.ToUpper(s)) }

// requiredText returns strings, case-folded, one of which every match of
// re holds, or nil when it cannot tell (a pattern that can match without
// a case-insensitive literal).
func requiredText(re *regexp.Regexp) []string {
	t, err := syntax.Parse(re.String(), syntax.Perl)
	if err != nil {
		return nil
	}
	return needed(t.Simplify())
}

// needed is requiredText for the parsed expression r.
func needed(r *syntax.Regexp) []string {
	switch r.Op {
	case syntax.OpLiteral:
		if r.Flags&syntax.FoldCase == 0 {
			return nil // compared as written: not against the folded reply
		}
		return []string{fold(string(r.Rune))}
	case syntax.OpCapture, syntax.OpPlus:
		return needed(r.Sub[0])
	case syntax.OpRepeat:
		if r.Min >= 1 {
			return needed(r.Sub[0])
		}
	case syntax.OpConcat:
		// every part is in a match: the one whose shortest needed string
		// is longest says the most
		var best []string
		for _, sub := range r.Sub {
			if n := needed(sub); n != nil && (best == nil || shortest(n) > shortest(best)) {
				best = n
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range r.Sub {
			n := needed(sub)
			if n == nil {
				return nil
			}
			all = append(all, n...)
		}
		return all
	}
	return nil
}

// shortest is the length of the shortest of ss.
func shortest(ss []string) int {
	n := -1
	for _, s := range ss {
		if n < 0 || len(s) < n {
			n = len(s)
		}
	}
	return n
}
