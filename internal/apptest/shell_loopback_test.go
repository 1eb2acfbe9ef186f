package apptest

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// A sandboxed command with network access cannot reach the agent's own
// API (to approve its own requests, with web.auth: none) nor another
// loopback service the test started; it still gets out (a listener on the
// host's own non-loopback address). Bubblewrap and slirp4netns are needed
// (CI installs both).
func TestShellWithNetworkCannotReachLoopback(t *testing.T) {
	for _, tool := range []string{"bwrap", "slirp4netns", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("CI=true but %s is missing (.ci/run installs it)", tool)
			}
			t.Skipf("%s is not installed", tool)
		}
	}
	other, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	w := StartWeb(t, WithEnv("REVERIE_TOOLS__SHELL__SANDBOX=required", "REVERIE_TOOLS__SHELL__NETWORK=true", "REVERIE_WEB__AUTH=none"))
	webPort := strings.TrimPrefix(w.Base, "http://127.0.0.1:")
	targets := []string{"127.0.0.1/" + webPort, "localhost/" + webPort, strings.Replace(other.Addr().String(), ":", "/", 1)}
	if ip := globalIPv4(); ip != "" {
		out, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
		if err != nil {
			t.Fatal(err)
		}
		defer out.Close()
		targets = append(targets, strings.Replace(out.Addr().String(), ":", "/", 1))
	}
	var script strings.Builder
	for _, tg := range targets {
		fmt.Fprintf(&script, "if timeout 5 bash -c 'exec 3<>/dev/tcp/%s' 2>/dev/null; then echo 'REACHED %s'; else echo 'BLOCKED %s'; fi; ", tg, tg, tg)
	}
	w.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == "tool" {
			return llmtest.ServerReply{Text: "Result: " + last.Text()}
		}
		if strings.Contains(lastUser(req), "probe") {
			args, _ := json.Marshal(map[string]string{"command": script.String()})
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_probe", Name: "execute_shell", Arguments: args}}}
		}
		return llmtest.ServerReply{Text: "ok"}
	})
	c := dialWS(t, w, "?thread=web:probe")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:probe", Text: "probe the network"})
	var result string
	for {
		f := readFrame(t, c)
		if f.Type == api.FrameApproval && f.State == "pending" {
			yes := true // the user approves the command: the sandbox must still hold
			writeFrame(t, c, api.ClientFrame{Type: api.FrameApproval, Approval: f.Approval, Approve: &yes})
		}
		if f.Type == api.FrameToolResult && f.Result != nil {
			result = *f.Result
		}
		if f.Type == api.FrameDone || f.Type == api.FrameError {
			break
		}
	}
	for i, tg := range targets {
		want := "BLOCKED "
		if i == 3 {
			want = "REACHED " // the way out
		}
		if !strings.Contains(result, want+tg) {
			t.Errorf("%s: want %s in the command's result:\n%s", tg, strings.TrimSpace(want), result)
		}
	}
}

// globalIPv4 is the host's first global unicast IPv4 address, or "".
func globalIPv4() string {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return ""
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && n.IP.IsGlobalUnicast() {
			return n.IP.String()
		}
	}
	return ""
}
