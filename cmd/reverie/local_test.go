package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/versioning"
)

// startAgent runs `reverie agent` on dir in a child process until the test
// ends, and returns once it is ready.
func startAgent(t *testing.T, dir string, env []string) {
	t.Helper()
	startChild(t, env, "agent ready", "agent", "--data", dir)
}

// startChild runs reverie with args in a child process until the test
// ends (then SIGTERM, which it must exit cleanly on), and returns once a
// line of its stderr contains ready.
func startChild(t *testing.T, env []string, ready string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	cmd := exec.CommandContext(ctx, os.Args[0], args...)
	cmd.Env = env
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	stderr, err := cmd.StderrPipe()
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	var seen strings.Builder
	found := false
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		seen.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), ready) {
			found = true
			break
		}
	}
	drained := make(chan struct{})
	go func() { _, _ = io.Copy(io.Discard, stderr); close(drained) }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		<-drained
		if err := cmd.Wait(); err != nil {
			t.Errorf("reverie %v after SIGTERM: %v", args, err)
		}
		cancel()
	})
	if !found {
		t.Fatalf("reverie %v never said %q:\n%s", args, ready, seen.String())
	}
}

// The command line works beside a running agent: send, memory, dream,
// chat and mcp go through the agent's control socket instead of saying
// "stop the running agent first".
func TestCommandsBesideARunningAgent(t *testing.T) {
	model, _ := chatModel(t)
	dir := filepath.Join(t.TempDir(), "data")
	env := chatEnv(t, model, "REVERIE_WEB__LISTEN="+freeAddr(t))
	startAgent(t, dir, append(childEnv(t), env...))
	if _, err := os.Stat(filepath.Join(dir, "reverie.sock")); err != nil {
		t.Fatalf("no control socket: %v", err)
	}
	mustRun := func(stdin string, args ...string) string {
		t.Helper()
		var out, errb bytes.Buffer
		code := run(context.Background(), append(args, "--data", dir), strings.NewReader(stdin), &out, &errb, env)
		if code != ExitOK {
			t.Fatalf("%v beside the agent: exit %d\n%s%s", args, code, out.String(), errb.String())
		}
		return out.String()
	}
	if out := mustRun("", "send", "hello"); !strings.Contains(out, "Echo9: **hello**") {
		t.Errorf("send: %q", out)
	}
	if out := mustRun("", "memory", "add", "My sister Ana lives in Porto."); !strings.Contains(out, "remembered as #") {
		t.Errorf("memory add: %q", out)
	}
	if out := mustRun("", "memory", "add", "my sister ana lives in porto"); !strings.Contains(out, "already remembered as #") {
		t.Errorf("memory add of a duplicate: %q", out)
	}
	out := mustRun("", "memory", "search", "where does my sister live")
	if !strings.Contains(out, "Ana lives in Porto") {
		t.Errorf("memory search: %q", out)
	}
	id := strings.Fields(strings.Split(out, "\n")[1])[0]
	// Not "My sister Ana lives in Lisbon.": to the sentence encoder that is
	// the Porto line again (cosine 0.91), which the dream below would merge
	// as a duplicate (and refuse, dropping half of a store of two) rather
	// than check as a contradiction.
	out = mustRun("", "memory", "edit", id, "My sister Ana moved to Lisbon last spring to teach piano.")
	cur, ok := strings.CutPrefix(strings.TrimSpace(out), "#"+id+" is now #")
	if !ok {
		t.Fatalf("memory edit: %q", out)
	}
	cur, _, _ = strings.Cut(cur, " ")
	// The id the user was told of is the memory: forgetting it refuses
	// and names the current version, in words, without an HTTP status.
	wantFailure(t, env, dir, []string{"memory", "forget", id},
		"reverie: memory "+id+" was replaced by memory "+cur+", its current version: forget "+cur+" to forget it (nothing was forgotten)\n")
	wantFailure(t, env, dir, []string{"memory", "edit", id, "My sister Ana lives in Faro."},
		"reverie: memory "+id+" was replaced by memory "+cur+", its current version: edit "+cur+" to change it (nothing was changed)\n")
	if out := mustRun("", "memory", "list", "--superseded"); !strings.Contains(out, "Lisbon") || !strings.Contains(out, "(superseded by #") {
		t.Errorf("memory list --superseded: %q", out)
	}
	if out := mustRun("", "memory", "list", "--by-access"); !strings.Contains(out, "Lisbon") || strings.Contains(out, "Porto") {
		t.Errorf("memory list --by-access: %q", out)
	}
	// Restoring MEMORIES.txt as it was before the edit goes through the
	// agent, which re-syncs its store: Porto is a current memory again.
	var revs []versioning.Revision
	if err := json.Unmarshal([]byte(mustRun("", "memory", "history", "--json", "--path", "MEMORIES.txt")), &revs); err != nil || len(revs) < 2 {
		t.Fatalf("memory history beside the agent: %v %+v", err, revs)
	}
	out = mustRun("", "memory", "restore", revs[1].Short)
	if !strings.Contains(out, "Restored "+revs[1].Short) || !strings.Contains(out, "Undo with: reverie memory restore "+revs[0].Short) ||
		!strings.Contains(out, "re-syncs its memory store") {
		t.Errorf("memory restore beside the agent: %q", out)
	}
	if out := mustRun("", "memory", "list"); !strings.Contains(out, "Ana lives in Porto") {
		t.Errorf("memory list after the restore: %q", out)
	}
	if out := mustRun("", "memory", "restore", revs[1].Short); !strings.Contains(out, "Nothing to restore") {
		t.Errorf("second restore beside the agent: %q", out)
	}
	// telegram approve (an extension's command) asks the running agent,
	// which runs no Telegram channel here.
	var tgOut, tgErr bytes.Buffer
	if code := run(context.Background(), []string{"telegram", "approve", "ABCD2345", "--data", dir}, strings.NewReader(""), &tgOut, &tgErr, env); code != ExitFailure ||
		tgErr.String() != "reverie: the telegram channel is not running\n" {
		t.Errorf("telegram approve beside the agent: exit %d\n%s%s", code, tgOut.String(), tgErr.String())
	}
	if out := mustRun("", "doctor"); !strings.Contains(out, "[ok  ] agent") || !strings.Contains(out, "answers on its control socket") {
		t.Errorf("doctor: %q", out)
	}
	if out := mustRun("", "dream", "list"); !strings.Contains(out, "no dreams yet") {
		t.Errorf("dream list: %q", out)
	}
	if out := mustRun("", "dream"); !strings.Contains(out, "Dream #1 (cli)") || !strings.Contains(out, "Undo with: reverie dream revert 1") {
		t.Errorf("dream: %q", out)
	}
	if out := mustRun("", "dream", "list"); !strings.Contains(out, "Dream #1 (cli)") {
		t.Errorf("dream list after a dream: %q", out)
	}
	// The agent's refusals read as they do in process (TestDreamInProcess).
	mustRun("", "dream", "revert", "1")
	for _, c := range refusals {
		wantFailure(t, env, dir, c.args, c.stderr)
	}
	if out := mustRun("hi there\n", "chat"); !strings.Contains(out, "Echo9: **hi there**") {
		t.Errorf("piped chat: %q", out)
	}
	// An MCP client on stdio reaches the agent's /mcp through the bridge.
	mcpIn := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"test","version":"1"}}}
{"jsonrpc":"2.0","method":"notifications/initialized"}
{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_memory","arguments":{"query":"where does my sister live"}}}
`
	if out := mustRun(mcpIn, "mcp"); !strings.Contains(out, `"id":2`) || !strings.Contains(out, "Lisbon") {
		t.Errorf("mcp bridge: %q", out)
	}
}

// refusals are commands a data dir with dream #1 reverted refuses, with
// the message each prints, in process and through a running agent alike:
// the reason in words, no HTTP status, no API error word in front.
var refusals = []struct {
	args   []string
	stderr string
}{
	{[]string{"dream", "revert", "1"}, "reverie: dream 1 was already reverted\n"},
	{[]string{"dream", "revert", "99"}, "reverie: dream 99 not found\n"},
	{[]string{"memory", "forget", "99"}, "reverie: memory 99 not found\n"},
	{[]string{"memory", "forget", "99", "98"}, "reverie: memory 99 not found\nmemory 98 not found\n"},
	{[]string{"memory", "edit", "99", "new text"}, "reverie: memory 99 not found\n"},
	{[]string{"memory", "add", " "}, "reverie: memory text is empty\n"},
}

// wantFailure runs a command on dir that must fail (exit 1) printing
// exactly stderr and nothing on stdout.
func wantFailure(t *testing.T, env []string, dir string, args []string, stderr string) {
	t.Helper()
	code, out, errs := runCLI(t, env, append(args, "--data", dir)...)
	if code != ExitFailure || out != "" || errs != stderr {
		t.Errorf("%v: exit %d, stdout %q\nstderr %q\nwant  %q", args, code, out, errs, stderr)
	}
}

// Without an agent, dream runs in process and prints the same report.
func TestDreamInProcess(t *testing.T) {
	model, _ := chatModel(t)
	dir := t.TempDir()
	env := chatEnv(t, model)
	code, out, errs := runCLI(t, env, "dream", "--data", dir)
	// No memories, and the fake model's skills are refused: the dream
	// changes nothing, so no undo is offered (a revert still answers).
	if code != ExitOK || !strings.Contains(out, "Dream #1 (cli)") || !strings.Contains(out, "Nothing was changed, so there is nothing to undo.") {
		t.Fatalf("dream in process: exit %d\n%s%s", code, out, errs)
	}
	code, out, errs = runCLI(t, env, "dream", "revert", "1", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "dream #1 reverted") {
		t.Fatalf("dream revert: exit %d\n%s%s", code, out, errs)
	}
	for _, c := range refusals {
		wantFailure(t, env, dir, c.args, c.stderr)
	}
	// In a conversation, a refused revert is an answer, not a failure.
	for arg, want := range map[string]string{"1": "Dream #1 was already reverted.\n", "99": "Dream #99 not found.\n"} {
		code, out, errs = runCLI(t, env, "send", "/dream revert "+arg, "--data", dir)
		if code != ExitOK || out != want {
			t.Errorf("send /dream revert %s: exit %d, stdout %q, stderr %q; want %q", arg, code, out, errs, want)
		}
	}
}
