package agent

import (
	"path/filepath"
	"slices"

	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/llm"
)

func joinData(dir, rel string) string { return filepath.Join(dir, filepath.FromSlash(rel)) }

// fitMessages returns the history h (whose messages are msgs, counting
// total tokens with the reply priming) as the model gets it: msgs itself
// when it fits in budget. Otherwise the largest messages are cut in the
// middle (max-min fair share: messages smaller than their share are kept
// whole, the rest share what is left equally), each marked with
// OversizeNote, in a copy: neither msgs nor the stored messages are
// modified. It returns how many messages were cut.
func fitMessages(c prompt.Counter, h []conversation.StoredMessage, msgs []llm.Message, total, budget int) ([]llm.Message, int) {
	if budget <= 0 || total <= budget || len(h) == 0 {
		return msgs, 0
	}
	order := make([]int, len(h))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return h[a].Tokens - h[b].Tokens })
	remaining := budget - prompt.ReplyPriming
	capTokens := -1
	for k, i := range order {
		share := remaining / (len(order) - k)
		if h[i].Tokens <= share {
			remaining -= h[i].Tokens
			continue
		}
		capTokens = max(share, 1)
		break
	}
	if capTokens < 0 {
		return msgs, 0
	}
	msgs = slices.Clone(msgs)
	cut := 0
	for i, m := range h {
		if m.Tokens <= capTokens {
			continue
		}
		msgs[i] = shrink(c, m.Message, m.Tokens, capTokens)
		cut++
	}
	return msgs, cut
}

// shrink cuts the text and tool-result parts of m in proportion so that it
// counts about capTokens, and puts OversizeNote in front.
func shrink(c prompt.Counter, m llm.Message, tokens, capTokens int) llm.Message {
	noteTokens := c.Count(OversizeNote)
	target := max(capTokens-noteTokens-prompt.MessageOverhead, 1)
	ratio := float64(target) / float64(max(tokens, 1))
	out := llm.Message{Role: m.Role, Parts: make([]llm.Part, 0, len(m.Parts))}
	noted := false
	for _, p := range m.Parts {
		switch p := p.(type) {
		case llm.Text:
			s := prompt.MidTruncate(p.Text, int(float64(runeLen(p.Text))*ratio))
			if !noted {
				s, noted = OversizeNote+s, true
			}
			out.Parts = append(out.Parts, llm.Text{Text: s})
		case llm.ToolResult:
			s := prompt.MidTruncate(p.Content, int(float64(runeLen(p.Content))*ratio))
			if !noted {
				s, noted = OversizeNote+s, true
			}
			p.Content = s
			out.Parts = append(out.Parts, p)
		default:
			out.Parts = append(out.Parts, p)
		}
	}
	return out
}
