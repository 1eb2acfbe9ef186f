// Package llmtest provides test doubles for language models:
//
//   - Scripted, an in-process model that plays a list of expected calls
//     (Reply, CallTool, Fail), asserts on each request and records them;
//   - Func, an adapter turning a plain function into a model, for dynamic
//     fakes that answer from the request;
//   - OpenAIServer and AnthropicServer, httptest servers speaking the real
//     OpenAI chat-completions / embeddings and Anthropic messages wire
//     formats, including server-sent-event streams with split deltas, error
//     bodies, 429 with Retry-After, cut and stalled streams and garbage, so
//     that providers can be tested through their real SDKs.
//
// All doubles implement the llm calling convention
//
//	Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error)
//
// and, when stream is not nil, deliver the reply as several text deltas and
// split tool-call deltas followed by a usage and a done event.
//
// Every type here is safe for concurrent use. The package depends on llm and
// the standard library only.
package llmtest
