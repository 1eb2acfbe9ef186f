package apptest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// TestConversationsAPI is the contract of the conversation endpoints
// (docs/api.md "Conversations") on the whole app: rename, delete and
// restore, search, regenerate, retry and edit with the replaced turns kept
// as a branch, /new keeping the old conversation, and a failed reply kept
// with its mark.
func TestConversationsAPI(t *testing.T) {
	app := StartWeb(t)
	n := 0
	app.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		q := lastUser(req)
		if strings.Contains(q, "fail please") {
			return llmtest.ServerReply{Status: http.StatusBadRequest, ErrorMessage: "context too long"}
		}
		n++
		return llmtest.ServerReply{Text: "answer to " + q + " #" + string(rune('0'+n))}
	})
	const th = "/threads/web:conv"
	var reply api.Reply
	app.JSON(t, http.MethodPost, th+"/messages", map[string]string{"text": "Book the train to Lyon"}, http.StatusOK, &reply)
	if !strings.HasPrefix(reply.Reply, "answer to Book the train to Lyon") || reply.SeedReply != "" {
		t.Fatalf("first reply (greeting in the same call) = %+v", reply)
	}
	// The seed is stored first and marked, never as a separate reply.
	var list api.MessageList
	app.JSON(t, http.MethodGet, th+"/messages", nil, http.StatusOK, &list)
	if len(list.Messages) != 3 || list.Messages[0].Source != "seed" || list.Messages[1].Text != "Book the train to Lyon" {
		t.Fatalf("stored order: %+v", list.Messages)
	}

	// Rename, delete, list deleted, restore.
	var thread api.Thread
	app.JSON(t, http.MethodPut, th, api.RenameRequest{Title: "Lyon trip"}, http.StatusOK, &thread)
	if thread.Title != "Lyon trip" || thread.TitleSource != "user" {
		t.Errorf("renamed: %+v", thread)
	}
	app.JSON(t, http.MethodPut, th, api.RenameRequest{Title: " "}, http.StatusBadRequest, nil)
	app.JSON(t, http.MethodPut, "/threads/web:nobody", api.RenameRequest{Title: "x"}, http.StatusNotFound, nil)
	app.JSON(t, http.MethodDelete, th, nil, http.StatusOK, &thread)
	if thread.ArchivedAt == nil {
		t.Errorf("deleted thread without archived_at: %+v", thread)
	}
	var threads api.ThreadList
	app.JSON(t, http.MethodGet, "/threads", nil, http.StatusOK, &threads)
	for _, x := range threads.Threads {
		if x.ID == "web:conv" {
			t.Error("a deleted thread is listed")
		}
	}
	app.JSON(t, http.MethodGet, "/threads?archived=true", nil, http.StatusOK, &threads)
	if len(threads.Threads) != 1 || threads.Threads[0].Title != "Lyon trip" {
		t.Errorf("deleted threads: %+v", threads.Threads)
	}
	thread = api.Thread{}
	app.JSON(t, http.MethodPost, th+"/restore", nil, http.StatusOK, &thread)
	if thread.ArchivedAt != nil {
		t.Errorf("restored thread still archived: %+v", thread)
	}

	// Regenerate: the old reply is kept as a branch.
	app.JSON(t, http.MethodPost, th+"/retry", map[string]any{}, http.StatusConflict, nil)
	app.JSON(t, http.MethodPost, th+"/regenerate", map[string]any{}, http.StatusOK, &reply)
	if !strings.HasSuffix(reply.Reply, "#2") {
		t.Errorf("regenerated: %q", reply.Reply)
	}
	// A failed reply is kept with its mark; retry replaces it.
	app.JSON(t, http.MethodPost, th+"/messages", map[string]string{"text": "fail please"}, http.StatusBadGateway, nil)
	app.JSON(t, http.MethodGet, th+"/messages", nil, http.StatusOK, &list)
	last := list.Messages[len(list.Messages)-1]
	if last.Status != "failed" || last.Note == "" || last.Role != "assistant" {
		t.Fatalf("the failed reply: %+v", last)
	}
	// Edit the failing question instead.
	q := list.Messages[len(list.Messages)-2]
	app.JSON(t, http.MethodPost, th+"/messages/"+itoa(q.ID)+"/edit", api.EditRequest{Text: "Book the train to Paris"}, http.StatusOK, &reply)
	if !strings.HasPrefix(reply.Reply, "answer to Book the train to Paris") {
		t.Errorf("edited: %q", reply.Reply)
	}
	app.JSON(t, http.MethodPost, th+"/messages/"+itoa(q.ID)+"/edit", api.EditRequest{Text: "again"}, http.StatusBadRequest, nil)
	var segs api.SegmentList
	app.JSON(t, http.MethodGet, "/segments?thread=web:conv&kind=branch", nil, http.StatusOK, &segs)
	if len(segs.Segments) != 2 {
		t.Fatalf("branches: %+v", segs.Segments)
	}
	var seg api.SegmentMessages
	app.JSON(t, http.MethodGet, "/segments/"+itoa(segs.Segments[0].ID), nil, http.StatusOK, &seg)
	if len(seg.Messages) != 2 || seg.Messages[0].Text != "fail please" || seg.Messages[1].Status != "failed" {
		t.Errorf("the edit's branch: %+v", seg.Messages)
	}
	app.JSON(t, http.MethodGet, "/segments/999999", nil, http.StatusNotFound, nil)

	// /new closes the conversation; it stays readable and searchable.
	app.JSON(t, http.MethodPost, th+"/messages", map[string]string{"text": "/new"}, http.StatusOK, nil)
	app.JSON(t, http.MethodGet, "/segments?kind=conversation", nil, http.StatusOK, &segs)
	if len(segs.Segments) != 1 || segs.Segments[0].Title != "Lyon trip" {
		t.Fatalf("archived conversations: %+v", segs.Segments)
	}
	var hits api.SearchResults
	app.JSON(t, http.MethodGet, "/search?q=pari", nil, http.StatusOK, &hits)
	if len(hits.Hits) == 0 || hits.Hits[0].Segment != segs.Segments[0].ID || !strings.Contains(hits.Hits[0].Snippet, "«Paris»") {
		t.Errorf("search: %+v", hits.Hits)
	}
	hits = api.SearchResults{}
	app.JSON(t, http.MethodGet, "/search?q=lyon+trip", nil, http.StatusOK, &hits)
	if len(hits.Hits) == 0 || hits.Hits[0].MessageID != 0 || hits.Hits[0].Title != "Lyon trip" {
		t.Errorf("title search: %+v", hits.Hits)
	}
	app.JSON(t, http.MethodGet, "/search?q=", nil, http.StatusBadRequest, nil)
}

func itoa(n int64) string {
	var b []byte
	for {
		b = append([]byte{byte('0' + n%10)}, b...)
		n /= 10
		if n == 0 {
			return string(b)
		}
	}
}

// TestConversationTitleFromModel: with conversations.titles: model, one
// call of the title role after the first reply names the conversation; a
// later message makes no further call, and a title the user chose stays.
func TestConversationTitleFromModel(t *testing.T) {
	app := StartWeb(t, WithEnv("REVERIE_CONVERSATIONS__TITLES=model"))
	titleCalls := 0
	app.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		if len(req.Messages) > 0 && strings.Contains(req.Messages[0].Text(), "Write a title") {
			titleCalls++
			return llmtest.ServerReply{Text: "\"Train to Lyon.\""}
		}
		return llmtest.ServerReply{Text: "sure"}
	})
	app.JSON(t, http.MethodPost, "/threads/web:t/messages", map[string]string{"text": "can you book me the train to Lyon tomorrow morning?"}, http.StatusOK, nil)
	var threads api.ThreadList
	app.JSON(t, http.MethodGet, "/threads", nil, http.StatusOK, &threads)
	if len(threads.Threads) != 1 || threads.Threads[0].Title != "Train to Lyon" || threads.Threads[0].TitleSource != "model" {
		t.Fatalf("threads %+v", threads.Threads)
	}
	app.JSON(t, http.MethodPost, "/threads/web:t/messages", map[string]string{"text": "and back on Sunday"}, http.StatusOK, nil)
	if titleCalls != 1 {
		t.Errorf("%d title calls, want 1", titleCalls)
	}
}
