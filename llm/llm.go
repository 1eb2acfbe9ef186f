// Package llm is the provider-neutral vocabulary for talking to language
// models: messages made of typed parts, requests, responses, streaming
// events and token usage. It depends on the standard library only.
//
// Every model in Reverie (the OpenAI-compatible and Anthropic providers, the
// model router, the scripted test model) is called the same way:
//
//	Generate(ctx context.Context, req llm.Request, stream llm.StreamFunc) (llm.Response, error)
//
// When stream is nil the call is non-streaming; otherwise stream receives
// events in order as they arrive and Generate still returns the complete,
// accumulated Response. Consumers declare the one-method interface they need
// (toolloop.Model, for instance).
package llm

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"
)

// Role is who wrote a message.
type Role string

const (
	RoleSystem    Role = "system"
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
	RoleTool      Role = "tool"
)

// Part is one piece of a message. The set is sealed: Text, Thinking, Image,
// ToolCall and ToolResult.
type Part interface{ isPart() }

// Text is plain text.
type Text struct {
	Text string
}

// Thinking is the reasoning a model wrote before its reply (OpenAI-compatible
// reasoning_content or reasoning, Anthropic thinking blocks, Ollama's
// thinking). It is stored with the reply and shown to people, folded, but it
// is not part of the reply's text (Message.Text leaves it out), and
// providers do not send it back to the model, except where the provider
// requires it: Anthropic wants the signed thinking blocks of an assistant
// message that calls tools sent back with that message.
type Thinking struct {
	Text string
	// Signature is the provider's proof that Text is what the model wrote
	// (Anthropic); a block without one is never sent back.
	Signature string
	// Redacted is encrypted reasoning the provider returned instead of
	// text (Anthropic's redacted_thinking data); only ever sent back.
	Redacted string
}

// ToolCall is a model's request to run a tool. Arguments is the raw JSON the
// model produced (possibly malformed; the tool loop repairs or rejects it).
type ToolCall struct {
	ID        string
	Name      string
	Arguments json.RawMessage
}

// ToolResult answers one ToolCall.
type ToolResult struct {
	CallID  string
	Name    string
	Content string
	IsError bool
}

// Image is a picture in a user message. The conversation history stores only
// the reference (Path, relative to the workspace, and MediaType); the agent
// reads the file into Data when it builds a request for a model that accepts
// images, and replaces the part with Note text for one that does not.
// Providers send an Image with Data as an image block and one without Data
// as its Note.
type Image struct {
	// MediaType is the image's MIME type: image/jpeg, image/png, image/gif
	// or image/webp.
	MediaType string
	// Path is the file's slash-separated path relative to the workspace.
	Path string
	// Data is the file's content; set only while a request is built, never
	// stored.
	Data []byte
}

// Note is the text that stands for the image where it cannot be shown,
// saying why (for example "this model cannot see images").
func (i Image) Note(why string) Text {
	return Text{Text: "[image saved at workspace/" + i.Path + "; " + why + "]"}
}

func (Text) isPart()       {}
func (Thinking) isPart()   {}
func (Image) isPart()      {}
func (ToolCall) isPart()   {}
func (ToolResult) isPart() {}

// Message is one entry of a conversation.
type Message struct {
	Role  Role
	Parts []Part
}

// UserText builds a user message holding text.
func UserText(s string) Message { return Message{Role: RoleUser, Parts: []Part{Text{Text: s}}} }

// AssistantText builds an assistant message holding text.
func AssistantText(s string) Message {
	return Message{Role: RoleAssistant, Parts: []Part{Text{Text: s}}}
}

// SystemText builds a system message holding text.
func SystemText(s string) Message { return Message{Role: RoleSystem, Parts: []Part{Text{Text: s}}} }

// Text concatenates the text parts of the message.
func (m Message) Text() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(Text); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// Thinking concatenates the thinking parts of the message (the model's
// reasoning, not its reply).
func (m Message) Thinking() string {
	var b strings.Builder
	for _, p := range m.Parts {
		if t, ok := p.(Thinking); ok {
			b.WriteString(t.Text)
		}
	}
	return b.String()
}

// ToolCalls returns the tool calls of the message, in order.
func (m Message) ToolCalls() []ToolCall {
	var out []ToolCall
	for _, p := range m.Parts {
		if c, ok := p.(ToolCall); ok {
			out = append(out, c)
		}
	}
	return out
}

// ToolSpec describes a tool offered to the model. Parameters is a JSON Schema
// object.
type ToolSpec struct {
	Name        string
	Description string
	Parameters  json.RawMessage
}

// ResponseFormat asks for structured output matching a JSON Schema.
type ResponseFormat struct {
	Name   string
	Schema json.RawMessage
	Strict bool
}

// ToolChoice restricts tool use for one request.
type ToolChoice string

const (
	ToolChoiceAuto     ToolChoice = ""         // the model decides
	ToolChoiceNone     ToolChoice = "none"     // no tool calls
	ToolChoiceRequired ToolChoice = "required" // at least one tool call
)

// Request is one model call.
type Request struct {
	// Model overrides the backend's configured model when set.
	Model string
	// System is the system prompt; providers place it where their API wants it.
	System   string
	Messages []Message
	Tools    []ToolSpec
	// ToolChoice restricts tool use.
	ToolChoice ToolChoice
	// Temperature is nil for the provider default.
	Temperature *float64
	// MaxTokens caps the reply; 0 means the backend's configured default.
	MaxTokens int
	// ResponseFormat asks for JSON matching a schema; nil for free text.
	ResponseFormat *ResponseFormat
	// CachePrefix is how many of the leading Messages are the same as in
	// the previous request of the conversation (the stored conversation
	// before the turn's message and its per-turn context). Providers whose
	// prompt caching needs explicit marks (Anthropic) mark the end of the
	// tools and system prompt, of Messages[:CachePrefix] and of the
	// request; 0 marks no messages but the last. Others ignore it.
	CachePrefix int
}

// Usage counts tokens of one call (or a sum of calls).
type Usage struct {
	InputTokens     int `json:"input_tokens"`
	OutputTokens    int `json:"output_tokens"`
	CacheReadTokens int `json:"cache_read_tokens,omitempty"`
}

// Add returns the sum of two usages.
func (u Usage) Add(o Usage) Usage {
	return Usage{
		InputTokens:     u.InputTokens + o.InputTokens,
		OutputTokens:    u.OutputTokens + o.OutputTokens,
		CacheReadTokens: u.CacheReadTokens + o.CacheReadTokens,
	}
}

// Total is input plus output tokens.
func (u Usage) Total() int { return u.InputTokens + u.OutputTokens }

// StopReason says why the model stopped.
type StopReason string

const (
	StopEnd       StopReason = "end"        // natural end of the reply
	StopToolCalls StopReason = "tool_calls" // the model wants tools run
	StopMaxTokens StopReason = "max_tokens" // cut at the token limit
	StopFiltered  StopReason = "filtered"   // refused by a content filter
)

// Response is a complete model reply.
type Response struct {
	Message    Message
	Usage      Usage
	StopReason StopReason
	// Model is the model that answered, as the provider reports it.
	Model string
}

// EventKind names the kind of a streaming event.
type EventKind string

const (
	EventTextDelta     EventKind = "text_delta"
	EventThinkingDelta EventKind = "thinking_delta"
	EventToolCallDelta EventKind = "tool_call_delta"
	EventUsage         EventKind = "usage"
	EventDone          EventKind = "done"
	// EventWait: the call failed and will be tried again after a wait
	// (a rate limit, a server error); Wait says why and how long. Nothing
	// of the reply has been streamed yet.
	EventWait EventKind = "wait"
)

// Event is one streaming event. Which fields are set depends on Kind:
// TextDelta → Text; ThinkingDelta → Text (reasoning, not reply);
// ToolCallDelta → ToolCall (Index always, ID and Name when
// first seen, ArgumentsDelta as it arrives); Usage → Usage; Done → Response;
// Wait → Wait.
type Event struct {
	Kind     EventKind
	Text     string
	ToolCall ToolCallDelta
	Usage    Usage
	Response *Response
	Wait     *Wait
}

// WaitReason says why a model call waits before trying again.
type WaitReason string

const (
	// WaitRateLimited: the provider said to slow down (HTTP 429).
	WaitRateLimited WaitReason = "rate_limited"
	// WaitUnavailable: the provider failed or did not answer in time (5xx,
	// a timeout, a dropped connection).
	WaitUnavailable WaitReason = "unavailable"
)

// Wait is a retry the caller is waiting for.
type Wait struct {
	Reason WaitReason
	// Delay is how long until the next attempt.
	Delay time.Duration
	// Attempt is the attempt that failed, counted from 1.
	Attempt int
}

// Words says the wait in plain words for the person waiting, as a
// sentence without its full stop: "Rate limited by the provider, retrying
// in 30 s".
func (w Wait) Words() string {
	secs := int((w.Delay + time.Second - 1) / time.Second)
	in := fmt.Sprintf("%d s", secs)
	if secs >= 120 {
		in = fmt.Sprintf("%d min", (secs+30)/60)
	}
	if w.Reason == WaitRateLimited {
		return "Rate limited by the provider, retrying in " + in
	}
	return "The model provider did not answer, retrying in " + in
}

// ToolCallDelta is a fragment of a tool call being streamed.
type ToolCallDelta struct {
	Index          int
	ID             string
	Name           string
	ArgumentsDelta string
}

// StreamFunc receives streaming events. It runs on the caller's goroutine
// and must not block for long.
type StreamFunc func(Event)
