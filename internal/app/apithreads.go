package app

import (
	"context"
	"encoding/json"
	"strings"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/llm"
)

type apiThreads struct{ c *conversation.Store }

func (t apiThreads) List(ctx context.Context, q api.ThreadQuery) ([]api.Thread, error) {
	ts, err := t.c.Threads(ctx, conversation.ListOptions{IncludeSubSessions: q.IncludeSubSessions, Limit: q.Limit, Archived: q.Archived})
	if err != nil {
		return nil, err
	}
	out := make([]api.Thread, len(ts))
	for i, th := range ts {
		out[i] = threadOf(th)
	}
	return out, nil
}

func threadOf(th conversation.Thread) api.Thread {
	return api.Thread{ID: th.ID, Channel: th.Channel, Title: th.Title, Language: th.Language,
		CreatedAt: th.CreatedAt, UpdatedAt: th.UpdatedAt, LastUserMessageAt: api.TimePtr(th.LastUserMessageAt),
		ArchivedAt: api.TimePtr(th.ArchivedAt), TitleSource: string(th.TitleSource)}
}

func (t apiThreads) Messages(ctx context.Context, thread chat.ThreadID, q api.MessageQuery) ([]api.Message, error) {
	ms, err := t.c.Messages(ctx, thread, conversation.MessageQuery{AfterID: q.AfterID, IncludeArchived: q.IncludeArchived, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]api.Message, len(ms))
	for i, m := range ms {
		out[i] = messageOf(m)
	}
	return out, nil
}

func messageOf(m conversation.StoredMessage) api.Message {
	out := api.Message{ID: m.ID, Role: string(m.Message.Role), CreatedAt: m.CreatedAt, Archived: !m.ArchivedAt.IsZero()}
	var text, thinking strings.Builder
	for _, p := range m.Message.Parts {
		switch p := p.(type) {
		case llm.Text:
			text.WriteString(p.Text)
		case llm.Thinking:
			thinking.WriteString(p.Text)
		case llm.Image:
			out.Attachments = append(out.Attachments, imageAttachment(p))
		case llm.ToolCall:
			out.ToolCalls = append(out.ToolCalls, api.MessageCall{ID: p.ID, Name: p.Name, Arguments: jsonOrString(p.Arguments)})
		case llm.ToolResult:
			out.ToolResults = append(out.ToolResults, api.MessageResult{CallID: p.CallID, Name: p.Name, Result: p.Content, IsError: p.IsError})
		}
	}
	out.Text, out.Thinking = text.String(), thinking.String()
	if m.Message.Role == llm.RoleUser {
		out.Text, out.Attachments = fileAttachments(out.Text, out.Attachments)
	}
	out.SystemEvent = m.Source != conversation.SourceConversation
	out.Source = string(m.Source)
	if m.Source == conversation.SourceSystemEvent && strings.HasPrefix(out.Text, agent.SystemEventPrefix+agent.SupervisorPrefix) {
		out.Source = "supervisor"
	}
	out.Segment, out.Status, out.Note = m.Segment, string(m.Status), m.Note
	return out
}

// jsonOrString returns b when it is valid JSON, else b as a JSON string
// (a model's raw arguments may be malformed); empty is {}.
func jsonOrString(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}
