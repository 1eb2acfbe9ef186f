package agent

import (
	"strings"

	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/llm"
)

// DefaultHistoryTokens is the history budget (Options.HistoryTokens) when
// none is configured: the tokens of recent conversation a request carries.
const DefaultHistoryTokens = 12000

// History budget: when the active (unsummarised) history outgrows the
// budget, its oldest turns are summarised in one chunk so that what stays
// counts at most keepNum/keepDen of the budget. The request then carries
// between ¾ of the budget and the budget, and one compaction call covers a
// quarter of the budget's worth of turns, instead of one call every turn.
const (
	keepNum = 3
	keepDen = 4
)

// TurnContextPrefix starts the turn context: the sections of the system
// prompt that change with every turn (the current time, the context
// providers' blocks such as recalled memories). It is a user-role message
// the request carries just before the turn's message, never stored, so that
// the system prompt and the conversation before the message are the same
// prefix as in the previous turn's request (providers' prompt caches).
const TurnContextPrefix = "[TURN CONTEXT] Written by Reverie for this turn, not by the user.\n\n"

// WrittenByUser reports whether the text of a user-role message of a
// request is the user's own: not a system event or seed
// (SystemEventPrefix), and not the turn context (TurnContextPrefix), whose
// recalled memories may quote anything.
func WrittenByUser(text string) bool {
	return !strings.HasPrefix(text, SystemEventPrefix) && !strings.HasPrefix(text, TurnContextPrefix)
}

// historyBudget returns the budget a request's history must fit (never more
// than fits the context window, threshold), and whether compaction keeps a
// share of it (the history budget) rather than prompt.KeepRecent messages
// (no budget: the whole history until the context window is full).
func (a *Agent) historyBudget(threshold int) (int, bool) {
	if a.o.HistoryTokens < 0 {
		return threshold, false
	}
	if threshold > 0 && threshold < a.o.HistoryTokens {
		return threshold, true
	}
	return a.o.HistoryTokens, true
}

// keepFrom returns the index of the first message of h to keep so that the
// messages kept count at most keep tokens: the newest whole turns that fit
// (a turn opens with a user-role message that is not tool results, so a tool
// call is never kept without its results nor the reverse), and at least the
// newest turn whatever its size. 0 means h is kept whole.
func keepFrom(h []conversation.StoredMessage, keep int) int {
	i, sum := len(h), 0
	for i > 0 && sum+h[i-1].Tokens <= keep {
		i--
		sum += h[i].Tokens
	}
	for j := i; j < len(h); j++ {
		if opensTurn(h[j].Message) {
			return j
		}
	}
	for j := min(i, len(h)) - 1; j > 0; j-- {
		if opensTurn(h[j].Message) {
			return j
		}
	}
	return 0
}

// opensTurn reports whether m starts a turn: a user-role message (the
// user's, a system event, a seed) that is not only tool results.
func opensTurn(m llm.Message) bool {
	return m.Role == llm.RoleUser && !prompt.ToolResultsOnly(m)
}

// withTurnContext returns msgs with the turn context (TurnContextPrefix and
// text) inserted just before the turn's message (the newest message that
// opens a turn), and the index it was inserted at: msgs[:at] is the stable
// prefix of the request. An empty text leaves msgs as they are, with at the
// index of the turn's message. msgs itself is not changed.
func withTurnContext(msgs []llm.Message, text string) ([]llm.Message, int) {
	at := len(msgs)
	for i := len(msgs) - 1; i >= 0; i-- {
		if opensTurn(msgs[i]) {
			at = i
			break
		}
	}
	if text == "" {
		return msgs, at
	}
	out := make([]llm.Message, 0, len(msgs)+1)
	out = append(out, msgs[:at]...)
	out = append(out, llm.UserText(TurnContextPrefix+text))
	return append(out, msgs[at:]...), at
}
