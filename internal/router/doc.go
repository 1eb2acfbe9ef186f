// Package router takes messages from channels to turns and replies back to
// channels: it validates inbound messages, handles slash commands, opens new
// threads with the conversation seed, runs one turn at a time per thread
// (different threads in parallel, up to a bound), queues system events and
// proactive messages into the same per-thread order, and delivers replies —
// streamed to channels that stream, sent whole to the others.
//
// # Delivery guarantees
//
//   - Receive, Handle, EnqueueSystemEvent and Notify return once the item is
//     accepted: written to the router's inbox table in SQLite. The inbox row
//     is removed only after the item's turn has stored it in the conversation
//     (or the command ran, or the notification was stored), so an item
//     accepted before a crash or a shutdown is replayed, in order, when Run
//     starts again. Nothing accepted is lost; an item whose turn stored it
//     but had not yet removed its row when the process died could be
//     replayed once more (at least once).
//   - Items of one thread are processed one at a time, in acceptance order:
//     a notification never lands between a tool call and its result.
//   - A reply is stored before it is delivered; a channel failure is logged
//     and never loses the stored reply.
//
// # Concurrency
//
// Every method is safe for concurrent use. Run owns every worker goroutine:
// a thread's worker starts when the thread has work and exits when its queue
// is empty (an idle thread costs nothing); at most Options.MaxParallel turns
// run at once. When Run's context ends the router stops accepting, gives
// in-flight turns Options.Grace to finish, then cancels them, and returns
// after every worker has returned. Items still queued stay in the inbox for
// the next start.
package router
