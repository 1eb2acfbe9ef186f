package conversation

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm"
)

func mustAppend(t *testing.T, s *Store, id chat.ThreadID, msgs ...llm.Message) []int64 {
	t.Helper()
	ids, err := s.Append(context.Background(), id, msgs...)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func texts(ms []StoredMessage) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.Message.Text())
	}
	return out
}

func TestRenameArchiveRestore(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	const th chat.ThreadID = "web:a"
	mustAppend(t, s, th, llm.UserText("plan the Lyon trip\nwith details"), llm.AssistantText("sure"))
	got, _, _ := s.Thread(ctx, th)
	if got.Title != "plan the Lyon trip" || got.TitleSource != TitleFromMessage {
		t.Fatalf("title from the first message: %+v", got)
	}
	if ok, err := s.SetGeneratedTitle(ctx, th, `"Lyon trip"`); err != nil || !ok {
		t.Fatalf("generated title: %v %v", ok, err)
	}
	if got, _, _ = s.Thread(ctx, th); got.Title != "Lyon trip" || got.TitleSource != TitleFromModel {
		t.Fatalf("generated title: %+v", got)
	}
	renamed, err := s.Rename(ctx, th, "  Holidays  2025 ")
	if err != nil || renamed.Title != "Holidays 2025" || renamed.TitleSource != TitleFromUser {
		t.Fatalf("rename: %+v %v", renamed, err)
	}
	if ok, _ := s.SetGeneratedTitle(ctx, th, "Other"); ok {
		t.Error("a generated title replaced the user's")
	}
	for _, tc := range []struct {
		name string
		err  error
		want error
	}{
		{"empty title", func() error { _, err := s.Rename(ctx, th, "   "); return err }(), ErrEmptyTitle},
		{"rename unknown", func() error { _, err := s.Rename(ctx, "web:none", "x"); return err }(), ErrNoThread},
		{"archive unknown", func() error { _, err := s.ArchiveThread(ctx, "web:none"); return err }(), ErrNoThread},
		{"restore unknown", func() error { _, err := s.RestoreThread(ctx, "web:none"); return err }(), ErrNoThread},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !errors.Is(tc.err, tc.want) {
				t.Errorf("err = %v, want %v", tc.err, tc.want)
			}
		})
	}

	arch, err := s.ArchiveThread(ctx, th)
	if err != nil || arch.ArchivedAt.IsZero() {
		t.Fatalf("archive: %+v %v", arch, err)
	}
	list, _ := s.Threads(ctx, ListOptions{})
	if len(list) != 0 {
		t.Fatalf("an archived thread is listed: %+v", list)
	}
	archived, _ := s.Threads(ctx, ListOptions{Archived: true})
	if len(archived) != 1 || archived[0].ID != th {
		t.Fatalf("archived list: %+v", archived)
	}
	if h, _ := s.History(ctx, th); len(h) != 2 {
		t.Fatalf("an archived thread lost its messages: %d", len(h))
	}
	if _, err := s.RestoreThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	if list, _ = s.Threads(ctx, ListOptions{}); len(list) != 1 {
		t.Fatalf("restored thread not listed: %+v", list)
	}
	// Only a restore brings a deleted thread back: a message stored in it
	// (one a turn already running wrote) leaves it deleted.
	s.ArchiveThread(ctx, th)
	mustAppend(t, s, th, llm.UserText("again"))
	if list, _ = s.Threads(ctx, ListOptions{}); len(list) != 0 {
		t.Fatalf("a deleted thread came back with a new message: %+v", list)
	}
}

// TestReopenStartsAfresh: a deleted thread reopened (a Telegram chat's next
// message after the deletion) is listed again empty and untitled; the old
// conversation is a closed one, readable, not the new one's history.
// Reopen leaves a thread that is not deleted alone.
func TestReopenStartsAfresh(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := newStore(t)
	const th chat.ThreadID = "telegram:7"
	ids := mustAppend(t, s, th, llm.UserText("plan the garden"), llm.AssistantText("roses"), llm.UserText("and tulips"), llm.AssistantText("yes"))
	if _, err := s.Compact(ctx, th, Summary{Text: "garden plans", CoversThrough: ids[1]}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Rename(ctx, th, "Garden"); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		id   chat.ThreadID
	}{
		{"not deleted", th},
		{"unknown", "telegram:8"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if ok, err := s.Reopen(ctx, tc.id); ok || err != nil {
				t.Errorf("Reopen = %v, %v; want false, nil", ok, err)
			}
		})
	}
	if h, _ := s.History(ctx, th); len(h) != 2 {
		t.Fatalf("Reopen of a thread that is not deleted changed its history: %d messages", len(h))
	}
	if _, found, _ := s.Thread(ctx, "telegram:8"); found {
		t.Error("Reopen created a thread")
	}

	if _, err := s.ArchiveThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	ok, err := s.Reopen(ctx, th)
	if err != nil || !ok {
		t.Fatalf("Reopen = %v, %v", ok, err)
	}
	got, _, _ := s.Thread(ctx, th)
	if !got.ArchivedAt.IsZero() || got.Title != "" || got.TitleSource != "" || !got.LastUserMessageAt.IsZero() {
		t.Errorf("reopened thread = %+v, want listed, untitled, no user message yet", got)
	}
	if h, _ := s.History(ctx, th); len(h) != 0 {
		t.Errorf("the new conversation starts with %d old messages", len(h))
	}
	if _, ok, _ := s.Summary(ctx, th); ok {
		t.Error("the new conversation kept the old summary")
	}
	if list, _ := s.Threads(ctx, ListOptions{}); len(list) != 1 || list[0].ID != th {
		t.Errorf("listed = %+v", list)
	}
	segs, err := s.Segments(ctx, SegmentQuery{Thread: th, Kind: SegmentConversation})
	if err != nil || len(segs) != 1 || segs[0].Title != "Garden" || segs[0].Messages != 4 {
		t.Fatalf("the deleted conversation is not kept closed: %+v %v", segs, err)
	}
	if _, msgs, err := s.Segment(ctx, segs[0].ID); err != nil || len(msgs) != 4 || msgs[0].Message.Text() != "plan the garden" {
		t.Fatalf("closed conversation = %v %v", texts(msgs), err)
	}
	// The next message starts the new conversation and titles it.
	mustAppend(t, s, th, llm.UserText("book a dentist"))
	if got, _, _ = s.Thread(ctx, th); got.Title != "book a dentist" {
		t.Errorf("the new conversation's title = %q", got.Title)
	}
	if ok, _ := s.Reopen(ctx, th); ok {
		t.Error("a second Reopen reopened again")
	}
}

func TestResetKeepsTheConversation(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := newStore(t)
	const th chat.ThreadID = "telegram:1"
	ids := mustAppend(t, s, th, llm.UserText("first topic"), llm.AssistantText("one"), llm.UserText("more"), llm.AssistantText("two"))
	if _, err := s.Compact(ctx, th, Summary{Text: "s", CoversThrough: ids[1]}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reset(ctx, th); err != nil {
		t.Fatal(err)
	}
	// An empty reset makes no segment.
	if err := s.Reset(ctx, th); err != nil {
		t.Fatal(err)
	}
	th2, _, _ := s.Thread(ctx, th)
	if th2.Title != "" {
		t.Errorf("the next conversation keeps the old title %q", th2.Title)
	}
	mustAppend(t, s, th, llm.UserText("second topic"))
	segs, err := s.Segments(ctx, SegmentQuery{Thread: th})
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments: %+v %v", segs, err)
	}
	sg := segs[0]
	if sg.Kind != SegmentConversation || sg.Title != "first topic" || sg.Messages != 4 {
		t.Errorf("segment: %+v", sg)
	}
	_, msgs, err := s.Segment(ctx, sg.ID)
	if err != nil || strings.Join(texts(msgs), "|") != "first topic|one|more|two" {
		t.Fatalf("segment messages: %q %v", texts(msgs), err)
	}
	if th2, _, _ = s.Thread(ctx, th); th2.Title != "second topic" {
		t.Errorf("the new conversation's title = %q", th2.Title)
	}
	// Segments survive the purge of archived messages.
	clk.Advance(DefaultPurgeAge + time.Hour)
	if n, err := s.Purge(ctx, DefaultPurgeAge); err != nil || n != 0 {
		t.Errorf("purge deleted %d (%v)", n, err)
	}
	if _, _, err := s.Segment(ctx, 999); !errors.Is(err, ErrNoSegment) {
		t.Errorf("unknown segment: %v", err)
	}
}

func TestBranchAndMarkedMessages(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	const th chat.ThreadID = "web:b"
	ids := mustAppend(t, s, th, llm.UserText("q1"), llm.AssistantText("a1"), llm.UserText("q2"), llm.AssistantText("a2"))
	if h, _ := s.History(ctx, th); len(h) != 4 { // fill the cache
		t.Fatal(len(h))
	}
	mid, err := s.AppendMarked(ctx, th, StatusStopped, "You stopped this reply.", llm.AssistantText("partial"))
	if err != nil {
		t.Fatal(err)
	}
	h, _ := s.History(ctx, th)
	if last := h[len(h)-1]; last.ID != mid || last.Status != StatusStopped || last.Note != "You stopped this reply." || !last.Marked() {
		t.Fatalf("marked message: %+v", last)
	}
	if _, err := s.AppendMarked(ctx, th, "odd", "", llm.AssistantText("x")); err == nil {
		t.Error("an unknown status was stored")
	}
	// Edit q2: q2 and what followed go to a branch.
	seg, err := s.Branch(ctx, th, ids[2])
	if err != nil {
		t.Fatal(err)
	}
	if seg.AfterMessageID != ids[1] || seg.Messages != 3 || seg.Title != "q2" {
		t.Errorf("branch: %+v", seg)
	}
	h, _ = s.History(ctx, th) // the cache must notice
	if strings.Join(texts(h), "|") != "q1|a1" {
		t.Fatalf("history after the branch: %q", texts(h))
	}
	_, msgs, _ := s.Segment(ctx, seg.ID)
	if strings.Join(texts(msgs), "|") != "q2|a2|partial" || msgs[2].Status != StatusStopped {
		t.Fatalf("branch messages: %q", texts(msgs))
	}
	if _, err := s.Branch(ctx, th, ids[3]+100); !errors.Is(err, ErrNoMessage) {
		t.Errorf("empty branch: %v", err)
	}
	m, err := s.Message(ctx, th, ids[2])
	if err != nil || m.Segment != seg.ID || m.ArchivedAt.IsZero() {
		t.Errorf("message: %+v %v", m, err)
	}
	if _, err := s.Message(ctx, "web:other", ids[2]); !errors.Is(err, ErrNoMessage) {
		t.Errorf("a message of another thread: %v", err)
	}
}

func TestSearch(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	mustAppend(t, s, "web:a", llm.UserText("Book the train to Lyon"), llm.AssistantText("Done: the TGV leaves at 8."))
	mustAppend(t, s, "web:b", llm.UserText("Recipe for crêpes"), llm.AssistantText("Flour, eggs, milk."))
	if _, err := s.AppendFrom(ctx, "web:b", SourceSystemEvent, llm.UserText("[SYSTEM EVENT] Lyon reminder")); err != nil {
		t.Fatal(err)
	}
	mustAppend(t, s, "sub_1", llm.UserText("Lyon research"))
	s.Rename(ctx, "web:b", "Breakfast ideas")
	if err := s.Reset(ctx, "web:a"); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, q string
		want    []string // thread:message-role of the hits
	}{
		{"message in an archived conversation", "lyon", []string{"web:a:user"}},
		{"prefix while typing", "tg", []string{"web:a:assistant"}},
		{"diacritics ignored", "crepes", []string{"web:b:user"}},
		{"title", "breakfast", []string{"web:b:"}},
		{"all words required", "flour milk", []string{"web:b:assistant"}},
		{"operators are text", `milk OR "lyon`, nil},
		{"no match", "zebra", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			hits, err := s.Search(ctx, SearchQuery{Text: tc.q})
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, h := range hits {
				got = append(got, string(h.Thread)+":"+string(h.Role))
			}
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Errorf("hits = %v, want %v", got, tc.want)
			}
		})
	}
	hits, _ := s.Search(ctx, SearchQuery{Text: "lyon"})
	if len(hits) != 1 || hits[0].Segment == 0 || !strings.Contains(hits[0].Snippet, "«Lyon»") {
		t.Errorf("hit in the archived conversation: %+v", hits)
	}
	if _, err := s.Search(ctx, SearchQuery{Text: " !? "}); !errors.Is(err, ErrEmptyQuery) {
		t.Errorf("empty query: %v", err)
	}
}

// TestSearchIndexBatches: appends leave the search index behind by less
// than a batch, the append that completes a batch indexes it, a search
// indexes the rest first, and messages that are not indexed (system events)
// or are deleted before their batch are never indexed twice or looked for.
func TestSearchIndexBatches(t *testing.T) {
	ctx := context.Background()
	s, clk, db := newStore(t)
	indexed := func() int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM messages_fts`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	for i := range ftsBatch - 2 {
		mustAppend(t, s, "web:a", llm.UserText(fmt.Sprintf("walrus %d", i)))
	}
	if _, err := s.AppendFrom(ctx, "web:a", SourceSystemEvent, llm.UserText("[SYSTEM EVENT] walrus")); err != nil {
		t.Fatal(err)
	}
	if n := indexed(); n != 0 {
		t.Fatalf("%d messages indexed before a batch is complete, want 0", n)
	}
	mustAppend(t, s, "web:b", llm.UserText("walrus on b"))
	if n := indexed(); n != ftsBatch-1 {
		t.Fatalf("%d messages indexed once the batch is complete, want %d (the system event's left out)", n, ftsBatch-1)
	}
	gone := mustAppend(t, s, "web:c", llm.UserText("narwhal on c"), llm.AssistantText("a narwhal reply"))
	if _, err := s.Archive(ctx, "web:c", gone[1]); err != nil {
		t.Fatal(err)
	}
	clk.Advance(time.Minute)
	if n, err := s.Purge(ctx, 0); err != nil || n != 2 {
		t.Fatalf("purge = %d, %v; want 2", n, err)
	}
	mustAppend(t, s, "web:d", llm.UserText("narwhal on d"))
	for range 2 { // the second search has nothing left to index
		hits, err := s.Search(ctx, SearchQuery{Text: "narwhal"})
		if err != nil {
			t.Fatal(err)
		}
		var msgs []Hit // the titles match too
		for _, h := range hits {
			if h.MessageID != 0 {
				msgs = append(msgs, h)
			}
		}
		if len(msgs) != 1 || msgs[0].Thread != "web:d" {
			t.Fatalf("message hits = %+v, want the message on web:d only", msgs)
		}
	}
	if n := indexed(); n != ftsBatch {
		t.Fatalf("%d messages indexed after the search, want %d", n, ftsBatch)
	}
}

// TestTitleFromTheUsersWords: a first message that came with files takes
// its title from what the user wrote, not from the lines naming the files;
// a message of files only is named after the first one. Branches too.
func TestTitleFromTheUsersWords(t *testing.T) {
	const note = "[file notes.txt (text/plain, 17 bytes) saved in the workspace as cli/ann/20250501-080102-ab12-notes.txt]"
	tests := []struct {
		name, text, want string
	}{
		{"words only", "plan the Lyon trip\nwith details", "plan the Lyon trip"},
		{"a file then words", note + "\nwhat is on this list?", "what is on this list?"},
		{"two files then words", note + "\n[file a b.pdf (application/pdf, 2.0 MB) saved in the workspace as web/x/y.pdf]\n\nsummarise", "summarise"},
		{"a file only", note, "notes.txt"},
		{"a line that only looks like a note", "[file this is not a note]", "[file this is not a note]"},
	}
	ctx := context.Background()
	s, _, _ := newStore(t)
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			th := chat.ThreadID("cli:t" + string(rune('a'+i)))
			ids := mustAppend(t, s, th, llm.UserText(tc.text), llm.AssistantText("ok"))
			if got, _, _ := s.Thread(ctx, th); got.Title != tc.want {
				t.Errorf("thread title %q, want %q", got.Title, tc.want)
			}
			seg, err := s.Branch(ctx, th, ids[0])
			if err != nil {
				t.Fatal(err)
			}
			if seg.Title != tc.want {
				t.Errorf("branch title %q, want %q", seg.Title, tc.want)
			}
		})
	}
	if got := UserWords(note + "\nhello\n" + note); got != "hello" {
		t.Errorf("UserWords = %q", got)
	}
}
