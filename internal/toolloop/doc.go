// Package toolloop runs the model ⇄ tool-call loop of one inference: it calls
// the model, runs the tools it asks for, feeds the results back, and repeats
// until the model answers without tool calls.
//
// # Rules
//
// Tools. Request.Tools is filled from the tools passed to Run (their name,
// description and schema); only those tools can run. Tools whose type does
// not implement tool.Validator have their schema compiled once per Run.
//
// Arguments. Each call's arguments are parsed as JSON. A JSON string whose
// content is a JSON object (double-encoded arguments) is decoded once more.
// Empty arguments and a bare null mean {}. The result must be a JSON object
// and is validated against the tool's schema before the handler runs.
//
// Failed calls never end the loop. Malformed JSON, a non-object, a schema
// violation, an unknown tool name, a handler error, a handler panic
// (recovered) and a per-call timeout all produce the tool result
//
//	{"ok":false,"error":{"message":"…"}}
//
// with a message written for the model to correct itself (for an unknown
// tool it lists the valid names), the ToolResult marked IsError, and the loop
// carries on with the next model call. CallRecord.Err keeps the detailed
// cause (a panic's stack, for instance) for logs; it is never sent to the
// model.
//
// Results. A successful call's result is the tool's content, capped at
// Options.MaxResultChars characters with a note saying how much was cut.
// Each result is appended as its own llm.RoleTool message holding one
// llm.ToolResult, in the order the model issued the calls.
//
// Untrusted data. In every request to the model, each tool result's
// content (results from earlier turns in req.Messages included) is fenced
// between two delimiter lines that carry a nonce (a keyed hash of the
// result under a secret key: Options.FenceKey, else one drawn per Run) and
// say the content is data, not instructions (FenceOpen, FenceClose);
// any "<<<" inside the content is broken up so that it cannot pass for a
// delimiter. Result.Messages and the callbacks keep the plain content.
//
// Approval. When Options.Approver is set it is asked before each valid call
// runs, on the call's goroutine; a call it does not approve does not run
// and answers the model with the Approver's reason as a failed result.
//
// Rounds. A round is one model call offering tools plus the tool calls it
// asks for. After Options.MaxRounds rounds the loop makes one last call with
// tool use disabled (ToolChoiceNone) and a note asking for a final answer
// from what was gathered; Result.RoundLimitReached says so. Tool calls a
// model still makes when tool use is disabled are dropped, never run.
//
// Tool choice. req.ToolChoice applies to the first round only (so
// ToolChoiceRequired forces one round of tool use, then the model is free);
// ToolChoiceNone disables tools for the whole run. When tool use is disabled
// the tool specs are still sent (with ToolChoiceNone), because some
// providers refuse a conversation holding tool calls without tool
// definitions.
//
// Structured output. When req.ResponseFormat is set, the tool rounds run
// without it. Once the model answers without tool calls, its draft answer is
// followed by one formatting call with tool use disabled and the
// ResponseFormat set; the reply (stripped of whitespace and a Markdown code
// fence) must be JSON valid against the schema. On failure the model is told
// the validation error and asked once more; a second failure returns an
// error wrapping ErrStructuredOutput. The draft and the formatting
// instructions are not part of Result.Messages: the formatted answer follows
// the last tool results directly. With no tools (or ToolChoiceNone) the
// first call is the formatting call.
//
// Saving as it goes. Options.OnMessage receives every message as soon as
// it is final — a round's assistant message before its first call starts,
// each tool result when its call finishes (before another call starts),
// the final answer — so a caller can make its message list durable after
// every tool call. Results of calls that a cancelled ctx cut off
// (CallRecord.Interrupted) are not reported: they say nothing about the
// call except that it was stopped. A caller resuming such a list finds an
// assistant message whose calls are not all answered; RunCalls runs the
// unanswered ones under the same rules, without a model call, before Run
// carries on.
//
// Errors. An error from the model ends the loop with that error wrapped; the
// Result holds everything done before it (messages, calls, usage), so the
// caller can save partial work and decide whether to retry. Cancelling ctx
// stops the loop promptly: calls not yet started do not start, running calls
// see the cancelled context, and Run returns an error wrapping ctx.Err()
// after they return. Usage is summed over every model call.
//
// # Concurrency
//
// Within a round, tool calls run concurrently on their own goroutines, at
// most Options.Parallel at a time, each with its own timeout
// (Options.CallTimeout, or the tool's own when longer:
// tool.WithCallTimeout) derived from ctx. Calls start in the order the model
// issued them. The calls of a tool declared tool.InOrder run one after
// another: such a call (and the calls after it) starts only once the
// round's earlier calls of the same tool have finished. Every handler finds
// its call's place in the turn in its context (tool.PositionFrom: call id,
// round, index in the round), so a tool can tell which calls were issued
// before it whatever order concurrent calls run in.
//
// Durable calls. Options.BeforeCall runs on the call's goroutine just
// before a validated (and, with an Approver, approved) call's handler
// starts, with the normalised arguments and whether the tool is read-only
// (tool.IsReadOnly); a caller records the call there, and a failure to
// record it keeps the call from running (it fails like any call).
// OnToolResult then reports it finished. Run waits for every call it
// started before it returns: tools must honour their context. BeforeCall
// may be called concurrently for calls of one round. The other callbacks
// (OnToolCall, OnToolResult, OnMessage, OnRound) and Options.Stream are
// invoked on the goroutine that called Run (or RunCalls), never
// concurrently with each other; OnToolCall fires in the order the model
// issued the calls, OnToolResult and OnMessage in completion order, and a
// call's OnToolResult comes before its OnMessage. Run does not retain or modify req.Messages, and the slices passed
// to callbacks and returned in Result are not modified afterwards.
package toolloop
