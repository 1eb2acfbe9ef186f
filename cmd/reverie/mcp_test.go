package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extensions/mcp/mcptest"
)

// TestMCPCommandWithInspector: the npm MCP inspector, an outside client,
// lists the tools of `reverie mcp --data DIR` over stdio.
func TestMCPCommandWithInspector(t *testing.T) {
	p := mcptest.Find(t)
	dir := filepath.Join(t.TempDir(), "data")
	home := t.TempDir()
	if code, out, errs := runCLI(t, []string{"HOME=" + home}, "init", "--data", dir); code != ExitOK {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// The inspector starts its server with a minimal environment: a
	// wrapper script sets the variable that turns the test binary into
	// reverie.
	wrapper := filepath.Join(t.TempDir(), "reverie")
	script := "#!/bin/sh\n" + envAsMain + "=1 exec '" + exe + "' \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(script), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	args := append(slices.Clone(p.Inspector), "--cli", wrapper, "mcp", "--data", dir, "--method", "tools/list")
	cmd := exec.CommandContext(ctx, p.Node, args...)
	cmd.Dir = p.Dir
	cmd.Env = append(os.Environ(), "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("inspector: %v\n%s", err, out)
	}
	for _, want := range []string{"search_memory", "remember", "list_pulse", "add_pulse_item", "set_reminder", "list_reminders", "send_message"} {
		if !strings.Contains(string(out), `"name": "`+want+`"`) {
			t.Errorf("the inspector's tools/list lacks %s:\n%s", want, out)
		}
	}
}

// TestDoctorChecksMCPServers: reverie doctor starts each MCP server once
// and reports the ones that do not come up.
func TestDoctorChecksMCPServers(t *testing.T) {
	p := mcptest.Find(t)
	dir := filepath.Join(t.TempDir(), "data")
	env := []string{"HOME=" + t.TempDir()}
	if code, out, errs := runCLI(t, env, "init", "--data", dir); code != ExitOK {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	args, _ := json.Marshal(append(slices.Clone(p.Everything), "stdio"))
	cfg := fmt.Sprintf("mcp:\n  servers:\n    everything:\n      command: %q\n      args: %s\n    broken:\n      command: /nonexistent/mcp-server\n", p.Node, args)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, env, "doctor", "--data", dir)
	if code != ExitFailure || !strings.Contains(out, "server everything is up with") || !strings.Contains(out, "server broken is down") {
		t.Fatalf("doctor: %d\n%s", code, out)
	}
}

// TestMemoryImportFromMCP: the memories of @modelcontextprotocol/server-memory
// (a knowledge graph) are copied into Reverie's store.
func TestMemoryImportFromMCP(t *testing.T) {
	p := mcptest.Find(t)
	dir := filepath.Join(t.TempDir(), "data")
	env := []string{"HOME=" + t.TempDir()}
	if code, out, errs := runCLI(t, env, "init", "--data", dir); code != ExitOK {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	graph := filepath.Join(t.TempDir(), "memory.jsonl")
	// The last observation is refused (it looks like a credential) and
	// named on stderr with its escape sequence shown, not sent raw.
	lines := `{"type":"entity","name":"Alice","entityType":"person","observations":["works at Acme","likes green tea","password: hunter2\u001b[2K"]}
{"type":"entity","name":"Acme","entityType":"company","observations":["makes anvils"]}
{"type":"relation","from":"Alice","to":"Acme","relationType":"works_at"}
`
	if err := os.WriteFile(graph, []byte(lines), 0o600); err != nil {
		t.Fatal(err)
	}
	args, _ := json.Marshal(p.Memory)
	cfg := fmt.Sprintf("mcp:\n  servers:\n    kg:\n      command: %q\n      args: %s\n      env: {MEMORY_FILE_PATH: %q}\n", p.Node, args, graph)
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, env, "memory", "import", "--data", dir, "--from-mcp", "kg", "--tool", "read_graph")
	if code != ExitOK || !strings.Contains(out, "imported 3 memories from MCP server kg (0 already known, 1 refused)") ||
		!strings.Contains(errs, `password: hunter2\x1b[2K`) || strings.Contains(errs, "\x1b") {
		t.Fatalf("import: %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI(t, env, "memory", "search", "--data", dir, "green tea")
	if code != ExitOK || !strings.Contains(out, "Alice: likes green tea") {
		t.Fatalf("search after import: %d %q", code, out)
	}
	// Importing again duplicates nothing.
	code, out, _ = runCLI(t, env, "memory", "import", "--data", dir, "--from-mcp", "kg", "--tool", "read_graph")
	if code != ExitOK || !strings.Contains(out, "imported 0 memories") || !strings.Contains(out, "3 already known") {
		t.Fatalf("second import: %d %q", code, out)
	}
	code, _, errs = runCLI(t, env, "memory", "import", "--data", dir, "--from-mcp", "nope")
	if code == ExitOK || !strings.Contains(errs, "no such MCP server") {
		t.Fatalf("unknown server: %d %q", code, errs)
	}

	// Beside a running agent the memories go through its control socket
	// (in this process the data dir would be locked).
	more := `{"type":"entity","name":"Bob","entityType":"person","observations":["plays the cello"]}` + "\n"
	if err := os.WriteFile(graph, []byte(lines+more), 0o600); err != nil {
		t.Fatal(err)
	}
	startAgent(t, dir, childEnv(t, "REVERIE_WEB__LISTEN="+freeAddr(t), "REVERIE_LOG__FILE=false"))
	code, out, errs = runCLI(t, env, "memory", "import", "--data", dir, "--from-mcp", "kg", "--tool", "read_graph")
	if code != ExitOK || !strings.Contains(out, "imported 1 memories from MCP server kg (3 already known, 1 refused)") ||
		!strings.Contains(errs, `password: hunter2\x1b[2K`) || strings.Contains(errs, "\x1b") {
		t.Fatalf("import beside the agent: %d %q %q", code, out, errs)
	}
	code, out, _ = runCLI(t, env, "memory", "list", "--data", dir, "--json")
	var ms []memoryJSON
	if err := json.Unmarshal([]byte(out), &ms); code != ExitOK || err != nil {
		t.Fatalf("list beside the agent: %d %v %q", code, err, out)
	}
	found := false
	for _, m := range ms {
		found = found || m.Text == "Bob: plays the cello" && m.Source == "import"
	}
	if !found {
		t.Errorf("the imported memory is not in the running agent's store: %q", out)
	}
}

// A one-shot send in process waits for the extensions still starting
// (extension.StartWaiter: the MCP servers) and names on stderr the MCP
// server that is not up; the exchange runs without its tools.
func TestSendInProcessNamesMCPServersNotUp(t *testing.T) {
	model, _ := chatModel(t)
	dir := filepath.Join(t.TempDir(), "data")
	env := chatEnv(t, model, "REVERIE_WEB__LISTEN=127.0.0.1:0")
	if code, out, errs := runCLI(t, env, "init", "--data", dir); code != ExitOK {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	cfg := "mcp:\n  servers:\n    broken:\n      command: /nonexistent/mcp-server\n"
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	code, out, errs := runCLI(t, env, "send", "hello", "--data", dir, "--mcp-wait", "2m")
	if code != ExitOK || !strings.Contains(out, "hello") {
		t.Fatalf("send: exit %d\n%s%s", code, out, errs)
	}
	if !strings.Contains(errs, "reverie: MCP server broken is not up (down: ") || !strings.Contains(errs, "no such file") {
		t.Errorf("stderr does not name the server that is not up:\n%s", errs)
	}
}
