package projectstatus

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/evidence"
)

// state is a fixed world, pulse, workflow and conversation, served the way
// the API's services serve them.
type state struct {
	world   api.WorldState
	pulse   []api.PulseItem
	wfs     []api.Workflow
	threads []api.Thread
	msgs    map[chat.ThreadID][]api.Message
}

func (s *state) Get(context.Context) (api.WorldState, error) { return s.world, nil }
func (s *state) List(_ context.Context, status string) ([]api.PulseItem, error) {
	if status != "" {
		panic("the manifest lists the open items")
	}
	return append([]api.PulseItem(nil), s.pulse...), nil
}

type workflows struct{ s *state }

func (w workflows) List(_ context.Context, q api.WorkflowQuery) ([]api.Workflow, error) {
	if !q.Active {
		panic("the manifest lists the active workflows")
	}
	return append([]api.Workflow(nil), w.s.wfs...), nil
}

type threads struct{ s *state }

func (t threads) List(context.Context, api.ThreadQuery) ([]api.Thread, error) {
	return t.s.threads, nil
}
func (t threads) Messages(_ context.Context, id chat.ThreadID, _ api.MessageQuery) ([]api.Message, error) {
	return t.s.msgs[id], nil
}

func fixture() *state {
	t0 := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	page := evidence.Packet{Kind: evidence.WebPage, Title: "Lyon trains", Items: []evidence.Item{{URL: "https://trains.example/lyon", Text: "The 8:04 to Lyon…"}},
		Meta: evidence.Meta{Source: "fetch_url", URL: "https://trains.example/lyon", Status: 200}}
	mem := evidence.Packet{Kind: evidence.Memory, Title: `Memories matching "seat"`, Items: []evidence.Item{{ID: 42, Text: "The user prefers aisle seats."}, {ID: 7, Text: "The user travels with a bike."}},
		Meta: evidence.Meta{Source: "search_memory", Query: "seat"}}
	call := func(id, name, args string) api.MessageCall {
		return api.MessageCall{ID: id, Name: name, Arguments: json.RawMessage(args)}
	}
	s := &state{
		world: api.WorldState(`{"user": {"name": "Sam"}, "projects": [{"name": "Lyon trip", "status": "booking"}]}`),
		pulse: []api.PulseItem{
			{ID: 9, Text: "Book the hotel", Priority: 2, Status: "active"},
			{ID: 3, Text: "Buy the train tickets\nbefore Friday", Priority: 1, Status: "active", Thread: "web:trip"},
			{ID: 4, Text: "Ask about bikes on trains", Priority: 2, Status: "active"},
		},
		wfs: []api.Workflow{
			{ID: "wf_b", State: "running", RootThread: "web:trip", CreatedAt: t0.Add(time.Minute), Nodes: []api.WorkflowNode{
				{ID: "sub_2", Objective: "Compare hotel prices near Part-Dieu for 12–14 December", State: "pending", Waiting: "dependencies"},
				{ID: "sub_1", Objective: "List the trains from Paris to Lyon on 12 December", State: "running", ToolCalls: 3, Profile: "researcher"},
			}},
		},
		threads: []api.Thread{
			{ID: "web:old", UpdatedAt: t0.Add(-time.Hour)},
			{ID: "web:trip", UpdatedAt: t0},
		},
		msgs: map[chat.ThreadID][]api.Message{
			"web:trip": {
				{ID: 1, Role: "user", Text: "an old turn, beyond the last three"},
				{ID: 2, Role: "assistant", ToolCalls: []api.MessageCall{call("c0", "read_file", `{"path":"old.txt"}`)}},
				{ID: 3, Role: "tool", ToolResults: []api.MessageResult{{CallID: "c0", Name: "read_file", Result: "old"}}},
				{ID: 4, Role: "user", Text: "which trains go to Lyon?"},
				{ID: 5, Role: "assistant", ToolCalls: []api.MessageCall{call("c1", "fetch_url", `{ "url": "https://trains.example/lyon" }`)}},
				{ID: 6, Role: "tool", ToolResults: []api.MessageResult{{CallID: "c1", Name: "fetch_url", Result: page.Encode()}}},
				{ID: 7, Role: "assistant", Text: "The 8:04."},
				{ID: 8, Role: "user", Text: "[SYSTEM EVENT] a worker finished", SystemEvent: true},
				{ID: 9, Role: "assistant", Text: "Noted."},
				{ID: 10, Role: "user", Text: "where do I like to sit?"},
				{ID: 11, Role: "assistant", ToolCalls: []api.MessageCall{call("c2", "search_memory", `{"query":"seat"}`), call("c3", "execute_shell", `{"command":"false"}`)}},
				{ID: 12, Role: "tool", ToolResults: []api.MessageResult{
					{CallID: "c2", Name: "search_memory", Result: mem.Encode()},
					{CallID: "c3", Name: "execute_shell", Result: "exit status 1:\n  nothing", IsError: true},
				}},
				{ID: 13, Role: "assistant", Text: "Aisle."},
				{ID: 14, Role: "user", Text: "and book it"},
				{ID: 15, Role: "assistant", ToolCalls: []api.MessageCall{call("c4", "spawn_sub_session", `{"objective":"book"}`)}},
			},
		},
	}
	return s
}

func compiler(s *state) *Compiler {
	return &Compiler{World: s, Pulse: s, Workflows: workflows{s}, Threads: threads{s}}
}

func TestStatusGolden(t *testing.T) {
	s := fixture()
	st, err := compiler(s).Status(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	got, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	checkGolden(t, "status.golden.json", string(got)+"\n")
	checkGolden(t, "status.golden.txt", st.Text+"\n")

	// The same state, listed in another order, compiles to the same bytes.
	s2 := fixture()
	s2.pulse[0], s2.pulse[2] = s2.pulse[2], s2.pulse[0]
	s2.threads[0], s2.threads[1] = s2.threads[1], s2.threads[0]
	st2, err := compiler(s2).Status(t.Context(), "")
	if err != nil {
		t.Fatal(err)
	}
	if again, _ := json.MarshalIndent(st2, "", "  "); string(again) != string(got) {
		t.Errorf("the same state in another order compiled differently:\n%s", again)
	}
}

func TestStatusEdges(t *testing.T) {
	tests := []struct {
		name   string
		c      *Compiler
		thread chat.ThreadID
		check  func(t *testing.T, st api.ProjectStatus)
	}{
		{"no sources: an empty manifest, not an error", &Compiler{}, "", func(t *testing.T, st api.ProjectStatus) {
			if string(st.World) != "{}" || st.Pulse == nil || st.Trace == nil || st.Evidence == nil || st.Workflows == nil || st.Text == "" {
				t.Errorf("%+v", st)
			}
		}},
		{"a named thread", compiler(fixture()), "web:old", func(t *testing.T, st api.ProjectStatus) {
			if st.Thread != "web:old" || len(st.Trace) != 0 {
				t.Errorf("thread %q, trace %+v", st.Thread, st.Trace)
			}
		}},
		{"no conversation yet", func() *Compiler { s := fixture(); s.threads = nil; return compiler(s) }(), "", func(t *testing.T, st api.ProjectStatus) {
			if st.Thread != "" || len(st.Trace) != 0 {
				t.Errorf("thread %q, trace %+v", st.Thread, st.Trace)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st, err := tc.c.Status(t.Context(), tc.thread)
			if err != nil {
				t.Fatal(err)
			}
			tc.check(t, st)
		})
	}
}

func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if os.Getenv("UPDATE_GOLDEN") != "" {
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("%s differs:\n%s", name, got)
	}
}
