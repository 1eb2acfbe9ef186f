package pulse

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/tool"
)

// ToolName is the pulse tool's name (BASE_PROMPT.txt has a section
// conditional on it).
const ToolName = "pulse"

// Action is what a pulse tool call does.
type Action string

// Tool actions.
const (
	ActionAdd      Action = "add"
	ActionComplete Action = "complete"
	ActionUpdate   Action = "update"
	ActionList     Action = "list"
)

// EnumValues lists the actions (tool.Enumerator).
func (Action) EnumValues() []string {
	return []string{string(ActionAdd), string(ActionComplete), string(ActionUpdate), string(ActionList)}
}

// listAll is the list filter meaning every status.
const listAll = "all"

// maxListed caps the items one list call returns.
const maxListed = 100

// ToolArgs are the pulse tool's arguments.
type ToolArgs struct {
	Action   Action `json:"action" jsonschema:"add a new item, complete one, update one (text, priority or status), or list items"`
	ID       int64  `json:"id,omitempty" jsonschema:"the item's id, as in '#3' (complete, update)"`
	Text     string `json:"text,omitempty" jsonschema:"the item: short and concrete, one line (add; update to reword)"`
	Priority int    `json:"priority,omitempty" jsonschema:"1 = urgent ... 10 = low (add: default 5; update)"`
	Status   string `json:"status,omitempty" jsonschema:"update: the new status (cancelled drops an item that no longer matters); list: which items to show (default active)"`
}

// ItemView is an item in a tool result.
type ItemView struct {
	ID       int64  `json:"id"`
	Priority int    `json:"priority"`
	Status   Status `json:"status"`
	Text     string `json:"text"`
}

func view(it Item) ItemView {
	return ItemView{ID: it.ID, Priority: it.Priority, Status: it.Status, Text: it.Text}
}

// ToolResult is the pulse tool's result.
type ToolResult struct {
	OK bool `json:"ok"`
	// Item is the item added, completed or updated.
	Item *ItemView `json:"item,omitempty"`
	// Items are the items listed.
	Items []ItemView `json:"items,omitempty"`
	// Active counts the active items after the call.
	Active int    `json:"active"`
	Note   string `json:"note,omitempty"`
}

// Tool is the pulse tool: add, complete, update and list pulse items. Items
// it adds have source SourceAgent and the calling turn's thread
// (tool.CallFrom). Failures (unknown id, bad priority, empty
// text, …) are returned as errors, which the tool loop reports to the model.
func Tool(s *Store) tool.Tool {
	return tool.New(ToolName,
		"Manage the pulse, your working memory of what is in progress: active goals, ongoing work, deadlines, open questions, follow-ups you promised. "+
			"action=add with text (and priority 1 = urgent ... 10 = low, default 5) creates an item and returns its id; "+
			"action=complete with id marks it done; action=update with id changes text, priority or status (cancelled drops an item that no longer matters); "+
			"action=list shows the active items (status=completed, cancelled or all for others). "+
			"The active pulse is already in your instructions as lines like \"[P2] #3: Fix auth bug\" (priority 2, id 3).",
		func(ctx context.Context, a ToolArgs) (any, error) {
			return s.runTool(ctx, a)
		},
		tool.WithEnum("status", string(StatusActive), string(StatusCompleted), string(StatusCancelled), listAll),
		tool.WithCategories("memory"))
}

func (s *Store) runTool(ctx context.Context, a ToolArgs) (ToolResult, error) {
	var (
		res ToolResult
		err error
	)
	switch a.Action {
	case ActionAdd:
		res, err = s.toolAdd(ctx, a)
	case ActionComplete:
		res, err = s.toolComplete(ctx, a)
	case ActionUpdate:
		res, err = s.toolUpdate(ctx, a)
	case ActionList:
		return s.toolList(ctx, a)
	default:
		return ToolResult{}, fmt.Errorf("unknown action %q: use add, complete, update or list", a.Action)
	}
	if err != nil {
		return ToolResult{}, err
	}
	if res.Active, err = s.CountActive(ctx); err != nil {
		return ToolResult{}, err
	}
	res.OK = true
	return res, nil
}

func (s *Store) toolAdd(ctx context.Context, a ToolArgs) (ToolResult, error) {
	if a.ID != 0 {
		return ToolResult{}, errors.New("add takes no id (ids are assigned); to change an existing item use action=update")
	}
	if a.Status != "" && a.Status != string(StatusActive) {
		return ToolResult{}, errors.New("add creates an active item; leave status out")
	}
	n := NewItem{Text: a.Text, Priority: a.Priority, Source: SourceAgent}
	if c, ok := tool.CallFrom(ctx); ok {
		n.Thread = c.Thread
	}
	it, err := s.Add(ctx, n)
	if err != nil {
		return ToolResult{}, toolError(err)
	}
	v := view(it)
	return ToolResult{Item: &v, Note: "added as " + it.Line()}, nil
}

func (s *Store) toolComplete(ctx context.Context, a ToolArgs) (ToolResult, error) {
	if a.ID <= 0 {
		return ToolResult{}, errors.New("complete needs the item's id (see action=list)")
	}
	st := StatusCompleted
	it, changed, err := s.update(ctx, a.ID, Patch{Status: &st})
	if err != nil {
		return ToolResult{}, toolError(err)
	}
	v := view(it)
	res := ToolResult{Item: &v, Note: "completed"}
	if !changed {
		res.Note = "already completed; nothing changed"
	}
	return res, nil
}

func (s *Store) toolUpdate(ctx context.Context, a ToolArgs) (ToolResult, error) {
	if a.ID <= 0 {
		return ToolResult{}, errors.New("update needs the item's id (see action=list)")
	}
	var p Patch
	if a.Text != "" {
		p.Text = &a.Text
	}
	if a.Priority != 0 {
		p.Priority = &a.Priority
	}
	if a.Status != "" {
		st, err := ParseStatus(a.Status)
		if err != nil {
			return ToolResult{}, err
		}
		p.Status = &st
	}
	it, changed, err := s.update(ctx, a.ID, p)
	if err != nil {
		return ToolResult{}, toolError(err)
	}
	v := view(it)
	res := ToolResult{Item: &v, Note: "updated: " + it.Line()}
	if !changed {
		res.Note = "nothing changed: the item already had these values"
	}
	return res, nil
}

func (s *Store) toolList(ctx context.Context, a ToolArgs) (ToolResult, error) {
	f := Filter{Status: StatusActive, Limit: maxListed + 1}
	switch strings.ToLower(strings.TrimSpace(a.Status)) {
	case "", string(StatusActive):
	case listAll:
		f.Status = ""
	default:
		st, err := ParseStatus(a.Status)
		if err != nil {
			return ToolResult{}, err
		}
		f.Status = st
	}
	items, err := s.List(ctx, f)
	if err != nil {
		return ToolResult{}, err
	}
	res := ToolResult{OK: true, Items: make([]ItemView, 0, len(items))}
	if len(items) > maxListed {
		items = items[:maxListed]
		res.Note = fmt.Sprintf("showing the first %d items", maxListed)
	}
	for _, it := range items {
		res.Items = append(res.Items, view(it))
	}
	if res.Active, err = s.CountActive(ctx); err != nil {
		return ToolResult{}, err
	}
	if len(items) == 0 {
		res.Note = "no items"
	}
	return res, nil
}

// toolError points the model to the ids when an item is not found.
func toolError(err error) error {
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%w (see action=list for the ids)", err)
	}
	return err
}
