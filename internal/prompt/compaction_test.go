package prompt

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/llm"
)

func TestCompactionThreshold(t *testing.T) {
	tests := []struct {
		name                   string
		ctx, maxTok, sys, want int
	}{
		{"typical", 128000, 4096, 3000, 120904},
		{"small model", 8192, 1024, 2500, 4668},
		{"misconfigured clamps to zero", 4096, 4096, 500, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CompactionThreshold(tc.ctx, tc.maxTok, tc.sys); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestChainedSummaryInput(t *testing.T) {
	msgs := []llm.Message{
		llm.UserText("Find flights to Lyon"),
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			llm.Text{Text: "Searching."},
			llm.ToolCall{ID: "c1", Name: "search_web", Arguments: json.RawMessage("{\n  \"query\": \"flights Lyon\"\n}")},
		}},
		{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "c1", Name: "search_web", Content: "3 results"}}},
		{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "c2", Name: "fetch_url", Content: "timeout", IsError: true}}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolCall{ID: "c3", Name: "list_reminders", Arguments: json.RawMessage(`{}`)}}},
		llm.AssistantText("Two options: 9:10 and 14:30."),
	}
	want := `[PRIOR SUMMARY]
Alice plans a trip.

[NEW MESSAGES]
user: Find flights to Lyon
assistant: Searching.
assistant → search_web { "query": "flights Lyon" }
tool search_web: 3 results
tool fetch_url (error): timeout
assistant → list_reminders
assistant: Two options: 9:10 and 14:30.`
	if got := ChainedSummaryInput("  Alice plans a trip.\n", msgs); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	if got := ChainedSummaryInput("", msgs[:1]); got != "[PRIOR SUMMARY]\n(none)\n\n[NEW MESSAGES]\nuser: Find flights to Lyon" {
		t.Errorf("first compaction: %q", got)
	}
	big := strings.Repeat("x", 5000)
	got := ChainedSummaryInput("", []llm.Message{{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{Name: "fetch_url", Content: big}}}})
	if len(got) > MaxSummaryResultChars+200 || !strings.Contains(got, "chars cut") {
		t.Errorf("large tool result not truncated: %d bytes", len(got))
	}
}

func TestMidTruncate(t *testing.T) {
	tests := []struct {
		name string
		s    string
		max  int
		want string
	}{
		{"short", "hello", 10, "hello"},
		{"exact", "hello", 5, "hello"},
		{"cut", "abcdefghij", 4, "ab […6 chars cut…] ij"},
		{"runes", "äöüßäöüß", 4, "äö […4 chars cut…] üß"},
		{"no limit", "abc", 0, "abc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := MidTruncate(tc.s, tc.max); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestCompactionCut(t *testing.T) {
	u := llm.UserText("q")
	a := llm.AssistantText("a")
	call := llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolCall{ID: "1", Name: "t"}}}
	res := llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "1", Name: "t"}}}
	tests := []struct {
		name string
		msgs []llm.Message
		keep int
		want int
	}{
		{"fewer than keep", []llm.Message{u, a}, 10, 0},
		{"exactly keep", []llm.Message{u, a, u, a}, 4, 0},
		{"plain cut", []llm.Message{u, a, u, a, u, a}, 2, 4},
		{"cut moves before tool results", []llm.Message{u, a, u, call, res, res, a}, 3, 3},
		{"keep zero", []llm.Message{u, a}, 0, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := CompactionCut(tc.msgs, tc.keep); got != tc.want {
				t.Errorf("got %d, want %d", got, tc.want)
			}
		})
	}
}

func TestCheckLimits(t *testing.T) {
	lim := DefaultLimits()
	tests := []struct {
		name          string
		mem, pul, ski int
		limits        Limits
		want          []Exceeded
	}{
		{"within", 10000, 5000, 20000, lim, nil},
		{"memories over", 10001, 0, 0, lim, []Exceeded{{ComponentMemories, 10001, 10000}}},
		{"all over in order", 20000, 6000, 30000, lim, []Exceeded{
			{ComponentMemories, 20000, 10000}, {ComponentPulse, 6000, 5000}, {ComponentSkills, 30000, 20000},
		}},
		{"zero disables", 1 << 20, 1 << 20, 1 << 20, Limits{}, nil},
		{"skills 2000 variant", 0, 0, 2500, Limits{SkillsChars: 2000}, []Exceeded{{ComponentSkills, 2500, 2000}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := CheckLimits(tc.mem, tc.pul, tc.ski, tc.limits)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			for _, e := range got {
				ev := e.Event()
				if !strings.Contains(ev, "over") || !strings.Contains(ev, itoaTest(e.Limit)) {
					t.Errorf("event text %q lacks the numbers", ev)
				}
			}
		})
	}
}

func itoaTest(n int) string { b, _ := json.Marshal(n); return string(b) }
