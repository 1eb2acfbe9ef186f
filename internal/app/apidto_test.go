package app

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/skills"
)

// dtoPair describes how one internal type becomes an API DTO. Every
// exported field of the internal type is named once: copied (same value
// under another or the same name), converted (a different form, such as a
// duration in milliseconds) or hidden (with the reason). Every field of the
// DTO is either the target of a copied or converted field or unfilled (set
// elsewhere, with the reason).
type dtoPair struct {
	name      string
	internal  any
	convert   func(in any) any
	copied    map[string]string // internal field → DTO field, same value
	converted map[string]string // internal field → DTO field, another form
	hidden    map[string]string // internal field → why the API does not show it
	unfilled  map[string]string // DTO field → where it is set instead
}

// TestAPIDTOsInStep checks that the API DTOs and the internal types they
// are made from stay in step: a field added to an internal type must be
// mapped to the DTO or hidden on purpose, a field added to a DTO must be
// filled by its converter, and each copied field arrives with its value.
func TestAPIDTOsInStep(t *testing.T) {
	pairs := []dtoPair{
		{
			name: "memory", internal: memory.Memory{},
			convert: func(in any) any { return memoryOf(in.(memory.Memory)) },
			copied: same("ID", "Text", "Kind", "Source", "CreatedAt", "UpdatedAt", "ValidFrom", "ValidTo",
				"SupersededBy", "AccessCount", "LastAccess", "EventTime", "Thread", "Session", "Speaker", "Role"),
			hidden:   map[string]string{"Embedding": "a vector of the store's embedder, meaningless to a client"},
			unfilled: map[string]string{"Score": "set by apiMemories.Search from the search hit", "Existing": "set by apiMemories.Add from memory.Remembered"},
		},
		{
			name: "pulse item", internal: pulse.Item{},
			convert: func(in any) any { return pulseItemOf(in.(pulse.Item)) },
			copied:  same("ID", "Text", "Priority", "Status", "Thread", "Source", "CreatedAt", "UpdatedAt", "CompletedAt"),
		},
		{
			name: "skill", internal: skills.Skill{},
			convert: func(in any) any { return skillOf(in.(skills.Skill)) },
			copied: merge(same("Name", "Summary", "Chars", "Folder"),
				map[string]string{"Body": "Content", "Modified": "UpdatedAt"}),
		},
		{
			name: "task", internal: scheduler.Task{},
			convert: func(in any) any { return taskOf(in.(scheduler.Task)) },
			copied: same("ID", "Kind", "Text", "AIPrompt", "Thread", "SubSession", "Job", "Status", "NextRun",
				"LastRun", "LastOutcome", "DeliveredTo", "Runs", "Failures", "CreatedAt", "UpdatedAt", "Description"),
			converted: map[string]string{"Spec": "Schedule"}, // checked by the schedule pair
			hidden:    map[string]string{"Taint": "the untrusted input the task was set after: enforced by the approvals when it runs, not a setting a client edits"},
		},
		{
			name: "schedule", internal: scheduler.Spec{},
			convert: func(in any) any { return scheduleOf(in.(scheduler.Spec)) },
			copied: same("Kind", "At", "Time", "Weekdays", "Day", "WindowStart", "WindowEnd", "Cron", "Start",
				"Zone"),
			converted: map[string]string{"Every": "Every"}, // a Go duration string
		},
		{
			name: "receipt", internal: scheduler.Receipt{},
			convert:   func(in any) any { return receiptOf(in.(scheduler.Receipt)) },
			copied:    same("ID", "TaskID", "ScheduledAt", "StartedAt", "Outcome", "Reason", "Count", "CatchUp", "DeliveredTo"),
			converted: map[string]string{"Duration": "DurationMS", "Usage": "Usage"},
		},
		{
			name: "interaction", internal: interactions.Entry{},
			convert: func(in any) any { return interactionOf(in.(interactions.Entry)) },
			copied: same("ID", "At", "Thread", "Action", "Summary", "Detail", "InputTokens", "OutputTokens",
				"Error"),
			converted: map[string]string{"Duration": "DurationMS"},
		},
		{
			name: "usage row", internal: modelrouter.UsageRow{},
			convert: func(in any) any { return usageRowOf(in.(modelrouter.UsageRow)) },
			copied: same("Day", "Role", "Backend", "Model", "Calls", "Failures", "InputTokens",
				"OutputTokens"),
		},
		{
			name: "setup form", internal: extension.SetupSchema{},
			convert:   func(in any) any { return formOf("id", in.(extension.SetupSchema)) },
			copied:    same("Title", "Description", "Configured"),
			converted: map[string]string{"Fields": "Fields"}, // checked by the setup field pair
			unfilled:  map[string]string{"ID": "the extension's id, passed beside the schema"},
		},
		{
			name: "setup field", internal: extension.SetupField{},
			convert: func(in any) any {
				return formOf("id", extension.SetupSchema{Fields: []extension.SetupField{in.(extension.SetupField)}}).Fields[0]
			},
			copied: same("Key", "Label", "Kind", "Options", "Default", "Required", "Help"),
		},
	}
	for _, p := range pairs {
		t.Run(p.name, func(t *testing.T) {
			in := reflect.New(reflect.TypeOf(p.internal)).Elem()
			fill(in, 1)
			out := reflect.ValueOf(p.convert(in.Interface()))
			inT, outT := in.Type(), out.Type()

			targets := map[string]bool{}
			for _, f := range exported(inT) {
				dto, copied := p.copied[f]
				conv, converted := p.converted[f]
				_, hidden := p.hidden[f]
				switch {
				case copied:
					targets[dto] = true
					if got, want := show(out.FieldByName(dto)), show(in.FieldByName(f)); got != want {
						t.Errorf("%s.%s = %s, want %s.%s = %s", outT, dto, got, inT, f, want)
					}
				case converted:
					targets[conv] = true
				case !hidden:
					t.Errorf("%s.%s is new: copy it to %s (and the converter), or list it as hidden with the reason", inT, f, outT)
				}
			}
			for _, f := range exported(outT) {
				if _, unfilled := p.unfilled[f]; unfilled {
					continue
				}
				if !targets[f] {
					t.Errorf("%s.%s is filled from no field of %s: map it, or list it as unfilled with where it is set", outT, f, inT)
					continue
				}
				if out.FieldByName(f).IsZero() {
					t.Errorf("%s.%s stays empty when every field of %s is set: the converter misses it", outT, f, inT)
				}
			}
			for _, m := range []map[string]string{p.copied, p.converted, p.hidden} {
				for f := range m {
					if _, ok := inT.FieldByName(f); !ok {
						t.Errorf("%s has no field %s any more: update this test", inT, f)
					}
				}
			}
		})
	}
}

func same(fields ...string) map[string]string {
	m := make(map[string]string, len(fields))
	for _, f := range fields {
		m[f] = f
	}
	return m
}

func merge(a, b map[string]string) map[string]string {
	for k, v := range b {
		a[k] = v
	}
	return a
}

func exported(t reflect.Type) []string {
	var out []string
	for f := range t.Fields() {
		if f.IsExported() {
			out = append(out, f.Name)
		}
	}
	slices.Sort(out)
	return out
}

// fill sets every field of v to a non-zero value that differs from field
// to field (seed), so a field copied to the wrong place shows.
func fill(v reflect.Value, seed int) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 1, 1, seed, 0, 0, 0, time.UTC)))
			return
		}
		for i := range v.NumField() {
			if v.Type().Field(i).IsExported() {
				fill(v.Field(i), seed*10+i+1)
			}
		}
	case reflect.Pointer:
		v.Set(reflect.New(v.Type().Elem()))
		fill(v.Elem(), seed)
	case reflect.Slice:
		v.Set(reflect.MakeSlice(v.Type(), 1, 1))
		fill(v.Index(0), seed)
	case reflect.String:
		v.SetString(fmt.Sprintf("s%d", seed))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(seed) * 1_000_000_000) // whole seconds, so durations keep their value in ms
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(seed))
	case reflect.Float32, reflect.Float64:
		v.SetFloat(float64(seed) + 0.5)
	default:
		panic("fill: add a case for " + v.Type().String())
	}
}

// show prints a field's value without its type's name or pointers, so a
// typed string and a plain string, or a time and a *time, compare equal.
func show(v reflect.Value) string {
	for v.Kind() == reflect.Pointer {
		if v.IsNil() {
			return "<nil>"
		}
		v = v.Elem()
	}
	return fmt.Sprint(v.Interface())
}
