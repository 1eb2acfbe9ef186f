package tool

import (
	"context"
	"encoding/json"
)

// Destination is where one call of an outward tool (SendsOut) can carry
// data: a URL, a conversation, a channel, or anywhere (a shell with
// network access). Data is what the call carries there, as shown to the
// user on an approval request (the URL with its query, the message, the
// command).
type Destination struct {
	// URL of a network request.
	URL string
	// Thread a message goes to ("telegram:42"; a bare target is taken as
	// being on the turn's channel).
	Thread string
	// Channel a message goes to (send_to_channel's channel).
	Channel string
	// Anywhere describes a call that can reach any destination ("the
	// network"): its destination can never be fixed in advance.
	Anywhere string
	// Data is what the call carries to the destination.
	Data string
}

// UntrustedResults marks the tool as one whose results bring content from
// outside into the conversation: a web page, a search result, an MCP
// server's answer, a file the user did not write, a message from another
// person — text that may carry instructions the user did not give. Once
// such a result is in what the model sees, the conversation is tainted,
// and outward calls (SendsOut) to destinations not fixed before need the
// user's approval (internal/approval). See ReturnsUntrusted.
func UntrustedResults() Option {
	return func(o *options) { o.untrusted = true }
}

// SendsOut marks the tool as an outward action: a call can carry data out
// of the assistant, to the destinations dest reads from the call's
// arguments (valid JSON, already checked against the schema). dest
// returning nothing means that call sends nothing out. See DestinationsOf.
func SendsOut(dest func(args json.RawMessage) []Destination) Option {
	return func(o *options) { o.destinations = dest }
}

// UntrustedReporter is implemented by tools that say whether their results
// are untrusted input (every tool built by New or NewRaw).
type UntrustedReporter interface {
	UntrustedResults() bool
}

// ReturnsUntrusted reports whether t declared UntrustedResults. Tools that
// do not say are assumed to return trusted content.
func ReturnsUntrusted(t Tool) bool {
	r, ok := t.(UntrustedReporter)
	return ok && r.UntrustedResults()
}

// Outward is implemented by tools that say whether they are outward
// actions and where a call carries data (every tool built by New or
// NewRaw).
type Outward interface {
	SendsOut() bool
	Destinations(args json.RawMessage) []Destination
}

// DestinationsOf returns where the call of t with args can carry data, and
// whether t declared it (SendsOut). A tool that did not declare returns
// false: its caller decides what to assume.
func DestinationsOf(t Tool, args json.RawMessage) ([]Destination, bool) {
	o, ok := t.(Outward)
	if !ok || !o.SendsOut() {
		return nil, false
	}
	return o.Destinations(args), true
}

type taintKey struct{}

// Taint says that the conversation a call was made in holds untrusted
// input (UntrustedResults). Source names what tainted it, in words for the
// user ("a fetch_url result from example.org").
type Taint struct {
	Source string
}

// WithTaint returns ctx carrying t. The tool loop puts it into the context
// of every call made in a tainted conversation, and background work
// started from such a call (a sub-session, a scheduled AI task) carries it
// on into its own calls.
func WithTaint(ctx context.Context, t Taint) context.Context {
	return context.WithValue(ctx, taintKey{}, t)
}

// TaintFrom returns the Taint in ctx; ok is false when the call's
// conversation holds no untrusted input.
func TaintFrom(ctx context.Context) (t Taint, ok bool) {
	t, ok = ctx.Value(taintKey{}).(Taint)
	return t, ok && t.Source != ""
}

type gateKey struct{}

// Gate approves a further destination of a running call: a tool that
// reaches somewhere its arguments did not name (fetch_url following a
// redirect) asks the gate first, with the arguments a call to that
// destination would have had, and stops when it returns an error.
type Gate func(ctx context.Context, args json.RawMessage) error

// WithGate returns ctx carrying g; the tool loop puts one into the context
// of each call when it has an approver.
func WithGate(ctx context.Context, g Gate) context.Context {
	return context.WithValue(ctx, gateKey{}, g)
}

// GateFrom returns the Gate in ctx; ok is false when nobody checks further
// destinations.
func GateFrom(ctx context.Context) (g Gate, ok bool) {
	g, ok = ctx.Value(gateKey{}).(Gate)
	return g, ok && g != nil
}

// SendsOutTo is SendsOut for a tool whose arguments decode into A. Arguments
// that do not decode can go anywhere.
func SendsOutTo[A any](dest func(a A) []Destination) Option {
	return SendsOut(func(args json.RawMessage) []Destination {
		var a A
		if err := json.Unmarshal(args, &a); err != nil {
			return []Destination{{Anywhere: "a destination its arguments do not say", Data: string(args)}}
		}
		return dest(a)
	})
}

// ApprovalPolicy says when a tool's calls need the user's approval; the
// values are those of the tools.approval configuration (internal/approval
// applies them).
type ApprovalPolicy string

// Approval policies a tool can declare as its default (DefaultApproval).
const (
	// ApproveNever: calls run without asking.
	ApproveNever ApprovalPolicy = "never"
	// ApproveAlways: every call is asked about.
	ApproveAlways ApprovalPolicy = "always"
	// ApproveUntrusted: once the conversation holds untrusted input, a call
	// to a destination not fixed before it arrived is asked about (the
	// default of every outward tool).
	ApproveUntrusted ApprovalPolicy = "untrusted"
	// ApproveNewDestinations: a call to a destination the user did not fix
	// (another conversation than this one) is always asked about: the
	// policy of tools that message other conversations.
	ApproveNewDestinations ApprovalPolicy = "new_destinations"
)

// DefaultApproval makes p the tool's approval policy when the
// configuration (tools.approval) names none. Without it an outward tool
// (SendsOut) defaults to ApproveUntrusted and the others to ApproveNever.
// See DefaultApprovalOf.
func DefaultApproval(p ApprovalPolicy) Option {
	return func(o *options) { o.approval = p }
}

// ApprovalDefaulter is implemented by tools that can declare their default
// approval policy (every tool built by New or NewRaw; "" when they do not).
type ApprovalDefaulter interface {
	DefaultApproval() ApprovalPolicy
}

// DefaultApprovalOf returns the approval policy t declared
// (DefaultApproval), and whether it declared one.
func DefaultApprovalOf(t Tool) (ApprovalPolicy, bool) {
	d, ok := t.(ApprovalDefaulter)
	if !ok || d.DefaultApproval() == "" {
		return "", false
	}
	return d.DefaultApproval(), true
}
