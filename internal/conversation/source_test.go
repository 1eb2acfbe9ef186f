package conversation

import (
	"context"
	"io/fs"
	"testing"
	"testing/fstest"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/llm"
)

// System events and seeds are told apart from the user's words by their
// stored source, not by their text: a user may type "[SYSTEM EVENT]".
func TestMessageSource(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	th := chat.ThreadID("web:src")
	mustAppend := func(src Source, m llm.Message) {
		t.Helper()
		if _, err := s.AppendFrom(ctx, th, src, m); err != nil {
			t.Fatal(err)
		}
	}
	mustAppend(SourceSeed, llm.UserText("[SYSTEM EVENT] A new conversation begins."))
	mustAppend(SourceConversation, llm.AssistantText("Hello!"))
	mustAppend(SourceSystemEvent, llm.UserText("reminder: water the plants")) // no prefix needed
	if n, err := s.CountUserMessagesSince(ctx, th, 0); err != nil || n != 0 {
		t.Fatalf("user messages after a seed and an event: %d, %v", n, err)
	}
	if th, _, err := s.Thread(ctx, th); err != nil || th.Title != "" || !th.LastUserMessageAt.IsZero() {
		t.Fatalf("a seed or event named the thread or counted as the user's: %+v, %v", th, err)
	}
	mustAppend(SourceConversation, llm.UserText("[SYSTEM EVENT] is what I typed"))
	if n, _ := s.CountUserMessagesSince(ctx, th, 0); n != 1 {
		t.Fatalf("the user's message starting with the prefix counted %d times, want 1", n)
	}
	if got, _, _ := s.Thread(ctx, th); got.Title != "[SYSTEM EVENT] is what I typed" {
		t.Errorf("title %q", got.Title)
	}
	h, err := s.History(ctx, th)
	if err != nil {
		t.Fatal(err)
	}
	want := []Source{SourceSeed, SourceConversation, SourceSystemEvent, SourceConversation}
	if len(h) != len(want) {
		t.Fatalf("%d messages", len(h))
	}
	for i, m := range h {
		if m.Source != want[i] {
			t.Errorf("message %d source %q, want %q", i, m.Source, want[i])
		}
	}
	if _, err := s.AppendFrom(ctx, th, Source("robot"), llm.UserText("x")); err == nil {
		t.Error("an unknown source was accepted")
	}
}

// Rows written before the source column existed are classified by the old
// text prefix once, when the migration runs.
func TestSourceMigrationBackfill(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	first, err := fs.ReadFile(migrationFiles, "migrations/001_conversation.sql")
	if err != nil {
		t.Fatal(err)
	}
	if err := extension.Migrate(ctx, db, Component, fstest.MapFS{"001_conversation.sql": {Data: first}}, "."); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO threads (id, created_at, updated_at) VALUES ('web:old', 1, 1)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range []struct{ role, text string }{
		{"user", "[SYSTEM EVENT] worker sub_1 finished"},
		{"user", "hi"},
		{"assistant", "[SYSTEM EVENT] quoted by the assistant"},
	} {
		parts, err := encodeParts(llm.Message{Parts: []llm.Part{llm.Text{Text: m.text}}}.Parts)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, `INSERT INTO messages (thread_id, role, parts, created_at) VALUES ('web:old', ?, ?, 1)`, m.role, string(parts)); err != nil {
			t.Fatal(err)
		}
	}
	s, err := Open(ctx, db, Options{})
	if err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctx, "web:old")
	if err != nil {
		t.Fatal(err)
	}
	want := []Source{SourceSystemEvent, SourceConversation, SourceConversation}
	for i, m := range h {
		if m.Source != want[i] {
			t.Errorf("message %d (%s %q): source %q, want %q", i, m.Message.Role, m.Message.Text(), m.Source, want[i])
		}
	}
}
