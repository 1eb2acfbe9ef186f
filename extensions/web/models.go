package web

import (
	"net/http"

	"github.com/reverie-ai/reverie/api"
)

// listModels is GET /api/v1/models: the model router's backends and roles
// (the model picker's choices).
func (w *Web) listModels(rw http.ResponseWriter, r *http.Request) {
	out, err := w.svc.Models.List(r.Context())
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	out.Backends, out.Roles = nonNil(out.Backends), nonNil(out.Roles)
	writeJSON(rw, http.StatusOK, out)
}

// threadModel is GET /api/v1/threads/{thread}/model: the conversation's
// model, its context window and token use.
func (w *Web) threadModel(rw http.ResponseWriter, r *http.Request) {
	t, err := threadParam(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	out, err := w.svc.Models.Thread(r.Context(), t)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, out)
}

// setThreadModel is PUT /api/v1/threads/{thread}/model {"backend":"…"}:
// the conversation's replies use that backend first ("" goes back to the
// main role's).
func (w *Web) setThreadModel(rw http.ResponseWriter, r *http.Request) {
	t, err := threadParam(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	var req api.ThreadModelRequest
	if err := decodeBody(r, &req); err != nil {
		w.serviceError(rw, r, err)
		return
	}
	out, err := w.svc.Models.SetThread(r.Context(), t, req.Backend)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, out)
}
