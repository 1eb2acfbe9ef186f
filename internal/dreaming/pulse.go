package dreaming

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/textclip"
	"github.com/reverie-ai/reverie/llm"
)

type pulseAction struct {
	ID       int64  `json:"id"`
	Action   string `json:"action"`
	Content  string `json:"content,omitempty"`
	Priority int    `json:"priority,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

var pulseFormat = &llm.ResponseFormat{Name: "pulse_actions", Schema: json.RawMessage(`{
  "type": "object",
  "properties": {
    "actions": {"type": "array", "items": {
      "type": "object",
      "properties": {
        "id": {"type": "integer"},
        "action": {"type": "string", "enum": ["complete", "update", "keep"]},
        "content": {"type": "string"},
        "priority": {"type": "integer", "minimum": 1, "maximum": 10},
        "reason": {"type": "string"}
      },
      "required": ["id", "action"]
    }}
  },
  "required": ["actions"]
}`)}

// pulse reviews the active pulse items with the model (JSON actions
// complete | update | keep) and purges items completed long ago.
func (r *run) pulse(ctx context.Context) ComponentReport {
	p := r.d.o.Pulse
	if p == nil {
		return ComponentReport{Status: StatusSkipped, Detail: "no pulse store"}
	}
	var rep ComponentReport
	purged, err := p.PurgeCompleted(ctx, r.d.set.PulsePurgeAge)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	if purged > 0 {
		rep.Lines = append(rep.Lines, fmt.Sprintf("purged %d item(s) completed more than %d days ago", purged, int(r.d.set.PulsePurgeAge.Hours()/24)))
	}
	items, err := p.Active(ctx)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error()}
	}
	if len(items) == 0 {
		rep.Status, rep.Detail = StatusSkipped, "no active items"
		return rep
	}
	byID := map[int64]pulse.Item{}
	var b strings.Builder
	for _, it := range items {
		byID[it.ID] = it
		fmt.Fprintf(&b, "#%d [P%d] %s (created %s, changed %s)\n", it.ID, it.Priority, it.Text,
			it.CreatedAt.Format(time.DateOnly), it.UpdatedAt.Format(time.DateOnly))
	}
	out, err := r.ask(ctx, datadir.DreamPulsePrompt, strings.TrimRight(b.String(), "\n"), pulseFormat)
	if err != nil {
		return ComponentReport{Status: StatusFailed, Detail: err.Error(), Lines: rep.Lines}
	}
	var ans struct {
		Actions []pulseAction `json:"actions"`
	}
	if err := decodeJSON(out, &ans); err != nil {
		return ComponentReport{Status: StatusRefused, Detail: "the answer did not parse (" + err.Error() + "); pulse unchanged", Lines: rep.Lines}
	}
	var valid []pulseAction
	completes := 0
	seen := map[int64]bool{}
	for _, a := range ans.Actions {
		if _, ok := byID[a.ID]; !ok || seen[a.ID] {
			rep.Lines = append(rep.Lines, fmt.Sprintf("ignored an action for unknown or repeated item #%d", a.ID))
			continue
		}
		seen[a.ID] = true
		switch a.Action {
		case "keep":
		case "complete":
			completes++
			valid = append(valid, a)
		case "update":
			if a.Priority != 0 && (a.Priority < pulse.MinPriority || a.Priority > pulse.MaxPriority) {
				rep.Lines = append(rep.Lines, fmt.Sprintf("ignored an update of #%d with priority %d", a.ID, a.Priority))
				continue
			}
			valid = append(valid, a)
		default:
			rep.Lines = append(rep.Lines, fmt.Sprintf("ignored unknown action %q for #%d", a.Action, a.ID))
		}
	}
	// The guard: completing more than the allowed share at once (and more
	// than two items) is refused.
	if completes > 2 {
		if refuse, why := r.tooMuchDropped(len(items), completes); refuse {
			rep.Status, rep.Detail = StatusRefused, why+"; pulse unchanged"
			return rep
		}
	}
	changed := 0
	for _, a := range valid {
		before, _ := json.Marshal(byID[a.ID])
		bs := string(before)
		if err := r.journal(ctx, "pulse", "updated", strconv.FormatInt(a.ID, 10), &bs); err != nil {
			return r.partial(rep, err)
		}
		var patch pulse.Patch
		switch a.Action {
		case "complete":
			st := pulse.StatusCompleted
			patch.Status = &st
			rep.Lines = append(rep.Lines, fmt.Sprintf("completed #%d %q (%s)", a.ID, byID[a.ID].Text, a.Reason))
		case "update":
			if t := textclip.OneLine(a.Content); t != "" {
				patch.Text = &t
			}
			if a.Priority != 0 {
				pr := a.Priority
				patch.Priority = &pr
			}
			rep.Lines = append(rep.Lines, fmt.Sprintf("updated #%d → [P%d] %q (%s)", a.ID, cmp.Or(a.Priority, byID[a.ID].Priority),
				cmp.Or(textclip.OneLine(a.Content), byID[a.ID].Text), a.Reason))
		}
		if _, err := p.Update(ctx, a.ID, patch); err != nil {
			rep.Lines = append(rep.Lines, fmt.Sprintf("could not change #%d: %v", a.ID, err))
			continue
		}
		changed++
	}
	rep.Status = StatusOK
	rep.Detail = fmt.Sprintf("%d of %d active item(s) changed", changed, len(items))
	return rep
}
