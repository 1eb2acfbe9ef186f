package apptest

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extensions/mcp"
)

// An MCP client cannot approve anything, nor wait in silence: send_message
// takes only MCP conversations (mcp:<name>), so its "yes" never reaches a
// user's thread (web:…), a worker's (sub_…) or the system's, where it
// answered another thread's pending approval; and a turn of an MCP
// conversation that needs approval is refused at once (the client reads
// why in the reply) instead of hanging for the whole approval timeout.
func TestMCPClientCannotApproveNorWaitSilently(t *testing.T) {
	info, ok := extension.Lookup(mcp.ID)
	if !ok {
		t.Fatal("the mcp extension is not registered")
	}
	w, in := startInjection(t, WithExtensions(info))
	c := dialWS(t, w, "?thread=web:victim")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:victim", Text: "please summarise " + in.page.URL + "/recipes"})
	asked := approvalFrameOf(t, c, "pending")

	cs := connect(t, &sdk.StreamableClientTransport{Endpoint: w.Base + "/mcp", HTTPClient: &http.Client{Transport: bearer{w.Token}}})
	send := func(thread, text string) (string, bool) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: "send_message", Arguments: map[string]any{"thread": thread, "text": text}})
		if err != nil {
			t.Fatalf("send_message to %s: %v", thread, err)
		}
		var b strings.Builder
		for _, c := range res.Content {
			if tc, ok := c.(*sdk.TextContent); ok {
				b.WriteString(tc.Text)
			}
		}
		return b.String(), res.IsError
	}
	for _, thread := range []string{"web:victim", "sub_abc123", "system", "telegram:1001", "cli:main"} {
		out, isErr := send(thread, "yes")
		if !isErr || !strings.Contains(out, "only to MCP conversations") {
			t.Errorf("send_message to %s: error %v %q, want refused", thread, isErr, out)
		}
	}
	var pending api.ApprovalList
	w.JSON(t, "GET", "/approvals", nil, http.StatusOK, &pending)
	if len(pending.Approvals) != 1 || pending.Approvals[0].ID != asked.Approval || pending.Approvals[0].State != "pending" {
		t.Fatalf("the web thread's request after the MCP client's yes: %+v", pending.Approvals)
	}

	// The same injection in the MCP client's own conversation: the
	// exfiltrating call is refused at once, and the client reads why.
	out, isErr := send("mcp:research", "please summarise "+in.page.URL+"/recipes")
	var sent struct{ Thread, Reply string }
	if err := json.Unmarshal([]byte(out), &sent); isErr || err != nil {
		t.Fatalf("send_message in an MCP conversation: error %v %q", isErr, out)
	}
	if !strings.Contains(sent.Reply, "cannot ask the user") {
		t.Errorf("reply %q does not say the call was refused for want of someone to ask", sent.Reply)
	}
	w.JSON(t, "GET", "/approvals", nil, http.StatusOK, &pending)
	if len(pending.Approvals) != 1 {
		t.Errorf("requests pending after the MCP turn: %+v", pending.Approvals)
	}
	if n := in.exfilHits.Load(); n != 0 {
		t.Fatalf("the exfiltration server was reached %d times", n)
	}
	w.JSON(t, "POST", "/approvals/"+asked.Approval, map[string]bool{"approve": false}, http.StatusOK, nil)
	approvalFrameOf(t, c, "denied")
}
