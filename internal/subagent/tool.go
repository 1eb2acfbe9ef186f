package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/tool"
)

// Args are the arguments of an agent's tool.
type Args struct {
	Task    string `json:"task" jsonschema:"what the agent should do, self-contained: it cannot see this conversation"`
	Context string `json:"context,omitempty" jsonschema:"background the agent needs (facts, earlier results, constraints)"`
}

// Output is an agent's answer and the calls it made; agent_NAME returns it
// as an evidence packet (Output.Packet).
type Output struct {
	Agent     string
	Result    string
	ToolCalls []CallInfo
}

// CallInfo is one tool call an agent made.
type CallInfo struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
	OK        bool            `json:"ok"`
	// Error is a failed call's message.
	Error string `json:"error,omitempty"`
}

// CallInfos summarises calls for Output.
func CallInfos(calls []toolloop.CallRecord) []CallInfo {
	out := make([]CallInfo, len(calls))
	for i, c := range calls {
		out[i] = CallInfo{Name: c.Name, Arguments: validJSON(c.Arguments), OK: !c.IsError}
		if c.IsError {
			out[i].Error = oneLine(failureMessage(c.Result), 300)
		}
	}
	return out
}

// failureMessage is the message of a failed call's {"ok":false,…} result.
func failureMessage(result string) string {
	var e struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal([]byte(result), &e) == nil && e.Error.Message != "" {
		return e.Error.Message
	}
	return result
}

// Invoke runs one task: the agent's answer and calls, or why it failed.
type Invoke func(ctx context.Context, t Task) (Output, error)

// NewTool is the tool agent_NAME (ToolPrefix+name) that runs invoke, with
// description (what the main agent reads to choose it). Calls may take up
// to timeout (zero: the tool loop's limit). Its results are untrusted
// input: an agent's answer is made of what its tools brought in.
func NewTool(name, description string, timeout time.Duration, invoke Invoke) tool.Tool {
	desc := strings.TrimSpace(description)
	if desc == "" {
		desc = "Hands a task to the " + name + " agent."
	}
	desc += " It works on its own and cannot see this conversation: put everything it needs in task and context. Returns its answer and the tool calls it made."
	return tool.New(ToolPrefix+name, desc, func(ctx context.Context, a Args) (any, error) {
		t := Task{Task: strings.TrimSpace(a.Task), Context: strings.TrimSpace(a.Context)}
		if t.Task == "" {
			return nil, errors.New("task is empty: say what the agent should do")
		}
		out, err := invoke(ctx, t)
		if err != nil {
			return nil, err
		}
		return out.Packet().Encode(), nil
	}, tool.UntrustedResults(), tool.WithCategories("agents"), tool.WithCallTimeout(timeout))
}

// Tool is s's tool, run by r.
func (r *Runner) Tool(s Spec) tool.Tool {
	desc := s.Description
	if s.Tools != nil {
		desc += " Its tools: " + orNone(strings.Join(s.Tools, ", ")) + "."
	}
	// The run's own timeout comes first and says so; the margin covers
	// the last model call's return.
	return NewTool(s.Name, desc, r.o.Timeout+30*time.Second, func(ctx context.Context, t Task) (Output, error) {
		res, err := r.Run(ctx, s, t)
		if err != nil {
			return Output{}, err
		}
		return Output{Agent: s.Name, Result: res.Text, ToolCalls: CallInfos(res.Calls)}, nil
	})
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
