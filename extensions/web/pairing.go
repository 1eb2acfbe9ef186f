package web

import (
	"net/http"

	"github.com/reverie-ai/reverie/api"
)

// approvePairing serves POST /api/v1/<channel>/approve {"code":"…"}: it lets
// in the person the channel gave the pairing code.
func (w *Web) approvePairing(channel string) http.HandlerFunc {
	return func(rw http.ResponseWriter, r *http.Request) {
		var req api.PairingRequest
		err := decodeBody(r, &req)
		if err == nil {
			var out api.PairingApproval
			if out, err = w.svc.Pairing.Approve(r.Context(), channel, req.Code); err == nil {
				writeJSON(rw, http.StatusOK, out)
				return
			}
		}
		w.serviceError(rw, r, err)
	}
}
