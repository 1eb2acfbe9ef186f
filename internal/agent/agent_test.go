package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

func TestTurnProviderErrorsKeepTheMessage(t *testing.T) {
	tests := []struct {
		name      string
		err       error
		wantReply []string
	}{
		{"unavailable", &providers.Error{Provider: "openai", Model: "gpt-x", Status: 503, Err: fmt.Errorf("%w: overloaded", providers.ErrUnavailable)},
			[]string{"had a problem (overloaded)", "Try again in a moment", "Your message is saved"}},
		{"unauthorised", &providers.Error{Provider: "anthropic", Model: "claude", Status: 401, Err: fmt.Errorf("%w: bad key", providers.ErrAuth)},
			[]string{"refused the API key (bad key)", "Check the key", "saved"}},
		{"unreachable", &providers.Error{Provider: "local", Model: "qwen3", Err: fmt.Errorf("%w: %w: %w", providers.ErrUnavailable, providers.ErrUnreachable,
			&net.OpError{Op: "dial", Net: "tcp", Addr: &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 11434}, Err: errors.New("connect: connection refused")})},
			[]string{"Could not reach the model server at 127.0.0.1:11434 (connection refused)", "base URL", "saved"}},
		{"rate limited", &providers.Error{Provider: "openai", Model: "gpt-x", Status: 429, RetryAfter: 20 * time.Second,
			Err: fmt.Errorf("%w: rate_limit_exceeded: Rate limit reached for requests", providers.ErrUnavailable)},
			[]string{"limiting how often", "Rate limit reached for requests", "Wait 20 seconds", "saved"}},
		{"bad request keeps the reason", &providers.Error{Provider: "openai", Model: "gpt-x", Status: 400,
			Err: fmt.Errorf("%w: invalid_request_error: maximum context length is 8192 tokens", providers.ErrBadRequest)},
			[]string{"refused the request (invalid_request_error: maximum context length is 8192 tokens)", "saved"}},
		{"timed out", &providers.Error{Provider: "openai", Model: "gpt-x", Err: fmt.Errorf("%w: %w", providers.ErrUnavailable, context.DeadlineExceeded)},
			[]string{"took too long", "saved"}},
		{"not found", &providers.Error{Provider: "openai", Model: "gpt-x", Status: 404, Err: fmt.Errorf("%w: 404 page not found", providers.ErrNotFound)},
			[]string{"not found", "base URL", "/v1"}},
		{"rate limited after retries", &providers.Error{Provider: "setup/fake-model", Model: "fake-model", Status: 429, Attempts: 4,
			Err: fmt.Errorf("%w: slow down", providers.ErrUnavailable)},
			[]string{"limiting how often it can be asked (slow down)", "Wait a minute", "saved"}},
		{"no model", modelrouter.ErrNoModel, []string{modelrouter.NoModelMessage}},
		{"garbage", &providers.Error{Provider: "openai", Model: "m", Err: fmt.Errorf("%w: no choices", providers.ErrBadResponse)},
			[]string{"could not be read", "no choices", "saved"}},
		{"cancelled", context.Canceled, []string{"Stopped", "saved"}},
		{"other", errors.New("boom"), []string{"Something went wrong", "boom", "saved"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := llmtest.NewScripted(t, llmtest.Fail(tc.err))
			e := newEnv(t, m, nil)
			res, err := e.agent.Turn(context.Background(), Input{Thread: "web:a", Text: "hello there"})
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			for _, w := range tc.wantReply {
				if !strings.Contains(res.Reply, w) {
					t.Errorf("reply %q lacks %q", res.Reply, w)
				}
			}
			// No internal labels: backend, model, HTTP status, retries
			// stay in the error (the log, the turn's details).
			for _, label := range []string{"openai/", "anthropic/", "local/", "gpt-x", "qwen3", "fake-model", "HTTP ", "gave up after", "attempts"} {
				if strings.Contains(res.Reply, label) {
					t.Errorf("reply %q shows the internal label %q", res.Reply, label)
				}
			}
			// The message is kept, and so is the reply that did not
			// finish, with its mark and what happened (shown after a
			// reload, never sent to the model).
			h := e.history("web:a")
			if got := roles(h); !slices.Equal(got, []string{"user:hello there", "assistant:"}) {
				t.Fatalf("history = %q, want the user message and the marked reply", got)
			}
			wantStatus := conversation.StatusFailed
			if tc.name == "cancelled" {
				wantStatus = conversation.StatusStopped
			}
			if m := h[1]; m.Status != wantStatus || m.Note != res.Reply || res.Stopped != (wantStatus == conversation.StatusStopped) {
				t.Errorf("marked reply = %+v (stopped %v), want status %q and the reply as note", m, res.Stopped, wantStatus)
			}
			if got := e.bus.topics(); !slices.Equal(got, []string{TopicTurnFailed}) {
				t.Errorf("events = %v", got)
			}
			inf := e.interactions(interactions.ActionInference)
			if len(inf) != 1 || inf[0].Error == "" {
				t.Errorf("inference log = %+v, want one entry with the error", inf)
			}
		})
	}
}

// A model error holding a registered secret (the agent is the last stop
// before the reply) comes back redacted in the error and in the reply, for
// both an unclassified error (whose text the reply quotes) and a provider
// error.
func TestTurnErrorsAreRedacted(t *testing.T) {
	const key = "sk-agent-0123456789abcdef"
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"unclassified", errors.New("dial https://x/?key=" + key + ": refused")},
		{"provider", &providers.Error{Provider: "openai", Model: "m", Status: 401, Err: fmt.Errorf("%w: Incorrect API key provided: %s", providers.ErrAuth, key)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			secrets := &redact.Secrets{}
			secrets.Add(key)
			e := newEnv(t, llmtest.NewScripted(t, llmtest.Fail(tc.err)), func(o *Options) { o.Secrets = secrets })
			res, err := e.agent.Turn(context.Background(), Input{Thread: "web:a", Text: "hello"})
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v: the cause is lost", err)
			}
			if strings.Contains(err.Error(), key) || strings.Contains(res.Reply, key) {
				t.Errorf("the key leaked: err %q, reply %q", err, res.Reply)
			}
			for _, ev := range e.bus.events {
				if strings.Contains(string(ev.Payload), key) {
					t.Errorf("event %s: %s", ev.Topic, ev.Payload)
				}
			}
			if inf := e.interactions(interactions.ActionInference); len(inf) != 1 || strings.Contains(inf[0].Error, key) || !strings.Contains(inf[0].Error, redact.Marker) {
				t.Errorf("inference log = %+v", inf)
			}
		})
	}
}

func TestTurnRunsTheToolLoop(t *testing.T) {
	m := llmtest.NewScripted(t,
		llmtest.CallTool("echo", `{"text":"hi"}`).WithText("Let me echo.").WithUsage(llm.Usage{InputTokens: 10, OutputTokens: 5}),
		llmtest.Reply("It said: echo: hi").WithUsage(llm.Usage{InputTokens: 20, OutputTokens: 6}).WithCheck(func(r llm.Request) error {
			last := r.Messages[len(r.Messages)-1]
			if last.Role != llm.RoleTool {
				return fmt.Errorf("last message role %s, want tool", last.Role)
			}
			return nil
		}),
	)
	e := newEnv(t, m, func(o *Options) { o.Tools = func(chat.ThreadID) []tool.Tool { return []tool.Tool{echoTool()} } })
	var deltas strings.Builder
	var calls, results []string
	res, err := e.agent.Turn(context.Background(), Input{
		Thread: "cli:alice", Text: "echo hi please",
		Stream:       func(ev llm.Event) { deltas.WriteString(ev.Text) },
		OnToolCall:   func(c toolloop.Call) { calls = append(calls, c.Name) },
		OnToolResult: func(c toolloop.CallRecord) { results = append(results, c.Result) },
	})
	if err != nil {
		t.Fatal(err)
	}
	m.AssertDone()
	if res.Reply != "It said: echo: hi" {
		t.Errorf("reply = %q", res.Reply)
	}
	if res.Usage != (llm.Usage{InputTokens: 30, OutputTokens: 11}) {
		t.Errorf("usage = %+v", res.Usage)
	}
	want := []string{
		"user:echo hi please",
		`assistant:Let me echo.call echo {"text":"hi"}`,
		"tool:result echo echo: hi",
		"assistant:It said: echo: hi",
	}
	if got := roles(e.history("cli:alice")); !slices.Equal(got, want) {
		t.Errorf("history =\n%q\nwant\n%q", got, want)
	}
	if deltas.String() != "Let me echo.It said: echo: hi" {
		t.Errorf("streamed %q", deltas.String())
	}
	if !slices.Equal(calls, []string{"echo"}) || !slices.Equal(results, []string{"echo: hi"}) {
		t.Errorf("callbacks: calls %v results %v", calls, results)
	}
	if !strings.Contains(res.SystemPrompt, "Use echo to repeat things.") || !strings.Contains(res.SystemPrompt, "# Current Time") {
		t.Errorf("system prompt lacks the conditional tool section or the time:\n%s", res.SystemPrompt)
	}
	if got := e.interactions(interactions.ActionToolCall); len(got) != 1 || got[0].Summary != "echo" {
		t.Errorf("tool_call log = %+v", got)
	}
	inf := e.interactions(interactions.ActionInference)
	if len(inf) != 1 || inf[0].InputTokens != 30 || inf[0].OutputTokens != 11 {
		t.Errorf("inference log = %+v", inf)
	}
	if len(e.bus.events) != 1 || e.bus.events[0].Topic != TopicTurnCompleted {
		t.Fatalf("events = %v", e.bus.topics())
	}
	var ev struct {
		Thread    string    `json:"thread"`
		Usage     llm.Usage `json:"usage"`
		ToolCalls []string  `json:"tool_calls"`
	}
	if err := json.Unmarshal(e.bus.events[0].Payload, &ev); err != nil {
		t.Fatal(err)
	}
	if ev.Thread != "cli:alice" || ev.Usage.InputTokens != 30 || !slices.Equal(ev.ToolCalls, []string{"echo"}) {
		t.Errorf("turn.completed = %+v", ev)
	}
}

func TestPanickingToolIsReportedAndTheTurnCompletes(t *testing.T) {
	type noArgs struct{}
	boom := tool.New("boom", "Panics.", func(ctx context.Context, _ noArgs) (any, error) { panic("kaboom") })
	m := llmtest.NewScripted(t,
		llmtest.CallTool("boom", `{}`),
		llmtest.Reply("The tool failed.").WithCheck(func(r llm.Request) error {
			res := r.Messages[len(r.Messages)-1].Parts[0].(llm.ToolResult)
			if !res.IsError || !strings.Contains(res.Content, `"ok":false`) {
				return fmt.Errorf("tool result = %+v", res)
			}
			return nil
		}),
	)
	e := newEnv(t, m, func(o *Options) { o.Tools = func(chat.ThreadID) []tool.Tool { return []tool.Tool{boom} } })
	res, err := e.agent.Turn(context.Background(), Input{Thread: "default", Text: "try it"})
	if err != nil {
		t.Fatal(err)
	}
	if res.Reply != "The tool failed." || len(res.Calls) != 1 || !res.Calls[0].IsError {
		t.Errorf("result = %+v", res)
	}
	if log := e.interactions(interactions.ActionToolCall); len(log) != 1 || !strings.Contains(log[0].Error, "kaboom") {
		t.Errorf("tool_call log = %+v", log)
	}
}

func TestOddThreadIDs(t *testing.T) {
	for i, id := range []chat.ThreadID{"matrix:!room:example.org", "web:ü/../x y?&#%00", "telegram:-100123", `cli:"quoted";DROP TABLE messages`} {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := newEnv(t, llmtest.NewScripted(t, llmtest.Reply("ok")), nil)
			if _, err := e.agent.Turn(context.Background(), Input{Thread: id, Text: "hi"}); err != nil {
				t.Fatal(err)
			}
			if got := roles(e.history(id)); !slices.Equal(got, []string{"user:hi", "assistant:ok"}) {
				t.Errorf("history = %q", got)
			}
		})
	}
	e := newEnv(t, llmtest.NewScripted(t), nil)
	if _, err := e.agent.Turn(context.Background(), Input{Thread: "bad\x00id", Text: "hi"}); !errors.Is(err, chat.ErrInvalidThreadID) {
		t.Errorf("control character: err = %v", err)
	}
}

// seedThread stores n alternating user/assistant messages.
func seedThread(t testing.TB, s *conversation.Store, id chat.ThreadID, n int, words int) {
	t.Helper()
	msgs := make([]llm.Message, 0, n)
	for i := range n {
		text := fmt.Sprintf("message %d:%s", i, strings.Repeat(" word", words))
		if i%2 == 0 {
			msgs = append(msgs, llm.UserText(text))
		} else {
			msgs = append(msgs, llm.AssistantText(text))
		}
	}
	if _, err := s.Append(context.Background(), id, msgs...); err != nil {
		t.Fatal(err)
	}
}

func TestCompactionBeforeInferenceWithoutBudget(t *testing.T) {
	compaction := llmtest.NewScripted(t, llmtest.Reply("SUMMARY ONE"), llmtest.Reply("SUMMARY TWO"))
	main := llmtest.NewScripted(t,
		llmtest.Reply("first answer").WithCheck(func(r llm.Request) error {
			// The kept messages and the turn context.
			if len(r.Messages) != prompt.KeepRecent+1 {
				return fmt.Errorf("model got %d messages, want %d", len(r.Messages), prompt.KeepRecent+1)
			}
			if !strings.Contains(r.System, "# Conversation Summary\nSUMMARY ONE") {
				return fmt.Errorf("system prompt lacks the summary:\n%s", r.System)
			}
			return nil
		}),
		llmtest.Reply("second answer"),
	)
	// Without a history budget, the context window alone decides.
	e := newEnv(t, main, func(o *Options) { o.HistoryTokens = -1 })
	e.models.compaction = compaction
	e.models.limits[modelrouter.RoleMain] = modelrouter.Limits{ContextSize: 700, MaxTokens: 100}
	e.models.limits[modelrouter.RoleCompaction] = modelrouter.Limits{ContextSize: 32768, MaxTokens: 1024}
	const thread = "web:long"
	seedThread(t, e.store, thread, 30, 20)

	res, err := e.agent.Turn(context.Background(), Input{Thread: thread, Text: "what now?"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Compacted {
		t.Error("Compacted = false")
	}
	sum, ok, err := e.store.Summary(context.Background(), thread)
	if err != nil || !ok || sum.Text != "SUMMARY ONE" {
		t.Fatalf("summary = %+v, %v, %v", sum, ok, err)
	}
	h := e.history(thread)
	// 31 messages before the turn, the last 10 kept, plus the answer.
	if len(h) != prompt.KeepRecent+1 || h[len(h)-1].Message.Text() != "first answer" || h[len(h)-2].Message.Text() != "what now?" {
		t.Errorf("history after compaction = %q", roles(h))
	}
	all, err := e.store.Messages(context.Background(), thread, conversation.MessageQuery{IncludeArchived: true})
	if err != nil {
		t.Fatal(err)
	}
	archived := 0
	for _, m := range all {
		if !m.ArchivedAt.IsZero() {
			archived++
		}
	}
	if archived != 21 {
		t.Errorf("archived %d messages, want 21", archived)
	}

	// Second compaction: the prior summary is chained into the input.
	seedThread(t, e.store, thread, 30, 20)
	if _, err := e.agent.Turn(context.Background(), Input{Thread: thread, Text: "and now?"}); err != nil {
		t.Fatal(err)
	}
	reqs := compaction.Requests()
	if len(reqs) != 2 {
		t.Fatalf("compaction calls = %d", len(reqs))
	}
	second := reqs[1].Messages[0].Text()
	if !strings.Contains(second, "[PRIOR SUMMARY]\nSUMMARY ONE") || !strings.Contains(second, "[NEW MESSAGES]") {
		t.Errorf("second compaction input lacks the chained summary:\n%s", second)
	}
	if sum, _, _ := e.store.Summary(context.Background(), thread); sum.Text != "SUMMARY TWO" {
		t.Errorf("summary after the second compaction = %q", sum.Text)
	}
	checkGolden(t, "compaction_request.golden", renderRequest(reqs[0]))
	if n := len(e.interactions(interactions.ActionCompaction)); n != 2 {
		t.Errorf("compaction log entries = %d", n)
	}
}

func TestCompactOnDemand(t *testing.T) {
	tests := []struct {
		name         string
		messages     int
		wantArchived int
		calls        int
	}{
		{"short thread", 6, 0, 0},
		{"long thread", 25, 15, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var steps []llmtest.Step
			if tc.calls > 0 {
				steps = append(steps, llmtest.Reply("the summary"))
			}
			compaction := llmtest.NewScripted(t, steps...)
			e := newEnv(t, llmtest.NewScripted(t), nil)
			e.models.compaction = compaction
			seedThread(t, e.store, "web:c", tc.messages, 3)
			res, err := e.agent.Compact(context.Background(), "web:c")
			if err != nil {
				t.Fatal(err)
			}
			compaction.AssertDone()
			if res.Archived != tc.wantArchived {
				t.Errorf("archived = %d, want %d", res.Archived, tc.wantArchived)
			}
			if got := len(e.history("web:c")); got != tc.messages-tc.wantArchived {
				t.Errorf("active messages = %d", got)
			}
		})
	}
}

func TestCompactionFailureArchivesNothing(t *testing.T) {
	e := newEnv(t, llmtest.NewScripted(t), nil)
	e.models.compaction = llmtest.NewScripted(t, llmtest.Reply("   "))
	seedThread(t, e.store, "web:c", 20, 3)
	if _, err := e.agent.Compact(context.Background(), "web:c"); !errors.Is(err, ErrEmptySummary) {
		t.Fatalf("err = %v", err)
	}
	if got := len(e.history("web:c")); got != 20 {
		t.Errorf("active messages = %d, want 20", got)
	}
}

func TestMessageLargerThanTheContextWindow(t *testing.T) {
	huge := strings.Repeat("lorem ipsum dolor sit amet ", 20000) // ~540k chars
	main := llmtest.NewScripted(t, llmtest.Reply("That was long.").WithCheck(func(r llm.Request) error {
		got := r.Messages[len(r.Messages)-1].Text()
		if !strings.HasPrefix(got, OversizeNote) {
			return fmt.Errorf("the cut message does not start with the note: %.100q", got)
		}
		if len(got) > 20000 {
			return fmt.Errorf("the model got %d chars for a 4096-token window", len(got))
		}
		return nil
	}))
	e := newEnv(t, main, nil)
	e.models.limits[modelrouter.RoleMain] = modelrouter.Limits{ContextSize: 4096, MaxTokens: 512}
	res, err := e.agent.Turn(context.Background(), Input{Thread: "web:big", Text: huge})
	if err != nil {
		t.Fatal(err)
	}
	if res.Truncated != 1 {
		t.Errorf("Truncated = %d", res.Truncated)
	}
	if h := e.history("web:big"); h[0].Message.Text() != huge {
		t.Error("the stored copy was changed")
	}
}

func TestFitMessagesSharesTheBudget(t *testing.T) {
	c := prompt.NewCounter("")
	mk := func(n int) conversation.StoredMessage {
		m := llm.UserText(strings.Repeat("word ", n))
		return conversation.StoredMessage{Message: m, Tokens: prompt.CountMessage(c, m)}
	}
	h := []conversation.StoredMessage{mk(10), mk(5000), mk(20), mk(3000)}
	given := messagesOf(h)
	msgs, cut := fitMessages(c, h, given, historyTokens(h), 2000)
	if cut != 2 {
		t.Fatalf("cut = %d, want the two big messages", cut)
	}
	total := prompt.ReplyPriming
	for i, m := range msgs {
		total += prompt.CountMessage(c, m)
		if (i == 0 || i == 2) && m.Text() != h[i].Message.Text() {
			t.Errorf("small message %d was changed", i)
		}
	}
	if total > 2000*11/10 {
		t.Errorf("fitted history counts %d tokens for a 2000 budget", total)
	}
	for i, m := range given {
		if m.Text() != h[i].Message.Text() {
			t.Errorf("the message list given was changed at %d", i)
		}
	}
	if fit, cut := fitMessages(c, h, given, historyTokens(h), 100000); cut != 0 || &fit[0] != &given[0] {
		t.Errorf("cut %d messages that fit, or copied them", cut)
	}
}

func TestSystemEventAndSeedTurns(t *testing.T) {
	tests := []struct {
		name      string
		lang      string
		seedFiles map[string]string
		wantSeed  string
	}{
		{"configured language", "de", map[string]string{"prompts/SEED_de.txt": "Hallo sagen.", "prompts/SEED_en.txt": "Say hello."}, "Hallo sagen."},
		{"fallback to English", "xx", map[string]string{"prompts/SEED_en.txt": "Say hello."}, "Say hello."},
		{"shipped English when the data dir has none", "en", nil, "A new conversation has just started."},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			main := llmtest.NewScripted(t, llmtest.Reply("Hi, I am Reverie.").WithCheck(func(r llm.Request) error {
				if r.ToolChoice != llm.ToolChoiceNone {
					return fmt.Errorf("seed turn offers tools (choice %q)", r.ToolChoice)
				}
				return nil
			}))
			e := newEnv(t, main, func(o *Options) {
				o.Language = tc.lang
				o.Tools = func(chat.ThreadID) []tool.Tool { return []tool.Tool{echoTool()} }
			})
			for f, c := range tc.seedFiles {
				writeFile(t, e.dir, f, c)
			}
			res, err := e.agent.Seed(context.Background(), "web:new", nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.Reply != "Hi, I am Reverie." {
				t.Errorf("reply = %q", res.Reply)
			}
			h := e.history("web:new")
			if !strings.HasPrefix(h[0].Message.Text(), SystemEventPrefix+tc.wantSeed) || h[0].Message.Role != llm.RoleUser {
				t.Errorf("stored seed = %q", h[0].Message.Text())
			}
			if h[0].Source != conversation.SourceSeed {
				t.Errorf("seed stored with source %q", h[0].Source)
			}
			if n := len(e.interactions(interactions.ActionSeed)); n != 1 {
				t.Errorf("seed log entries = %d", n)
			}
		})
	}
}

func TestSupervisorCheckInTurns(t *testing.T) {
	spawn := tool.New("spawn_sub_session", "Start a worker.", func(ctx context.Context, a echoArgs) (any, error) { return "sub_1", nil })
	claim := "Done! I've started a background worker to research that."
	tests := []struct {
		name   string
		steps  []llmtest.Step
		in     Input
		wantUp bool
	}{
		{"false claim", []llmtest.Step{llmtest.Reply(claim)}, Input{Text: "research X"}, true},
		{"true claim", []llmtest.Step{llmtest.CallTool("spawn_sub_session", `{"text":"X"}`), llmtest.Reply(claim)}, Input{Text: "research X"}, false},
		{"answer to a supervisor event", []llmtest.Step{llmtest.Reply(claim)},
			Input{Text: "[SUPERVISOR] Your last reply claimed…", Kind: KindSystemEvent, Origin: OriginSupervisor}, false},
		{"supervisor text without origin", []llmtest.Step{llmtest.Reply(claim)},
			Input{Text: SupervisorPrefix + " Your last reply claimed…", Kind: KindSystemEvent}, false},
		{"system event from a worker", []llmtest.Step{llmtest.Reply(claim)}, Input{Text: "worker sub_9 finished", Kind: KindSystemEvent}, true},
		{"honest answer", []llmtest.Step{llmtest.Reply("I cannot start workers in this build.")}, Input{Text: "research X"}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, llmtest.NewScripted(t, tc.steps...), func(o *Options) {
				o.Tools = func(chat.ThreadID) []tool.Tool { return []tool.Tool{spawn} }
			})
			tc.in.Thread = "web:s"
			res, err := e.agent.Turn(context.Background(), tc.in)
			if err != nil {
				t.Fatal(err)
			}
			var ups []FollowUp
			for _, f := range res.FollowUps {
				if f.Origin == OriginSupervisor {
					ups = append(ups, f)
				}
			}
			if got := len(ups) == 1; got != tc.wantUp {
				t.Fatalf("supervisor follow-ups = %+v, want one: %v", ups, tc.wantUp)
			}
			if tc.wantUp {
				if !strings.HasPrefix(ups[0].Text, SupervisorPrefix) || !strings.Contains(ups[0].Text, "spawn_sub_session") || ups[0].Thread != "web:s" {
					t.Errorf("follow-up = %+v", ups[0])
				}
				if n := len(e.interactions(interactions.ActionSupervisorCheck)); n != 1 {
					t.Errorf("supervisor log entries = %d", n)
				}
			}
		})
	}
}

func TestCheckClaims(t *testing.T) {
	ok := func(name string) toolloop.CallRecord { return toolloop.CallRecord{Name: name} }
	failed := func(name string) toolloop.CallRecord { return toolloop.CallRecord{Name: name, IsError: true} }
	tests := []struct {
		name     string
		reply    string
		calls    []toolloop.CallRecord
		wantRule string // "" = no mismatch
	}{
		{"spawned workers", "I've spawned two sub-sessions for this.", nil, "spawn"},
		{"kicked off", "I have kicked off a background task.", nil, "spawn"},
		{"worker running", "The worker is now running.", nil, "spawn"},
		{"spawn made", "I've spawned a worker.", []toolloop.CallRecord{ok("spawn_sub_session")}, ""},
		{"spawn failed", "I've spawned a worker.", []toolloop.CallRecord{failed("spawn_sub_session")}, "spawn"},
		{"remind", "Sure, I'll remind you at 9.", nil, "reminder"},
		{"reminder set", "Reminder set for Friday.", nil, "reminder"},
		{"set a reminder", "I've set a reminder for tomorrow.", nil, "reminder"},
		{"reminder made", "I'll remind you at 9.", []toolloop.CallRecord{ok("set_reminder")}, ""},
		{"memory", "Got it — I've saved that to memory.", nil, "memory"},
		{"noted in memories", "Noted in my memories.", nil, "memory"},
		{"will remember", "I'll remember that.", nil, "memory"},
		{"memory made", "I've saved that to memory.", []toolloop.CallRecord{ok("append_memory")}, ""},
		{"german memory", "Ich habe mir das gemerkt.", nil, "memory"},
		{"skill", "I've saved this as a skill.", nil, "skill"},
		{"pulse", "I've added it to the pulse.", nil, "pulse"},
		{"question", "Should I remind you tomorrow?", nil, ""},
		{"negation", "I have not started any workers.", nil, ""},
		{"plain answer", "Paris is the capital of France.", nil, ""},
		{"empty", "", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m, found := CheckClaims(DefaultClaimRules(), tc.reply, tc.calls)
			if tc.wantRule == "" {
				if found {
					t.Errorf("mismatch %q (%q), want none", m.Rule.Name, m.Match)
				}
				return
			}
			if !found || m.Rule.Name != tc.wantRule {
				t.Errorf("got %v %q, want rule %q", found, m.Rule.Name, tc.wantRule)
			}
		})
	}
}

func TestCondenseEventOncePerExcess(t *testing.T) {
	main := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
		return llm.Response{Message: llm.AssistantText("ok")}, nil
	})
	e := newEnv(t, main, func(o *Options) { o.Limits = prompt.Limits{MemoriesChars: 100, PulseChars: 100, SkillsChars: 100} })
	turn := func() []FollowUp {
		t.Helper()
		res, err := e.agent.Turn(context.Background(), Input{Thread: "web:m", Text: "hi"})
		if err != nil {
			t.Fatal(err)
		}
		return res.FollowUps
	}
	writeFile(t, e.dir, "MEMORIES.txt", strings.Repeat("x", 150))
	steps := []struct {
		name     string
		memories int // 0: leave the file
		want     int
	}{
		{"over the limit", 0, 1},
		{"still over: no second request", 0, 0},
		{"back under", 50, 0},
		{"over again", 200, 1},
	}
	for _, s := range steps {
		if s.memories > 0 {
			writeFile(t, e.dir, "MEMORIES.txt", strings.Repeat("y", s.memories))
		}
		ups := turn()
		if len(ups) != s.want {
			t.Fatalf("%s: follow-ups = %+v, want %d", s.name, ups, s.want)
		}
		if s.want == 1 && (ups[0].Origin != OriginCondense || !strings.Contains(ups[0].Text, "MEMORIES.txt")) {
			t.Errorf("%s: follow-up = %+v", s.name, ups[0])
		}
	}
	// Skills over the limit switch the prompt to the table of contents.
	writeFile(t, e.dir, "skills/a.md", "Summary of a.\n"+strings.Repeat("step ", 40))
	res, err := e.agent.Turn(context.Background(), Input{Thread: "web:m", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.SystemPrompt, prompt.SkillsTOCIntro) || strings.Contains(res.SystemPrompt, "step step") {
		t.Errorf("skills not listed as a table of contents:\n%s", res.SystemPrompt)
	}
}

type fakeContext struct {
	prio int
	fn   func(ctx context.Context) (string, error)
}

func (f fakeContext) ContextPriority() int { return f.prio }
func (f fakeContext) PromptContext(ctx context.Context, _ extension.ContextRequest) (string, error) {
	return f.fn(ctx)
}

func TestContextProvidersAreBoundedAndIsolated(t *testing.T) {
	providers := []extension.ContextProvider{
		fakeContext{2, func(context.Context) (string, error) { return "second block", nil }},
		fakeContext{1, func(context.Context) (string, error) { return "first block", nil }},
		fakeContext{0, func(context.Context) (string, error) { return "", errors.New("down") }},
		fakeContext{3, func(ctx context.Context) (string, error) { <-ctx.Done(); return "too late", ctx.Err() }},
		fakeContext{4, func(context.Context) (string, error) { panic("provider bug") }},
	}
	e := newEnv(t, llmtest.NewScripted(t, llmtest.Reply("ok")), func(o *Options) {
		o.ContextProviders = providers
		o.ContextTimeout = 20 * time.Millisecond
	})
	res, err := e.agent.Turn(context.Background(), Input{Thread: "web:x", Text: "hi"})
	if err != nil {
		t.Fatal(err)
	}
	i, j := strings.Index(res.SystemPrompt, "first block"), strings.Index(res.SystemPrompt, "second block")
	if i < 0 || j < i || strings.Contains(res.SystemPrompt, "too late") {
		t.Errorf("context blocks wrong:\n%s", res.SystemPrompt)
	}
}

func TestBasePromptIsReadEveryTurn(t *testing.T) {
	e := newEnv(t, llmtest.NewScripted(t, llmtest.Reply("a"), llmtest.Reply("b")), nil)
	r1, err := e.agent.Turn(context.Background(), Input{Thread: "web:b", Text: "one"})
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, e.dir, "BASE_PROMPT.txt", "You are an edited assistant.")
	r2, err := e.agent.Turn(context.Background(), Input{Thread: "web:b", Text: "two"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r1.SystemPrompt, "test assistant") || !strings.Contains(r2.SystemPrompt, "edited assistant") {
		t.Errorf("base prompt not re-read:\n%s\n---\n%s", r1.SystemPrompt, r2.SystemPrompt)
	}
}

func renderRequest(r llm.Request) string {
	var b strings.Builder
	fmt.Fprintf(&b, "system: %q\ntools: %d\n", r.System, len(r.Tools))
	for _, m := range r.Messages {
		fmt.Fprintf(&b, "--- %s\n%s\n", m.Role, m.Text())
	}
	return b.String()
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.MkdirAll("testdata", 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with UPDATE_GOLDEN=1 to create)", err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n--- got\n%s\n--- want\n%s", name, got, want)
	}
}
