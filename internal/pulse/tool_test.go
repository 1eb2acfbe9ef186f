package pulse

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/tool"
)

// call runs the tool as the tool loop does: schema validation, then Call.
func call(t *testing.T, tl tool.Tool, args string) (string, error) {
	t.Helper()
	if v, ok := tl.(interface{ ValidateArgs(json.RawMessage) error }); ok {
		if err := v.ValidateArgs(json.RawMessage(args)); err != nil {
			return "", err
		}
	}
	ctx := tool.WithCall(context.Background(), tool.Call{Thread: "web:t1", Agent: "main"})
	res, err := tl.Call(ctx, json.RawMessage(args))
	return res.Content, err
}

func TestToolSchema(t *testing.T) {
	e := newEnv(t)
	tl := Tool(e.store)
	if tl.Name() != "pulse" {
		t.Fatalf("name = %s", tl.Name())
	}
	var schema struct {
		Required   []string `json:"required"`
		Properties map[string]struct {
			Enum []string `json:"enum"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tl.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	if strings.Join(schema.Required, ",") != "action" {
		t.Errorf("required = %v", schema.Required)
	}
	if got := strings.Join(schema.Properties["action"].Enum, ","); got != "add,complete,update,list" {
		t.Errorf("action enum = %s", got)
	}
	if got := strings.Join(schema.Properties["status"].Enum, ","); got != "active,completed,cancelled,all" {
		t.Errorf("status enum = %s", got)
	}
}

func TestToolCalls(t *testing.T) {
	e := newEnv(t)
	tl := Tool(e.store)
	steps := []struct {
		name    string
		args    string
		want    []string // substrings of the result
		wantErr string   // substring of the error; "" = success
	}{
		{"add", `{"action":"add","text":"Fix auth bug","priority":2}`, []string{`"ok":true`, `"id":1`, `"priority":2`, `[P2] #1: Fix auth bug`, `"active":1`}, ""},
		{"add default priority", `{"action":"add","text":"Water plants"}`, []string{`"id":2`, `"priority":5`, `"active":2`}, ""},
		{"add without text", `{"action":"add"}`, nil, "empty"},
		{"add with id", `{"action":"add","id":3,"text":"x"}`, nil, "takes no id"},
		{"add bad priority", `{"action":"add","text":"x","priority":42}`, nil, "between 1 (urgent) and 10"},
		{"unknown action (schema)", `{"action":"delete","id":1}`, nil, "action"},
		{"unknown property (schema)", `{"action":"list","foo":1}`, nil, "foo"},
		{"update text", `{"action":"update","id":2,"text":"Water the plants","priority":6}`, []string{`"text":"Water the plants"`, `"priority":6`, `updated: [P6] #2: Water the plants`}, ""},
		{"update nothing", `{"action":"update","id":2}`, nil, "nothing to update"},
		{"update same", `{"action":"update","id":2,"priority":6}`, []string{"nothing changed"}, ""},
		{"update unknown id", `{"action":"update","id":77,"text":"x"}`, nil, "pulse item 77 not found (see action=list for the ids)"},
		{"complete without id", `{"action":"complete"}`, nil, "needs the item's id"},
		{"complete", `{"action":"complete","id":1}`, []string{`"status":"completed"`, `"active":1`}, ""},
		{"complete again", `{"action":"complete","id":1}`, []string{"already completed"}, ""},
		{"list active", `{"action":"list"}`, []string{`"items":[{"id":2,"priority":6,"status":"active","text":"Water the plants"}]`}, ""},
		{"list completed", `{"action":"list","status":"completed"}`, []string{`"id":1`, `"status":"completed"`}, ""},
		{"list all", `{"action":"list","status":"all"}`, []string{`"id":1`, `"id":2`}, ""},
		{"cancel via update", `{"action":"update","id":2,"status":"cancelled"}`, []string{`"status":"cancelled"`, `"active":0`}, ""},
		{"list empty", `{"action":"list"}`, []string{`"note":"no items"`, `"active":0`}, ""},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			out, err := call(t, tl, s.args)
			if s.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), s.wantErr) {
					t.Fatalf("err = %v, want it to contain %q (result %s)", err, s.wantErr, out)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !json.Valid([]byte(out)) {
				t.Fatalf("result is not JSON: %s", out)
			}
			for _, w := range s.want {
				if !strings.Contains(out, w) {
					t.Errorf("result %s lacks %s", out, w)
				}
			}
		})
	}
	// Items the tool adds are marked as the agent's.
	it, err := e.store.Get(context.Background(), 1)
	if err != nil || it.Source != SourceAgent || it.Thread != "web:t1" {
		t.Errorf("item 1 = %+v, %v", it, err)
	}
}
