package toolloop

import (
	"context"
	"testing"

	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/tool"
)

// benchModel answers with its calls message until the last message is a tool
// result, then with its final message. It allocates nothing itself.
type benchModel struct {
	calls llm.Response
	final llm.Response
}

func (b *benchModel) Generate(_ context.Context, req llm.Request, _ llm.StreamFunc) (llm.Response, error) {
	if n := len(req.Messages); len(b.calls.Message.Parts) == 0 || req.Messages[n-1].Role == llm.RoleTool {
		return b.final, nil
	}
	return b.calls, nil
}

func BenchmarkRunNoTools(b *testing.B) {
	m := &benchModel{final: llm.Response{Message: llm.AssistantText("hello"), Usage: stepUsage}}
	req := userQ()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Run(ctx, m, req, nil, Options{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkRunThreeToolCalls(b *testing.B) {
	m := &benchModel{
		calls: llm.Response{Message: llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
			tc("c1", "echo", `{"text":"a"}`),
			tc("c2", "echo", `"{\"text\":\"b\",\"times\":2}"`),
			tc("c3", "echo", `{"text":"c"}`),
		}}, Usage: stepUsage},
		final: llm.Response{Message: llm.AssistantText("done"), Usage: stepUsage},
	}
	tools := []tool.Tool{echoTool()}
	req := userQ()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		res, err := Run(ctx, m, req, tools, Options{})
		if err != nil || len(res.Calls) != 3 {
			b.Fatal(err, len(res.Calls))
		}
	}
}
