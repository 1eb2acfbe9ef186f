package app

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/tool"
)

// translator is an extension providing a specialised agent.
type translator struct {
	asTool bool
	mu     sync.Mutex
	got    []extension.AgentInvocation
}

func (x *translator) Init(context.Context, extension.Host) error { return nil }

func (x *translator) AgentDescriptor() extension.AgentDescriptor {
	return extension.AgentDescriptor{Name: "translator", Description: "Translates text into French.", AsTool: x.asTool}
}

func (x *translator) Invoke(_ context.Context, inv extension.AgentInvocation) (extension.AgentResponse, error) {
	x.mu.Lock()
	x.got = append(x.got, inv)
	x.mu.Unlock()
	if inv.Task == "fail" {
		return extension.AgentResponse{}, errors.New("the dictionary is missing")
	}
	return extension.AgentResponse{Text: "bonjour (" + inv.Context + ")", ToolCalls: []extension.AgentToolCall{{Name: "lookup", Arguments: json.RawMessage(`{"word":"hello"}`)}}}, nil
}

var _ extension.AgentProvider = (*translator)(nil)

// An AgentProvider that asks for it is a tool of the main agent; the call
// carries the turn's thread, and a failure is a tool error for the model.
func TestAgentsAsTools(t *testing.T) {
	for _, asTool := range []bool{true, false} {
		x := &translator{asTool: asTool}
		reg := append(webInfo(t), extension.Info{ID: "translator", New: func() extension.Extension { return x }})
		dir := filepath.Join(t.TempDir(), "data")
		a, err := New(context.Background(), Options{DataDir: dir, Env: []string{"REVERIE_WEB__LISTEN=127.0.0.1:0", "REVERIE_LOG__FILE=false"}, Console: io.Discard, Registry: reg})
		if err != nil {
			t.Fatal(err)
		}
		var tr tool.Tool
		for _, tl := range a.turnTools() {
			if tl.Name() == "agent_translator" {
				tr = tl
			}
		}
		if !asTool {
			if tr != nil {
				t.Error("an agent without AsTool became a tool")
			}
			a.Close()
			continue
		}
		if tr == nil {
			t.Fatal("the translator agent is not a tool")
		}
		ctx := tool.WithCall(context.Background(), tool.Call{Thread: chat.ThreadID("web:t1"), Agent: "main"})
		out, err := tr.Call(ctx, json.RawMessage(`{"task":"say hello","context":"formal"}`))
		if err != nil || !strings.Contains(out.Content, `"kind":"agent_result"`) || !strings.Contains(out.Content, `"text":"bonjour (formal)"`) ||
			!strings.Contains(out.Content, `"title":"lookup"`) {
			t.Errorf("call = %q, %v", out.Content, err)
		}
		if _, err := tr.Call(ctx, json.RawMessage(`{"task":"fail"}`)); err == nil || !strings.Contains(err.Error(), "dictionary") {
			t.Errorf("a failing agent: %v", err)
		}
		if _, err := tr.Call(ctx, json.RawMessage(`{"task":"  "}`)); err == nil {
			t.Error("an empty task was handed to the agent")
		}
		x.mu.Lock()
		if len(x.got) != 2 || x.got[0].Thread != "web:t1" || x.got[0].Task != "say hello" {
			t.Errorf("invocations %+v", x.got)
		}
		x.mu.Unlock()
		a.Close()
	}
}

// tools.allow and tools.deny shape the main assistant's tool set; the
// sub-session tools are filtered the same way.
func TestMainToolAllowDeny(t *testing.T) {
	cases := []struct {
		name       string
		yaml       string
		want, lose []string
	}{
		{"everything by default", "", []string{"read_file", "pulse", "spawn_sub_session", "execute_shell"}, nil},
		{"allow a category and a name", "tools:\n  allow: [\"@memory\", read_file]\n",
			[]string{"pulse", "read_file"}, []string{"execute_shell", "spawn_sub_session", "set_reminder"}},
		{"deny one", "tools:\n  deny: [execute_shell, spawn_sub_session]\n",
			[]string{"read_file", "pulse", "list_sub_sessions"}, []string{"execute_shell", "spawn_sub_session"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "data")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(c.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			a, err := New(context.Background(), Options{DataDir: dir, Env: []string{"REVERIE_WEB__LISTEN=127.0.0.1:0", "REVERIE_LOG__FILE=false"}, Console: io.Discard, Registry: webInfo(t)})
			if err != nil {
				t.Fatal(err)
			}
			defer a.Close()
			have := map[string]bool{}
			for _, tl := range a.threadTools("web:x") {
				have[tl.Name()] = true
			}
			for _, n := range c.want {
				if !have[n] {
					t.Errorf("%s missing", n)
				}
			}
			for _, n := range c.lose {
				if have[n] {
					t.Errorf("%s still there", n)
				}
			}
		})
	}
}
