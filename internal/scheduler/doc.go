// Package scheduler runs Reverie's durable schedules: reminders, AI tasks
// and the extensions' recurring jobs, stored in SQLite
// (component "scheduler": tables scheduler_tasks and scheduler_receipts).
//
// # Schedules
//
// A task has a Spec: once, daily, weekly, monthly, interval (optionally
// restricted to a daily window of wall time, e.g. 08:00–20:00) or cron.
// Schedules are evaluated in the configured time zone (or the task's own
// Zone). Wall-clock schedules are deliberate about DST: a time inside the
// spring-forward gap runs shifted forward by the gap (02:30 → 03:30), a
// time that occurs twice in the fall-back repeat runs once, at its first
// occurrence; intervals step by elapsed time. See Spec.
//
// # What a run does
//
//   - A reminder (text) is delivered as "Reminder: <text>" to its thread
//     — or, without one, to the conversation the user wrote in most
//     recently — through the router's Notify: stored and sent in the
//     thread's order, with no model call. Its receipt and the task record
//     the thread it went to. /remind (Remind) sets one from any channel.
//   - An AI task (ai_prompt) runs an isolated inference — a fresh tool loop
//     with no conversation history — and delivers its answer to the task's
//     thread; a system AI task (no thread) hands the answer to the main
//     agent as a system event. With sub_session the task is given to the
//     workflow runtime instead (Dispatcher.SubSessions; while that is
//     absent it runs as an isolated inference and the receipt says so).
//   - A job runs its registered function (extension.Job, the heartbeat).
//
// # Guarantees
//
//   - Durability: tasks and their next run time are stored before Add
//     returns; nothing pending is lost across a restart or a crash.
//   - Every run time leaves a receipt: fired, skipped (with the reason) or
//     failed (with the reason), with its duration and model tokens. Skipped
//     runs of one cause are grouped into one receipt (with Count) beyond 20.
//   - Catch-up: when run times were missed (the process was down, the
//     machine slept), the latest missed run time within
//     Options.CatchUpWindow (default 24h) runs once, marked catch_up, no
//     matter how many ticks were missed; the other missed run times are
//     recorded as skipped — never dropped silently.
//   - At most once per run time: the next run time is advanced, and a
//     "running" receipt written, in one transaction before the run starts.
//     A run interrupted by shutdown is recorded as skipped and its run time
//     is given back, so the next start catches it up; a run interrupted by
//     a crash is recorded as failed at the next start and is not repeated.
//   - Runs of one task never overlap: a run time that comes while the
//     previous run still runs is skipped with that reason.
//   - Paused tasks do not run; run times that fall into a pause are not
//     caught up. Resume re-arms from now (a one-time task whose time passed
//     runs at once).
//   - Bad input (a past one-time time, an unknown zone, an invalid cron
//     expression, a zero interval, an unknown id) is an error naming the
//     problem; nothing is stored.
//
// # Concurrency
//
// A *Scheduler is safe for concurrent use. Run owns the one timer
// goroutine: it sleeps until the earliest next run time (re-read on every
// Add, Cancel, Pause, Resume and RegisterJob, and at least every
// Options.MaxSleep, since a monotonic timer stops while the machine
// sleeps), runs what is due and re-arms; there is no polling loop. Runs
// execute in goroutines owned by Run, at most Options.MaxParallel at once,
// each bounded by Options.RunTimeout; Run waits for them before it
// returns.
package scheduler
