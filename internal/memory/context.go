package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
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
