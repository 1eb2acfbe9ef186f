package agent

import (
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestRequiredText(t *testing.T) {
	cases := []struct {
		name string
		expr string
		want []string
	}{
		{"a literal", `(?i)Reminder`, []string{"reminder"}},
		{"an alternation needs one of its branches", `(?i)\b(?:saved|noted)\s+it`, []string{"saved", "noted"}},
		{"the longest part of a sequence", `(?i)i\s+set\s+a\s+reminders?\b`, []string{"reminder"}},
		{"an optional part needs nothing", `(?i)(?:pulse)?\s*x`, []string{"x"}},
		{"a repeated part needs one", `(?i)(?:pulse)+`, []string{"pulse"}},
		{"a branch without a literal: cannot tell", `(?i)pulse|\d+`, nil},
		{"case-sensitive: cannot tell against folded text", `Pulse`, nil},
		{"no literal", `(?i)\w+\s+\d`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := requiredText(regexp.MustCompile(c.expr)); !slices.Equal(got, c.want) {
				t.Errorf("requiredText(%s) = %q, want %q", c.expr, got, c.want)
			}
		})
	}
}

// TestClaimPrefilterChangesNothing: on replies that make each claim (and
// some that make none, in other cases and with the letters a
// case-insensitive pattern also takes for k and s), the built-in rules
// find what they find without the words-they-need filter, and every
// pattern's match holds one of the words it needs.
func TestClaimPrefilterChangesNothing(t *testing.T) {
	replies := []string{
		"I've spawned two sub-sessions for this.", "I have kicked off a background task.", "The worker is now running.",
		"Sure, I'll remind you at 9.", "Reminder set for Friday.", "I've set a reminder for tomorrow.",
		"Got it — I've saved that to memory.", "Noted in my memories.", "I'll remember that.", "Ich habe mir das gemerkt.",
		"I've saved this as a skill.", "I've added it to the pulse.", "Should I remind you tomorrow?",
		"I have not started any workers.", "Paris is the capital of France.", "Ich werde dich morgen erinnern; Erinnerung ist gesetzt.",
		"I have just launched three parallel agents.", "Ich habe einen Worker gestartet.", "I i've created a new skill",
		"I’ll remind you. I’ll remember this.", "The sub-session has been started.", "Noted to the pulse!",
	}
	var all []string
	for _, r := range replies {
		all = append(all, r, strings.ToUpper(r), strings.ToLower(r),
			strings.NewReplacer("k", "\u212a", "s", "\u017f").Replace(r), strings.NewReplacer("K", "\u212a", "S", "\u017f").Replace(strings.ToUpper(r)))
	}
	rules := DefaultClaimRules()
	bare := slices.Clone(rules)
	for i := range bare {
		bare[i].needs = nil
	}
	for _, reply := range all {
		got, gotOK := CheckClaims(rules, reply, nil)
		want, wantOK := CheckClaims(bare, reply, nil)
		if gotOK != wantOK || got.Rule.Name != want.Rule.Name || got.Match != want.Match {
			t.Errorf("%q: with the filter %v %q %q, without %v %q %q", reply, gotOK, got.Rule.Name, got.Match, wantOK, want.Rule.Name, want.Match)
		}
		for _, r := range rules {
			for i, p := range r.Patterns {
				m := p.FindString(reply)
				if m != "" && !slices.ContainsFunc(r.needs[i], func(s string) bool { return strings.Contains(fold(m), s) }) {
					t.Errorf("rule %s pattern %d matched %q, which holds none of %q", r.Name, i, m, r.needs[i])
				}
			}
		}
	}
	for _, r := range rules {
		for i, n := range r.needs {
			if n == nil {
				t.Errorf("rule %s pattern %d needs no word: every reply runs it", r.Name, i)
			}
		}
	}
}

// BenchmarkCheckClaims is the supervisor check of a chat reply of a few
// paragraphs that claims nothing (what almost every turn pays).
func BenchmarkCheckClaims(b *testing.B) {
	reply := strings.Repeat("Noted. Here is a short answer of about the length a chat reply has: a couple of sentences "+
		"that restate the question, give the point, and offer to go on if you want more detail. ", 6)
	rules := DefaultClaimRules()
	b.ReportAllocs()
	for b.Loop() {
		CheckClaims(rules, reply, nil)
	}
}
