package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/tool"
)

// EnumValues lists the kinds for tool schemas.
func (Kind) EnumValues() []string {
	out := make([]string, len(Kinds))
	for i, k := range Kinds {
		out[i] = string(k)
	}
	return out
}

type appendArgs struct {
	Text string `json:"text" jsonschema:"the memory, one self-contained sentence (who, what, when), e.g. 'The user's daughter Mia was born on 2019-03-04.'"`
	Kind Kind   `json:"kind,omitempty" jsonschema:"fact (default), preference, episode (something that happened), procedure or opinion"`
	// Explicit marks memories the user asked for in so many words; dreaming
	// never prunes them.
	Explicit bool `json:"user_asked,omitempty" jsonschema:"true when the user explicitly asked you to remember this"`
	// When is the date of an episode.
	When string `json:"when,omitempty" jsonschema:"for episodes: when it happened, YYYY-MM-DD or an RFC 3339 time"`
	// Keep puts the memory into MEMORIES.txt as well (the always-visible
	// working set).
	Keep *bool `json:"keep_in_view,omitempty" jsonschema:"also add it to MEMORIES.txt, always shown to you (default true; false for minor details that only need to be recallable; an episode is never added)"`
}

type updateArgs struct {
	Content string `json:"content" jsonschema:"the complete new MEMORIES.txt, one memory per line; lines you leave out leave the working set (they stay recallable)"`
}

type searchArgs struct {
	Query string `json:"query" jsonschema:"what to look for, in natural language"`
	Limit int    `json:"limit,omitempty" jsonschema:"how many results (default 10, at most 50)"`
	Kinds []Kind `json:"kinds,omitempty" jsonschema:"restrict to these kinds"`
	// History includes superseded memories.
	History bool `json:"include_superseded,omitempty" jsonschema:"include memories that were superseded (closed) by newer ones"`
}

type forgetArgs struct {
	ID   *int64 `json:"id,omitempty" jsonschema:"id of the memory, from search_memory"`
	Text string `json:"text,omitempty" jsonschema:"the exact text of the memory, when you do not know its id"`
}

// Tools returns append_memory, update_memories, search_memory and
// forget_memory over svc. now is the clock for validity dates.
func Tools(svc *Service) []tool.Tool {
	return []tool.Tool{appendTool(svc), updateTool(svc), searchTool(svc), forgetTool(svc)}
}

// HarvestToolName is the memory harvest worker's tool: append_memory
// whose memories are labelled SourceHarvest.
const HarvestToolName = "harvest_memory"

// HarvestTool returns harvest_memory over svc: append_memory for the
// memory harvest's worker, storing with source harvest (user_asked is
// ignored: the worker mines a conversation, nobody asked it). It is offered
// to background workers only (the harvest names it), never to the main
// agent.
func HarvestTool(svc *Service) tool.Tool {
	return newAppendTool(svc, HarvestToolName,
		"Store one durable fact the memory harvest found in the conversation (this is the harvest's append_memory). Duplicates are detected. Never store secrets (passwords, API keys, tokens): they are refused.",
		SourceHarvest)
}

func appendTool(svc *Service) tool.Tool {
	return newAppendTool(svc, "append_memory",
		"Remember one new fact about the user or the world for the long term (preferred over update_memories). Duplicates are detected. Never store secrets (passwords, API keys, tokens): they are refused.",
		SourceAgent, tool.WithCategories("memory"))
}

// newAppendTool is append_memory under name, storing with source src
// (SourceUserExplicit instead when the user asked, unless src is
// SourceHarvest).
func newAppendTool(svc *Service, name, desc string, src Source, opts ...tool.Option) tool.Tool {
	return tool.New(name, desc,
		func(ctx context.Context, a appendArgs) (any, error) {
			m := Memory{Text: a.Text, Kind: a.Kind, Source: src}
			if m.Kind == "" {
				m.Kind = KindFact
			}
			if a.Explicit && src != SourceHarvest {
				m.Source = SourceUserExplicit
			}
			if a.When != "" {
				t, err := parseWhen(a.When)
				if err != nil {
					return nil, err
				}
				m.EventTime = &t
			}
			if c, ok := tool.CallFrom(ctx); ok {
				m.Thread = string(c.Thread)
			}
			keep := a.Keep == nil || *a.Keep
			r, err := svc.Remember(ctx, m, keep)
			if err != nil {
				return nil, toolError("remember", err)
			}
			return r, nil
		}, opts...)
}

func updateTool(svc *Service) tool.Tool {
	return tool.New("update_memories",
		"Rewrite MEMORIES.txt completely (use it to condense or reorganise the working set when asked to; for one new fact use append_memory). Lines you drop stay recallable with search_memory.",
		func(ctx context.Context, a updateArgs) (any, error) {
			rw, err := svc.RewriteWorkingSet(ctx, a.Content, SourceAgent)
			if err != nil {
				return nil, toolError("rewrite MEMORIES.txt", err)
			}
			return rw, nil
		}, tool.WithCategories("memory"))
}

func searchTool(svc *Service) tool.Tool {
	return tool.New("search_memory",
		"Search your long-term memory by meaning and words. Returns the best matches with ids (for forget_memory).",
		func(ctx context.Context, a searchArgs) (any, error) {
			if strings.TrimSpace(a.Query) == "" {
				return nil, errors.New("query is empty")
			}
			limit := a.Limit
			if limit <= 0 {
				limit = DefaultLimit
			}
			limit = min(limit, 50)
			res, err := svc.Search(ctx, Query{Text: a.Query, Limit: limit, Kinds: a.Kinds, IncludeClosed: a.History})
			if err != nil {
				return nil, toolError("search", err)
			}
			return searchPacket(a.Query, res).Encode(), nil
		}, tool.ReadOnly(), tool.ReadsPrivateData(), tool.WithCategories("memory"))
}

func forgetTool(svc *Service) tool.Tool {
	return tool.New("forget_memory",
		"Forget a memory permanently (it is removed from the store and from MEMORIES.txt). Give its id from search_memory, or its exact text.",
		func(ctx context.Context, a forgetArgs) (any, error) {
			var id int64
			switch {
			case a.ID != nil:
				id = *a.ID
			case strings.TrimSpace(a.Text) != "":
				found, err := svc.FindExact(ctx, a.Text)
				if err != nil {
					return nil, toolError("find the memory", err)
				}
				if len(found) == 0 {
					return nil, errors.New("no memory has exactly that text; use search_memory and pass the id")
				}
				if len(found) > 1 {
					return nil, fmt.Errorf("%d memories match; pass one id: %v", len(found), ids(found))
				}
				id = found[0].ID
			default:
				return nil, errors.New("give the id of the memory (or its exact text)")
			}
			m, err := svc.Forget(ctx, id)
			if err != nil {
				return nil, toolError("forget", err)
			}
			return struct {
				Forgotten int64  `json:"forgotten"`
				Text      string `json:"text"`
			}{m.ID, m.Text}, nil
		}, tool.WithCategories("memory"))
}

func ids(ms []Memory) []int64 {
	out := make([]int64, len(ms))
	for i, m := range ms {
		out[i] = m.ID
	}
	return out
}

// parseWhen accepts YYYY-MM-DD or RFC 3339.
func parseWhen(s string) (time.Time, error) {
	s = strings.TrimSpace(s)
	if t, err := time.Parse(time.DateOnly, s); err == nil {
		return t, nil
	}
	if t, err := time.Parse(time.RFC3339, s); err == nil {
		return t, nil
	}
	return time.Time{}, fmt.Errorf("when: %q is neither YYYY-MM-DD nor an RFC 3339 time", s)
}

// toolError phrases store errors for the model.
func toolError(doing string, err error) error {
	switch {
	case errors.Is(err, ErrSecret):
		return fmt.Errorf("refused: %w; never store credentials", err)
	case errors.Is(err, ErrNotFound):
		return fmt.Errorf("%s: no memory with that id (search_memory shows ids)", doing)
	}
	return fmt.Errorf("%s: %w", doing, err)
}

// searchPacket is search_memory's result: the memories found for query,
// best first, with the ids forget_memory takes.
func searchPacket(query string, res []Scored) evidence.Packet {
	p := evidence.Packet{Kind: evidence.Memory, Title: fmt.Sprintf("Memories matching %q", strings.TrimSpace(query)),
		Items: make([]evidence.Item, 0, len(res)), Meta: evidence.Meta{Source: "search_memory", Query: query}}
	for _, r := range res {
		it := memoryItem(r.Memory)
		it.ID = r.Memory.ID
		it.Score = float64(int(r.Score*1000)) / 1000
		p.Items = append(p.Items, it)
	}
	return p
}

// memoryItem is m as an evidence item: its text on one line, its kind as
// the label unless it is a fact (the usual kind), "superseded" once
// closed, and its date when known.
func memoryItem(m Memory) evidence.Item {
	it := evidence.Item{Text: strings.Join(strings.Fields(m.Text), " ")}
	var label []string
	if m.Kind != "" && m.Kind != KindFact {
		label = append(label, string(m.Kind))
	}
	if m.ValidTo != nil {
		label = append(label, "superseded")
	}
	it.Label = strings.Join(label, ", ")
	if m.EventTime != nil {
		it.When = m.EventTime.Format(time.DateOnly)
	}
	return it
}
