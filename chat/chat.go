// Package chat is the vocabulary every channel and the router share: thread
// identifiers, addresses, inbound and outbound messages. It depends on the
// standard library only.
package chat

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"
)

// ThreadID names one conversation. Channels form ids as "<channel>:<target>"
// ("web:3f2a", "cli:alice", "matrix:!room:example.org", "telegram:1234");
// "default" is the thread used when nothing else is known, and sub-sessions
// use "sub_<id>" (never harvested, never shown as chats).
type ThreadID string

// DefaultThread is the thread used when a message carries no better address.
const DefaultThread ThreadID = "default"

// SubSessionPrefix starts the id of every background worker's thread.
const SubSessionPrefix = "sub_"

// MaxThreadIDLen bounds a thread id; longer ids are refused by Validate.
const MaxThreadIDLen = 256

// ErrInvalidThreadID is returned by ThreadID.Validate for an empty, oversized
// or control-character-bearing id.
var ErrInvalidThreadID = errors.New("invalid thread id")

// NewThreadID joins a channel name and a channel-specific target.
func NewThreadID(channel, target string) ThreadID {
	return ThreadID(channel + ":" + target)
}

// Channel returns the channel part of the id ("web" for "web:abc"), or "" for
// ids without one ("default", "sub_…").
func (t ThreadID) Channel() string {
	s := string(t)
	if i := strings.IndexByte(s, ':'); i > 0 {
		return s[:i]
	}
	return ""
}

// Target returns the part after the channel prefix, or the whole id when it
// has none.
func (t ThreadID) Target() string {
	s := string(t)
	if i := strings.IndexByte(s, ':'); i > 0 {
		return s[i+1:]
	}
	return s
}

// IsSubSession reports whether the thread belongs to a background worker.
func (t ThreadID) IsSubSession() bool { return strings.HasPrefix(string(t), SubSessionPrefix) }

// Validate checks that the id is usable as a key everywhere (URLs, file
// names are never built from it unescaped, but logs and tables are).
func (t ThreadID) Validate() error {
	s := string(t)
	switch {
	case s == "":
		return fmt.Errorf("%w: empty", ErrInvalidThreadID)
	case len(s) > MaxThreadIDLen:
		return fmt.Errorf("%w: longer than %d bytes", ErrInvalidThreadID, MaxThreadIDLen)
	}
	for _, r := range s {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return fmt.Errorf("%w: %q contains a control or invalid character", ErrInvalidThreadID, s)
		}
	}
	return nil
}

func (t ThreadID) String() string { return string(t) }

// Address says where a message goes: a channel by name and the thread on it.
type Address struct {
	Channel string   // registered channel name: "web", "cli", "matrix", "telegram"
	Thread  ThreadID // conversation on that channel
}

func (a Address) String() string { return a.Channel + "→" + string(a.Thread) }

// Sender identifies who wrote an inbound message.
type Sender struct {
	ID string // channel-specific user id ("@alice:example.org", "1234")
	// DisplayName is the name people see for the sender (the web: the
	// user's name in the world state; Telegram: first name and
	// @username; Matrix: the room member's display name). Memory stores it
	// as the speaker of what they said.
	DisplayName string
}

// Inbound is a message from a user arriving on a channel.
type Inbound struct {
	Address Address
	Sender  Sender
	// ID is the channel's id for the message, unique on the channel and
	// the same when the platform delivers the message again (Telegram:
	// "<chat id>/<message id>", Matrix: the event id); "" when the channel
	// has none. The router accepts a message with a given channel and ID
	// once (for MaxSeenAge): one the channel hands over again after a
	// crash or a refetch is dropped, so that it is never answered or
	// remembered twice. At most MaxInboundIDLen bytes.
	ID string
	// Text may be empty when the message has attachments.
	Text string
	// Attachments are files the channel saved in the workspace for this
	// message and hands to the model as parts (photos as images).
	Attachments []Attachment
	// Received is when the channel got it; zero means "now".
	Received time.Time
	// Overheard marks a message the assistant only listens to: one said in
	// a group room by an allowed member but not addressed to the assistant
	// (no mention, no reply to it). It is remembered as an episode and
	// never answered (Host.Receive returns once it is stored).
	Overheard bool
}

// AttachmentKind says what an attachment is.
type AttachmentKind string

// Attachment kinds.
const (
	// AttachImage is a picture (image/jpeg, image/png, image/gif or
	// image/webp): a model that accepts images sees it.
	AttachImage AttachmentKind = "image"
	// AttachAudio is a recording (a voice note: audio/ogg, audio/webm,
	// audio/wav, audio/mpeg…): the router has it transcribed by the
	// speech-to-text model and handles the words as typed text.
	AttachAudio AttachmentKind = "audio"
)

// MaxInboundIDLen bounds Inbound.ID.
const MaxInboundIDLen = 256

// MaxSeenAge is how long the router remembers an Inbound.ID: a message
// delivered again later than that is taken as new.
const MaxSeenAge = 30 * 24 * time.Hour

// MaxAttachments bounds the attachments of one inbound message.
const MaxAttachments = 10

// Attachment is a file a channel saved in the workspace for a message.
type Attachment struct {
	Kind AttachmentKind
	// Path is the file's slash-separated path relative to the workspace
	// ("telegram/1234/20260101-120000-7-photo.jpg").
	Path string
	// MediaType is the file's MIME type ("image/jpeg").
	MediaType string
}

// ErrInvalidAttachment is returned by Attachment.Validate.
var ErrInvalidAttachment = errors.New("invalid attachment")

// Validate checks that the attachment has a known kind and a local
// workspace path (relative, slash-separated, no "..").
func (a Attachment) Validate() error {
	if a.Kind != AttachImage && a.Kind != AttachAudio {
		return fmt.Errorf("%w: unknown kind %q", ErrInvalidAttachment, a.Kind)
	}
	p := a.Path
	if p == "" || len(p) > 1024 || strings.HasPrefix(p, "/") || strings.Contains(p, "\\") {
		return fmt.Errorf("%w: path %q is not a relative workspace path", ErrInvalidAttachment, p)
	}
	for _, seg := range strings.Split(p, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fmt.Errorf("%w: path %q is not a relative workspace path", ErrInvalidAttachment, p)
		}
	}
	for _, r := range p + a.MediaType {
		if unicode.IsControl(r) || r == unicode.ReplacementChar {
			return fmt.Errorf("%w: %q contains a control or invalid character", ErrInvalidAttachment, p)
		}
	}
	return nil
}

// OutboundKind distinguishes ordinary replies from proactive messages.
type OutboundKind string

const (
	// Reply answers an inbound message.
	Reply OutboundKind = "reply"
	// Notify is a proactive message: a reminder, a sub-session result.
	Notify OutboundKind = "notify"
	// Error tells the user a turn failed.
	Error OutboundKind = "error"
	// AskApproval asks the user to approve or deny a tool call, or tells
	// them the outcome (Outbound.Approval says which). Text is a complete
	// plain-text version that ends by asking for a "yes" or "no" reply, for
	// channels that cannot show buttons.
	AskApproval OutboundKind = "approval"
	// Transcript shows the user what was heard in their voice message,
	// before the reply: Text is a complete line ("🎤 …") that channels
	// without a better place for it send as it is.
	Transcript OutboundKind = "transcript"
)

// Speech is a reply spoken aloud: an audio file in the workspace that a
// channel able to play it sends after the text reply
// (extension.VoiceChannelProvider).
type Speech struct {
	// Path is the file's slash-separated path relative to the workspace.
	Path string
	// MediaType is the file's MIME type ("audio/ogg" for Ogg/Opus).
	MediaType string
	// Text is what the file says (the reply, or a part of it).
	Text string
	// Part and Parts number the pieces of a long reply spoken in parts
	// (1 of 1 for a short one).
	Part, Parts int
	// Seconds is the audio's length when known, else 0.
	Seconds float64
}

// Outbound is a message for a user on a channel.
type Outbound struct {
	Address Address
	Kind    OutboundKind
	Text    string
	// Approval is set for Kind AskApproval.
	Approval *Approval
}

// ApprovalState is where an approval request stands.
type ApprovalState string

// Approval states.
const (
	ApprovalPending  ApprovalState = "pending"
	ApprovalApproved ApprovalState = "approved"
	ApprovalDenied   ApprovalState = "denied"
	// ApprovalExpired: nobody answered in time; the call did not run.
	ApprovalExpired ApprovalState = "expired"
)

// Approval is a tool call waiting for the user's approval, or its outcome.
type Approval struct {
	// ID answers the request ("ap_…").
	ID   string
	Tool string
	// Arguments are the call's JSON arguments.
	Arguments []byte
	// Reason says why the call needs approval.
	Reason string
	State  ApprovalState
	// Deadline is when an unanswered request counts as denied.
	Deadline time.Time
}

// Sender of outbound messages: implemented by whatever routes messages to
// channels (the router), consumed by tools and background workers.
type Deliverer interface {
	Deliver(ctx context.Context, msg Outbound) error
}
