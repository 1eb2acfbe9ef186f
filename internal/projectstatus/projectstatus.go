// Package projectstatus compiles the project status: the manifest of what
// a conversation has in progress, built mechanically from state without a
// model call (llm_thalamus's project_status): the world state, the open
// pulse items, the active workflows and their workers, the tool trace of
// the conversation's last turns and the evidence packets those calls
// returned. GET /api/v1/status/project serves it, the debug panel shows
// it, and full-mode background workers read its text in their prompt.
//
// A Compiler only reads; it is safe for concurrent use when its sources
// are. The same state always compiles to the same manifest.
package projectstatus

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/internal/textclip"
)

// The sources a Compiler reads: the API's own services, so the manifest
// says what the API says.
type (
	// World reads the world state document.
	World interface {
		Get(ctx context.Context) (api.WorldState, error)
	}
	// Pulse lists pulse items.
	Pulse interface {
		List(ctx context.Context, status string) ([]api.PulseItem, error)
	}
	// Workflows lists workflows.
	Workflows interface {
		List(ctx context.Context, q api.WorkflowQuery) ([]api.Workflow, error)
	}
	// Threads lists conversations and reads their messages.
	Threads interface {
		List(ctx context.Context, q api.ThreadQuery) ([]api.Thread, error)
		Messages(ctx context.Context, thread chat.ThreadID, q api.MessageQuery) ([]api.Message, error)
	}
)

// Compiler compiles the manifest. A nil source leaves its part empty.
type Compiler struct {
	World     World
	Pulse     Pulse
	Workflows Workflows
	Threads   Threads
}

// Limits of what the manifest quotes.
const (
	maxArgs      = 300  // characters of a call's arguments
	maxResult    = 200  // characters of a result that is not a packet
	maxRefs      = 5    // addresses listed per packet
	maxWorldText = 2000 // characters of the world state in Text
	maxObjective = 160  // characters of a worker's objective in Text
)

// Status compiles the manifest for thread ("" takes the conversation
// active most recently).
func (c *Compiler) Status(ctx context.Context, thread chat.ThreadID) (api.ProjectStatus, error) {
	st := api.ProjectStatus{World: api.WorldState("{}"), Pulse: []api.ProjectPulseItem{}, Workflows: []api.ProjectWorkflow{},
		Trace: []api.TraceEntry{}, Evidence: []api.EvidenceEntry{}}
	if c.World != nil {
		doc, err := c.World.Get(ctx)
		if err != nil {
			return api.ProjectStatus{}, fmt.Errorf("project status: read the world state: %w", err)
		}
		if len(doc) > 0 {
			st.World = doc
		}
	}
	if c.Pulse != nil {
		items, err := c.Pulse.List(ctx, "")
		if err != nil {
			return api.ProjectStatus{}, fmt.Errorf("project status: list pulse items: %w", err)
		}
		for _, it := range items {
			st.Pulse = append(st.Pulse, api.ProjectPulseItem{ID: it.ID, Text: it.Text, Priority: it.Priority, Thread: it.Thread})
		}
		slices.SortFunc(st.Pulse, func(a, b api.ProjectPulseItem) int {
			return cmp.Or(cmp.Compare(a.Priority, b.Priority), cmp.Compare(a.ID, b.ID))
		})
	}
	if c.Workflows != nil {
		wfs, err := c.Workflows.List(ctx, api.WorkflowQuery{Active: true})
		if err != nil {
			return api.ProjectStatus{}, fmt.Errorf("project status: list workflows: %w", err)
		}
		slices.SortFunc(wfs, func(a, b api.Workflow) int {
			return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
		})
		for _, wf := range wfs {
			pw := api.ProjectWorkflow{ID: wf.ID, State: wf.State, RootThread: wf.RootThread, Workers: []api.ProjectWorker{}}
			for _, n := range wf.Nodes {
				pw.Workers = append(pw.Workers, api.ProjectWorker{ID: n.ID, Objective: n.Objective, State: n.State, Waiting: n.Waiting, Profile: n.Profile, ToolCalls: n.ToolCalls})
			}
			slices.SortFunc(pw.Workers, func(a, b api.ProjectWorker) int { return cmp.Compare(a.ID, b.ID) })
			st.Workflows = append(st.Workflows, pw)
		}
	}
	if c.Threads != nil {
		if thread == "" {
			ts, err := c.Threads.List(ctx, api.ThreadQuery{})
			if err != nil {
				return api.ProjectStatus{}, fmt.Errorf("project status: list conversations: %w", err)
			}
			thread = latest(ts)
		}
		if thread != "" {
			ms, err := c.Threads.Messages(ctx, thread, api.MessageQuery{})
			if err != nil {
				return api.ProjectStatus{}, fmt.Errorf("project status: read %s: %w", thread, err)
			}
			st.Thread = thread
			st.Trace, st.Evidence = trace(ms, api.ProjectTraceTurns)
		}
	}
	st.Text = Text(st)
	return st, nil
}

// latest is the conversation with the newest activity ("" when none).
func latest(ts []api.Thread) chat.ThreadID {
	var best *api.Thread
	for i := range ts {
		t := &ts[i]
		if best == nil || t.UpdatedAt.After(best.UpdatedAt) || (t.UpdatedAt.Equal(best.UpdatedAt) && t.ID > best.ID) {
			best = t
		}
	}
	if best == nil {
		return ""
	}
	return best.ID
}

// trace collects the tool calls of the last turns of ms (a turn starts
// at a user message) and the evidence packets their results carry.
func trace(ms []api.Message, turns int) ([]api.TraceEntry, []api.EvidenceEntry) {
	start := len(ms)
	for n := 0; start > 0 && n < turns; {
		start--
		if ms[start].Role == "user" && !ms[start].SystemEvent {
			n++
		}
	}
	entries := []api.TraceEntry{}
	packets := []api.EvidenceEntry{}
	byCall := map[string]int{} // call id → index in entries
	turn := 0
	for _, m := range ms[start:] {
		if m.Role == "user" && !m.SystemEvent {
			turn++
		}
		for _, c := range m.ToolCalls {
			byCall[c.ID] = len(entries)
			entries = append(entries, api.TraceEntry{Turn: max(turn, 1), MessageID: m.ID, CallID: c.ID, Tool: c.Name,
				Arguments: textclip.Runes(compactJSON(c.Arguments), maxArgs), Outcome: "no result"})
		}
		for _, r := range m.ToolResults {
			i, ok := byCall[r.CallID]
			if !ok {
				continue
			}
			e := &entries[i]
			e.Outcome = "ok"
			if r.IsError {
				e.Outcome = "error"
			}
			p, isPacket := evidence.Decode(r.Result)
			if !isPacket || r.IsError {
				e.Result = textclip.Line(r.Result, maxResult)
				continue
			}
			e.Result = fmt.Sprintf("%s %q (%s)", p.Kind, p.Title, plural(len(p.Items), "item"))
			packets = append(packets, api.EvidenceEntry{CallID: r.CallID, Kind: p.Kind, Title: p.Title, Source: p.Meta.Source, Items: len(p.Items), Refs: refs(p)})
		}
	}
	return entries, packets
}

// refs are the first items' addresses: URL, else memory id, else title.
func refs(p evidence.Packet) []string {
	var out []string
	for _, it := range p.Items {
		if len(out) == maxRefs {
			break
		}
		switch {
		case it.URL != "":
			out = append(out, it.URL)
		case it.ID != 0:
			out = append(out, fmt.Sprintf("memory %d", it.ID))
		case it.Title != "":
			out = append(out, it.Title)
		}
	}
	return out
}

// Text writes the manifest as workers read it.
func Text(st api.ProjectStatus) string {
	var b strings.Builder
	b.WriteString("PROJECT STATUS (compiled by Reverie from its state, not written by a model)\n")
	if st.Thread != "" {
		fmt.Fprintf(&b, "Conversation: %s\n", st.Thread)
	}
	fmt.Fprintf(&b, "\nWorld state: %s\n", textclip.Runes(compactJSON(json.RawMessage(st.World)), maxWorldText))
	fmt.Fprintf(&b, "\nOpen pulse items (%d):\n", len(st.Pulse))
	for _, p := range st.Pulse {
		fmt.Fprintf(&b, "- #%d (priority %d) %s\n", p.ID, p.Priority, textclip.OneLine(p.Text))
	}
	fmt.Fprintf(&b, "\nActive workflows (%d):\n", len(st.Workflows))
	for _, wf := range st.Workflows {
		fmt.Fprintf(&b, "- %s, %s, %s:\n", wf.ID, wf.State, plural(len(wf.Workers), "worker"))
		for _, w := range wf.Workers {
			state := w.State
			if w.Waiting != "" {
				state += ", waiting for " + w.Waiting
			}
			fmt.Fprintf(&b, "  - %s (%s, %s): %s\n", w.ID, state, plural(w.ToolCalls, "tool call"), textclip.Line(w.Objective, maxObjective))
		}
	}
	fmt.Fprintf(&b, "\nTool trace of the last %d turns (%s):\n", api.ProjectTraceTurns, plural(len(st.Trace), "call"))
	for _, e := range st.Trace {
		fmt.Fprintf(&b, "- turn %d: %s %s → %s", e.Turn, e.Tool, e.Arguments, e.Outcome)
		if e.Result != "" {
			b.WriteString(": " + e.Result)
		}
		b.WriteByte('\n')
	}
	fmt.Fprintf(&b, "\nEvidence gathered (%s):\n", plural(len(st.Evidence), "packet"))
	for _, e := range st.Evidence {
		fmt.Fprintf(&b, "- %s %q from %s, %s", e.Kind, e.Title, e.Source, plural(e.Items, "item"))
		if len(e.Refs) > 0 {
			b.WriteString(": " + strings.Join(e.Refs, ", "))
		}
		b.WriteByte('\n')
	}
	return strings.TrimRight(b.String(), "\n")
}

// compactJSON is raw without insignificant space, or raw itself when it
// is not JSON.
func compactJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}
