package prompt

import (
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/textclip"
	"github.com/reverie-ai/reverie/llm"
)

// KeepRecent is how many of the newest messages compaction leaves intact.
const KeepRecent = 10

// Compaction input limits: tool arguments and tool results are cut in the
// middle (beginning and end kept) to these many characters, so one large
// fetched page does not crowd the summariser's context.
const (
	MaxSummaryArgsChars   = 300
	MaxSummaryResultChars = 1000
)

// CompactionThreshold is the history size, in tokens, above which a thread
// is compacted (seed 001): contextSize − maxTokens − systemPromptTokens. It
// is never negative; 0 means "compact whenever there is anything to".
func CompactionThreshold(contextSize, maxTokens, systemPromptTokens int) int {
	return max(contextSize-maxTokens-systemPromptTokens, 0)
}

// CompactionCut returns the index of the first message to keep when
// compacting msgs down to the newest keep messages: everything before it is
// summarised. The cut moves earlier so that the kept part never starts with
// tool results whose tool call would be summarised away (providers reject a
// tool result without its call). It returns 0 when nothing should be
// compacted.
func CompactionCut(msgs []llm.Message, keep int) int {
	if keep < 0 {
		keep = 0
	}
	cut := len(msgs) - keep
	if cut <= 0 {
		return 0
	}
	for cut > 0 && cut < len(msgs) && ToolResultsOnly(msgs[cut]) {
		cut--
	}
	return cut
}

// ToolResultsOnly reports whether m holds tool results and nothing else
// (false for a message without parts): such a message belongs to the turn
// of the tool calls it answers.
func ToolResultsOnly(m llm.Message) bool {
	if len(m.Parts) == 0 {
		return false
	}
	for _, p := range m.Parts {
		switch p.(type) {
		case llm.ToolResult, *llm.ToolResult:
		default:
			return false
		}
	}
	return true
}

// ChainedSummaryInput is the text the compaction prompt's {history}
// placeholder receives: the prior summary and the messages to fold into it,
//
//	[PRIOR SUMMARY]
//	…  ("(none)" on the first compaction)
//
//	[NEW MESSAGES]
//	user: …
//	assistant: …
//	assistant → search_web {"query":"…"}
//	tool search_web: …
//	tool fetch_url (error): …
//
// so each summary carries the previous one forward (seed 001).
func ChainedSummaryInput(prior string, newMessages []llm.Message) string {
	var b strings.Builder
	prior = strings.TrimSpace(prior)
	if prior == "" {
		prior = "(none)"
	}
	b.WriteString("[PRIOR SUMMARY]\n")
	b.WriteString(prior)
	b.WriteString("\n\n[NEW MESSAGES]")
	for _, m := range newMessages {
		writeTranscript(&b, m)
	}
	return b.String()
}

func writeTranscript(b *strings.Builder, m llm.Message) {
	role := string(m.Role)
	if role == "" {
		role = "unknown"
	}
	for _, p := range m.Parts {
		switch v := p.(type) {
		case llm.Text:
			writeText(b, role, v.Text)
		case *llm.Text:
			writeText(b, role, v.Text)
		case llm.Image:
			writeText(b, role, "[image saved at workspace/"+v.Path+"]")
		case llm.ToolCall:
			writeCall(b, role, v)
		case *llm.ToolCall:
			writeCall(b, role, *v)
		case llm.ToolResult:
			writeResult(b, v)
		case *llm.ToolResult:
			writeResult(b, *v)
		}
	}
}

func writeText(b *strings.Builder, role, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		return
	}
	b.WriteString("\n")
	b.WriteString(role)
	b.WriteString(": ")
	b.WriteString(text)
}

func writeCall(b *strings.Builder, role string, c llm.ToolCall) {
	b.WriteString("\n")
	b.WriteString(role)
	b.WriteString(" → ")
	b.WriteString(c.Name)
	if args := strings.TrimSpace(string(c.Arguments)); args != "" && args != "{}" {
		b.WriteString(" ")
		b.WriteString(textclip.OneLine(MidTruncate(args, MaxSummaryArgsChars)))
	}
}

func writeResult(b *strings.Builder, r llm.ToolResult) {
	b.WriteString("\ntool ")
	b.WriteString(r.Name)
	if r.IsError {
		b.WriteString(" (error)")
	}
	b.WriteString(": ")
	b.WriteString(strings.TrimSpace(MidTruncate(r.Content, MaxSummaryResultChars)))
}

// MidTruncate shortens s to at most maxChars runes by cutting its middle,
// keeping the beginning and the end and marking the cut with
// " […N chars cut…] ". maxChars ≤ 0 means no limit.
func MidTruncate(s string, maxChars int) string {
	if maxChars <= 0 || utf8.RuneCountInString(s) <= maxChars {
		return s
	}
	r := []rune(s)
	head := maxChars / 2
	tail := maxChars - head
	cut := len(r) - head - tail
	return string(r[:head]) + " […" + strconv.Itoa(cut) + " chars cut…] " + string(r[len(r)-tail:])
}
