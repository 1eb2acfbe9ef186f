package conversation

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension/extensiontest"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

func openDB(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func newStore(t testing.TB) (*Store, *extensiontest.Clock, *sql.DB) {
	t.Helper()
	db := openDB(t)
	clk := extensiontest.NewClock(time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC))
	s, err := Open(context.Background(), db, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	return s, clk, db
}

func TestOpenMigratesOnce(t *testing.T) {
	db := openDB(t)
	ctx := context.Background()
	for range 2 {
		if _, err := Open(ctx, db, Options{}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := sqlite.Version(ctx, db, Component)
	if err != nil || v != 4 {
		t.Fatalf("schema version = %d, %v; want 4", v, err)
	}
}

func TestThreadIDs(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	valid := []chat.ThreadID{
		"default", "web:3f2a", "matrix:!room:example.org", `cli:o'brien "quoted"`,
		"telegram:-100123", "web:ünïcödé-日本語-🙂", "web:a/b/../c", "web:%_wild*card", "sub_abc123",
		chat.ThreadID(strings.Repeat("x", chat.MaxThreadIDLen)),
	}
	for _, id := range valid {
		t.Run(string(id), func(t *testing.T) {
			th, created, err := s.EnsureThread(ctx, id)
			if err != nil || !created || th.ID != id {
				t.Fatalf("EnsureThread = %+v, %v, %v", th, created, err)
			}
			if th.Channel != id.Channel() {
				t.Errorf("channel %q, want %q", th.Channel, id.Channel())
			}
			if _, created, err := s.EnsureThread(ctx, id); err != nil || created {
				t.Errorf("second EnsureThread created=%v err=%v", created, err)
			}
			ids, err := s.Append(ctx, id, llm.UserText("hi "+string(id)))
			if err != nil {
				t.Fatal(err)
			}
			h, err := s.History(ctx, id)
			if err != nil || len(h) != 1 || h[0].ID != ids[0] || h[0].Message.Text() != "hi "+string(id) {
				t.Fatalf("History = %+v, %v", h, err)
			}
			got, found, err := s.Thread(ctx, id)
			if err != nil || !found || got.ID != id {
				t.Errorf("Thread = %+v, %v, %v", got, found, err)
			}
		})
	}
	// Sibling ids that a LIKE pattern would confuse stay apart.
	if h, _ := s.History(ctx, "web:_wild*card"); len(h) != 0 {
		t.Errorf("wildcard-like id leaked another thread's history: %+v", h)
	}

	invalid := []chat.ThreadID{"", "web:a\nb", "web:\x00", "web:\u200e\x7f", chat.ThreadID(strings.Repeat("x", chat.MaxThreadIDLen+1)), "web:\xff"}
	for _, id := range invalid {
		if _, _, err := s.EnsureThread(ctx, id); !errors.Is(err, chat.ErrInvalidThreadID) {
			t.Errorf("EnsureThread(%q) err = %v, want ErrInvalidThreadID", id, err)
		}
		if _, err := s.Append(ctx, id, llm.UserText("x")); !errors.Is(err, chat.ErrInvalidThreadID) {
			t.Errorf("Append(%q) err = %v, want ErrInvalidThreadID", id, err)
		}
		if err := s.SetSummary(ctx, id, Summary{Text: "x"}); !errors.Is(err, chat.ErrInvalidThreadID) {
			t.Errorf("SetSummary(%q) err = %v, want ErrInvalidThreadID", id, err)
		}
	}
}

func TestPartsRoundTrip(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	msgs := []llm.Message{
		llm.SystemText("seed: introduce yourself"),
		llm.UserText("Hello, \"world\" — ünïcödé 🙂\n<b>html</b> \\ backslash"),
		{Role: llm.RoleUser, Parts: []llm.Part{llm.Image{MediaType: "image/jpeg", Path: "telegram/1/photo é.jpg"}, llm.Text{Text: "what is this?"}}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{
			llm.Thinking{Text: "The user wants the weather; search first.", Signature: "sig\"1"},
			llm.Thinking{Redacted: "EnCrYpTeD=="},
			llm.Thinking{Text: "bad \xff thought"},
			llm.Text{Text: "Let me look."},
			llm.ToolCall{ID: "call_1", Name: "search_web", Arguments: json.RawMessage(`{"query": "weather Berlin", "n": 3}`)},
			llm.ToolCall{ID: "call_2", Name: "fetch_url", Arguments: json.RawMessage(`{"url": "http://x", broken`)},
			llm.ToolCall{ID: "call_3", Name: "list_reminders"},
			llm.ToolCall{ID: "call_4", Name: "noop", Arguments: json.RawMessage{}},
			llm.ToolCall{ID: "call_5", Name: "dbl", Arguments: json.RawMessage(`"{\"a\":1}"`)},
		}},
		{Role: llm.RoleTool, Parts: []llm.Part{
			llm.ToolResult{CallID: "call_1", Name: "search_web", Content: `{"ok":true,"results":[]}`},
			llm.ToolResult{CallID: "call_2", Name: "fetch_url", Content: "invalid JSON arguments", IsError: true},
			llm.ToolResult{CallID: "call_3", Name: "list_reminders", Content: "binary \xff\xfe\x00 bytes"},
		}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.Text{Text: "bad utf8 \xc3\x28 kept"}, llm.Text{Text: ""}}},
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolCall{ID: "id\xff", Name: "n", Arguments: json.RawMessage("\xfe")}}},
	}
	if _, err := s.Append(ctx, "web:rt", msgs...); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctx, "web:rt")
	if err != nil {
		t.Fatal(err)
	}
	if len(h) != len(msgs) {
		t.Fatalf("got %d messages, want %d", len(h), len(msgs))
	}
	for i := range msgs {
		if !reflect.DeepEqual(h[i].Message, msgs[i]) {
			t.Errorf("message %d:\n got %#v\nwant %#v", i, h[i].Message, msgs[i])
		}
	}
	// An image is stored as its reference; the bytes stay in the file.
	if _, err := s.Append(ctx, "web:img", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{
		&llm.Image{MediaType: "image/png", Path: "p.png", Data: []byte("PNG bytes")}}}); err != nil {
		t.Fatal(err)
	}
	h, _ = s.History(ctx, "web:img")
	if want := (llm.Image{MediaType: "image/png", Path: "p.png"}); len(h) != 1 || !reflect.DeepEqual(h[0].Message.Parts[0], want) {
		t.Errorf("image part round trip: %#v", h)
	}
	if _, err := s.Append(ctx, "web:img", llm.Message{Role: llm.RoleUser, Parts: []llm.Part{llm.Image{Data: []byte("x")}}}); err == nil {
		t.Error("an image without a workspace path was stored")
	}
	// Pointer parts are stored as their values.
	if _, err := s.Append(ctx, "web:ptr", llm.Message{Role: llm.RoleTool, Parts: []llm.Part{&llm.ToolResult{CallID: "c", Content: "x"}}}); err != nil {
		t.Fatal(err)
	}
	h, _ = s.History(ctx, "web:ptr")
	if want := (llm.ToolResult{CallID: "c", Content: "x"}); len(h) != 1 || !reflect.DeepEqual(h[0].Message.Parts[0], want) {
		t.Errorf("pointer part round trip: %#v", h)
	}
}

func TestAppendErrorsAndMetadata(t *testing.T) {
	s, clk, _ := newStore(t)
	ctx := context.Background()
	if _, err := s.Append(ctx, "web:x", llm.Message{Parts: []llm.Part{llm.Text{Text: "no role"}}}); !errors.Is(err, ErrEmptyRole) {
		t.Errorf("err = %v, want ErrEmptyRole", err)
	}
	// A failed append stores nothing (one transaction).
	if _, err := s.Append(ctx, "web:x", llm.UserText("ok"), llm.Message{}); err == nil {
		t.Fatal("append with an empty message accepted")
	}
	if h, _ := s.History(ctx, "web:x"); len(h) != 0 {
		t.Errorf("partial append stored %d messages", len(h))
	}
	if ids, err := s.Append(ctx, "web:x"); err != nil || ids != nil {
		t.Errorf("empty append = %v, %v", ids, err)
	}

	start := clk.Now()
	ids, err := s.Append(ctx, "web:x", llm.AssistantText("hello"), llm.UserText("  What's the weather\nin Berlin?"))
	if err != nil || len(ids) != 2 || ids[1] <= ids[0] {
		t.Fatalf("Append = %v, %v", ids, err)
	}
	th, _, _ := s.Thread(ctx, "web:x")
	if th.Title != "What's the weather" || !th.LastUserMessageAt.Equal(start) || !th.UpdatedAt.Equal(start) || th.Channel != "web" {
		t.Errorf("thread after user message: %+v", th)
	}
	clk.Advance(time.Minute)
	if _, err := s.Append(ctx, "web:x", llm.UserText("Second question")); err != nil {
		t.Fatal(err)
	}
	th, _, _ = s.Thread(ctx, "web:x")
	if th.Title != "What's the weather" || !th.LastUserMessageAt.Equal(start.Add(time.Minute)) {
		t.Errorf("title must stay, last user time must move: %+v", th)
	}
	clk.Advance(time.Minute)
	if _, err := s.Append(ctx, "web:x", llm.AssistantText("answer")); err != nil {
		t.Fatal(err)
	}
	th, _, _ = s.Thread(ctx, "web:x")
	if !th.LastUserMessageAt.Equal(start.Add(time.Minute)) || !th.UpdatedAt.Equal(start.Add(2*time.Minute)) {
		t.Errorf("assistant message must move updated_at only: %+v", th)
	}
	h, _ := s.History(ctx, "web:x")
	for _, m := range h {
		if m.Tokens < prompt.MessageOverhead+1 {
			t.Errorf("message %d tokens = %d", m.ID, m.Tokens)
		}
	}
	title, lang := strings.Repeat("long title ", 30), "de"
	if err := s.UpdateThread(ctx, "web:x", ThreadUpdate{Title: &title, Language: &lang}); err != nil {
		t.Fatal(err)
	}
	th, _, _ = s.Thread(ctx, "web:x")
	if th.Language != "de" || len([]rune(th.Title)) != MaxTitleLen || !strings.HasSuffix(th.Title, "…") {
		t.Errorf("UpdateThread: %+v", th)
	}
	if _, found, err := s.Thread(ctx, "web:nope"); found || err != nil {
		t.Errorf("missing thread: found=%v err=%v", found, err)
	}
}

type fixedCounter int

func (f fixedCounter) Count(s string) int {
	if s == "" {
		return 0
	}
	return int(f)
}

func TestTokenCounterOption(t *testing.T) {
	s, err := Open(context.Background(), openDB(t), Options{Counter: fixedCounter(100)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(context.Background(), "web:t", llm.UserText("anything")); err != nil {
		t.Fatal(err)
	}
	h, _ := s.History(context.Background(), "web:t")
	if len(h) != 1 || h[0].Tokens != 100+prompt.MessageOverhead {
		t.Errorf("tokens = %+v", h)
	}
}

func TestArchiveSummaryCompactReset(t *testing.T) {
	s, clk, _ := newStore(t)
	ctx := context.Background()
	const id chat.ThreadID = "web:c"
	var ids []int64
	for i := range 15 {
		got, err := s.Append(ctx, id, llm.UserText("m"+string(rune('a'+i))))
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, got...)
	}
	if _, found, err := s.Summary(ctx, id); found || err != nil {
		t.Fatalf("summary before compaction: %v %v", found, err)
	}

	n, err := s.Archive(ctx, id, ids[2])
	if err != nil || n != 3 {
		t.Fatalf("Archive = %d, %v", n, err)
	}
	if n, _ := s.Archive(ctx, id, ids[2]); n != 0 {
		t.Errorf("re-archive = %d, want 0", n)
	}
	h, _ := s.History(ctx, id)
	if len(h) != 12 || h[0].ID != ids[3] {
		t.Fatalf("history after archive: %d messages, first %d", len(h), h[0].ID)
	}

	if err := s.SetSummary(ctx, id, Summary{Text: "first", CoversThrough: ids[2]}); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Hour)
	n, err = s.Compact(ctx, id, Summary{Text: "second (chained)", CoversThrough: ids[4]})
	if err != nil || n != 2 {
		t.Fatalf("Compact = %d, %v", n, err)
	}
	sum, found, err := s.Summary(ctx, id)
	if err != nil || !found || sum.Text != "second (chained)" || sum.CoversThrough != ids[4] || !sum.UpdatedAt.Equal(clk.Now()) {
		t.Fatalf("one summary per thread, replaced: %+v %v %v", sum, found, err)
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM summaries WHERE thread_id = ?`, string(id)).Scan(&rows); err != nil || rows != 1 {
		t.Errorf("summaries rows = %d, %v", rows, err)
	}
	h, _ = s.History(ctx, id)
	if len(h) != 10 || h[0].ID != ids[5] {
		t.Errorf("history after compaction: %d messages", len(h))
	}

	all, err := s.Messages(ctx, id, MessageQuery{IncludeArchived: true})
	if err != nil || len(all) != 15 || all[0].ArchivedAt.IsZero() || !all[14].ArchivedAt.IsZero() {
		t.Errorf("Messages with archived: %d, %v", len(all), err)
	}
	page, err := s.Messages(ctx, id, MessageQuery{AfterID: ids[6], Limit: 3})
	if err != nil || len(page) != 3 || page[0].ID != ids[7] {
		t.Errorf("Messages page: %+v, %v", page, err)
	}
	if last, err := s.LastMessageID(ctx, id); err != nil || last != ids[14] {
		t.Errorf("LastMessageID = %d, %v", last, err)
	}
	if n, err := s.CountUserMessagesSince(ctx, id, ids[9]); err != nil || n != 5 {
		t.Errorf("CountUserMessagesSince = %d, %v", n, err)
	}
	if n, err := s.CountUserMessagesSince(ctx, id, 0); err != nil || n != 15 {
		t.Errorf("CountUserMessagesSince(0) counts archived too: %d, %v", n, err)
	}
	// A system event is stored with the user role but is not the user's.
	if _, err := s.AppendFrom(ctx, id, SourceSystemEvent, llm.UserText("[SYSTEM EVENT] Sub-session sub_1 completed")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, id, llm.UserText("thanks")); err != nil {
		t.Fatal(err)
	}
	if n, err := s.CountUserMessagesSince(ctx, id, ids[14]); err != nil || n != 1 {
		t.Errorf("CountUserMessagesSince counts system events: %d, %v", n, err)
	}

	if err := s.Reset(ctx, id); err != nil {
		t.Fatal(err)
	}
	if h, _ := s.History(ctx, id); len(h) != 0 {
		t.Errorf("history after reset: %d", len(h))
	}
	if _, found, _ := s.Summary(ctx, id); found {
		t.Error("summary survived reset")
	}
	if err := s.Reset(ctx, "web:unknown"); err != nil {
		t.Errorf("reset of an unknown thread: %v", err)
	}
}

func TestPurge(t *testing.T) {
	s, clk, _ := newStore(t)
	ctx := context.Background()
	old, _ := s.Append(ctx, "web:p", llm.UserText("old1"), llm.UserText("old2"))
	if _, err := s.Archive(ctx, "web:p", old[1]); err != nil {
		t.Fatal(err)
	}
	clk.Advance(20 * 24 * time.Hour)
	recent, _ := s.Append(ctx, "web:p", llm.UserText("recent"), llm.UserText("active"))
	if _, err := s.Archive(ctx, "web:p", recent[0]); err != nil {
		t.Fatal(err)
	}
	clk.Advance(11 * 24 * time.Hour) // old archived 31 days ago, recent 11 days ago

	if _, err := s.Purge(ctx, -time.Hour); err == nil {
		t.Error("negative age accepted")
	}
	n, err := s.Purge(ctx, DefaultPurgeAge)
	if err != nil || n != 2 {
		t.Fatalf("Purge = %d, %v; want 2", n, err)
	}
	all, _ := s.Messages(ctx, "web:p", MessageQuery{IncludeArchived: true})
	if len(all) != 2 || all[0].ID != recent[0] || all[1].ID != recent[1] {
		t.Errorf("after purge: %+v", all)
	}
	n, _ = s.Purge(ctx, 0)
	if n != 1 {
		t.Errorf("purge of everything archived = %d, want 1", n)
	}
	if h, _ := s.History(ctx, "web:p"); len(h) != 1 || h[0].Message.Text() != "active" {
		t.Errorf("active message purged: %+v", h)
	}
}

func TestThreadsListing(t *testing.T) {
	s, clk, _ := newStore(t)
	ctx := context.Background()
	for _, id := range []chat.ThreadID{"web:a", "sub_1", "cli:bob", "web:sub_not", "default"} {
		if _, err := s.Append(ctx, id, llm.UserText("hi")); err != nil {
			t.Fatal(err)
		}
		clk.Advance(time.Second)
	}
	if _, err := s.Append(ctx, "web:a", llm.UserText("again")); err != nil { // most recent now
		t.Fatal(err)
	}
	ids := func(ts []Thread) []chat.ThreadID {
		var out []chat.ThreadID
		for _, t := range ts {
			out = append(out, t.ID)
		}
		return out
	}
	tests := []struct {
		name string
		opts ListOptions
		want []chat.ThreadID
	}{
		{"default hides sub-sessions", ListOptions{}, []chat.ThreadID{"web:a", "default", "web:sub_not", "cli:bob"}},
		{"include sub-sessions", ListOptions{IncludeSubSessions: true}, []chat.ThreadID{"web:a", "default", "web:sub_not", "cli:bob", "sub_1"}},
		{"limit", ListOptions{Limit: 2}, []chat.ThreadID{"web:a", "default"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Threads(ctx, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(ids(got), tc.want) {
				t.Errorf("got %v, want %v", ids(got), tc.want)
			}
		})
	}
}

func TestConcurrentAppends(t *testing.T) {
	s, _, _ := newStore(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			id := chat.NewThreadID("web", string(rune('a'+w%2)))
			for range 20 {
				if _, err := s.Append(ctx, id, llm.UserText("x"), llm.AssistantText("y")); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for _, id := range []chat.ThreadID{"web:a", "web:b"} {
		h, err := s.History(ctx, id)
		if err != nil || len(h) != 160 {
			t.Fatalf("%s: %d messages, %v", id, len(h), err)
		}
		for i := 1; i < len(h); i++ {
			if h[i].ID <= h[i-1].ID {
				t.Fatalf("history out of order at %d", i)
			}
		}
	}
}

func TestCorruptRowReported(t *testing.T) {
	s, _, db := newStore(t)
	ctx := context.Background()
	if _, err := s.Append(ctx, "web:x", llm.UserText("ok")); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE messages SET parts = '[{"type":"video"}]'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.History(ctx, "web:x"); !errors.Is(err, ErrCorruptMessage) {
		t.Errorf("err = %v, want ErrCorruptMessage", err)
	}
}

func TestHistoryUsesIndex(t *testing.T) {
	_, _, db := newStore(t)
	rows, err := db.Query(`EXPLAIN QUERY PLAN SELECT id FROM messages WHERE thread_id = ? AND archived_at IS NULL ORDER BY id`, "x")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var plan []string
	for rows.Next() {
		var id, parent, notused int
		var detail string
		if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, detail)
	}
	joined := strings.Join(plan, "; ")
	if !strings.Contains(joined, "messages_thread_active") || strings.Contains(joined, "TEMP B-TREE") {
		t.Errorf("history query plan: %s", joined)
	}
}

func seedThread(b *testing.B, s *Store, id chat.ThreadID, n int) {
	b.Helper()
	ctx := context.Background()
	batch := make([]llm.Message, 0, 100)
	for i := 0; i < n; i++ {
		if i%2 == 0 {
			batch = append(batch, llm.UserText("A typical user message asking about something that matters to them today."))
		} else {
			batch = append(batch, llm.Message{Role: llm.RoleAssistant, Parts: []llm.Part{
				llm.Text{Text: "A typical assistant reply of moderate length, with some detail and a follow-up question."},
				llm.ToolCall{ID: "call_x", Name: "search_web", Arguments: json.RawMessage(`{"query":"something"}`)},
			}})
		}
		if len(batch) == cap(batch) {
			if _, err := s.Append(ctx, id, batch...); err != nil {
				b.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	if len(batch) > 0 {
		if _, err := s.Append(ctx, id, batch...); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkHistory10k(b *testing.B) {
	s, _, _ := newStore(b)
	seedThread(b, s, "web:big", 10000)
	seedThread(b, s, "web:other", 1000)
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		h, err := s.History(ctx, "web:big")
		if err != nil || len(h) != 10000 {
			b.Fatalf("%d, %v", len(h), err)
		}
	}
}

// BenchmarkHistoryCompacted10k is the common case: a 10,000-message thread
// whose history was compacted down to its last messages.
func BenchmarkHistoryCompacted10k(b *testing.B) {
	s, _, _ := newStore(b)
	seedThread(b, s, "web:big", 10000)
	ctx := context.Background()
	last, _ := s.LastMessageID(ctx, "web:big")
	if _, err := s.Archive(ctx, "web:big", last-20); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		h, err := s.History(ctx, "web:big")
		if err != nil || len(h) != 20 {
			b.Fatalf("%d, %v", len(h), err)
		}
	}
}

func BenchmarkAppend(b *testing.B) {
	s, _, _ := newStore(b)
	ctx := context.Background()
	msg := llm.UserText("A typical user message asking about something that matters to them today.")
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Append(ctx, "web:bench", msg); err != nil {
			b.Fatal(err)
		}
	}
}

func TestAppendRedactsSecrets(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	secrets := &redact.Secrets{}
	secrets.Add(key, "98765432101234")
	s, err := Open(context.Background(), openDB(t), Options{Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	msgs := []llm.Message{
		llm.UserText("my key is " + key),
		{Role: llm.RoleAssistant, Parts: []llm.Part{llm.ToolCall{ID: "c1", Name: "x", Arguments: json.RawMessage(`{"pin": 98765432101234}`)}}},
		{Role: llm.RoleTool, Parts: []llm.Part{llm.ToolResult{CallID: "c1", Name: "x", Content: "HTTP 401: bad key " + key, IsError: true}}},
		llm.AssistantText("The model provider rejected the credentials (" + key + ")"),
	}
	if _, err := s.Append(ctx, "web:sec", msgs...); err != nil {
		t.Fatal(err)
	}
	h, err := s.History(ctx, "web:sec")
	if err != nil || len(h) != len(msgs) {
		t.Fatal(h, err)
	}
	for i, m := range h {
		b, _ := json.Marshal(m.Message)
		if strings.Contains(string(b), key) {
			t.Errorf("message %d stored with the key: %s", i, b)
		}
	}
	if got := h[0].Message.Text(); got != "my key is [REDACTED]" {
		t.Errorf("user message = %q", got)
	}
	// Arguments are stored as text: even a bare-number secret is replaced
	// (the message stays decodable; the arguments are what the model wrote).
	if call := h[1].Message.Parts[0].(llm.ToolCall); string(call.Arguments) != `{"pin": [REDACTED]}` {
		t.Errorf("arguments = %s", call.Arguments)
	}
	threads, err := s.Threads(ctx, ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range threads {
		if strings.Contains(th.Title, key) {
			t.Errorf("title %q", th.Title)
		}
	}
}
