package eval

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/internal/memory"
)

// missTop is the cut-off a miss is counted at: round recall_all@10, the
// issue's target.
const missTop = 10

// LMEMiss is one question whose evidence rounds are not all among the
// first missTop rounds of its ranking, with where each of them ranked.
type LMEMiss struct {
	ID       string        `json:"id"`
	Type     string        `json:"type"`
	Question string        `json:"question"`
	Evidence []LMEEvidence `json:"evidence"` // in haystack order
}

// LMEEvidence is where one evidence round ranked.
type LMEEvidence struct {
	Session int `json:"session"` // its haystack session, from 1
	// Rank is its place among the ranking's distinct rounds (from 1; 0:
	// not among the lmeRankLimit episodes read).
	Rank int `json:"rank"`
	// Message and Reply are the ranks, among episodes, of the user's
	// message and of the assistant's reply it holds (0: not ranked).
	Message int `json:"message"`
	Reply   int `json:"reply"`
	// Above is how many other rounds of the same session rank above it.
	Above int `json:"above"`
	// Text is the start of the round's user message.
	Text string `json:"text"`
}

// missText is how many characters of an evidence round's message a miss
// shows.
const missText = 90

// miss returns where q's evidence rounds rank in res, or nil when all of
// them are among the first missTop rounds.
func (g *lmeStore) miss(ctx context.Context, res []memory.Scored) (*LMEMiss, error) {
	got := ranked(res, g.round)
	top := got[:min(missTop, len(got))]
	if len(g.goldRnd) > 0 && !slices.ContainsFunc(g.goldRnd, func(r int) bool { return !slices.Contains(top, r) }) {
		return nil, nil
	}
	out := &LMEMiss{ID: g.q.ID, Type: g.q.Type, Question: g.q.Question}
	for _, r := range g.goldRnd {
		at := g.rounds[r]
		ev := LMEEvidence{Session: at.session + 1, Rank: slices.Index(got, r) + 1}
		for i, sc := range res {
			if g.round[sc.ID] != r {
				continue
			}
			m, err := g.store.Get(ctx, sc.ID)
			if err != nil {
				return nil, fmt.Errorf("miss table %s: %w", g.q.ID, err)
			}
			if m.Role == memory.RoleAssistant {
				ev.Reply = cmp.Or(ev.Reply, i+1)
			} else {
				ev.Message = cmp.Or(ev.Message, i+1)
			}
		}
		end := len(got)
		if ev.Rank > 0 {
			end = ev.Rank - 1
		}
		for _, o := range got[:end] {
			if g.rounds[o].session == at.session {
				ev.Above++
			}
		}
		for _, t := range at.turns {
			if turn := g.q.Sessions[at.session][t]; turn.Role == "user" {
				ev.Text = cut(turn.Content, missText)
				break
			}
		}
		out.Evidence = append(out.Evidence, ev)
	}
	return out, nil
}

// cut returns s on one line, at most n characters.
func cut(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n-1]) + "…"
}

// misses returns the misses of rs in question id order.
func misses(rs []lmeResult) []LMEMiss {
	var out []LMEMiss
	for _, r := range rs {
		if r.miss != nil {
			out = append(out, *r.miss)
		}
	}
	slices.SortFunc(out, func(a, b LMEMiss) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// writeMisses prints one block per miss: the question, then a line per
// evidence round.
func writeMisses(w io.Writer, ms []LMEMiss) error {
	if len(ms) == 0 {
		return nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "questions whose evidence rounds are not all in the top %d (%d): per evidence round, its rank among rounds "+
		"(-: beyond the ranking), the ranks of its message and reply among episodes, and how many rounds of its own session rank above it\n", missTop, len(ms))
	rank := func(n int) string {
		if n == 0 {
			return "-"
		}
		return fmt.Sprint(n)
	}
	for _, m := range ms {
		fmt.Fprintf(&b, "%s %s: %s\n", m.ID, m.Type, m.Question)
		for _, e := range m.Evidence {
			mark := " "
			if e.Rank == 0 || e.Rank > missTop {
				mark = "!"
			}
			fmt.Fprintf(&b, "  %s session %d: round %s (message %s, reply %s), %d of its session above: %s\n",
				mark, e.Session, rank(e.Rank), rank(e.Message), rank(e.Reply), e.Above, e.Text)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	return nil
}
