package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/reverie-ai/reverie/chat"
)

// Handler serves the workflow API for the web channel (which adds
// authentication and mounts it on its mux):
//
//	GET  /api/v1/workflows?active=1&thread=T&limit=N → {"workflows":[Workflow…]}
//	GET  /api/v1/workflows/{id}                      → Workflow (nodes with states, dependencies, timings, results)
//	POST /api/v1/workflows/{id}/cancel               → {"cancelled":["sub_…"]}
//	GET  /api/v1/sub_sessions/{id}                   → Node
//	GET  /api/v1/sub_sessions/{id}/messages          → {"messages":[{"role","parts"}]}
//	POST /api/v1/sub_sessions/{id}/cancel            → {"cancelled":["sub_…"]}
//	GET  /api/v1/sub_session_outcomes?task=ID&status=S&limit=N → {"outcomes":[Outcome…]}
//
// Errors are {"error":"…"} with 400, 404 or 409 (already finished).
func Handler(m *Manager) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /api/v1/workflows", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, _ := strconv.Atoi(q.Get("limit"))
		active := q.Get("active") == "1" || q.Get("active") == "true"
		ws, err := m.ListWorkflows(r.Context(), ListOptions{Active: active, Thread: chat.ThreadID(q.Get("thread")), Limit: limit})
		writeJSON(w, struct {
			Workflows []Workflow `json:"workflows"`
		}{ws}, err)
	})
	mux.HandleFunc("GET /api/v1/workflows/{id}", func(w http.ResponseWriter, r *http.Request) {
		wf, err := m.GetWorkflow(r.Context(), r.PathValue("id"))
		writeJSON(w, wf, err)
	})
	mux.HandleFunc("POST /api/v1/workflows/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		cancelReply(w, r, m)
	})
	mux.HandleFunc("GET /api/v1/sub_sessions/{id}", func(w http.ResponseWriter, r *http.Request) {
		n, err := m.GetNode(r.Context(), r.PathValue("id"))
		writeJSON(w, n, err)
	})
	mux.HandleFunc("GET /api/v1/sub_sessions/{id}/messages", func(w http.ResponseWriter, r *http.Request) {
		msgs, err := m.Messages(r.Context(), r.PathValue("id"))
		out := make([]json.RawMessage, len(msgs))
		for i, msg := range msgs {
			out[i] = json.RawMessage(encodeMessage(msg))
		}
		writeJSON(w, struct {
			Messages []json.RawMessage `json:"messages"`
		}{out}, err)
	})
	mux.HandleFunc("POST /api/v1/sub_sessions/{id}/cancel", func(w http.ResponseWriter, r *http.Request) {
		cancelReply(w, r, m)
	})
	mux.HandleFunc("GET /api/v1/sub_session_outcomes", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		limit, _ := strconv.Atoi(q.Get("limit"))
		os, err := m.Outcomes(r.Context(), OutcomeFilter{TaskID: q.Get("task"), Status: State(q.Get("status")), Limit: limit})
		if os == nil {
			os = []Outcome{}
		}
		writeJSON(w, struct {
			Outcomes []Outcome `json:"outcomes"`
		}{os}, err)
	})
	return mux
}

func cancelReply(w http.ResponseWriter, r *http.Request, m *Manager) {
	var body struct {
		Reason string `json:"reason"`
	}
	if r.Body != nil {
		data, _ := io.ReadAll(io.LimitReader(r.Body, 4096))
		if len(data) > 0 {
			if err := json.Unmarshal(data, &body); err != nil {
				writeJSON(w, nil, errors.Join(ErrInvalid, err))
				return
			}
		}
	}
	if body.Reason == "" {
		body.Reason = "cancelled by the user"
	}
	ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
	defer cancel()
	ids, err := m.Cancel(ctx, r.PathValue("id"), body.Reason)
	writeJSON(w, struct {
		Cancelled []string `json:"cancelled"`
	}{ids}, err)
}

func writeJSON(w http.ResponseWriter, v any, err error) {
	w.Header().Set("Content-Type", "application/json")
	if err != nil {
		code := http.StatusInternalServerError
		switch {
		case errors.Is(err, ErrNotFound):
			code = http.StatusNotFound
		case errors.Is(err, ErrFinished):
			code = http.StatusConflict
		case errors.Is(err, ErrInvalid):
			code = http.StatusBadRequest
		}
		w.WriteHeader(code)
		_ = json.NewEncoder(w).Encode(struct {
			Error string `json:"error"`
		}{err.Error()})
		return
	}
	_ = json.NewEncoder(w).Encode(v)
}
