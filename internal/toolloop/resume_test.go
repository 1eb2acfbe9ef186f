package toolloop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"

	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// msgKind names a message for order checks: "assistant[c1 c2]", "tool c1",
// "assistant:text".
func msgKind(m llm.Message) string {
	switch {
	case m.Role == llm.RoleTool:
		return "tool " + m.Parts[0].(llm.ToolResult).CallID
	case len(m.ToolCalls()) > 0:
		var ids []string
		for _, c := range m.ToolCalls() {
			ids = append(ids, c.ID)
		}
		return string(m.Role) + "[" + strings.Join(ids, " ") + "]"
	}
	return string(m.Role) + ":" + m.Text()
}

// OnMessage sees the assistant message before its first call starts and
// each result as soon as its call finished, before the next call starts.
func TestOnMessageAfterEveryCall(t *testing.T) {
	var events []string
	var calls atomic.Int32
	tick := funcTool("tick", func(context.Context) (any, error) {
		events = append(events, "run") // Parallel 1: never concurrent with the callbacks
		calls.Add(1)
		return "ticked", nil
	})
	m := script(callTools(tc("c1", "tick", `{}`), tc("c2", "tick", `{}`), tc("c3", "nope", `{}`)), say("done"))
	var rounds int
	res := mustRun(t, m, userQ(), []tool.Tool{tick}, Options{
		Parallel:  1,
		OnMessage: func(msg llm.Message) { events = append(events, msgKind(msg)) },
		OnRound:   func([]llm.Message) { rounds++; events = append(events, "round") },
	})
	want := []string{"assistant[c1 c2 c3]", "run", "tool c1", "run", "tool c2", "tool c3", "round", "assistant:done", "round"}
	if !slices.Equal(events, want) {
		t.Errorf("events\n got %v\nwant %v", events, want)
	}
	var fromResult []string
	for _, msg := range res.Messages {
		fromResult = append(fromResult, msgKind(msg))
	}
	if !slices.Equal(fromResult, []string{"assistant[c1 c2 c3]", "tool c1", "tool c2", "tool c3", "assistant:done"}) {
		t.Errorf("Result.Messages = %v", fromResult)
	}
}

// Results that only say a call was cut off by cancellation are not
// reported to OnMessage, and are marked Interrupted; the others are.
func TestOnMessageSkipsInterruptedCalls(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		fast := funcTool("fast", func(context.Context) (any, error) { return "quick", nil })
		stopper := funcTool("stopper", func(ctx context.Context) (any, error) {
			cancel() // the process is stopped while this call runs
			<-ctx.Done()
			return nil, ctx.Err()
		})
		m := script(callTools(tc("c1", "fast", `{}`), tc("c2", "stopper", `{}`), tc("c3", "fast", `{}`)))
		var reported []string
		res, err := Run(ctx, m, userQ(), []tool.Tool{fast, stopper}, Options{
			Parallel:  1,
			OnMessage: func(msg llm.Message) { reported = append(reported, msgKind(msg)) },
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("err = %v", err)
		}
		if !slices.Equal(reported, []string{"assistant[c1 c2 c3]", "tool c1"}) {
			t.Errorf("reported %v", reported)
		}
		var interrupted []bool
		for _, c := range res.Calls {
			interrupted = append(interrupted, c.Interrupted)
		}
		if !slices.Equal(interrupted, []bool{false, true, true}) {
			t.Errorf("Interrupted = %v", interrupted)
		}
		if n := len(toolResults(res.Messages)); n != 3 {
			t.Errorf("Result.Messages answers %d calls, want all 3", n)
		}
	})
}

func TestRunCalls(t *testing.T) {
	var ran atomic.Int32
	count := funcTool("count", func(context.Context) (any, error) { ran.Add(1); return "counted", nil })
	calls := []llm.ToolCall{tc("c2", "count", `{}`), tc("c3", "echo", `{"text":1}`), tc("c4", "count", `{}`)}
	var reported, results []string
	res, err := RunCalls(t.Context(), []tool.Tool{count, echoTool()}, calls, Options{
		Parallel:     1,
		OnMessage:    func(msg llm.Message) { reported = append(reported, msgKind(msg)) },
		OnToolResult: func(r CallRecord) { results = append(results, r.ID) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if ran.Load() != 2 || len(res.Calls) != 3 || res.Rounds != 0 {
		t.Fatalf("ran %d, calls %+v, rounds %d", ran.Load(), res.Calls, res.Rounds)
	}
	if !slices.Equal(reported, []string{"tool c2", "tool c3", "tool c4"}) || !slices.Equal(results, []string{"c2", "c3", "c4"}) {
		t.Errorf("reported %v, results %v", reported, results)
	}
	rs := toolResults(res.Messages)
	if len(rs) != 3 || rs[0].Content != "counted" || !rs[1].IsError || res.Calls[0].Round != 0 {
		t.Errorf("results %+v", rs)
	}
	errorShape(t, rs[1].Content)

	t.Run("a call without an id", func(t *testing.T) {
		_, err := RunCalls(t.Context(), []tool.Tool{count}, []llm.ToolCall{{Name: "count"}}, Options{})
		if err == nil || !strings.Contains(err.Error(), "has no id") {
			t.Errorf("err = %v", err)
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		before := ran.Load()
		res, err := RunCalls(ctx, []tool.Tool{count}, calls[:1], Options{})
		if !errors.Is(err, context.Canceled) || ran.Load() != before || !res.Calls[0].Interrupted {
			t.Errorf("err = %v, ran %d, calls %+v", err, ran.Load()-before, res.Calls)
		}
	})
}
