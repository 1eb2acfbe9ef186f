package toolloop

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// A secret a tool returns (an MCP server printing its environment) is
// redacted as the result leaves the tool: the model's next request, the
// OnToolResult and OnMessage reports (the live stream, the HTTP reply, the
// turn journal) and the run's calls never hold it — also in a failure
// message, and also when the cap would have cut the secret in two.
func TestResultsRedacted(t *testing.T) {
	const secret = "s3cr3t-env-value-0042"
	redact := func(s string) string { return strings.ReplaceAll(s, secret, "[REDACTED]") }
	env := funcTool("env", func(context.Context) (any, error) { return "API_KEY=" + secret + "\nHOME=/root", nil })
	bad := funcTool("bad", func(context.Context) (any, error) { return nil, errors.New("login with " + secret + " refused") })
	cut := funcTool("cut", func(context.Context) (any, error) { return strings.Repeat("x", 10) + secret, nil })
	m := script(callTools(tc("c1", "env", `{}`), tc("c2", "bad", `{}`), tc("c3", "cut", `{}`)), say("ok"))
	var reported []string
	res := mustRun(t, m, userQ(), []tool.Tool{env, bad, cut}, Options{
		Redact: redact, MaxResultChars: 20, Parallel: 1,
		OnToolResult: func(r CallRecord) { reported = append(reported, r.Result) },
	})
	var seen []string
	for _, c := range res.Calls {
		seen = append(seen, c.Result)
	}
	seen = append(seen, reported...)
	for _, req := range m.requests() {
		for _, msg := range req.Messages {
			seen = append(seen, msg.Text())
			for _, p := range msg.Parts {
				if r, ok := p.(llm.ToolResult); ok {
					seen = append(seen, r.Content)
				}
			}
		}
	}
	for _, s := range seen {
		if strings.Contains(s, secret) || strings.Contains(s, secret[:8]) {
			t.Errorf("the secret (or its start) got through: %q", s)
		}
	}
	if !strings.Contains(res.Calls[0].Result, "[REDACTED]") {
		t.Errorf("env result %q was not redacted", res.Calls[0].Result)
	}
}
