package conversation

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/llm"
)

// Part type discriminators as stored in the parts column.
const (
	partText       = "text"
	partToolCall   = "tool_call"
	partToolResult = "tool_result"
	partImage      = "image"
	partThinking   = "thinking"
)

// ErrCorruptMessage is returned (wrapped) when a stored message's parts
// cannot be decoded.
var ErrCorruptMessage = errors.New("corrupt stored message")

// storedPart is the JSON shape of one llm.Part. String fields that are not
// valid UTF-8 (tool output can be arbitrary bytes) are stored base64-encoded
// with B64 set, so every part round-trips byte for byte.
type storedPart struct {
	Type string `json:"type"`
	B64  bool   `json:"b64,omitempty"`
	// text
	Text string `json:"text,omitempty"`
	// tool_call / tool_result
	ID        string  `json:"id,omitempty"`
	Name      string  `json:"name,omitempty"`
	Arguments *string `json:"arguments,omitempty"` // raw model output, possibly not JSON; nil when absent
	// tool_result
	CallID  string `json:"call_id,omitempty"`
	Content string `json:"content,omitempty"`
	IsError bool   `json:"is_error,omitempty"`
	// thinking: Text is the reasoning; Signature and Data are the
	// provider's signature and redacted reasoning, kept to be sent back.
	Signature string `json:"signature,omitempty"`
	Data      string `json:"data,omitempty"`
	// image: the workspace-relative path and the media type; the bytes
	// stay in the file.
	Path      string `json:"path,omitempty"`
	MediaType string `json:"media_type,omitempty"`
}

// encodeParts turns parts into the JSON stored in messages.parts.
func encodeParts(parts []llm.Part) ([]byte, error) {
	out := make([]storedPart, 0, len(parts))
	for i, p := range parts {
		sp, err := toStored(p)
		if err != nil {
			return nil, fmt.Errorf("encode part %d: %w", i, err)
		}
		out = append(out, sp)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(out); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}

func toStored(p llm.Part) (storedPart, error) {
	switch v := p.(type) {
	case llm.Text:
		return textPart(v), nil
	case *llm.Text:
		if v == nil {
			return storedPart{}, errors.New("nil *llm.Text")
		}
		return textPart(*v), nil
	case llm.Thinking:
		return thinkingPart(v), nil
	case llm.Image:
		return imagePart(v)
	case *llm.Image:
		if v == nil {
			return storedPart{}, errors.New("nil *llm.Image")
		}
		return imagePart(*v)
	case llm.ToolCall:
		return callPart(v), nil
	case *llm.ToolCall:
		if v == nil {
			return storedPart{}, errors.New("nil *llm.ToolCall")
		}
		return callPart(*v), nil
	case llm.ToolResult:
		return resultPart(v), nil
	case *llm.ToolResult:
		if v == nil {
			return storedPart{}, errors.New("nil *llm.ToolResult")
		}
		return resultPart(*v), nil
	default:
		return storedPart{}, fmt.Errorf("unknown part type %T", p)
	}
}

func textPart(t llm.Text) storedPart {
	sp := storedPart{Type: partText, Text: t.Text}
	if !utf8.ValidString(t.Text) {
		sp.B64, sp.Text = true, b64(t.Text)
	}
	return sp
}

func thinkingPart(t llm.Thinking) storedPart {
	sp := storedPart{Type: partThinking, Text: t.Text, Signature: t.Signature, Data: t.Redacted}
	if !utf8.ValidString(t.Text) || !utf8.ValidString(t.Signature) || !utf8.ValidString(t.Redacted) {
		sp.B64, sp.Text, sp.Signature, sp.Data = true, b64(t.Text), b64(t.Signature), b64(t.Redacted)
	}
	return sp
}

// imagePart keeps the reference only: an image is stored as a file in the
// workspace, never as bytes in the database.
func imagePart(i llm.Image) (storedPart, error) {
	if i.Path == "" || !utf8.ValidString(i.Path) || !utf8.ValidString(i.MediaType) {
		return storedPart{}, fmt.Errorf("image without a valid workspace path (%q)", i.Path)
	}
	return storedPart{Type: partImage, Path: i.Path, MediaType: i.MediaType}, nil
}

func callPart(c llm.ToolCall) storedPart {
	sp := storedPart{Type: partToolCall, ID: c.ID, Name: c.Name}
	var args string
	if c.Arguments != nil {
		args = string(c.Arguments)
	}
	if !utf8.ValidString(c.ID) || !utf8.ValidString(c.Name) || !utf8.ValidString(args) {
		sp.B64, sp.ID, sp.Name, args = true, b64(c.ID), b64(c.Name), b64(args)
	}
	if c.Arguments != nil {
		sp.Arguments = &args
	}
	return sp
}

func resultPart(r llm.ToolResult) storedPart {
	sp := storedPart{Type: partToolResult, CallID: r.CallID, Name: r.Name, Content: r.Content, IsError: r.IsError}
	if !utf8.ValidString(r.CallID) || !utf8.ValidString(r.Name) || !utf8.ValidString(r.Content) {
		sp.B64, sp.CallID, sp.Name, sp.Content = true, b64(r.CallID), b64(r.Name), b64(r.Content)
	}
	return sp
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

// decodeParts reverses encodeParts. An empty array decodes to nil parts.
func decodeParts(data []byte) ([]llm.Part, error) {
	stored, ok := fastDecode(data)
	if !ok {
		if err := json.Unmarshal(data, &stored); err != nil {
			return nil, fmt.Errorf("%w: %v", ErrCorruptMessage, err)
		}
	}
	if len(stored) == 0 {
		return nil, nil
	}
	parts := make([]llm.Part, 0, len(stored))
	for i, sp := range stored {
		p, err := fromStored(sp)
		if err != nil {
			return nil, fmt.Errorf("%w: part %d: %v", ErrCorruptMessage, i, err)
		}
		parts = append(parts, p)
	}
	return parts, nil
}

func fromStored(sp storedPart) (llm.Part, error) {
	if sp.B64 {
		var err error
		dec := func(s string) string {
			b, e := base64.StdEncoding.DecodeString(s)
			if e != nil && err == nil {
				err = e
			}
			return string(b)
		}
		sp.Text, sp.ID, sp.Name, sp.CallID, sp.Content = dec(sp.Text), dec(sp.ID), dec(sp.Name), dec(sp.CallID), dec(sp.Content)
		sp.Signature, sp.Data = dec(sp.Signature), dec(sp.Data)
		if sp.Arguments != nil {
			a := dec(*sp.Arguments)
			sp.Arguments = &a
		}
		if err != nil {
			return nil, fmt.Errorf("bad base64 field: %w", err)
		}
	}
	switch sp.Type {
	case partText:
		return llm.Text{Text: sp.Text}, nil
	case partThinking:
		return llm.Thinking{Text: sp.Text, Signature: sp.Signature, Redacted: sp.Data}, nil
	case partToolCall:
		c := llm.ToolCall{ID: sp.ID, Name: sp.Name}
		if sp.Arguments != nil {
			c.Arguments = json.RawMessage(*sp.Arguments)
		}
		return c, nil
	case partToolResult:
		return llm.ToolResult{CallID: sp.CallID, Name: sp.Name, Content: sp.Content, IsError: sp.IsError}, nil
	case partImage:
		if sp.Path == "" {
			return nil, errors.New("image without a path")
		}
		return llm.Image{Path: sp.Path, MediaType: sp.MediaType}, nil
	default:
		return nil, fmt.Errorf("unknown part type %q", sp.Type)
	}
}
