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
//     stays until the item is handled — its turn has ended (reply stored, or
//     failure reported), the command ran, the notification was stored — so
//     an item accepted before a crash or a shutdown is handled, in order,
//     when Run starts again. Nothing accepted is lost.
//   - A message that carries its channel's id (chat.Inbound.ID) is accepted
//     once per channel and id: the id is recorded with the inbox row, in
//     one transaction (router_seen, kept chat.MaxSeenAge), and a message
//     handed over again — a Telegram update fetched again after a crash
//     before its offset was stored, a Matrix sync batch replayed — is
//     dropped (Receive returns nil; Handle and Submit return ErrDuplicate).
//     Overheard messages and answers to approvals are recorded once handled.
//   - A turn leaves a durable trace while it runs (the turn journal): its
//     inbox row is marked started, with the thread's last message id, before
//     the item is stored in the conversation; every tool call is recorded
//     with its arguments (and whether its tool is read-only, tool.ReadOnly)
//     just before it runs (after its approval, so a call still waiting for
//     one is not recorded: it has done nothing), and marked finished with
//     its result after; a call that cannot be recorded does not run. At start-up, for each turn found
//     started: if its item never reached the conversation, it runs afresh;
//     if its reply is stored, that reply is delivered (again — the crash
//     may have come before it was; a repeat beats silence) and the row
//     removed; if every recorded
//     call is read-only and the turn has been started fewer than
//     MaxTurnStarts times, the turn carries on from the stored history
//     (the message is not stored twice); otherwise a note saying the answer
//     was interrupted by a restart, listing the calls and their results
//     (or that a call did not finish and its effect is unknown), is stored
//     and delivered to the thread's channel (InterruptedReply). So every
//     accepted message ends answered or marked interrupted, never twice. A
//     turn the router's own shutdown cancels after Options.Grace is kept
//     the same way (nothing is delivered for it then).
//   - Items of one thread are processed one at a time, in acceptance order:
//     a notification never lands between a tool call and its result.
//   - A message's inbox row goes once its turn has ended and the router
//     has delivered the reply (a caller that waits, Handle, delivers it
//     after), in one commit with the turn's closing event (turn.completed
//     or turn.failed) and message.replied when the bus can write events in
//     the shared group commit (TxPublisher); its message.received is
//     committed with the row. A crash between the delivery and that commit
//     delivers the reply again at the next start (above).
//   - A reply is stored before it is delivered. A turn whose messages
//     cannot be stored stops with an error wrapping agent.ErrNotSaved:
//     Handle returns it and channels get an error message, never a reply
//     the history does not have. A channel failure is logged and never
//     loses the stored reply.
//   - A turn that fails after tools ran says which (agent.DescribeCalls in
//     its error text), so that nobody repeats what already succeeded.
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
