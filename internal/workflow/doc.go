// Package workflow runs sub-sessions — background workers with their own
// message list and tools — arranged as dependency graphs (workflows), as
// seeds 000 and 001 describe, and keeps all of it in SQLite so that nothing
// is lost across restarts.
//
// # Spawning
//
// The main agent (and full-mode workers) call spawn_sub_session, or Go code
// calls Manager.Spawn; either returns the session id (sub_…) at once. Every
// session is a node of a workflow (wf_…): a session without dependencies
// starts a new workflow (a nested session joins its spawner's); a session
// depending on sessions of several workflows merges them into the oldest,
// whose id the others then resolve to. Dependency ids that name no session
// are dropped with a warning (logged and returned to the model), so a
// hallucinated id can never deadlock a workflow.
//
// depends_on_previous adds, for a worker, every session its lineage (all
// continuation hops of it) spawned; for a user thread, the sessions spawned
// by the calls the model issued before this one in the same turn (earlier
// rounds, and earlier calls of the same round: "before" comes from the
// order of the calls, tool.Position, and spawn_sub_session's calls of one
// round run in that order, tool.InOrder), or, when there are none, those
// the thread spawned that have not finished.
//
// # Scheduling
//
// Resolution is event-driven; nothing polls. A pending session is evaluated
// when it is spawned and whenever one of its dependencies finishes: if a
// dependency failed, timed out for good or was cancelled, the session and
// all its transitive dependents fail (with the reason naming the
// dependency); when all dependencies completed, its not_before gate is
// checked (naive times are in the configured zone) and, if still in the
// future, a single timer owned by Run fires at the earliest gate; then the
// session waits for one of Options.MaxConcurrent worker slots, first come
// first served. A started worker receives its dependencies' results in its
// task. Fan-in is the same rule: a session with several dependencies starts
// when the last one completes.
//
// # Workers
//
// A worker's system prompt follows its mode (prompt.Mode: minimal, full,
// base_only, none; the task last). Its tools are the named or profile
// tools, else the mode's default set (full: all; others: the execution and
// research categories); orchestration tools — spawn_sub_session,
// cancel_sub_session, list_sub_sessions, channel tools, request_restart —
// are only for full-mode workers, and spawn_sub_session only below
// Options.MaxDepth (2: main agent → sub-session → sub-sub-session). The
// message list is saved to SQLite after every tool call (see Saved
// message lists). A run that exceeds its timeout (default 300 s) ends as
// timeout and a continuation session (a new sub_ id, same workflow, hop+1)
// carries on from the saved messages; after Options.MaxContinuations (3) hops the
// session fails with the reason. A worker's final report is checked by the
// supervisor rules (agent.CheckClaims): a claim without the tool call
// behind it gets one corrective round when the worker has the tool; the
// verdict is recorded in the outcome.
//
// # Saved message lists
//
// Every message of a worker's list is committed (one transaction each)
// as soon as it is final, before the worker goes on: the assistant message
// with tool calls before its first call starts, each tool result when its
// call has finished and before another call starts, notes, the final
// report. Tool calls of one round run one after another unless
// Options.Loop.Parallel allows more (default 4: then up to that many run
// at once, and each result is saved as it arrives). A result that only
// says a call was cut off — the run was stopped, cancelled or timed out
// while the call ran or before it started — is not saved. So whatever
// ends a run (a crash, a stop, a timeout), the list holds every finished
// call's result and nothing else. The next run of the session (a resume
// after a restart, or a continuation after a timeout) first runs only the
// calls of the last round that have no saved result, then calls the
// model. A call whose result was saved never runs again; a call that was
// running (or had finished but was not yet saved) when the process died
// runs again: tool calls are at least once, and at most one per round is
// repeated when calls run one at a time.
// Results are saved in completion order and a restart or continuation
// note may be saved before the rest of an unfinished round; loading puts
// every result right after the message that made the call, in call order,
// so the list the model sees is valid for every provider (each call
// answered by exactly one result before anything else).
//
// # Delivery
//
// Routing is deterministic, no model involved. A depth-1 session spawned
// from a user thread reports into that thread as a system event
// (Deliverer.EnqueueSystemEvent: the agent answers it and tells the user);
// dependents that failed because of it are listed in the same event. Nested
// (depth-2) sessions are never reported one by one: when the worker that
// spawned them (all hops of it) and every session it spawned are final
// (completed, failed, timeout or cancelled), one aggregated message goes to
// the root user thread. A de-duplication set
// (persisted as each session's delivered flag) makes that exactly once per
// session even when siblings finish at the same instant. Cancelled
// sessions and fire-and-forget spawns (no parent thread) are not reported.
// Delivery is at least once: a result is marked delivered only after the
// Deliverer accepted it (and the router's inbox is durable), so a crash in
// between re-delivers it once; failures are retried with backoff.
//
// # Durability
//
// Workflows, nodes, their states, results, message lists, outcomes and the
// delivered flags live in SQLite (component "workflow"). Each transition
// (spawn, start, completion with the failures it propagates, timeout with
// its continuation, cancellation) is one transaction committed under the
// manager's lock, so the database never shows half a transition. After a
// restart or a crash, Open loads every workflow with unfinished or
// undelivered nodes and Run re-evaluates them: pending sessions stay
// pending, time gates are re-armed, undelivered results are delivered, and
// sessions that were running resume from their saved messages (the calls
// of an unfinished round that have no result run first; a note tells the
// worker what happened), at most MaxContinuations times.
// Finished, delivered workflows are evicted from memory and loaded again
// only if a new session depends on one of their nodes.
//
// # Events and outcomes
//
// sub_session.started|completed|failed|timeout|cancelled and
// workflow.created|merged|completed|failed|cancelled are published on the
// event bus after the transition is committed (a crash between the two can
// lose an event, never state). Every run that started leaves a row in
// sub_session_outcomes (objective, status, duration, tool calls,
// continuation depth, skills loaded, supervisor verdict, tokens). Before a
// spawn, past outcomes of similar objectives (full-text match, then word
// overlap) become a short historical-feedback note in the worker's task.
//
// # Concurrency
//
// A Manager is safe for concurrent use. One mutex guards the in-memory
// graph; model calls, tool calls, deliveries and event publishing happen
// outside it. Run owns every worker goroutine and the scheduling loop
// (launches, the gate timer, deliveries); when its context ends it cancels
// the workers and returns only after all of them have returned. Spawn,
// Cancel and the views work before, during and after Run (sessions spawned
// while Run is not running start at the next Run).
package workflow
