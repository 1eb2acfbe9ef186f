// Package modelrouter maps model roles (main, compaction, sub_sessions,
// dreaming, reflection, scout, supervisor, and any role an extension
// registers) to ordered lists of backends, and is the one place where model
// calls are counted.
//
// # Routing
//
// A role's backends are tried in configured order. The router moves to the
// next backend only when a backend is unavailable (errors.Is(err,
// providers.ErrUnavailable): connection failures, timeouts, 429/5xx after the
// provider's own retries); authentication errors, bad requests and
// cancellations are returned as they are, because another backend would not
// fix them. A backend that was unavailable is skipped for a short cool-down
// (it is still tried when every backend of the role is cooling down). Once a
// streamed reply has delivered text to the caller, a failure is returned
// rather than retried elsewhere, so callers never see duplicate text.
//
// A role without backends of its own uses the backends of the role it falls
// back to (every built-in role falls back to main). Pool roles (sub_sessions
// by default) spread concurrent calls over their backends: each call starts
// with the backend that has the fewest calls in flight.
//
// # Secrets
//
// With Options.Secrets, every error a Model returns (and Health reports) has
// the registered secret values replaced by [REDACTED] before it leaves the
// router, so a provider that echoes the API key in its error body cannot
// carry it into a reply, a log line or a stored record. The errors still
// match the provider sentinels with errors.Is. FromConfig registers every
// key it resolves.
//
// # Accounting
//
// Every call adds its token usage to the model_usage table, per UTC day,
// role and backend; Usage reads it back for /status and the usage view.
//
// # Concurrency
//
// A Router and the Models it returns are safe for concurrent use. Model calls
// run on the caller's goroutine; the router starts none of its own.
package modelrouter
