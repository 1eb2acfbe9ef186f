package anthropic

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go"

	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/llm"
)

// structuredTool describes the forced tool carrying structured output; the
// zero value means the request asked for none.
type structuredTool struct{ name string }

func (s structuredTool) is(name string) bool { return s.name != "" && s.name == name }

var validToolName = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`) })

// params maps a provider-neutral request onto messages parameters. Errors
// wrap providers.ErrBadRequest.
func (c *Client) params(req llm.Request, model string) (sdk.MessageNewParams, structuredTool, error) {
	maxTokens := req.MaxTokens
	if maxTokens <= 0 {
		maxTokens = c.o.MaxTokens
	}
	p := sdk.MessageNewParams{Model: sdk.Model(model), MaxTokens: int64(maxTokens)}
	var st structuredTool
	thinking := c.o.ThinkingBudget > 0 && req.ResponseFormat == nil && req.ToolChoice != llm.ToolChoiceRequired &&
		!lastCallsUnsigned(req.Messages)

	system := []string{}
	if req.System != "" {
		system = append(system, req.System)
	}
	type turn struct {
		role   sdk.MessageParamRole
		blocks []sdk.ContentBlockParamUnion
	}
	var turns []turn
	// Prompt caching (CachePrefix): a breakpoint closes the messages that
	// stay the same from turn to turn, another the request, so that the
	// next round of the tool loop and the next turn read the longest
	// prefix written before from the cache.
	marks := 0
	for i, m := range req.Messages {
		if m.Role == llm.RoleSystem {
			if t := m.Text(); t != "" {
				system = append(system, t)
			}
			continue
		}
		role, blocks, err := toBlocks(m, thinking)
		if err != nil {
			return p, st, providers.BadRequest(err, "message %d", i)
		}
		if len(blocks) == 0 {
			continue
		}
		if (i == req.CachePrefix-1 || i == len(req.Messages)-1) && marks < maxMessageBreakpoints && markCache(blocks) {
			marks++
		}
		if n := len(turns); n > 0 && turns[n-1].role == role {
			turns[n-1].blocks = append(turns[n-1].blocks, blocks...)
			continue
		}
		turns = append(turns, turn{role: role, blocks: blocks})
	}
	if len(turns) == 0 {
		return p, st, providers.BadRequest(nil, "no messages")
	}
	for _, t := range turns {
		if t.role == sdk.MessageParamRoleUser {
			// Tool results must open the user turn that answers the calls.
			slices.SortStableFunc(t.blocks, func(a, b sdk.ContentBlockParamUnion) int {
				return boolRank(a.OfToolResult == nil) - boolRank(b.OfToolResult == nil)
			})
		}
		p.Messages = append(p.Messages, sdk.MessageParam{Role: t.role, Content: t.blocks})
	}
	if len(system) > 0 {
		// The breakpoint covers the tools too (they come first).
		p.System = []sdk.TextBlockParam{{Text: strings.Join(system, "\n\n"), CacheControl: sdk.NewCacheControlEphemeralParam()}}
	}

	names := map[string]bool{}
	for _, t := range req.Tools {
		tool, err := toTool(t.Name, t.Description, t.Parameters)
		if err != nil {
			return p, st, err
		}
		names[t.Name] = true
		p.Tools = append(p.Tools, tool)
	}
	if len(p.Tools) > 0 {
		switch req.ToolChoice {
		case llm.ToolChoiceAuto:
		case llm.ToolChoiceNone:
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfNone: &sdk.ToolChoiceNoneParam{}}
		case llm.ToolChoiceRequired:
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
		default:
			return p, st, providers.BadRequest(nil, "unknown tool choice %q", req.ToolChoice)
		}
	}
	if rf := req.ResponseFormat; rf != nil {
		st.name = rf.Name
		if !validToolName().MatchString(st.name) || names[st.name] {
			st.name = "structured_output"
		}
		for names[st.name] {
			st.name += "_"
		}
		tool, err := toTool(st.name, "Give your final answer by calling this tool exactly once; its input is the answer and must match the schema.", rf.Schema)
		if err != nil {
			return p, st, err
		}
		if len(p.Tools) == 0 || req.ToolChoice == llm.ToolChoiceNone {
			p.Tools = []sdk.ToolUnionParam{tool}
			p.ToolChoice = sdk.ToolChoiceParamOfTool(st.name)
		} else {
			p.Tools = append(p.Tools, tool)
			p.ToolChoice = sdk.ToolChoiceUnionParam{OfAny: &sdk.ToolChoiceAnyParam{}}
		}
	}
	temp := req.Temperature
	if temp == nil {
		temp = c.o.Temperature
	}
	if thinking {
		// The budget counts within max_tokens; temperature must stay
		// the API default with thinking on.
		budget := int64(c.o.ThinkingBudget)
		if p.MaxTokens <= budget {
			p.MaxTokens += budget
		}
		p.Thinking = sdk.ThinkingConfigParamOfEnabled(budget)
		temp = nil
	}
	if temp != nil {
		p.Temperature = sdk.Float(*temp)
	}
	return p, st, nil
}

// maxMessageBreakpoints is how many cache breakpoints the messages get: the
// API takes four per request, and the system prompt has one.
const maxMessageBreakpoints = 2

// markCache sets a cache breakpoint on the last block of blocks that can
// carry one (not a thinking block) and reports whether there was one.
func markCache(blocks []sdk.ContentBlockParamUnion) bool {
	for i := len(blocks) - 1; i >= 0; i-- {
		if cc := blocks[i].GetCacheControl(); cc != nil {
			*cc = sdk.NewCacheControlEphemeralParam()
			return true
		}
	}
	return false
}

// lastCallsUnsigned reports whether the last assistant message calls tools
// without a signed thinking block: with thinking on, the API refuses such a
// message (written while thinking was off, or by another provider), so the
// request goes without thinking.
func lastCallsUnsigned(msgs []llm.Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		if m.Role != llm.RoleAssistant {
			continue
		}
		if len(m.ToolCalls()) == 0 {
			return false
		}
		for _, p := range m.Parts {
			if t, ok := p.(llm.Thinking); ok && (t.Signature != "" || t.Redacted != "") {
				return false
			}
		}
		return true
	}
	return false
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}

// toBlocks maps one non-system message onto an API role and content blocks.
// Thinking is sent back only when thinking is on, signed, and in an
// assistant message that calls tools (the API requires those and ignores
// the rest).
func toBlocks(m llm.Message, thinking bool) (sdk.MessageParamRole, []sdk.ContentBlockParamUnion, error) {
	var role sdk.MessageParamRole
	switch m.Role {
	case llm.RoleUser, llm.RoleTool:
		role = sdk.MessageParamRoleUser
	case llm.RoleAssistant:
		role = sdk.MessageParamRoleAssistant
	default:
		return "", nil, fmt.Errorf("unknown role %q", m.Role)
	}
	var blocks []sdk.ContentBlockParamUnion
	for _, part := range m.Parts {
		switch p := part.(type) {
		case llm.Text:
			if strings.TrimSpace(p.Text) != "" {
				blocks = append(blocks, sdk.NewTextBlock(p.Text))
			}
		case llm.Thinking:
			if !thinking || role != sdk.MessageParamRoleAssistant || len(m.ToolCalls()) == 0 {
				continue
			}
			switch {
			case p.Redacted != "":
				blocks = append(blocks, sdk.NewRedactedThinkingBlock(p.Redacted))
			case p.Signature != "":
				blocks = append(blocks, sdk.NewThinkingBlock(p.Signature, p.Text))
			}
		case llm.Image:
			if len(p.Data) == 0 || role != sdk.MessageParamRoleUser {
				blocks = append(blocks, sdk.NewTextBlock(p.Note("the image was not loaded").Text))
				continue
			}
			blocks = append(blocks, sdk.NewImageBlockBase64(p.MediaType, base64.StdEncoding.EncodeToString(p.Data)))
		case llm.ToolCall:
			if role != sdk.MessageParamRoleAssistant {
				return "", nil, fmt.Errorf("tool call %q in a %s message", p.Name, m.Role)
			}
			blocks = append(blocks, sdk.NewToolUseBlock(p.ID, toolInput(p.Arguments), p.Name))
		case llm.ToolResult:
			if role != sdk.MessageParamRoleUser {
				return "", nil, fmt.Errorf("tool result for %q in an assistant message", p.Name)
			}
			if p.CallID == "" {
				return "", nil, fmt.Errorf("tool result for %q without a call id", p.Name)
			}
			res := sdk.ToolResultBlockParam{ToolUseID: p.CallID}
			if p.Content != "" {
				res.Content = []sdk.ToolResultBlockParamContentUnion{{OfText: &sdk.TextBlockParam{Text: p.Content}}}
			}
			if p.IsError {
				res.IsError = sdk.Bool(true)
			}
			blocks = append(blocks, sdk.ContentBlockParamUnion{OfToolResult: &res})
		default:
			return "", nil, fmt.Errorf("unsupported part %T", part)
		}
	}
	return role, blocks, nil
}

// toolInput returns a past tool call's arguments as the JSON object the API
// requires; arguments that are not an object are kept as a string under
// "_invalid_arguments" so the model still sees what it sent.
func toolInput(args json.RawMessage) json.RawMessage {
	if len(args) == 0 {
		return json.RawMessage("{}")
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(args, &obj) == nil && obj != nil {
		return args
	}
	b, _ := json.Marshal(map[string]string{"_invalid_arguments": string(args)})
	return b
}

// toTool maps a tool spec; schema is a JSON Schema object (empty: no
// parameters).
func toTool(name, description string, schema json.RawMessage) (sdk.ToolUnionParam, error) {
	in := sdk.ToolInputSchemaParam{}
	if len(schema) > 0 {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(schema, &m); err != nil || m == nil {
			return sdk.ToolUnionParam{}, providers.BadRequest(err, "tool %q: schema is not a JSON object", name)
		}
		for k, v := range m {
			switch k {
			case "type":
			case "properties":
				in.Properties = v
			case "required":
				if err := json.Unmarshal(v, &in.Required); err != nil {
					return sdk.ToolUnionParam{}, providers.BadRequest(err, "tool %q: required is not a list of names", name)
				}
			default:
				if in.ExtraFields == nil {
					in.ExtraFields = map[string]any{}
				}
				in.ExtraFields[k] = v
			}
		}
	}
	if in.Properties == nil {
		in.Properties = map[string]any{}
	}
	tool := sdk.ToolParam{Name: name, InputSchema: in}
	if description != "" {
		tool.Description = sdk.String(description)
	}
	return sdk.ToolUnionParam{OfTool: &tool}, nil
}

func stopReason(r sdk.StopReason, hasCalls bool) llm.StopReason {
	switch r {
	case sdk.StopReasonToolUse:
		if hasCalls {
			return llm.StopToolCalls
		}
		return llm.StopEnd
	case sdk.StopReasonMaxTokens, sdk.StopReasonModelContextWindowExceeded:
		return llm.StopMaxTokens
	case sdk.StopReasonRefusal:
		return llm.StopFiltered
	}
	if hasCalls {
		return llm.StopToolCalls
	}
	return llm.StopEnd
}

// fromMessage maps a non-streamed reply.
func fromMessage(m *sdk.Message, st structuredTool) (llm.Response, error) {
	if m == nil || m.Type != "message" {
		return llm.Response{}, providers.BadResponse(nil, "reply is not a message")
	}
	msg := llm.Message{Role: llm.RoleAssistant}
	var text strings.Builder
	var calls []llm.Part
	for _, b := range m.Content {
		switch b.Type {
		case "thinking":
			msg.Parts = append(msg.Parts, llm.Thinking{Text: b.Thinking, Signature: b.Signature})
		case "redacted_thinking":
			msg.Parts = append(msg.Parts, llm.Thinking{Redacted: b.Data})
		case "text":
			text.WriteString(b.Text)
		case "tool_use":
			input := b.Input
			if len(input) == 0 {
				input = json.RawMessage("{}")
			}
			if st.is(b.Name) {
				text.WriteString(string(input))
				continue
			}
			calls = append(calls, llm.ToolCall{ID: b.ID, Name: b.Name, Arguments: input})
		}
	}
	if text.Len() > 0 {
		msg.Parts = append(msg.Parts, llm.Text{Text: text.String()})
	}
	msg.Parts = append(msg.Parts, calls...)
	return llm.Response{
		Message:    msg,
		Usage:      usage(m.Usage.InputTokens, m.Usage.CacheReadInputTokens, m.Usage.CacheCreationInputTokens, m.Usage.OutputTokens),
		StopReason: stopReason(m.StopReason, len(calls) > 0),
		Model:      string(m.Model),
	}, nil
}

// usage counts every prompt token as input (Anthropic reports cache reads
// and writes apart from input_tokens); CacheReadTokens is the cached share.
func usage(input, cacheRead, cacheWrite, output int64) llm.Usage {
	return llm.Usage{
		InputTokens:     int(input + cacheRead + cacheWrite),
		OutputTokens:    int(output),
		CacheReadTokens: int(cacheRead),
	}
}
