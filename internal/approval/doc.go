// Package approval holds tool calls back until the user approves them.
//
// A policy per tool (Policy; configured as tools.approval) says when a call
// needs approval: never, always, when a url argument names a host the user
// did not name in the conversation (new_hosts), the same only once a tool
// that reads private data (tool.ReadsPrivateData) has answered in the turn
// (new_hosts_after_private, the default for fetch_url), when the shell has
// network access (network), or when a channel argument names a channel
// other than the one the turn came from (other_channels, the default for
// send_to_channel). Decide is the policy table, a pure function.
//
// Service implements toolloop.Approver. A call that needs approval becomes
// a durable record (the approvals table: id, thread, call, tool, arguments,
// reason, state, deadline) and a chat.Outbound of kind chat.AskApproval to
// the channel of the turn's thread — buttons on the web page, a y/n prompt
// in the terminal, a text asking for "yes" or "no" elsewhere. The call
// waits until the user answers (Answer, or AnswerText for a yes/no reply),
// the deadline passes (Options.Timeout: the call is denied, state
// "expired") or the turn's context ends. A denied call is not run; the
// model gets "the user denied this call" as the call's failed result.
//
// Restarts. A record stays pending when the turn's context ends, so a turn
// resumed after a restart that asks about the same call (same thread, call
// id, tool and arguments) waits on the same record, and the request is
// delivered again. Run expires pending records whose deadline passed, so a
// request nobody resumes does not wait for ever. A resumed turn that asks
// anew (the model ran the round again, under another call id) closes the
// thread's pending requests no call waits on (state "expired", via
// "superseded"): a thread runs one turn at a time, so they are stale, and
// the user's "yes" answers the request the turn waits on.
//
// Background workers (sub-session threads, or calls outside any turn) have
// nobody to ask: a call of theirs that needs approval is denied at once,
// with that reason.
package approval
