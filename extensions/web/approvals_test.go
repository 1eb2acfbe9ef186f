package web

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"

	"github.com/reverie-ai/reverie/api"
)

// With web.auth: none a WebSocket without the token (any local process, a
// sandboxed command among them) cannot answer an approval request; one
// with the token can.
func TestWebSocketApprovalNeedsTheToken(t *testing.T) {
	f := &fakeAPI{}
	s := startWeb(t, "auth: none\nrate_per_second: 0", f.services())
	answer := func(header http.Header) api.ServerFrame {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		c, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(s.base, "http")+"/api/v1/ws", &websocket.DialOptions{HTTPHeader: header})
		if err != nil {
			t.Fatalf("dial: %v", err)
		}
		defer c.CloseNow()
		yes := true
		b, _ := json.Marshal(api.ClientFrame{Type: api.FrameApproval, Approval: "ap_1", Approve: &yes, ID: "a1"})
		// A malformed frame after it: its error frame comes after the
		// answer's outcome (frames are handled in order).
		bad, _ := json.Marshal(api.ClientFrame{Type: api.FrameApproval, ID: "a2"})
		for _, m := range [][]byte{b, bad} {
			if err := c.Write(ctx, websocket.MessageText, m); err != nil {
				t.Fatal(err)
			}
		}
		for {
			_, data, err := c.Read(ctx)
			if err != nil {
				t.Fatalf("read: %v", err)
			}
			var fr api.ServerFrame
			if err := json.Unmarshal(data, &fr); err != nil {
				t.Fatal(err)
			}
			if fr.Type == api.FrameError {
				return fr
			}
		}
	}
	if fr := answer(nil); !strings.Contains(fr.Error, "needs the access token") {
		t.Errorf("anonymous approval frame: %+v, want refused", fr)
	}
	f.mu.Lock()
	n := len(f.answered)
	f.mu.Unlock()
	if n != 0 {
		t.Fatalf("an anonymous client answered %d request(s)", n)
	}
	if fr := answer(http.Header{"Authorization": {"Bearer " + testToken}}); strings.Contains(fr.Error, "needs the access token") {
		t.Errorf("approval frame with the token: %+v", fr)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.answered) != 1 {
		t.Errorf("the token's answer did not reach the service: %v", f.answered)
	}
}
