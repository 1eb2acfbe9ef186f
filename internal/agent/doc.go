// Package agent runs one turn of Reverie's main assistant: the message is
// saved, the system prompt is assembled fresh (BASE_PROMPT.txt with its
// conditional sections, skills, MEMORIES.txt, the active pulse and the
// thread's compaction summary; the current time and the context providers'
// blocks go in the turn context, a message just before the turn's message:
// see prompt.Split and TurnContextPrefix), the request carries the newest
// turns that fit the history budget (Options.HistoryTokens; older turns are
// summarised in chunks, see keepNum), and the tool loop runs with the main
// model role. Around the reply it checks
// component size limits, runs the rule-based supervisor check, writes the
// interaction log and publishes turn events.
//
// # Guarantees
//
//   - The message a turn answers is saved before anything else happens; no
//     model, tool or provider failure loses it.
//   - Assistant and tool messages are saved round by round as the tool loop
//     produces them, so a crash mid-turn keeps what already happened and the
//     stored history never holds a tool call without its results.
//   - Provider failures end the turn with a user-facing text (Result.Reply)
//     and the error; the stored history stays consistent. When tools ran
//     before the failure, the text lists them with their results
//     (DescribeCalls), so that the user does not repeat what succeeded.
//   - A round that cannot be stored (a full disk) stops the turn with an
//     error wrapping ErrNotSaved: no model call follows it and its answer
//     is never returned as a reply, so nothing is shown that the history
//     does not have.
//   - Input.BeforeToolCall sees every tool call, with its arguments, before
//     it runs (the router's turn journal records it there); Input.Resume
//     carries on a turn a restart interrupted from the stored history,
//     without storing its message again.
//   - A message larger than the model's context window is cut in the middle
//     for the model only; the stored copy stays intact.
//   - Follow-up system events (condense requests, supervisor corrections) are
//     returned in Result.FollowUps for the caller (the router) to queue; the
//     agent never calls back into its caller.
//
// # Concurrency
//
// An *Agent is safe for concurrent use by turns of different threads. Turns of
// one thread must not overlap (the router serialises them): the history they
// read and append would interleave. The agent starts no goroutines that outlive
// a call; context providers run concurrently within a turn (from the moment
// the message is accepted, alongside saving it and reading the history),
// each bounded by Options.ContextTimeout, and every return of Turn waits
// for them.
package agent
