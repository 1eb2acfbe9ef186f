// Package approval holds tool calls back until the user approves them.
//
// The rule (Decide, a pure function, with policy Untrusted): once the
// conversation a call was made in holds untrusted input — a result of a
// tool declared tool.UntrustedResults, or a user-role message the user did
// not write — a call of an outward tool (tool.SendsOut) needs approval
// unless each of its destinations (tool.Destination) was fixed before that
// input arrived: a URL the user wrote, a host the user named before the
// first untrusted input and from which none came, the turn's own
// conversation (Facts). The whole conversation the model sees is read, so
// untrusted input of earlier turns counts until it leaves the history
// window. A further destination of a running call (a redirect fetch_url
// follows) is asked about through the tool loop's gate (tool.Gate,
// toolloop.ApprovalRequest.Further). Service.Taint tells the tool loop
// whether a call's conversation is tainted (toolloop.Tainter); work started
// from such a call (a sub-session, a scheduled AI task) stores and inherits
// it (tool.WithTaint).
//
// Policies per tool (Policy; configured as tools.approval): Untrusted (the
// default of outward tools), NewDestinations (any unfixed destination, the
// default of the tools that message other conversations), Always, Never.
// The policies of earlier versions load as special cases (Canonical).
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
// Agents (tool.Call.Delegate: a call of an agent_NAME tool's session) run
// inside the turn: their calls that need approval ask the user of the
// turn's thread, as the turn's own calls do. Their task is a user-role
// message the model wrote: from a clean conversation its addresses stand
// for the user's, from a tainted one (tool.TaintFrom) they do not, and the
// agent's session starts tainted.
//
// Background workers (sub-session threads, scheduled tasks
// (tool.Call.Background), or calls outside any turn) have nobody to ask: a
// call of theirs that needs approval is denied at once, with that reason.
package approval
