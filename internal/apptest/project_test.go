package apptest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/evidence"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// The project status on the whole app: a turn fetches a page (its result
// an evidence packet) and hands a full-mode worker the rest; GET
// /status/project lists the pulse item, the fetch in the tool trace and
// the page among the evidence, answers the same bytes twice for the same
// state, and the worker's prompt carries the same manifest.
func TestProjectStatusEndToEnd(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		rw.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprint(rw, "<html><head><title>Lyon trains</title></head><body><main><h1>Lyon trains</h1><p>The 8:04 from Paris reaches Lyon at 10:00.</p></main></body></html>")
	}))
	t.Cleanup(page.Close)
	w := StartWeb(t, WithEnv("REVERIE_TOOLS__FETCH__ALLOW_PRIVATE=true"))
	var mu sync.Mutex
	var workerPrompt string
	w.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		sys := systemText(req)
		last := req.Messages[len(req.Messages)-1]
		switch {
		case strings.Contains(sys, "## Objective\nDraft the booking plan"):
			mu.Lock()
			workerPrompt = sys
			mu.Unlock()
			return llmtest.ServerReply{Text: "Plan: take the 8:04."}
		case last.Role == "tool" && last.ToolCallID == "call_page":
			args, _ := json.Marshal(map[string]any{"objective": "Draft the booking plan", "system_prompt_mode": "full"})
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_spawn", Name: workflow.ToolSpawn, Arguments: args}}}
		case last.Role == "tool":
			return llmtest.ServerReply{Text: "A worker drafts the plan."}
		case strings.Contains(lastUser(req), "trains to Lyon"):
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_page", Name: "fetch_url", Arguments: json.RawMessage(fmt.Sprintf(`{"url":%q}`, page.URL+"/lyon"))}}}
		}
		return llmtest.ServerReply{Text: "ok"}
	})
	w.JSON(t, "POST", "/pulse", map[string]any{"text": "Book the train to Lyon", "priority": 1}, http.StatusCreated, nil)
	// The reply, then the worker's result relayed: the state is settled.
	w.Send(t, "trip", "which trains to Lyon?")
	w.Channel.WaitFor(t, "trip", 2)
	thread := string(chat.NewThreadID(ChannelName, "trip"))

	var st api.ProjectStatus
	w.JSON(t, "GET", "/status/project?thread="+thread, nil, http.StatusOK, &st)
	if string(st.Thread) != thread || len(st.Pulse) != 1 || st.Pulse[0].Text != "Book the train to Lyon" {
		t.Errorf("thread %q, pulse %+v", st.Thread, st.Pulse)
	}
	var fetch *api.TraceEntry
	for i, e := range st.Trace {
		if e.Tool == "fetch_url" {
			fetch = &st.Trace[i]
		}
	}
	if fetch == nil || fetch.Outcome != "ok" || !strings.Contains(fetch.Result, `web_page "Lyon trains"`) {
		t.Errorf("the trace lacks the fetch: %+v", st.Trace)
	}
	if len(st.Evidence) != 1 || st.Evidence[0].Kind != evidence.WebPage || st.Evidence[0].Source != "fetch_url" ||
		len(st.Evidence[0].Refs) != 1 || !strings.HasPrefix(st.Evidence[0].Refs[0], page.URL) {
		t.Errorf("evidence %+v", st.Evidence)
	}

	// The worker read the manifest of its root conversation.
	mu.Lock()
	wp := workerPrompt
	mu.Unlock()
	for _, want := range []string{"PROJECT STATUS", "Book the train to Lyon", `fetch_url {"url":"` + page.URL + `/lyon"} → ok: web_page "Lyon trains"`} {
		if !strings.Contains(wp, want) {
			t.Errorf("the worker's prompt lacks %q:\n%s", want, wp)
		}
	}

	if len(st.Workflows) != 0 {
		t.Errorf("a finished workflow is listed as active: %+v", st.Workflows)
	}
	// The same state answers the same bytes.
	_, a := w.Do(t, "GET", "/status/project?thread="+thread, nil)
	_, b := w.Do(t, "GET", "/status/project?thread="+thread, nil)
	if !bytes.Equal(a, b) {
		t.Errorf("two answers for the same state differ:\n%s\n%s", a, b)
	}
}
