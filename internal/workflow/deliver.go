package workflow

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/textclip"
)

// planDeliveriesLocked decides, deterministically and without a model,
// where the results of a wave of sessions that just became final go. The
// first node of wave is the one whose transition caused the others (a
// failure or cancellation propagating to dependents).
//
//   - Depth-1 sessions spawned from a user thread report into that thread
//     as one system event per thread and wave: a completed or failed
//     session's report, followed by the dependents that failed with it.
//   - Nested sessions (spawned by a worker) are never reported one by one:
//     when every session their spawner started is final, one aggregated
//     report goes to the root user thread (aggregateLocked).
//   - Fire-and-forget sessions, cancelled ones and those superseded by a
//     continuation are already marked delivered and are skipped.
func (m *Manager) planDeliveriesLocked(ctx context.Context, wave []*node, b *batch, fx *effects) {
	if len(wave) == 0 {
		return
	}
	cause := wave[0]
	type group struct {
		thread chat.ThreadID
		nodes  []*node
	}
	var groups []*group
	var parents []string
	for _, n := range wave {
		if n.mode == prompt.ModeFull {
			// A spawner that finished may complete its children's set.
			parents = appendUnique(parents, n.id)
		}
		switch {
		case n.parent.IsSubSession():
			// Even a delivered (cancelled) child may complete its
			// siblings' set.
			parents = appendUnique(parents, string(n.parent))
		case n.delivered:
		default:
			var g *group
			for _, have := range groups {
				if have.thread == n.parent {
					g = have
				}
			}
			if g == nil {
				g = &group{thread: n.parent}
				groups = append(groups, g)
			}
			g.nodes = append(g.nodes, n)
		}
	}
	for _, g := range groups {
		ids := make([]string, len(g.nodes))
		for i, n := range g.nodes {
			ids[i] = n.id
		}
		m.outbox = append(m.outbox, &delivery{thread: g.thread, text: groupText(g.nodes, cause), nodes: ids})
		fx.wake = true
	}
	for _, p := range parents {
		m.aggregateLocked(ctx, p, b, fx)
	}
}

// aggregateLocked delivers the results of the sessions spawned by pid
// (by any hop of its continuation chain) once the spawner and all of them
// are final: one message to the root thread, exactly once per session (the
// aggregated set de-duplicates completions that arrive close together, and
// survives as the delivered flag).
func (m *Manager) aggregateLocked(ctx context.Context, pid string, b *batch, fx *effects) {
	p := m.lookupLocked(ctx, pid)
	if p == nil {
		return
	}
	chain := m.chainLocked(ctx, p)
	if last := chain[len(chain)-1]; !last.state.Terminal() {
		return // it may still spawn more
	}
	var todo []*node
	for _, hop := range chain {
		for _, id := range m.children[hop.id] {
			c := m.nodes[id]
			if c == nil || c.continuedBy != "" {
				continue
			}
			if !c.state.Terminal() {
				return
			}
			if !c.delivered && !m.aggregated[c.id] {
				todo = append(todo, c)
			}
		}
	}
	if len(todo) == 0 {
		return
	}
	ids := make([]string, len(todo))
	for i, c := range todo {
		m.aggregated[c.id] = true
		ids[i] = c.id
	}
	root := todo[0].root
	if root == "" {
		for _, c := range todo {
			c.delivered = true
			b.updateNode(c)
		}
		return
	}
	m.outbox = append(m.outbox, &delivery{thread: root, text: aggregateText(chain[len(chain)-1], todo), nodes: ids})
	fx.wake = true
	m.log.Info("nested sub-session results aggregated", "parent", pid, "sessions", ids, "thread", root)
}

// groupText is the system event for depth-1 sessions of one wave.
func groupText(nodes []*node, cause *node) string {
	if len(nodes) == 1 {
		return reportText(nodes[0], MaxResultChars)
	}
	var s strings.Builder
	rest := nodes
	if nodes[0] == cause {
		s.WriteString(reportText(cause, MaxResultChars))
		s.WriteString("\n\nThese sub-sessions depended on it and were not run:")
		rest = nodes[1:]
	} else {
		fmt.Fprintf(&s, "These sub-sessions were not run because their dependency %s (%q) %s:",
			cause.id, textclip.Line(cause.objective, 120), failureWords(cause))
	}
	for _, n := range rest {
		fmt.Fprintf(&s, "\n- %s: %s", n.id, textclip.Line(n.objective, 200))
	}
	return s.String()
}

// reportText is one session's report.
func reportText(n *node, maxResult int) string {
	var s strings.Builder
	switch n.state {
	case StateCompleted:
		fmt.Fprintf(&s, "Sub-session %s completed%s.\nObjective: %s\nResult:\n%s",
			n.id, stats(n), textclip.Line(n.objective, 500), prompt.MidTruncate(orNone(n.result), maxResult))
	case StateCancelled:
		fmt.Fprintf(&s, "Sub-session %s was cancelled%s.\nObjective: %s\nReason: %s", n.id, stats(n), textclip.Line(n.objective, 500), n.errText)
	default:
		if n.startedAt.IsZero() {
			fmt.Fprintf(&s, "Sub-session %s was not run.\nObjective: %s\nReason: %s", n.id, textclip.Line(n.objective, 500), n.errText)
		} else {
			fmt.Fprintf(&s, "Sub-session %s failed%s.\nObjective: %s\nReason: %s", n.id, stats(n), textclip.Line(n.objective, 500), n.errText)
		}
	}
	return s.String()
}

// aggregateText is the one message for all sessions a worker spawned.
func aggregateText(parent *node, kids []*node) string {
	counts := map[State]int{}
	for _, k := range kids {
		counts[k.state]++
	}
	var parts []string
	for _, st := range []State{StateCompleted, StateFailed, StateTimeout, StateCancelled} {
		if counts[st] > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", counts[st], st))
		}
	}
	var s strings.Builder
	if parent != nil {
		fmt.Fprintf(&s, "The %d sub-sessions started by background worker %s (objective: %s) have all finished (%s).",
			len(kids), parent.id, textclip.Line(parent.objective, 300), strings.Join(parts, ", "))
	} else {
		fmt.Fprintf(&s, "%d nested sub-sessions have all finished (%s).", len(kids), strings.Join(parts, ", "))
	}
	per := max(MaxResultChars/len(kids), 1000)
	for _, k := range kids {
		s.WriteString("\n\n### ")
		s.WriteString(reportText(k, per))
	}
	return s.String()
}

// stats is " in 42s with 5 tool calls" (what is known).
func stats(n *node) string {
	var parts []string
	if !n.startedAt.IsZero() && !n.finishedAt.IsZero() {
		parts = append(parts, "in "+n.finishedAt.Sub(n.startedAt).Round(time.Second).String())
	}
	if n.toolCalls > 0 {
		parts = append(parts, fmt.Sprintf("with %d tool calls", n.toolCalls))
	}
	if n.hop > 0 {
		parts = append(parts, fmt.Sprintf("after %d continuation(s)", n.hop))
	}
	if len(parts) == 0 {
		return ""
	}
	return " " + strings.Join(parts, " ")
}

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(the worker gave no report)"
	}
	return s
}
