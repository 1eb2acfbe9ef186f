package llmtest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// recorder is a testing.TB that records failures instead of failing.
type recorder struct {
	testing.TB
	mu     sync.Mutex
	errors []string
}

func (r *recorder) Helper() {}

func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}

func (r *recorder) failures() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.errors...)
}

func TestScriptedPlaysSteps(t *testing.T) {
	errBoom := errors.New("boom")
	m := llmtest.NewScripted(t,
		llmtest.CallTool("get_weather", `{"city":"Paris"}`).AndCallTool("get_time", ``).WithText("Checking.").
			WithUsage(llm.Usage{InputTokens: 10, OutputTokens: 4}),
		llmtest.Reply("It is sunny.").WithCheck(func(req llm.Request) error {
			last := req.Messages[len(req.Messages)-1]
			if last.Role != llm.RoleTool {
				return fmt.Errorf("last message role %s, want tool", last.Role)
			}
			return nil
		}),
		llmtest.Fail(errBoom),
	)
	ctx := context.Background()
	r1, err := m.Generate(ctx, llm.Request{Messages: []llm.Message{llm.UserText("weather?")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := llm.Response{
		Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
			llm.Text{Text: "Checking."},
			llm.ToolCall{ID: "call_1_1", Name: "get_weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
			llm.ToolCall{ID: "call_1_2", Name: "get_time", Arguments: json.RawMessage(`{}`)},
		}},
		Usage:      llm.Usage{InputTokens: 10, OutputTokens: 4},
		StopReason: llm.StopToolCalls,
		Model:      "scripted",
	}
	if !reflect.DeepEqual(r1, want) {
		t.Errorf("reply 1 = %+v\nwant %+v", r1, want)
	}
	req2 := llm.Request{Messages: []llm.Message{{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "call_1_1", Content: "sunny"}}}}}
	r2, err := m.Generate(ctx, req2, nil)
	if err != nil || r2.Message.Text() != "It is sunny." || r2.StopReason != llm.StopEnd {
		t.Fatalf("reply 2 = %+v, %v", r2, err)
	}
	if _, err := m.Generate(ctx, req2, nil); !errors.Is(err, errBoom) {
		t.Fatalf("step 3 err = %v, want boom", err)
	}
	m.AssertDone()
	if got := m.Requests(); len(got) != 3 || got[0].Messages[0].Text() != "weather?" {
		t.Errorf("requests = %+v", got)
	}
}

func TestScriptedFailures(t *testing.T) {
	t.Run("too many calls", func(t *testing.T) {
		rec := &recorder{TB: t}
		m := llmtest.NewScripted(rec, llmtest.Reply("only one"))
		if _, err := m.Generate(context.Background(), llm.Request{}, nil); err != nil {
			t.Fatal(err)
		}
		_, err := m.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("again?")}}, nil)
		if !errors.Is(err, llmtest.ErrUnscripted) {
			t.Fatalf("err = %v, want ErrUnscripted", err)
		}
		if f := rec.failures(); len(f) != 1 || !strings.Contains(f[0], "again?") {
			t.Errorf("failures = %q", f)
		}
	})
	t.Run("check fails", func(t *testing.T) {
		rec := &recorder{TB: t}
		m := llmtest.NewScripted(rec, llmtest.Reply("x").WithCheck(func(llm.Request) error { return errors.New("no system prompt") }))
		if _, err := m.Generate(context.Background(), llm.Request{}, nil); err == nil || !strings.Contains(err.Error(), "no system prompt") {
			t.Fatalf("err = %v", err)
		}
		if len(rec.failures()) != 1 {
			t.Errorf("failures = %q", rec.failures())
		}
	})
	t.Run("steps left over", func(t *testing.T) {
		rec := &recorder{TB: t}
		m := llmtest.NewScripted(rec, llmtest.Reply("a"), llmtest.Reply("b"))
		m.AssertDone()
		if f := rec.failures(); len(f) != 1 || !strings.Contains(f[0], "2 of 2") {
			t.Errorf("failures = %q", f)
		}
	})
	t.Run("cancelled context", func(t *testing.T) {
		m := llmtest.NewScripted(t, llmtest.Reply("a"))
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := m.Generate(ctx, llm.Request{}, nil); !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestScriptedStreams(t *testing.T) {
	m := llmtest.NewScripted(t, llmtest.CallTool("search", `{"query":"go generics","limit":5}`).WithText("Let me look that up for you.").
		WithUsage(llm.Usage{InputTokens: 3, OutputTokens: 2}))
	var events []llm.Event
	resp, err := m.Generate(context.Background(), llm.Request{}, func(ev llm.Event) { events = append(events, ev) })
	if err != nil {
		t.Fatal(err)
	}
	var text, args strings.Builder
	var kinds []llm.EventKind
	for _, ev := range events {
		if len(kinds) == 0 || kinds[len(kinds)-1] != ev.Kind {
			kinds = append(kinds, ev.Kind)
		}
		text.WriteString(ev.Text)
		args.WriteString(ev.ToolCall.ArgumentsDelta)
	}
	if want := []llm.EventKind{llm.EventTextDelta, llm.EventToolCallDelta, llm.EventUsage, llm.EventDone}; !reflect.DeepEqual(kinds, want) {
		t.Errorf("event kinds = %v, want %v", kinds, want)
	}
	if text.String() != resp.Message.Text() || args.String() != string(resp.Message.ToolCalls()[0].Arguments) {
		t.Errorf("deltas %q / %q do not add up to the reply", text.String(), args.String())
	}
	if len(events) < 6 {
		t.Errorf("only %d events: the reply should be split", len(events))
	}
	first := events[3].ToolCall
	if first.ID != "call_1_1" || first.Name != "search" || first.ArgumentsDelta != "" {
		t.Errorf("first tool delta = %+v", first)
	}
	if done := events[len(events)-1].Response; done == nil || !reflect.DeepEqual(*done, resp) {
		t.Errorf("done = %+v", done)
	}
}

func TestScriptedConcurrent(t *testing.T) {
	const n = 32
	steps := make([]llmtest.Step, n)
	for i := range steps {
		steps[i] = llmtest.Reply(fmt.Sprint(i))
	}
	m := llmtest.NewScripted(t, steps...)
	var wg sync.WaitGroup
	seen := make(chan string, n)
	for range n {
		wg.Go(func() {
			resp, err := m.Generate(context.Background(), llm.Request{}, func(llm.Event) {})
			if err != nil {
				t.Error(err)
				return
			}
			seen <- resp.Message.Text()
		})
	}
	wg.Wait()
	close(seen)
	got := map[string]bool{}
	for s := range seen {
		got[s] = true
	}
	if len(got) != n || m.Calls() != n {
		t.Errorf("got %d distinct replies over %d calls, want %d", len(got), m.Calls(), n)
	}
	m.AssertDone()
}

func TestFunc(t *testing.T) {
	echo := llmtest.Func(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		last := req.Messages[len(req.Messages)-1].Text()
		return llm.Response{Message: llm.AssistantText("you said: " + last)}, nil
	})
	var deltas strings.Builder
	resp, err := echo.Generate(context.Background(), llm.Request{Messages: []llm.Message{llm.UserText("hi")}}, func(ev llm.Event) {
		deltas.WriteString(ev.Text)
	})
	if err != nil || resp.Message.Text() != "you said: hi" || resp.StopReason != llm.StopEnd || deltas.String() != "you said: hi" {
		t.Fatalf("resp = %+v, deltas %q, err %v", resp, deltas.String(), err)
	}
}

func TestSplit(t *testing.T) {
	tests := []struct {
		s    string
		n    int
		want []string
	}{
		{"", 3, nil},
		{"abcdefg", 3, []string{"abc", "de", "fg"}},
		{"ab", 5, []string{"a", "b"}},
		{"héllo wörld", 2, []string{"héllo ", "wörld"}},
		{"x", 0, []string{"x"}},
	}
	for _, tc := range tests {
		if got := llmtest.Split(tc.s, tc.n); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("Split(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
		}
	}
}
