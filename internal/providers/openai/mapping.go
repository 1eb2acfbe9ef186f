package openai

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sync"
	"unicode/utf8"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/packages/respjson"
	"github.com/openai/openai-go/v3/shared"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/llm"
)

// request is a chat-completions request ready to encode: its parameters,
// and each tool's definition already encoded (the tools rarely change from
// one request to the next).
type request struct {
	params sdk.ChatCompletionNewParams
	tools  []json.RawMessage
	// stream writes "stream": true in the body, first: a streamed call
	// posts the body as it is (Client.stream), not through the SDK's
	// streaming call, which would copy the whole body to set that key.
	stream bool
}

// body encodes the request: the JSON value the SDK makes of the
// parameters with the tools among them, for a fraction of the cost. The
// SDK encodes through reflection and compacts each nested value's JSON
// again at every level, which made encoding a turn's request (a long
// system prompt, the history, thirty tools) about a tenth of its CPU
// (BenchmarkRequestBody); here the messages are encoded one by one
// (encodeMessage) and the tools come encoded, and both are added to the
// encoding of the other parameters.
func (r request) body() ([]byte, error) {
	rest := r.params
	rest.Messages = nil // omitted: added below
	b, err := rest.MarshalJSON()
	if err != nil {
		return nil, err
	}
	b = bytes.TrimRight(b, " \t\r\n")
	if len(b) < 2 || b[0] != '{' || b[len(b)-1] != '}' {
		return nil, fmt.Errorf("encode request: parameters are not a JSON object")
	}
	out := make([]byte, 0, len(b)+r.size())
	sep := len(b) > 2
	if r.stream {
		out = append(out, `{"stream":true`...)
		if sep {
			out = append(out, ',')
		}
		sep = true
		out = append(out, b[1:len(b)-1]...)
	} else {
		out = append(out, b[:len(b)-1]...)
	}
	member := func(name string) {
		if sep {
			out = append(out, ',')
		}
		sep = true
		out = append(out, '"')
		out = append(out, name...)
		out = append(out, `":[`...)
	}
	if len(r.params.Messages) > 0 {
		member("messages")
		for i, m := range r.params.Messages {
			if i > 0 {
				out = append(out, ',')
			}
			if out, err = encodeMessage(out, m); err != nil {
				return nil, fmt.Errorf("encode message %d: %w", i, err)
			}
		}
		out = append(out, ']')
	}
	if len(r.tools) > 0 {
		member("tools")
		for i, t := range r.tools {
			if i > 0 {
				out = append(out, ',')
			}
			out = append(out, t...)
		}
		out = append(out, ']')
	}
	return append(out, '}'), nil
}

// size is about how many bytes the messages and the tools add to the
// body (a text's escapes may add more), so that the body is allocated
// once at about its size rather than grown by doubling (a turn's request
// is tens of kilobytes: the system prompt and the tools).
func (r request) size() int {
	n := 64
	for _, m := range r.params.Messages {
		n += 64
		switch {
		case m.OfSystem != nil:
			n += len(m.OfSystem.Content.OfString.Value)
		case m.OfUser != nil:
			n += len(m.OfUser.Content.OfString.Value)
		case m.OfAssistant != nil:
			n += len(m.OfAssistant.Content.OfString.Value)
		case m.OfTool != nil:
			n += len(m.OfTool.Content.OfString.Value)
		}
	}
	for _, t := range r.tools {
		n += len(t) + 1
	}
	return n + n/16
}

// encodeMessage appends m's JSON to dst. A message of text alone (what
// toMessages makes of most) is written directly; any other is the SDK's
// encoding, compacted.
func encodeMessage(dst []byte, m sdk.ChatCompletionMessageParamUnion) ([]byte, error) {
	switch {
	case m.OfSystem != nil && m.OfSystem.Content.OfString.Valid() && m.OfSystem.Content.OfArrayOfContentParts == nil &&
		param.IsOmitted(m.OfSystem.Name):
		return textMessage(dst, "system", m.OfSystem.Content.OfString.Value, "")
	case m.OfUser != nil && m.OfUser.Content.OfString.Valid() && m.OfUser.Content.OfArrayOfContentParts == nil &&
		param.IsOmitted(m.OfUser.Name):
		return textMessage(dst, "user", m.OfUser.Content.OfString.Value, "")
	case m.OfAssistant != nil && m.OfAssistant.Content.OfString.Valid() && m.OfAssistant.Content.OfArrayOfContentParts == nil &&
		len(m.OfAssistant.ToolCalls) == 0 && param.IsOmitted(m.OfAssistant.Name) && param.IsOmitted(m.OfAssistant.Refusal) &&
		param.IsOmitted(m.OfAssistant.Audio) && param.IsOmitted(m.OfAssistant.FunctionCall):
		return textMessage(dst, "assistant", m.OfAssistant.Content.OfString.Value, "")
	case m.OfTool != nil && m.OfTool.Content.OfString.Valid() && m.OfTool.Content.OfArrayOfContentParts == nil:
		return textMessage(dst, "tool", m.OfTool.Content.OfString.Value, m.OfTool.ToolCallID)
	}
	raw, err := m.MarshalJSON()
	if err != nil {
		return nil, err
	}
	buf := bytes.NewBuffer(dst)
	if err := json.Compact(buf, raw); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// textMessage appends {"content":text,"role":role} (with "tool_call_id"
// when callID is set) to dst.
func textMessage(dst []byte, role, text, callID string) ([]byte, error) {
	dst = append(dst, `{"content":`...)
	dst = appendJSONString(dst, text)
	if callID != "" {
		dst = append(dst, `,"tool_call_id":`...)
		dst = appendJSONString(dst, callID)
	}
	dst = append(dst, `,"role":"`...)
	dst = append(dst, role...)
	return append(dst, `"}`...), nil
}

// appendJSONString appends s as a JSON string, as the SDK writes one
// (encoding/json without HTML escaping: invalid UTF-8 as U+FFFD, HTML
// characters as they are, control characters and U+2028/U+2029 escaped),
// without an encoder's allocations.
func appendJSONString(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		if b := s[i]; b < utf8.RuneSelf {
			if b >= 0x20 && b != '"' && b != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch b {
			case '"', '\\':
				dst = append(dst, '\\', b)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[b>>4], hex[b&0xF])
			}
			i++
			start = i
			continue
		}
		c, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case c == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case c == '\u2028' || c == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[c&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// params maps a provider-neutral request onto chat-completions parameters.
// Errors wrap providers.ErrBadRequest.
func (c *Client) params(req llm.Request, model string) (request, error) {
	var r request
	p := &r.params
	p.Model = shared.ChatModel(model)
	if req.System != "" {
		p.Messages = append(p.Messages, sdk.SystemMessage(req.System))
	}
	// A tool result's images (and notes) cannot be in its role=tool
	// message: they follow in a user message, after the last tool message
	// of the round (the API wants a call's tool messages right after it).
	var shown []sdk.ChatCompletionContentPartUnionParam
	flush := func() {
		if len(shown) > 0 {
			p.Messages = append(p.Messages, sdk.UserMessage(shown))
			shown = nil
		}
	}
	for i, m := range req.Messages {
		if m.Role != llm.RoleTool {
			flush()
		}
		msgs, err := toMessages(m)
		if err != nil {
			return r, providers.BadRequest(err, "message %d", i)
		}
		p.Messages = append(p.Messages, msgs...)
		if m.Role == llm.RoleTool {
			shown = append(shown, toolExtras(m)...)
		}
	}
	flush()
	if len(p.Messages) == 0 {
		return r, providers.BadRequest(nil, "no messages")
	}
	for _, t := range req.Tools {
		enc, err := c.tools.encoded(t)
		if err != nil {
			return r, providers.BadRequest(err, "tool %q parameters", t.Name)
		}
		r.tools = append(r.tools, enc)
	}
	if len(r.tools) > 0 {
		switch req.ToolChoice {
		case llm.ToolChoiceAuto:
		case llm.ToolChoiceNone, llm.ToolChoiceRequired:
			p.ToolChoice = sdk.ChatCompletionToolChoiceOptionUnionParam{OfAuto: sdk.String(string(req.ToolChoice))}
		default:
			return r, providers.BadRequest(nil, "unknown tool choice %q", req.ToolChoice)
		}
	}
	temp := req.Temperature
	if temp == nil {
		temp = c.o.Temperature
	}
	if temp != nil {
		p.Temperature = sdk.Float(*temp)
	}
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.o.MaxTokens
	}
	if maxTokens > 0 {
		if c.o.MaxTokensField == FieldMaxCompletionTokens {
			p.MaxCompletionTokens = sdk.Int(int64(maxTokens))
		} else {
			p.MaxTokens = sdk.Int(int64(maxTokens))
		}
	}
	if rf := req.ResponseFormat; rf != nil {
		schema, err := schemaObject(rf.Schema)
		if err != nil {
			return r, providers.BadRequest(err, "response format schema")
		}
		js := shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: schemaName(rf.Name), Schema: schema}
		if rf.Strict {
			js.Strict = sdk.Bool(true)
		}
		p.ResponseFormat = sdk.ChatCompletionNewParamsResponseFormatUnion{
			OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{JSONSchema: js},
		}
	}
	return r, nil
}

var validSchemaName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`) })

// schemaName returns name when the API accepts it, "response" otherwise.
func schemaName(name string) string {
	if validSchemaName().MatchString(name) {
		return name
	}
	return "response"
}

// schemaObject maps a JSON Schema object onto the SDK's parameter map; an
// empty schema is an object schema without properties. Only the top level
// is decoded: each property's value stays the raw JSON it was (the SDK
// writes a json.RawMessage as it is), so a request does not decode and
// re-encode every tool's whole schema by reflection (~1 ms for thirty
// tools; BenchmarkRequestBody).
func schemaObject(raw json.RawMessage) (map[string]any, error) {
	if len(raw) == 0 {
		return map[string]any{"type": "object", "properties": map[string]any{}}, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return nil, fmt.Errorf("not a JSON object: %w", err)
	}
	if top == nil {
		return nil, fmt.Errorf("schema is null")
	}
	m := make(map[string]any, len(top))
	for k, v := range top {
		m[k] = v
	}
	return m, nil
}

// toolCache keeps the encoded definitions of the tools seen (name,
// description and schema): a request carries every tool, and the tools
// rarely change. A tool is looked up by name and its description and
// schema compared, so that a lookup copies nothing (a key holding the
// schema as a string copied every tool's schema on every request). It
// stops adding after maxCachedTools (tools named without end).
type toolCache struct {
	mu sync.Mutex
	m  map[string]cachedTool
}

// cachedTool is a tool's encoded definition and what it was encoded from.
type cachedTool struct {
	description string
	schema      json.RawMessage
	enc         json.RawMessage
}

const maxCachedTools = 1024

// encoded returns t's definition as the request's "tools" array holds
// it, encoded by the SDK (compact, as the SDK writes it among the
// parameters). The result is shared: callers must not modify it.
func (c *toolCache) encoded(t llm.ToolSpec) (json.RawMessage, error) {
	c.mu.Lock()
	ct, ok := c.m[t.Name]
	c.mu.Unlock()
	if ok && ct.description == t.Description && bytes.Equal(ct.schema, t.Parameters) {
		return ct.enc, nil
	}
	schema, err := schemaObject(t.Parameters)
	if err != nil {
		return nil, err
	}
	def := shared.FunctionDefinitionParam{Name: t.Name, Parameters: shared.FunctionParameters(schema)}
	if t.Description != "" {
		def.Description = sdk.String(t.Description)
	}
	raw, err := sdk.ChatCompletionFunctionTool(def).MarshalJSON()
	if err != nil {
		return nil, fmt.Errorf("encode the definition: %w", err)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, raw); err != nil {
		return nil, fmt.Errorf("encode the definition: %w", err)
	}
	enc := buf.Bytes()
	c.mu.Lock()
	if c.m == nil {
		c.m = map[string]cachedTool{}
	}
	if _, known := c.m[t.Name]; known || len(c.m) < maxCachedTools {
		c.m[t.Name] = cachedTool{description: t.Description, schema: slices.Clone(t.Parameters), enc: enc}
	}
	c.mu.Unlock()
	return enc, nil
}

// toMessages maps one message. Tool results become one role=tool message
// each, wherever they appear; other parts follow the message's role.
func toMessages(m llm.Message) ([]sdk.ChatCompletionMessageParamUnion, error) {
	var out []sdk.ChatCompletionMessageParamUnion
	var text string
	var calls []sdk.ChatCompletionMessageToolCallUnionParam
	// content holds the user message's parts in order once it has an image
	// (a plain string otherwise).
	var content []sdk.ChatCompletionContentPartUnionParam
	for _, part := range m.Parts {
		switch p := part.(type) {
		case llm.Text:
			if m.Role == llm.RoleTool {
				continue // toolExtras
			}
			text = joinText(m.Role, text, p.Text)
			if content != nil && p.Text != "" {
				content = append(content, sdk.TextContentPart(p.Text))
			}
		case llm.Image:
			if m.Role == llm.RoleTool {
				continue // toolExtras
			}
			if len(p.Data) == 0 || m.Role != llm.RoleUser {
				note := p.Note("the image was not loaded").Text
				text = joinText(m.Role, text, note)
				if content != nil {
					content = append(content, sdk.TextContentPart(note))
				}
				continue
			}
			if content == nil {
				content = []sdk.ChatCompletionContentPartUnionParam{}
				if text != "" {
					content = append(content, sdk.TextContentPart(text))
				}
			}
			content = append(content, sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{
				URL: "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data),
			}))
		case llm.ToolCall:
			if m.Role != llm.RoleAssistant {
				return nil, fmt.Errorf("tool call %q in a %s message", p.Name, m.Role)
			}
			args := string(p.Arguments)
			if args == "" {
				args = "{}"
			}
			calls = append(calls, sdk.ChatCompletionMessageToolCallUnionParam{
				OfFunction: &sdk.ChatCompletionMessageFunctionToolCallParam{
					ID:       p.ID,
					Function: sdk.ChatCompletionMessageFunctionToolCallFunctionParam{Name: p.Name, Arguments: args},
				},
			})
		case llm.Thinking:
			// Reasoning is shown to people, not sent back: the
			// chat-completions API has no field for it in a request
			// (servers ignore or reject reasoning_content there).
		case llm.ToolResult:
			if p.CallID == "" {
				return nil, fmt.Errorf("tool result for %q without a call id", p.Name)
			}
			out = append(out, sdk.ToolMessage(p.Content, p.CallID))
		default:
			return nil, fmt.Errorf("unsupported part %T", part)
		}
	}
	switch m.Role {
	case llm.RoleSystem:
		if text != "" {
			out = append(out, sdk.SystemMessage(text))
		}
	case llm.RoleUser:
		if content != nil {
			out = append(out, sdk.UserMessage(content))
		} else if text != "" {
			out = append(out, sdk.UserMessage(text))
		}
	case llm.RoleAssistant:
		if text == "" && len(calls) == 0 {
			break
		}
		var a sdk.ChatCompletionAssistantMessageParam
		if text != "" {
			a.Content.OfString = sdk.String(text)
		}
		a.ToolCalls = calls
		out = append(out, sdk.ChatCompletionMessageParamUnion{OfAssistant: &a})
	case llm.RoleTool:
	default:
		return nil, fmt.Errorf("unknown role %q", m.Role)
	}
	return out, nil
}

// toolExtras are the parts of a tool message besides its results: the
// images a result shows (tool.Result.Images), or their notes for a model
// without vision, as user-message content naming the call they belong to.
func toolExtras(m llm.Message) []sdk.ChatCompletionContentPartUnionParam {
	var out []sdk.ChatCompletionContentPartUnionParam
	var call string
	for _, part := range m.Parts {
		switch p := part.(type) {
		case llm.ToolResult:
			call = p.Name
		case llm.Text:
			if p.Text != "" {
				out = append(out, sdk.TextContentPart(p.Text))
			}
		case llm.Image:
			if len(p.Data) == 0 {
				out = append(out, sdk.TextContentPart(p.Note("the image was not loaded").Text))
				continue
			}
			out = append(out, sdk.TextContentPart("[the image the "+call+" result above shows, saved at workspace/"+p.Path+"]"),
				sdk.ImageContentPart(sdk.ChatCompletionContentPartImageImageURLParam{
					URL: "data:" + p.MediaType + ";base64," + base64.StdEncoding.EncodeToString(p.Data),
				}))
		}
	}
	return out
}

// joinText appends a text part to a message's text. A user message's parts
// (an image's note and the caption, say) go on separate lines; other
// roles' parts are fragments of one text.
func joinText(role llm.Role, text, part string) string {
	if role == llm.RoleUser && text != "" && part != "" {
		return text + "\n" + part
	}
	return text + part
}

// reasoningFields are the fields OpenAI-compatible servers put a model's
// reasoning in, in a message or a streamed delta: reasoning_content
// (DeepSeek, vLLM, llama.cpp, LM Studio), reasoning (Ollama's /v1,
// OpenRouter) and thinking (some proxies). The SDK keeps them as extra
// fields.
var reasoningFields = []string{"reasoning_content", "reasoning", "thinking"}

// reasoningOf returns the reasoning text among a message's extra fields,
// "" when there is none (absent, null or not a string).
func reasoningOf(extra map[string]respjson.Field) string {
	for _, k := range reasoningFields {
		// The SDK marks fields it has no type for as invalid but keeps
		// their raw JSON.
		f, ok := extra[k]
		if !ok || f.Raw() == "" {
			continue
		}
		var s string
		if json.Unmarshal([]byte(f.Raw()), &s) == nil && s != "" {
			return s
		}
	}
	return ""
}

// stopReason maps a finish_reason.
func stopReason(finish string, hasCalls bool) llm.StopReason {
	switch finish {
	case "length":
		return llm.StopMaxTokens
	case "content_filter":
		return llm.StopFiltered
	case "tool_calls", "function_call":
		return llm.StopToolCalls
	}
	if hasCalls {
		return llm.StopToolCalls
	}
	return llm.StopEnd
}

func usage(u sdk.CompletionUsage) llm.Usage {
	return llm.Usage{
		InputTokens:     int(u.PromptTokens),
		OutputTokens:    int(u.CompletionTokens),
		CacheReadTokens: int(u.PromptTokensDetails.CachedTokens),
	}
}

// fromCompletion maps a non-streamed completion.
func fromCompletion(cc *sdk.ChatCompletion) (llm.Response, error) {
	if cc == nil || len(cc.Choices) == 0 {
		return llm.Response{}, providers.BadResponse(nil, "completion has no choices")
	}
	ch := cc.Choices[0]
	msg := llm.Message{Role: llm.RoleAssistant}
	text := ch.Message.Content
	filtered := false
	if text == "" && ch.Message.Refusal != "" {
		text, filtered = ch.Message.Refusal, true
	}
	if r := reasoningOf(ch.Message.JSON.ExtraFields); r != "" {
		msg.Parts = append(msg.Parts, llm.Thinking{Text: r})
	}
	if text != "" {
		msg.Parts = append(msg.Parts, llm.Text{Text: text})
	}
	for _, tc := range ch.Message.ToolCalls {
		if tc.Type != "" && tc.Type != "function" {
			continue
		}
		args := tc.Function.Arguments
		if args == "" {
			args = "{}"
		}
		msg.Parts = append(msg.Parts, llm.ToolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: json.RawMessage(args)})
	}
	if len(msg.Parts) == 0 && ch.FinishReason == "" {
		return llm.Response{}, providers.BadResponse(nil, "completion choice is empty")
	}
	resp := llm.Response{
		Message:    msg,
		Usage:      usage(cc.Usage),
		StopReason: stopReason(ch.FinishReason, len(msg.ToolCalls()) > 0),
		Model:      cc.Model,
	}
	if filtered {
		resp.StopReason = llm.StopFiltered
	}
	return resp, nil
}
