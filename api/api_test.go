package api

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

var update = flag.Bool("update", false, "rewrite testdata/contract.json")

// TestJSONContract pins the JSON field names of the API types: the web page
// and other clients depend on them (docs/api.md). Run with -update after an
// intended, documented change.
func TestJSONContract(t *testing.T) {
	at := time.Date(2025, 5, 1, 8, 0, 0, 0, time.UTC)
	res, isErr := "done", false
	score := 0.5
	rev := Revision{Hash: "3f2a9c1d0e8b7a6f5e4d3c2b1a0f9e8d7c6b5a49", Short: "3f2a9c1", Time: at,
		Message: "world: set_user_name", Files: []string{"world_state.json"}}
	restored := Revision{Hash: "9e8d7c6b5a493f2a9c1d0e8b7a6f5e4d3c2b1a0f", Short: "9e8d7c6", Time: at,
		Message: "restore 3f2a9c1\n\nEvery versioned file put back to 3f2a9c1….", Files: []string{"MEMORIES.txt", "world_state.json"}}
	examples := []struct {
		Name  string
		Value any
	}{
		{"reply", Reply{Thread: "web:a", Reply: "hi", ToolCalls: []ToolCall{{ID: "c1", Name: "t", Arguments: json.RawMessage(`{"a":1}`), Result: "r"}},
			Usage: Usage{InputTokens: 1, OutputTokens: 2}, SeedReply: "hello", Error: "e"}},
		{"thread", Thread{ID: "web:a", Channel: "web", Title: "t", CreatedAt: at, UpdatedAt: at, LastUserMessageAt: &at}},
		{"message", Message{ID: 1, Role: "assistant", Text: "x", ToolCalls: []MessageCall{{ID: "c", Name: "n", Arguments: json.RawMessage(`{}`)}},
			ToolResults: []MessageResult{{CallID: "c", Name: "n", Result: "r"}}, SystemEvent: true, Archived: true, CreatedAt: at}},
		{"deleted thread", Thread{ID: "web:b", Channel: "web", Title: "Lyon trip", CreatedAt: at, UpdatedAt: at, ArchivedAt: &at, TitleSource: "user"}},
		{"stopped reply", Message{ID: 2, Role: "assistant", Text: "Half an ans", Status: "stopped", Note: "Stopped before the answer was finished; your message is saved.", CreatedAt: at}},
		{"seed", Message{ID: 3, Role: "user", Text: "[SYSTEM EVENT] A new conversation…", SystemEvent: true, Source: "seed", CreatedAt: at}},
		{"archived message", Message{ID: 4, Role: "user", Text: "q", Archived: true, Segment: 7, CreatedAt: at}},
		{"rename", RenameRequest{Title: "Lyon trip"}},
		{"project status", ProjectStatus{Thread: "web:a", World: WorldState(`{"user":{"name":"Sam"}}`),
			Pulse:     []ProjectPulseItem{{ID: 3, Text: "Book the train", Priority: 1, Thread: "web:a"}},
			Workflows: []ProjectWorkflow{{ID: "wf_1", State: "running", RootThread: "web:a", Workers: []ProjectWorker{{ID: "sub_1", Objective: "List trains", State: "pending", Waiting: "dependencies", Profile: "researcher", ToolCalls: 2}}}},
			Trace:     []TraceEntry{{Turn: 1, MessageID: 5, CallID: "c1", Tool: "fetch_url", Arguments: `{"url":"https://x.example/"}`, Outcome: "ok", Result: `web_page "X" (1 item)`}},
			Evidence:  []EvidenceEntry{{CallID: "c1", Kind: "web_page", Title: "X", Source: "fetch_url", Items: 1, Refs: []string{"https://x.example/"}}},
			Text:      "PROJECT STATUS …"}},
		{"edit", EditRequest{Text: "the new text"}},
		{"segments", SegmentList{Segments: []Segment{{ID: 7, Thread: "web:a", Kind: "branch", Title: "q", AfterMessageID: 1, CreatedAt: at, Messages: 2}}}},
		{"segment", SegmentMessages{Segment: Segment{ID: 8, Thread: "web:a", Kind: "conversation", Title: "t", CreatedAt: at, Messages: 1},
			Messages: []Message{{ID: 5, Role: "user", Text: "x", Archived: true, Segment: 8, CreatedAt: at}}}},
		{"search", SearchResults{Hits: []SearchHit{{Thread: "web:a", Title: "Lyon trip", ThreadArchived: true, Snippet: "«Lyon» trip", At: at}, {Thread: "web:a", Title: "Lyon trip", MessageID: 5, Role: "user",
			Segment: 8, Snippet: "the train to «Lyon»", At: at}}}},
		{"edit frame", ClientFrame{Type: FrameEdit, Thread: "web:a", Message: 5, Text: "new"}},
		{"stopped frame", ServerFrame{Type: FrameDone, Thread: "web:a", Text: "Half an ans", Status: "stopped"}},
		{"client frame", ClientFrame{Type: FrameMessage, Thread: "web:a", Text: "hi", ID: "1"}},
		{"approval answer frame", ClientFrame{Type: FrameApproval, Approval: "ap_1", Approve: &isErr}},
		{"server frames", []ServerFrame{
			{Type: FrameDelta, Thread: "web:a", Text: "He"},
			{Type: FrameToolCall, Thread: "web:a", CallID: "c", Name: "n", Arguments: json.RawMessage(`{}`)},
			{Type: FrameToolResult, Thread: "web:a", CallID: "c", Name: "n", Result: &res, IsError: &isErr},
			{Type: FrameDone, Thread: "web:a", Text: "Hello"},
			{Type: FrameError, Thread: "web:a", Error: "failed", ID: "1"},
			{Type: FrameNotify, Thread: "web:a", Text: "Reminder"},
			{Type: FrameApproval, Thread: "web:a", Approval: "ap_1", Name: "fetch_url", Arguments: json.RawMessage(`{"url":"https://x.example/"}`),
				Text: "fetch_url would contact x.example, a host you did not mention", State: "pending", Deadline: &at},
		}},
		{"approval", Approval{ID: "ap_1", Thread: "web:a", Tool: "fetch_url", Arguments: json.RawMessage(`{"url":"https://x.example/"}`),
			Reason: "r", State: "denied", CreatedAt: at, Deadline: at, DecidedAt: &at}},
		{"approval answer", ApprovalAnswer{Approve: true}},
		{"event", Event{ID: 3, Topic: "turn.completed", Time: at, Payload: json.RawMessage(`{"x":1}`)}},
		{"interaction", Interaction{ID: 1, At: at, Thread: "web:a", Action: "inference", Summary: "s", Detail: json.RawMessage(`{}`),
			InputTokens: 1, OutputTokens: 2, DurationMS: 3, Error: "e"}},
		{"prompt", SystemPrompt{Thread: "web:a", At: at, Text: "p", Chars: 1}},
		{"usage row", UsageRow{Day: "2025-05-01", Role: "main", Backend: "b", Model: "m", Calls: 1, InputTokens: 2, OutputTokens: 3}},
		{"memory", Memory{ID: 1, Text: "t", Kind: "fact", Source: "agent", CreatedAt: at, UpdatedAt: at, ValidFrom: at, Score: &score}},
		{"memory found on add", Memory{ID: 1, Text: "t", Kind: "fact", Source: "user_explicit", CreatedAt: at, UpdatedAt: at, ValidFrom: at, Existing: true}},
		{"memory input not kept", MemoryInput{Text: "t", Kind: "fact", Keep: &isErr}},
		{"pulse item", PulseItem{ID: 1, Text: "t", Priority: 2, Status: PulseActive, Thread: "web:a", Source: "user", CreatedAt: at, UpdatedAt: at}},
		{"skill", Skill{Name: "s", Summary: "x", Content: "x\ny", Chars: 3, UpdatedAt: at}},
		{"task", Task{ID: "t_1", Kind: TaskReminder, Text: "t", Thread: "web:a", Schedule: Schedule{Kind: "weekly", Weekdays: []string{"mon"}, Time: "08:30"},
			Description: "d", Status: TaskActive, NextRun: &at, Runs: 1, CreatedAt: at, UpdatedAt: at}},
		{"receipt", Receipt{ID: 1, TaskID: "t_1", ScheduledAt: at, StartedAt: at, Outcome: "fired", Count: 1, DurationMS: 4}},
		{"workflow", Workflow{ID: "wf", RootThread: "web:a", State: StateRunning, CreatedAt: at, Nodes: []WorkflowNode{{ID: "sub_1", Workflow: "wf",
			Objective: "o", Mode: "full", DependsOn: []string{}, TimeoutSeconds: 300, State: StatePending, Waiting: "dependencies", CreatedAt: at}}}},
		{"setup", SetupStatus{Configured: true, Forms: []SetupForm{{ID: "models", Title: "t", Fields: []SetupField{{Key: "k", Label: "l", Kind: "select", Options: []string{"a"}, Required: true}}}}}},
		{"info", AgentInfo{Version: "v", Auth: "token", ModelsConfigured: true, PanelURL: "http://x/#debug", Features: map[string]bool{"chat": true},
			Commands: []Command{{Name: "help", Help: "h"}}, Extensions: []ExtensionStatus{{ID: "web", State: "running", Health: "ok"}}}},
		{"history", RevisionList{Revisions: []Revision{rev}}},
		{"revision diff", RevisionDiff{Revision: rev, Patch: "diff --git a/world_state.json b/world_state.json\n", Truncated: true}},
		{"restore", RestoreResult{Target: rev, Revision: &restored}},
		{"restore of the current state", RestoreResult{Target: rev}},
		{"models", ModelList{Backends: []ModelBackend{{Name: "openrouter/x", Model: "x", ContextSize: 200000, MaxTokens: 8192, Vision: true}},
			Roles: []ModelRole{{Role: "main", Backends: []string{"openrouter/x"}}, {Role: "scout", Backends: []string{"openrouter/x"}, FallsBackTo: "main"}}}},
		{"thread model", ThreadModel{Thread: "web:a", Backend: "openrouter/x", Effective: &ModelBackend{Name: "openrouter/x", Model: "x", ContextSize: 1, MaxTokens: 1},
			ContextTokens: 1, InputTokens: 2, OutputTokens: 3, Calls: 4}},
		{"thread model request", ThreadModelRequest{Backend: "openrouter/x"}},
		{"dreams", DreamList{Dreams: []Dream{{ID: 7, Trigger: "schedule", Started: at, Finished: at, ModelCalls: 3, Usage: Usage{InputTokens: 1, OutputTokens: 2},
			Revision: "3f2a9c1", Changes: 4, Components: []DreamComponent{{Name: "memories", Status: "ok", Detail: "d", Lines: []string{"l"}}}}}}},
		{"dream revert", DreamRevert{ID: 7, Undone: 12}},
		{"attachment upload", AttachmentUpload{Name: "photo.png", MediaType: "image/png", Data: []byte("png")}},
		{"attachment", AttachmentInfo{Path: "web/a/20250501-080000-3f2a-photo.png", Name: "photo.png", Kind: AttachmentImage, MediaType: "image/png", Size: 3}},
		{"message with attachments", SendRequest{Text: "what is this?", Attachments: []AttachmentRef{{Path: "web/a/20250501-080000-3f2a-photo.png"}}}},
		{"message frame with attachments", ClientFrame{Type: FrameMessage, Thread: "web:a", Text: "", Attachments: []AttachmentRef{{Path: "web/a/x.pdf"}}}},
		{"stored message with attachments", Message{ID: 2, Role: "user", Text: "what is this?", CreatedAt: at,
			Attachments: []MessageAttachment{{Kind: AttachmentImage, Path: "web/a/x.png", Name: "x.png", MediaType: "image/png"}, {Kind: AttachmentFile, Path: "web/a/y.pdf", Name: "y.pdf", MediaType: "application/pdf"}}}},
	}
	got, err := json.MarshalIndent(examples, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "contract.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("the JSON contract changed; if intended, update docs/api.md and run go test ./api -update\n%s", got)
	}
}

// host is an extension.Host that may offer services.
type host struct{ svc *Services }

func (host) ID() string                                           { return "x" }
func (host) Logger() *slog.Logger                                 { return slog.New(slog.DiscardHandler) }
func (host) DataDir() string                                      { return "" }
func (host) DecodeConfig(any) error                               { return nil }
func (host) DB() *sql.DB                                          { return nil }
func (host) Bus() extension.Bus                                   { return nil }
func (host) Receive(context.Context, chat.Inbound) error          { return nil }
func (host) Now() time.Time                                       { return time.Time{} }
func (host) RegisterSecret(string)                                {}
func (host) Migrate(context.Context, string, fs.FS, string) error { return nil }
func (host) Redact(text string) string                            { return text }

type providerHost struct{ host }

func (h providerHost) APIServices() *Services { return h.svc }

func TestServicesFrom(t *testing.T) {
	svc := &Services{}
	tests := []struct {
		name string
		h    extension.Host
		same bool
	}{
		{"host without services", host{}, false},
		{"provider offering none", providerHost{host{}}, false},
		{"provider", providerHost{host{svc: svc}}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ServicesFrom(tc.h)
			if got == nil || (got == svc) != tc.same {
				t.Fatalf("ServicesFrom = %p (offered %p)", got, svc)
			}
		})
	}
	if TimePtr(time.Time{}) != nil || TimePtr(time.Unix(1, 0)) == nil {
		t.Fatal("TimePtr")
	}
}

// Reason leaves out the words of the API error a service error starts
// with, and nothing else.
func TestReason(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"conflict", fmt.Errorf("%w: dreaming needs a language model", ErrConflict), "dreaming needs a language model"},
		{"wrapped twice", fmt.Errorf("%w: %w", ErrNotFound, fmt.Errorf("revert dream 9: %w", errors.New("dream not found"))),
			"revert dream 9: dream not found"},
		{"setup test", fmt.Errorf("%w: the key was refused", ErrTestFailed), "the key was refused"},
		{"the error alone", ErrNotFound, "not found"},
		{"not at the front", fmt.Errorf("#3: %w: memory not found", ErrNotFound), "#3: not found: memory not found"},
		{"the same words, another error", errors.New("conflict: of interest"), "conflict: of interest"},
		{"any other error", errors.New("disk on fire"), "disk on fire"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Reason(tc.err); got != tc.want {
				t.Errorf("Reason = %q, want %q", got, tc.want)
			}
		})
	}
}
