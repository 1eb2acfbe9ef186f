package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/extension"
)

// DefaultContextBudget is the token budget of ContextBlock when none is
// given.
const DefaultContextBudget = 4000

// ContextBlock recalls the memories most relevant to query from s and
// formats them, best first, one per line, for the system prompt, stopping
// before the block would exceed budgetTokens (DefaultContextBudget when ≤ 0)
// as measured by count (about four characters per token when nil). An empty
// query or an empty store gives "".
func ContextBlock(ctx context.Context, s Store, query string, budgetTokens int, count func(string) int) (string, error) {
	if strings.TrimSpace(query) == "" {
		return "", nil
	}
	if budgetTokens <= 0 {
		budgetTokens = DefaultContextBudget
	}
	if count == nil {
		count = func(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }
	}
	res, err := s.Recall(ctx, Query{Text: query, Limit: 50})
	if err != nil {
		if errors.Is(err, ErrEmpty) {
			return "", nil
		}
		return "", fmt.Errorf("memory context: %w", err)
	}
	var b strings.Builder
	used := 0
	for _, r := range res {
		line := formatLine(r.Memory)
		n := count(line + "\n")
		if used+n > budgetTokens {
			break
		}
		used += n
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

// formatLine renders "- [2023-05-08] (episode) text" (date when known).
func formatLine(m Memory) string {
	var b strings.Builder
	b.WriteString("- ")
	if m.EventTime != nil {
		b.WriteString("[" + m.EventTime.Format("2006-01-02") + "] ")
	}
	if m.Kind != "" && m.Kind != KindFact {
		b.WriteString("(" + string(m.Kind) + ") ")
	}
	b.WriteString(strings.Join(strings.Fields(m.Text), " "))
	return b.String()
}

// ContextBlock is the package ContextBlock over this store.
func (s *VectorStore) ContextBlock(ctx context.Context, query string, budgetTokens int, count func(string) int) (string, error) {
	return ContextBlock(ctx, s, query, budgetTokens, count)
}

// ContextBlock is the package ContextBlock over this store.
func (f *FlatStore) ContextBlock(ctx context.Context, query string, budgetTokens int, count func(string) int) (string, error) {
	return ContextBlock(ctx, f, query, budgetTokens, count)
}

// RecallContext is the context provider that adds, to every turn's prompt,
// the long-term memories most relevant to the user's message, under a token
// budget, leaving out what MEMORIES.txt (always in the prompt) already
// says. With the flat backend MEMORIES.txt is the whole store, so it adds
// nothing.
type RecallContext struct {
	Service *Service
	// Budget is the token budget (DefaultContextBudget when 0).
	Budget int
	// Count counts tokens (about four characters per token when nil).
	Count func(string) int
}

// RecallContextLimit is how many memories a turn's recall considers at
// most (fewer when the token budget is reached first).
const RecallContextLimit = 30

// RecallContextPriority places recalled memories early among the context
// blocks.
const RecallContextPriority = 10

// ContextPriority implements extension.ContextProvider.
func (r *RecallContext) ContextPriority() int { return RecallContextPriority }

// PromptContext implements extension.ContextProvider.
func (r *RecallContext) PromptContext(ctx context.Context, req extension.ContextRequest) (string, error) {
	if r.Service == nil || r.Service.Flat() || strings.TrimSpace(req.Query) == "" {
		return "", nil
	}
	ws, err := r.Service.readLines()
	if err != nil {
		return "", err
	}
	skip := normSet(ws)
	budget := r.Budget
	if budget <= 0 {
		budget = DefaultContextBudget
	}
	count := r.Count
	if count == nil {
		count = func(s string) int { return (utf8.RuneCountInString(s) + 3) / 4 }
	}
	// Peek, then count an access only for what the prompt really shows.
	res, err := r.Service.Search(ctx, Query{Text: req.Query, Limit: RecallContextLimit, Peek: true})
	if err != nil {
		if errors.Is(err, ErrEmpty) {
			return "", nil
		}
		return "", fmt.Errorf("memory context: %w", err)
	}
	var shown []int64
	defer func() {
		if len(shown) > 0 {
			if err := r.Service.store.RecordAccess(ctx, shown, r.Service.now()); err != nil {
				r.Service.log.Warn("record memory access", "err", err)
			}
		}
	}()
	const header = "Long-term memories that may be relevant (recalled for this message):\n"
	var b strings.Builder
	used := count(header)
	n := 0
	for _, s := range res {
		if skip[normalise(s.Memory.Text)] {
			continue
		}
		line := formatLine(s.Memory)
		c := count(line + "\n")
		if used+c > budget {
			break
		}
		if n == 0 {
			b.WriteString(header)
		}
		used += c
		n++
		shown = append(shown, s.Memory.ID)
		b.WriteString(line)
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n"), nil
}

var _ extension.ContextProvider = (*RecallContext)(nil)
