// Package supervisor runs the agent as a child process and keeps it running:
// `reverie run` calls Run with the argv of `reverie agent …`.
//
// # What Run does
//
//   - Starts the child in its own process group (so a terminal Ctrl-C reaches
//     the supervisor once, and the supervisor decides what the child gets),
//     with stdin on /dev/null and stdout/stderr passed through.
//   - When the child exits, decides by its exit status:
//     0 → the agent finished; Run returns nil.
//     ExitRestart (75) → the agent asked to be restarted; it is started again
//     at once and the exit does not count as a crash.
//     ExitConfigError (2) → the configuration is invalid; restarting would
//     only fail again, so Run returns an error wrapping ErrConfigInvalid.
//     ExitLocked (3) → another agent runs on the data dir; Run returns an
//     error wrapping ErrLocked.
//     ExitDataDir (4) → the agent cannot use its data dir (not writable,
//     unreadable files, a full disk); Run returns an error wrapping
//     ErrDataDir.
//     ExitEnvironment (5) → something outside Reverie prevents the start (a
//     program holds the web port); Run returns an error wrapping
//     ErrEnvironment instead of restarting into the same conflict.
//     anything else (another code, or death by a signal) → a crash: the
//     child is restarted after a capped exponential backoff (BackoffMin
//     doubling up to BackoffMax, back to BackoffMin once a child has stayed
//     up StableAfter). CrashLoopLimit crashes within CrashLoopWindow make Run
//     give up with an error wrapping ErrCrashLoop.
//   - Watches Options.RestartFile (written by the request_restart tool): when
//     it appears, the file is removed and the child is stopped gracefully and
//     started again at once, without counting a crash. The file is checked
//     every RestartPollInterval (1 s) with a timer: the standard library has
//     no portable file-change notification, one stat per second costs
//     nothing, and a restart request does not need lower latency. A request
//     file left over from before Run started is removed at start.
//   - Probes Options.HealthURL, when set, every HealthInterval. After
//     HealthFailures consecutive failures the child is stopped and restarted
//     like a crash (with backoff, counted toward the crash loop). Failures
//     are not counted during HealthStartPeriod after a start unless the child
//     has already answered healthy, so a slow start is not mistaken for a
//     hang. With Options.Instance each child gets a fresh random id in
//     InstanceEnv and a probe passes only when the answer's JSON
//     "instance" is that id, so a probe answered by another process (one
//     holding the port the child could not bind) fails.
//   - On ctx cancellation (the caller turns SIGINT/SIGTERM into cancellation
//     with signal.NotifyContext) sends SIGTERM to the child, waits
//     ShutdownGrace, then SIGKILLs its whole process group. Run returns nil
//     when the child exited 0 (or died of that SIGTERM), ErrKilled when it
//     had to be killed, and an error naming the status otherwise.
//   - After every exit of the child, any process still in its process group
//     is killed, so a restarted agent never competes with orphans of the
//     previous one (ports, database, MCP servers). On Linux the child also
//     gets SIGTERM if the supervisor itself dies (PR_SET_PDEATHSIG).
//
// # Concurrency and guarantees
//
// Run is a single loop on the caller's goroutine plus one goroutine per child
// that waits for the child's exit; Run does not return before that goroutine
// has delivered the exit, so when Run returns the child has exited and been
// reaped and nothing started by Run is left running. At most one child runs
// at a time. All timing (backoff, polls, probes, grace) goes through the
// injectable Clock, so tests drive it without sleeping.
package supervisor
