// Package evidence is the typed packet in which what feeds the model's
// context reaches it: the results of tools that bring in information
// (search_memory, fetch_url, search_web, MCP tools, agents) and the
// memories recalled for a turn. Every such result is one Packet,
//
//	{"kind":"web_page","title":"…","items":[
//	{"url":"…","text":"…"}
//	],"meta":{"source":"fetch_url",…}}
//
// written by Encode with one item per line, so that a model, a person
// reading the prompt and a program (the project status, which lists the
// evidence a conversation gathered) read the same shape. The tool loop
// fences a packet like any other tool output: a packet is data, never
// instructions.
//
// The package imports only the standard library so that extensions and
// out-of-tree code can build packets.
package evidence

import (
	"bytes"
	"encoding/json"
	"strings"
)

// Kind says what a packet holds.
type Kind string

// The kinds Reverie builds.
const (
	// Memory: long-term memories (search_memory, the turn's recall).
	Memory Kind = "memory"
	// WebPage: one fetched page (fetch_url); its one item holds the text.
	WebPage Kind = "web_page"
	// WebSearch: search hits (search_web), one item per hit.
	WebSearch Kind = "web_search"
	// ToolOutput: what an external tool (an MCP server's) returned.
	ToolOutput Kind = "tool_output"
	// AgentResult: a specialised agent's answer and the calls it made.
	AgentResult Kind = "agent_result"
)

// Packet is one piece of evidence: what kind it is, a title a person
// understands, its items, and where it came from.
type Packet struct {
	Kind  Kind   `json:"kind"`
	Title string `json:"title"`
	Items []Item `json:"items"`
	Meta  Meta   `json:"meta"`
}

// Item is one entry of a packet. Text is always set; the rest are filled
// where they mean something.
type Item struct {
	// ID is a store id the model can pass back to another tool (a
	// memory's id for forget_memory).
	ID int64 `json:"id,omitempty"`
	// URL is where the item lives (a page, a search hit, a resource).
	URL   string `json:"url,omitempty"`
	Title string `json:"title,omitempty"`
	// Label classifies the item within its packet (a memory's kind, a
	// resource's MIME type, "superseded").
	Label string `json:"label,omitempty"`
	// When is the date the item is about or was made, YYYY-MM-DD.
	When  string  `json:"when,omitempty"`
	Text  string  `json:"text"`
	Score float64 `json:"score,omitempty"`
}

// Meta says where a packet came from.
type Meta struct {
	// Source is the tool that made the packet ("fetch_url",
	// "mcp.github.search_issues", "agent_researcher") or "recall" for the
	// memories a turn's prompt shows.
	Source string `json:"source"`
	// Query is what was searched for.
	Query string `json:"query,omitempty"`
	// URL is the final address of a fetched page (after redirects).
	URL string `json:"url,omitempty"`
	// Engine is the web search engine.
	Engine string `json:"engine,omitempty"`
	// Status and ContentType describe a fetched page's response.
	Status      int    `json:"status,omitempty"`
	ContentType string `json:"content_type,omitempty"`
	// Truncated is set when items or their text were cut to fit.
	Truncated bool `json:"truncated,omitempty"`
	// Structured is a tool's structured (JSON) result, as it sent it.
	Structured json.RawMessage `json:"structured,omitempty"`
}

// Encode writes p as JSON with one item per line (the shape the package
// comment shows). It never fails: every field of a Packet encodes.
func (p Packet) Encode() string {
	var b strings.Builder
	b.WriteString(`{"kind":`)
	writeJSON(&b, p.Kind)
	b.WriteString(`,"title":`)
	writeJSON(&b, p.Title)
	b.WriteString(`,"items":[`)
	for i, it := range p.Items {
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteByte('\n')
		writeJSON(&b, it)
	}
	if len(p.Items) > 0 {
		b.WriteByte('\n')
	}
	b.WriteString(`],"meta":`)
	writeJSON(&b, p.Meta)
	b.WriteByte('}')
	return b.String()
}

// MarshalJSON encodes p as Encode does (encoding/json then compacts it),
// so that a packet inside another JSON document keeps its shape. A tool
// handler returns p.Encode(), which keeps one item per line.
func (p Packet) MarshalJSON() ([]byte, error) { return []byte(p.Encode()), nil }

// EncodeItem is the line Encode writes for it.
func EncodeItem(it Item) string {
	var b strings.Builder
	writeJSON(&b, it)
	return b.String()
}

func writeJSON(b *strings.Builder, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		// Unreachable for the package's types, except for a Structured
		// value that is not JSON: say so instead of writing broken JSON.
		b.WriteString("null")
		return
	}
	b.Write(bytes.TrimRight(buf.Bytes(), "\n"))
}

// Decode reads a packet from s, the content of a tool result. ok is false
// when s is not a packet (not a JSON object with a known shape: a kind and
// an items array).
func Decode(s string) (p Packet, ok bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "{") || !strings.Contains(s, `"kind"`) {
		return Packet{}, false
	}
	var raw struct {
		Kind  Kind            `json:"kind"`
		Title string          `json:"title"`
		Items json.RawMessage `json:"items"`
		Meta  Meta            `json:"meta"`
	}
	if json.Unmarshal([]byte(s), &raw) != nil || raw.Kind == "" || len(raw.Items) == 0 || raw.Items[0] != '[' {
		return Packet{}, false
	}
	var items []Item
	if json.Unmarshal(raw.Items, &items) != nil {
		return Packet{}, false
	}
	return Packet{Kind: raw.Kind, Title: raw.Title, Items: items, Meta: raw.Meta}, true
}
