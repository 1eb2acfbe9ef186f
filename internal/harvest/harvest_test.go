package harvest

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/llm"
)

type fakeSpawner struct {
	mu   sync.Mutex
	reqs []workflow.SpawnRequest
}

func (f *fakeSpawner) Spawn(_ context.Context, r workflow.SpawnRequest) (workflow.SpawnResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reqs = append(f.reqs, r)
	return workflow.SpawnResult{ID: "sub_" + strconv.Itoa(len(f.reqs))}, nil
}

func (f *fakeSpawner) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.reqs)
}

type env struct {
	conv  *conversation.Store
	log   *interactions.Store
	spawn *fakeSpawner
	h     *Harvester
	now   func() time.Time
}

func newEnv(t *testing.T, now func() time.Time) *env {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "r.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	conv, err := conversation.Open(ctx, db, conversation.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	ilog, err := interactions.Open(ctx, db, interactions.Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	e := &env{conv: conv, log: ilog, spawn: &fakeSpawner{}, now: now}
	e.h, err = New(ctx, Options{DB: db, Threads: conv, Spawner: e.spawn, Log: ilog, Now: now,
		Memories:        func(context.Context) (string, error) { return "Lives in Lyon.", nil },
		MaxMessageChars: 100})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// chat appends n user/assistant exchanges to thread.
func (e *env) chat(t *testing.T, thread chat.ThreadID, n int) {
	t.Helper()
	for i := range n {
		if _, err := e.conv.Append(context.Background(), thread,
			llm.UserText("user message "+strconv.Itoa(i)), llm.AssistantText("reply "+strconv.Itoa(i))); err != nil {
			t.Fatal(err)
		}
	}
}

func TestThresholds(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	clk := func() time.Time { return now }
	cases := []struct {
		name    string
		thread  chat.ThreadID
		msgs    int
		idle    time.Duration
		wantNow bool
	}{
		{"19 messages, busy", "web:a", 19, 0, false},
		{"20 messages", "web:a", 20, 0, true},
		{"5 messages, idle 15m", "web:a", 5, 15 * time.Minute, true},
		{"5 messages, idle 14m59s", "web:a", 5, 15*time.Minute - time.Second, false},
		{"4 messages, idle a day", "web:a", 4, 24 * time.Hour, false},
		{"sub-session, 50 messages", "sub_abc", 50, time.Hour, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			now = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
			e := newEnv(t, clk)
			e.chat(t, c.thread, c.msgs)
			now = now.Add(c.idle)
			d, err := e.h.Check(context.Background(), c.thread)
			if err != nil {
				t.Fatal(err)
			}
			if d.Now != c.wantNow {
				t.Fatalf("decision %+v, want now=%v", d, c.wantNow)
			}
		})
	}
}

func TestHarvestTranscriptAndPosition(t *testing.T) {
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	e := newEnv(t, func() time.Time { return now })
	ctx := context.Background()
	long := strings.Repeat("a", 80) + "MIDDLE" + strings.Repeat("z", 80)
	if _, err := e.conv.Append(ctx, "web:a",
		llm.UserText("My daughter Mia starts school in September."),
		llm.AssistantText("Noted!")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.conv.AppendFrom(ctx, "web:a", conversation.SourceSystemEvent,
		llm.UserText("[SYSTEM EVENT] sub-session finished")); err != nil {
		t.Fatal(err)
	}
	if _, err := e.conv.Append(ctx, "web:a",
		llm.Message{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "1", Content: "tool output"}}},
		llm.UserText(long)); err != nil {
		t.Fatal(err)
	}
	id, err := e.h.Harvest(ctx, "web:a", "test")
	if err != nil || id == "" {
		t.Fatalf("harvest = %q, %v", id, err)
	}
	r := e.spawn.reqs[0]
	for _, want := range []string{"User: My daughter Mia", "Assistant: Noted!", "Lives in Lyon.", "aaaa", "zzzz", "[…]"} {
		if !strings.Contains(r.Context, want) {
			t.Errorf("context lacks %q:\n%s", want, r.Context)
		}
	}
	for _, bad := range []string{"SYSTEM EVENT", "tool output", "MIDDLE"} {
		if strings.Contains(r.Context, bad) {
			t.Errorf("context holds %q:\n%s", bad, r.Context)
		}
	}
	if r.Parent != "" || r.Mode != "minimal" || strings.Join(r.ToolNames, ",") != "harvest_memory,search_memory" {
		t.Errorf("request %+v", r)
	}
	// Nothing new: nothing harvested again, by this Harvester (which keeps
	// the position in memory) or by one started afresh (which reads it).
	if d, _ := e.h.Check(ctx, "web:a"); d.NewUserMessages != 0 {
		t.Errorf("after harvest: %+v", d)
	}
	restarted, err := New(ctx, e.h.o)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := restarted.Check(ctx, "web:a"); err != nil || d.NewUserMessages != 0 {
		t.Errorf("after harvest and a restart: %+v, %v", d, err)
	}
	entries, err := e.log.List(ctx, interactions.Filter{Action: interactions.ActionMemoryHarvest})
	if err != nil || len(entries) != 1 || entries[0].Thread != "web:a" {
		t.Fatalf("interaction log %+v, %v", entries, err)
	}
	if _, err := e.h.Harvest(ctx, "sub_x", "test"); err == nil {
		t.Error("a sub-session thread was harvested")
	}
}

func TestTranscriptCap(t *testing.T) {
	var msgs []conversation.StoredMessage
	for i := range 2000 {
		msgs = append(msgs, conversation.StoredMessage{ID: int64(i), Message: llm.UserText(strconv.Itoa(i) + " " + strings.Repeat("x", 60))})
	}
	text, n := Transcript(msgs, 2000, 60_000)
	if len(text) > 60_000 || n == 0 || n == len(msgs) {
		t.Fatalf("%d chars, %d messages", len(text), n)
	}
	if !strings.Contains(text, "User: 1999 ") {
		t.Error("the newest message was dropped")
	}
}

func TestRunIdleTimerAndEvents(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		e := newEnv(t, time.Now)
		events := make(chan extension.Event, 10)
		e.h.o.Watch = func(context.Context, string, int) <-chan extension.Event { return events }
		done := make(chan error)
		go func() { done <- e.h.Run(ctx) }()
		synctest.Wait()
		if e.spawn.count() != 0 {
			t.Fatal("harvest with no conversation")
		}
		// Six user messages, then silence: one harvest after 15 minutes.
		e.chat(t, "web:a", 6)
		payload, _ := json.Marshal(map[string]string{"thread": "web:a"})
		events <- extension.Event{Topic: TopicTurnCompleted, Payload: payload}
		synctest.Wait()
		if e.spawn.count() != 0 {
			t.Fatal("harvest before the idle timeout")
		}
		time.Sleep(14 * time.Minute)
		synctest.Wait()
		if e.spawn.count() != 0 {
			t.Fatal("harvest after 14 minutes")
		}
		time.Sleep(2 * time.Minute)
		synctest.Wait()
		if e.spawn.count() != 1 {
			t.Fatalf("%d harvests after 16 idle minutes, want 1", e.spawn.count())
		}
		// Twenty more at once: harvested on the event, without waiting.
		e.chat(t, "web:a", 20)
		events <- extension.Event{Topic: TopicTurnCompleted, Payload: payload}
		synctest.Wait()
		if e.spawn.count() != 2 {
			t.Fatalf("%d harvests after 20 messages, want 2", e.spawn.count())
		}
		// A sub-session's turns never trigger anything.
		e.chat(t, "sub_1", 30)
		sub, _ := json.Marshal(map[string]string{"thread": "sub_1"})
		events <- extension.Event{Topic: TopicTurnCompleted, Payload: sub}
		time.Sleep(time.Hour)
		synctest.Wait()
		if e.spawn.count() != 2 {
			t.Fatalf("%d harvests, want 2", e.spawn.count())
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	})
}
