package web

import (
	"context"
	"net/http"
	"time"

	"github.com/reverie-ai/reverie/api"
)

// The endpoints the page's "Your assistant" views add to those of
// state.go: a memory's earlier versions and the dream reports.

// memoryHistory is GET /api/v1/memories/{id}/history: the memory's
// earlier versions, newest first.
func (w *Web) memoryHistory(rw http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	ms, err := w.svc.Memories.History(r.Context(), id)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, api.MemoryList{Memories: nonNil(ms)})
}

// listDreams is GET /api/v1/dreams?limit=N: the newest dream reports.
func (w *Web) listDreams(rw http.ResponseWriter, r *http.Request) {
	q := query{r: r}
	limit := int(q.int("limit", 20, 1, 200))
	if q.err != nil {
		w.serviceError(rw, r, q.err)
		return
	}
	ds, err := w.svc.Dreams.List(r.Context(), limit)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	for i := range ds {
		ds[i].Components = nonNil(ds[i].Components)
	}
	writeJSON(rw, http.StatusOK, api.DreamList{Dreams: nonNil(ds)})
}

// dreamNow is POST /api/v1/dreams: one dream now, answered with its
// report once it is done (it may take minutes, as a turn may).
func (w *Web) dreamNow(rw http.ResponseWriter, r *http.Request) {
	_ = http.NewResponseController(rw).SetWriteDeadline(time.Now().Add(w.cfg.TurnTimeout + 10*time.Second))
	ctx, cancel := context.WithTimeout(r.Context(), w.cfg.TurnTimeout)
	defer cancel()
	trigger := "api"
	if viaControl(r) {
		trigger = "cli"
	}
	d, err := w.svc.Dreams.Dream(ctx, trigger)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	d.Components = nonNil(d.Components)
	writeJSON(rw, http.StatusOK, d)
}

// revertDream is POST /api/v1/dreams/{id}/revert: every change the dream
// made is put back.
func (w *Web) revertDream(rw http.ResponseWriter, r *http.Request) {
	id, err := pathID(r)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	out, err := w.svc.Dreams.Revert(r.Context(), id)
	if err != nil {
		w.serviceError(rw, r, err)
		return
	}
	writeJSON(rw, http.StatusOK, out)
}
