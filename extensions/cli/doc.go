// Package cli is Reverie's terminal channel and the terminal chat that uses
// it (`reverie chat`).
//
// The channel (extension id and channel name "cli", threads "cli:<user>")
// is registered from init but disabled by default: only `reverie chat`
// enables it, for the agent it runs in its own process. It streams: the
// router opens a Stream per reply and the channel turns deltas, tool
// activity and the end of the reply into Events; whole messages (command
// answers, proactive notifications, errors) arrive through Send.
//
// A chat frontend talks to a Backend: Local (the agent in this process,
// through this channel and the host's router) or Remote (a running server,
// through the WebSocket API of docs/api.md). Two frontends exist:
// RunInteractive, a terminal UI (charm.land/bubbletea/v2) with streaming,
// markdown rendering, tool calls, multiline input and persistent history;
// and RunPlain, which reads lines from a pipe and prints each reply, for
// scripts.
//
// # Concurrency and delivery
//
// The channel never blocks the router: events are queued without bound (a
// terminal consumes them as fast as it draws) and read with Queue.Next by
// exactly one consumer. Events keep the order in which the router produced
// them; a message's EventIdle comes after every event of its turn. Local
// and Remote own the goroutines they start and wait for them in Close.
package cli
