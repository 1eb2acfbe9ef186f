package apptest

import (
	"net/http"
	"testing"
)

// TestNotFoundReadsAsASentence asks the real app for ids nothing has: each
// answer is 404 with one sentence naming what was not found ("memory 999
// not found"), not an operation's words in front of a sentinel's ("get
// memory 999: memory not found", "delete skill: no such skill: …").
func TestNotFoundReadsAsASentence(t *testing.T) {
	app := startWebApp(t, "127.0.0.1:0")
	for _, c := range []struct {
		name, method, path string
		body               any
		want               string
	}{
		{"memory", http.MethodGet, "/memories/999", nil, `memory 999 not found`},
		{"forget a memory", http.MethodDelete, "/memories/999", nil, `memory 999 not found`},
		{"edit a memory", http.MethodPut, "/memories/999", map[string]string{"text": "x", "kind": "fact"}, `memory 999 not found`},
		{"memory history", http.MethodGet, "/memories/999/history", nil, `memory 999 not found`},
		{"revert a dream", http.MethodPost, "/dreams/99/revert", map[string]any{}, `dream 99 not found`},
		{"skill", http.MethodGet, "/skills/nope", nil, `skill "nope" not found`},
		{"delete a skill", http.MethodDelete, "/skills/nope", nil, `skill "nope" not found`},
		{"update a pulse item", http.MethodPut, "/pulse/999", map[string]string{"status": "completed"}, `pulse item 999 not found`},
		{"delete a pulse item", http.MethodDelete, "/pulse/999", nil, `pulse item 999 not found`},
		{"task", http.MethodGet, "/tasks/t_nope", nil, `task "t_nope" not found`},
		{"pause a task", http.MethodPost, "/tasks/t_nope/pause", nil, `task "t_nope" not found`},
		{"cancel a task", http.MethodDelete, "/tasks/t_nope", nil, `task "t_nope" not found`},
		{"workflow", http.MethodGet, "/workflows/wf_nope", nil, `workflow "wf_nope" not found`},
		{"cancel a workflow", http.MethodPost, "/workflows/wf_nope/cancel", nil, `workflow "wf_nope" not found`},
		{"cancel a sub-session", http.MethodPost, "/workflows/sub_nope/cancel", nil, `sub-session "sub_nope" not found`},
		{"revision", http.MethodGet, "/history/ffff", nil, `revision "ffff" not found`},
		{"restore a revision", http.MethodPost, "/history/ffff/restore", map[string]any{}, `revision "ffff" not found`},
		{"answer an approval", http.MethodPost, "/approvals/ap_nope", map[string]bool{"approve": false}, `approval request "ap_nope" not found`},
	} {
		t.Run(c.name, func(t *testing.T) {
			var got struct{ Error string }
			app.JSON(t, c.method, c.path, c.body, http.StatusNotFound, &got)
			if got.Error != c.want {
				t.Errorf("%s %s: error %q, want %q", c.method, c.path, got.Error, c.want)
			}
		})
	}
}
