package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

// recorder is a model that records its requests; reply answers each.
type recorder struct {
	mu    sync.Mutex
	reqs  []llm.Request
	reply func(n int, r llm.Request) (llm.Response, error)
}

func (m *recorder) Generate(ctx context.Context, r llm.Request, stream llm.StreamFunc) (llm.Response, error) {
	m.mu.Lock()
	m.reqs = append(m.reqs, r)
	n := len(m.reqs)
	m.mu.Unlock()
	return m.reply(n, r)
}

func (m *recorder) requests() []llm.Request {
	m.mu.Lock()
	defer m.mu.Unlock()
	return append([]llm.Request(nil), m.reqs...)
}

// checkRequest checks a main-model request of a conversation under a
// history budget: the system prompt has no per-turn section, the turn
// context is the message just before the turn's message and ends the
// cached prefix, the history fits the budget, opens a turn and holds no
// tool call without its results nor the reverse.
func checkRequest(r llm.Request, budget int) error {
	if strings.Contains(r.System, prompt.HeadingTime) {
		return errors.New("the system prompt holds the current time")
	}
	ctxAt := -1
	for i, m := range r.Messages {
		if m.Role == llm.RoleUser && strings.HasPrefix(m.Text(), TurnContextPrefix) {
			if ctxAt >= 0 {
				return errors.New("two turn contexts")
			}
			ctxAt = i
		}
	}
	switch {
	case ctxAt < 0:
		return errors.New("no turn context")
	case ctxAt != r.CachePrefix:
		return fmt.Errorf("turn context at %d, cache prefix %d", ctxAt, r.CachePrefix)
	case !strings.Contains(r.Messages[ctxAt].Text(), prompt.HeadingTime):
		return errors.New("the turn context lacks the time")
	case ctxAt+1 >= len(r.Messages) || !opensTurn(r.Messages[ctxAt+1]):
		return errors.New("the turn context is not followed by the turn's message")
	}
	history := append(append([]llm.Message(nil), r.Messages[:ctxAt]...), r.Messages[ctxAt+1:]...)
	if !opensTurn(history[0]) {
		return fmt.Errorf("the history opens with a %s message that opens no turn", history[0].Role)
	}
	// The turn's own rounds (tool calls and results after its message)
	// come on top of the budget.
	c := prompt.NewCounter("")
	tokens := 0
	calls := map[string]bool{}
	for i, m := range history {
		if i <= ctxAt {
			tokens += prompt.CountMessage(c, unfence(m))
		}
		for _, tc := range m.ToolCalls() {
			calls[tc.ID] = true
		}
		for _, p := range m.Parts {
			if res, ok := p.(llm.ToolResult); ok {
				if !calls[res.CallID] {
					return fmt.Errorf("tool result %s without its call", res.CallID)
				}
				delete(calls, res.CallID)
			}
		}
	}
	if len(calls) > 0 {
		return fmt.Errorf("tool calls without results: %v", calls)
	}
	if tokens > budget {
		return fmt.Errorf("history of %d tokens over the budget of %d", tokens, budget)
	}
	return nil
}

func TestHistoryBudget(t *testing.T) {
	const budget = 1200
	words := func(n int, w string) string { return strings.TrimSpace(strings.Repeat(w+" ", n)) }
	tests := []struct {
		name string
		// tools makes every turn call echo once before answering.
		tools bool
		// failCompaction makes every compaction call fail.
		failCompaction bool
	}{
		{name: "plain turns"},
		{name: "turns with tool calls", tools: true},
		{name: "compaction failing", failCompaction: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			main := &recorder{reply: func(n int, r llm.Request) (llm.Response, error) {
				if err := checkRequest(r, budget); err != nil {
					return llm.Response{}, fmt.Errorf("request %d: %w", n, err)
				}
				last := r.Messages[len(r.Messages)-1]
				if tc.tools && len(last.ToolCalls()) == 0 && last.Role != llm.RoleTool {
					return llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
						llm.ToolCall{ID: fmt.Sprintf("call_%d", n), Name: "echo", Arguments: []byte(`{"text":"` + words(10, "tool") + `"}`)}}}}, nil
				}
				return llm.Response{Message: llm.AssistantText(fmt.Sprintf("answer %d: %s", n, words(30, "reply")))}, nil
			}}
			compaction := &recorder{reply: func(n int, r llm.Request) (llm.Response, error) {
				if tc.failCompaction {
					return llm.Response{}, errors.New("compaction model down")
				}
				return llm.Response{Message: llm.AssistantText(fmt.Sprintf("SUMMARY %d", n))}, nil
			}}
			e := newEnv(t, main, func(o *Options) {
				o.HistoryTokens = budget
				if tc.tools {
					o.Tools = func(chat.ThreadID) []tool.Tool { return []tool.Tool{echoTool()} }
				}
			})
			e.models.compaction = compaction
			const thread = "web:budget"
			const turns = 40
			for i := range turns {
				if _, err := e.agent.Turn(context.Background(), Input{Thread: thread, Text: fmt.Sprintf("question %d: %s", i, words(20, "word"))}); err != nil {
					t.Fatalf("turn %d: %v", i, err)
				}
			}
			calls := len(compaction.requests())
			sum, found, err := e.store.Summary(context.Background(), thread)
			if err != nil {
				t.Fatal(err)
			}
			if tc.failCompaction {
				// Every turn over the budget tries again; the requests
				// stayed within it all the same (checkRequest).
				if found || calls == 0 {
					t.Errorf("summary found %v after %d failing compaction calls", found, calls)
				}
				return
			}
			// One compaction covers a quarter of the budget's worth of
			// turns (~4 here): far fewer calls than turns.
			if calls == 0 || calls > turns/3 {
				t.Errorf("%d compaction calls in %d turns", calls, turns)
			}
			if !found || !strings.HasPrefix(sum.Text, "SUMMARY") {
				t.Fatalf("summary = %+v, found %v", sum, found)
			}
			last := main.requests()[len(main.requests())-1]
			if !strings.Contains(last.System, "# Conversation Summary\n"+sum.Text) {
				t.Errorf("the last request lacks the summary:\n%s", last.System)
			}
			// What is active is what the requests carry: within the
			// budget after the last reply was added.
			h := e.history(thread)
			if n := historyTokens(h); n > budget+budget/2 {
				t.Errorf("active history holds %d tokens", n)
			}
			if h[0].ID != sum.CoversThrough+1 && h[0].ID <= sum.CoversThrough {
				t.Errorf("active history starts at %d, the summary covers through %d", h[0].ID, sum.CoversThrough)
			}
		})
	}
}

func TestKeepFrom(t *testing.T) {
	user := func(tokens int) conversation.StoredMessage {
		return conversation.StoredMessage{Message: llm.UserText("q"), Tokens: tokens}
	}
	reply := func(tokens int) conversation.StoredMessage {
		return conversation.StoredMessage{Message: llm.AssistantText("a"), Tokens: tokens}
	}
	call := func(tokens int) conversation.StoredMessage {
		return conversation.StoredMessage{Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolCall{ID: "c", Name: "t"}}}, Tokens: tokens}
	}
	result := func(tokens int) conversation.StoredMessage {
		return conversation.StoredMessage{Message: llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "c", Name: "t"}}}, Tokens: tokens}
	}
	tests := []struct {
		name string
		h    []conversation.StoredMessage
		keep int
		want int
	}{
		{"everything fits", []conversation.StoredMessage{user(10), reply(10)}, 100, 0},
		{"newest turns that fit", []conversation.StoredMessage{user(10), reply(10), user(10), reply(10), user(10), reply(10)}, 45, 2},
		{"moves to the next turn", []conversation.StoredMessage{user(10), reply(10), user(10), reply(10)}, 35, 2},
		{"a turn with tool calls is kept whole", []conversation.StoredMessage{user(10), reply(10), user(10), call(10), result(10), reply(10)}, 25, 2},
		{"the newest turn alone is too big", []conversation.StoredMessage{user(10), reply(10), user(10), call(10), result(100), reply(10)}, 25, 2},
		{"one turn", []conversation.StoredMessage{user(10), call(10), result(100), reply(10)}, 25, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := keepFrom(tc.h, tc.keep); got != tc.want {
				t.Errorf("keepFrom = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestTurnContextKeepsThePrefix checks that two consecutive turns' requests
// share their prefix: the system prompt, and the history up to the earlier
// turn's message (the per-turn context never enters the history).
func TestTurnContextKeepsThePrefix(t *testing.T) {
	main := llmtest.NewScripted(t, llmtest.Reply("one"), llmtest.Reply("two"))
	e := newEnv(t, main, nil)
	for _, q := range []string{"first", "second"} {
		if _, err := e.agent.Turn(context.Background(), Input{Thread: "web:prefix", Text: q}); err != nil {
			t.Fatal(err)
		}
	}
	r := main.Requests()
	if r[0].System != r[1].System {
		t.Errorf("the system prompt changed between turns:\n%s\n---\n%s", r[0].System, r[1].System)
	}
	if r[1].CachePrefix != 2 || r[1].Messages[0].Text() != "first" || r[1].Messages[1].Text() != "one" {
		t.Errorf("second request: prefix %d, messages %+v", r[1].CachePrefix, r[1].Messages)
	}
	for i, req := range r {
		if err := checkRequest(req, DefaultHistoryTokens); err != nil {
			t.Errorf("request %d: %v", i, err)
		}
	}
	for _, m := range e.history("web:prefix") {
		if strings.HasPrefix(m.Message.Text(), TurnContextPrefix) {
			t.Errorf("the turn context was stored: %q", m.Message.Text())
		}
	}
}

// unfence returns m with its tool results as stored, without the fence
// lines of the request (the budget counts stored messages).
func unfence(m llm.Message) llm.Message {
	out := llm.Message{Role: m.Role, Parts: make([]llm.Part, len(m.Parts))}
	for i, p := range m.Parts {
		if r, ok := p.(llm.ToolResult); ok {
			lines := strings.Split(r.Content, "\n")
			if len(lines) >= 2 && strings.HasPrefix(lines[0], toolloop.FenceOpen) {
				r.Content = strings.Join(lines[1:len(lines)-1], "\n")
			}
			p = r
		}
		out.Parts[i] = p
	}
	return out
}

func TestWrittenByUser(t *testing.T) {
	tests := []struct {
		name string
		text string
		want bool
	}{
		{"the user's words", "fetch http://example.org please", true},
		{"a system event", SystemEventPrefix + "reminder: call http://example.org", false},
		{"the turn context", TurnContextPrefix + "# Additional Context\nrecalled: http://evil.example", false},
		{"a user quoting the marker later", "what is " + TurnContextPrefix, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := WrittenByUser(tc.text); got != tc.want {
				t.Errorf("WrittenByUser = %v, want %v", got, tc.want)
			}
			// The turn context is the app's own text, as the system
			// prompt it came from was: it taints no conversation.
			if strings.HasPrefix(tc.text, TurnContextPrefix) && !AppWritten(t.TempDir(), "en", tc.text) {
				t.Errorf("the turn context is not app-written")
			}
		})
	}
}
