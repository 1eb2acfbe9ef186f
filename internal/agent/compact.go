package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/llm"
)

// ErrEmptySummary is returned when the compaction model answers with no
// text; nothing is archived then.
var ErrEmptySummary = errors.New("the compaction model returned an empty summary")

// Compact compacts thread now (/compact), whatever its size: everything but
// the newest prompt.KeepRecent messages (never splitting a tool call from its
// results) is summarised into the thread's summary, chained with the prior
// one, and archived. Archived 0 means there was nothing to compact. It must
// not run concurrently with a turn of the same thread.
func (a *Agent) Compact(ctx context.Context, thread chat.ThreadID) (CompactResult, error) {
	if err := thread.Validate(); err != nil {
		return CompactResult{}, fmt.Errorf("compact: %w", err)
	}
	history, err := a.o.Conversations.History(ctx, thread)
	if err != nil {
		return CompactResult{}, fmt.Errorf("compact %s: read history: %w", thread, err)
	}
	cut := prompt.CompactionCut(messagesOf(history), prompt.KeepRecent)
	if cut == 0 {
		return CompactResult{}, nil
	}
	sum, _, err := a.o.Conversations.Summary(ctx, thread)
	if err != nil {
		return CompactResult{}, fmt.Errorf("compact %s: read summary: %w", thread, err)
	}
	text, usage, err := a.compact(ctx, thread, sum.Text, history[:cut])
	if err != nil {
		return CompactResult{Usage: usage}, err
	}
	return CompactResult{Archived: cut, Summary: text, Usage: usage}, nil
}

// compact summarises older (the oldest active messages) into a new summary
// chained with prior, stores it and archives them in one transaction.
func (a *Agent) compact(ctx context.Context, thread chat.ThreadID, prior string, older []conversation.StoredMessage) (string, llm.Usage, error) {
	start := a.o.Now()
	text, usage, err := a.summarise(ctx, prior, older)
	var archived int
	if err == nil {
		sctx, cancel := a.saveContext(ctx)
		archived, err = a.o.Conversations.Compact(sctx, thread, conversation.Summary{Text: text, CoversThrough: older[len(older)-1].ID})
		cancel()
		if err != nil {
			err = fmt.Errorf("store summary: %w", err)
		}
	}
	e := interactions.Entry{
		At: start, Thread: thread, Action: interactions.ActionCompaction,
		Summary:     fmt.Sprintf("summarised %d messages into %d chars", len(older), runeLen(text)),
		InputTokens: usage.InputTokens, OutputTokens: usage.OutputTokens,
		Duration: a.o.Now().Sub(start),
		Detail: mustJSON(struct {
			Messages      int   `json:"messages"`
			Archived      int   `json:"archived"`
			CoversThrough int64 `json:"covers_through"`
			PriorSummary  bool  `json:"prior_summary"`
		}{len(older), archived, older[len(older)-1].ID, prior != ""}),
	}
	if err != nil {
		err = fmt.Errorf("compact %s: %w", thread, err)
		e.Error = err.Error()
		e.Summary = fmt.Sprintf("compaction of %d messages failed", len(older))
	}
	a.logInteractions(ctx, e)
	return text, usage, err
}

// summarise asks the compaction model for the chained summary.
func (a *Agent) summarise(ctx context.Context, prior string, older []conversation.StoredMessage) (string, llm.Usage, error) {
	tmpl, err := readTemplate(a.o.DataDir, datadir.CompactionPrompt)
	if err != nil {
		return "", llm.Usage{}, err
	}
	input := prompt.ChainedSummaryInput(prior, messagesOf(older))
	// The summariser's own window bounds its input: cut the middle of an
	// input that would not fit (the prior summary at the start and the
	// newest messages at the end survive).
	lim := a.o.Models.Limits(modelrouter.RoleCompaction)
	budget := prompt.CompactionThreshold(lim.ContextSize, lim.MaxTokens, a.o.Counter.Count(tmpl)+prompt.MessageOverhead)
	if n := a.o.Counter.Count(input); budget > 0 && n > budget {
		input = prompt.MidTruncate(input, int(float64(runeLen(input))*float64(budget)/float64(n)))
	}
	req := llm.Request{Messages: []llm.Message{llm.UserText(prompt.Render(tmpl, map[string]string{"history": input}))}}
	resp, err := a.o.Models.Model(modelrouter.RoleCompaction).Generate(ctx, req, nil)
	if err != nil {
		return "", resp.Usage, fmt.Errorf("summarise: %w", err)
	}
	text := strings.TrimSpace(resp.Message.Text())
	if text == "" {
		return "", resp.Usage, ErrEmptySummary
	}
	return text, resp.Usage, nil
}
