package agent

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

// fullDisk is the conversation store once the disk is full: the user's
// message was stored, nothing after it can be.
type fullDisk struct{ Conversations }

var errFull = errors.New("database or disk is full (13)")

func (f fullDisk) Append(ctx context.Context, id chat.ThreadID, msgs ...llm.Message) ([]int64, error) {
	return nil, fmt.Errorf("append to thread %q: %w", id, errFull)
}

// A reply that could not be stored is never delivered as one: the turn
// ends with ErrNotSaved (wrapping the store's error) and a reply saying so,
// and no model call follows a round that could not be stored.
func TestReplyThatCannotBeStoredIsAnError(t *testing.T) {
	tests := []struct {
		name       string
		script     []llmtest.Step
		modelCalls int
	}{
		{"final answer", []llmtest.Step{llmtest.Reply("the answer")}, 1},
		{"tool round", []llmtest.Step{llmtest.CallTool("echo", `{"text":"x"}`), llmtest.Reply("the answer")}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := llmtest.NewScripted(t, tc.script...)
			e := newEnv(t, m, func(o *Options) {
				o.Conversations = fullDisk{o.Conversations}
				o.Tools = func(chat.ThreadID) []tool.Tool { return []tool.Tool{echoTool()} }
			})
			res, err := e.agent.Turn(context.Background(), Input{Thread: "web:full", Text: "question"})
			if !errors.Is(err, ErrNotSaved) || !errors.Is(err, errFull) {
				t.Fatalf("err = %v, want ErrNotSaved wrapping the store's error", err)
			}
			if strings.Contains(res.Reply, "the answer") || !strings.Contains(res.Reply, "could not be saved") {
				t.Errorf("reply = %q", res.Reply)
			}
			if n := len(m.Requests()); n != tc.modelCalls {
				t.Errorf("model calls = %d, want %d", n, tc.modelCalls)
			}
			if got := roles(e.history("web:full")); !slices.Equal(got, []string{"user:question"}) {
				t.Errorf("history = %q", got)
			}
		})
	}
}

// An error after tools ran says which ran and what they returned, so that
// the user does not repeat them.
func TestErrorAfterToolsListsThem(t *testing.T) {
	unavailable := &providers.Error{Provider: "openai", Model: "m", Status: 503, Err: fmt.Errorf("%w: overloaded", providers.ErrUnavailable)}
	m := llmtest.NewScripted(t, llmtest.CallTool("echo", `{"text":"remind me at 5"}`), llmtest.Fail(unavailable))
	e := newEnv(t, m, func(o *Options) {
		o.Tools = func(chat.ThreadID) []tool.Tool { return []tool.Tool{echoTool()} }
	})
	res, err := e.agent.Turn(context.Background(), Input{Thread: "web:e", Text: "set a reminder"})
	if !errors.Is(err, providers.ErrUnavailable) {
		t.Fatalf("err = %v", err)
	}
	for _, want := range []string{"had a problem", "these tool calls ran", `- echo {"text":"remind me at 5"} → echo: remind me at 5`} {
		if !strings.Contains(res.Reply, want) {
			t.Errorf("reply %q lacks %q", res.Reply, want)
		}
	}
}
