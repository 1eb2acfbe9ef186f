// Package eventbus is Reverie's durable event bus: an append-only event log
// in SQLite, named subscribers with persisted cursors, retries with
// exponential backoff, dead letters, and a live in-memory fan-out for the
// debug stream. Channels, sub-sessions, reminders and reflection publish to
// it; extensions see it as extension.Bus.
//
// # Publishing
//
// Publish, PublishID and PublishBatch return only after the event rows are
// committed to SQLite (PublishBatch: all of them in one transaction, or none).
// A committed event survives the process being killed (kill -9). The
// database runs WAL with synchronous=NORMAL, so an operating-system crash or
// power loss may lose the most recent commits; a process crash does not.
// Through the database's shared group commit (Options.Commits), PublishTx
// writes an event within a caller's own write, committed with it, and
// PublishDeferred returns before its event is committed: it is written
// with the next shared transaction any caller commits (before the events
// published after it), and a process crash before then loses it
// (informational events only, such as memory.recalled).
// Topics are dotted lower-case names by convention ("sub_session.completed")
// and are validated: non-empty, at most MaxTopicLen bytes, valid UTF-8, no
// spaces or control characters (ErrInvalidTopic). Payloads are marshalled
// with encoding/json; a json.RawMessage passes through after a validity check
// (ErrInvalidPayload).
//
// # Delivery guarantees
//
//   - At least once, to every named subscriber whose prefix matches the
//     topic ("" matches all), in publish (id) order per subscriber and
//     therefore in order per topic. A subscriber has one delivery goroutine:
//     its handler is never called concurrently with itself, and event n+1 is
//     not delivered before event n is settled (handled or dead-lettered).
//     Different subscribers progress independently.
//   - A handler error, a panic (recovered and turned into an error) or a
//     timeout (Options.HandlerTimeout, through the handler's context) is a
//     failed delivery. It is retried after a backoff of a random duration
//     in [d/2, d], d = BaseBackoff·2^(attempt-1) capped at MaxBackoff. After
//     MaxAttempts deliveries the event is dead-lettered (a row with the last
//     error, listed by DeadLetters) and the cursor moves on. Requeue hands a
//     dead letter back for another MaxAttempts deliveries, ahead of newer
//     events. Event.Attempt numbers the deliveries of an event to a
//     subscriber from 1.
//   - The timeout is cooperative: a handler that ignores its context keeps
//     its subscriber waiting (it is never abandoned and run concurrently).
//     A handler that returns nil after its deadline counts as a success.
//
// # Recovery
//
// Each subscriber's cursor (the last acknowledged id) is written after every
// successful handling, in the same statement that records the next event's
// first delivery as started; each retry is recorded as started before the
// handler runs. After a restart or crash, everything after the cursor is
// redelivered, and the attempt count of an event whose deliveries were cut
// short continues from the persisted count, so an event that crashes the
// process every time is still dead-lettered after MaxAttempts (with a
// "delivery interrupted" error). A crash between an acknowledgement and the
// next delivery can count that next delivery once too often (a clean stop
// withdraws the advance record); it never counts one too few.
//
// A subscriber name seen for the first time starts at the current end of the
// log when Subscribe is called: history is not replayed, but every event
// committed after Subscribe returns is delivered (including those published
// before Run starts). The kernel subscribes at every start, so a known name
// keeps its cursor; if its prefix changed, the new prefix applies from the
// kept cursor on. Cursors live in the database, so a subscriber removed from
// the code keeps holding its unhandled events back from Prune until Forget.
//
// # Cost when idle
//
// Nothing polls. A dispatcher that has caught up blocks on a wake channel
// (capacity 1) that Publish signals after commit for matching subscribers
// only; backoff waits use timers. A woken dispatcher reads pending events in
// batches of BatchSize by id. The bus assumes it is the only writer of its
// tables: events inserted by another process are delivered when a local
// publish or a restart wakes the subscriber.
//
// # Live fan-out
//
// Watch receives every event with a matching topic published through this
// Bus (Publish, PublishID and PublishBatch) after the call, in per-publisher
// commit order. It is in memory only and never blocks a publisher: when a
// watcher's buffer is full the event is dropped for that watcher, counted
// (Stats.WatchDropped) and logged. The channel is closed when the Watch
// context is done. Events are shared between watchers: do not modify a
// Payload.
//
// # Retention
//
// Prune deletes events older than Options.Retention (default 7 days) that
// every subscriber whose prefix matches has acknowledged and that are not
// dead letters or requeued. Run it periodically (the scheduler does); event
// ids are never reused, so cursors stay valid across pruning.
//
// # Concurrency
//
// All methods are safe for concurrent use. Subscribe must be called before
// Run; Run may be called once, starts one goroutine per subscriber (each
// once the one before has read its first batch, so that the start does not
// take a database connection per subscriber) and returns nil after its
// context is cancelled and every one of them has exited. On cancellation an in-flight handler sees its context cancelled;
// if it still succeeds, its acknowledgement is saved before Run returns.
package eventbus
