package conversation

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm"
)

// History keeps the active histories it read and then reads only what was
// added; whatever another writer does to the thread (append, archive,
// /new, purge, a thread deleted and made again, or a different thread),
// the history it returns equals a fresh read, and so do LastMessageID and
// CountUserMessagesSince, which rely on the same invariants.
func TestHistoryCacheFollowsEveryWriter(t *testing.T) {
	ctx := context.Background()
	reader, clk, db := newStore(t)
	writer, err := Open(ctx, db, Options{Now: clk.Now})
	if err != nil {
		t.Fatal(err)
	}
	const thread chat.ThreadID = "web:cache"
	n := 0
	add := func(t *testing.T, k int) {
		t.Helper()
		for range k {
			n++
			if _, err := writer.Append(ctx, thread, llm.UserText(fmt.Sprintf("message %d", n))); err != nil {
				t.Fatal(err)
			}
		}
	}
	steps := []struct {
		name   string
		change func(t *testing.T)
	}{
		{name: "first read", change: func(t *testing.T) { add(t, 3) }},
		{name: "nothing changed", change: func(t *testing.T) {}},
		{name: "appended", change: func(t *testing.T) { add(t, 2) }},
		{name: "oldest archived", change: func(t *testing.T) {
			h, _ := writer.History(ctx, thread)
			if _, err := writer.Archive(ctx, thread, h[1].ID); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "archived and as many appended", change: func(t *testing.T) {
			h, _ := writer.History(ctx, thread)
			if _, err := writer.Archive(ctx, thread, h[0].ID); err != nil {
				t.Fatal(err)
			}
			add(t, 1)
		}},
		{name: "compacted", change: func(t *testing.T) {
			h, _ := writer.History(ctx, thread)
			if _, err := writer.Compact(ctx, thread, Summary{Text: "earlier", CoversThrough: h[len(h)-2].ID}); err != nil {
				t.Fatal(err)
			}
			add(t, 1)
		}},
		{name: "reset", change: func(t *testing.T) {
			if err := writer.Reset(ctx, thread); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "after reset", change: func(t *testing.T) { add(t, 2) }},
		{name: "reset then purged", change: func(t *testing.T) {
			if err := writer.Reset(ctx, thread); err != nil {
				t.Fatal(err)
			}
			clk.Advance(DefaultPurgeAge + time.Hour)
			if _, err := writer.Purge(ctx, DefaultPurgeAge); err != nil {
				t.Fatal(err)
			}
			add(t, 1)
		}},
		{name: "thread deleted and made again", change: func(t *testing.T) {
			if _, err := db.ExecContext(ctx, `DELETE FROM threads WHERE id = ?`, string(thread)); err != nil {
				t.Fatal(err)
			}
			add(t, 2)
		}},
		{name: "other threads read in between", change: func(t *testing.T) {
			for i := range historyCacheThreads + 1 {
				other := chat.ThreadID(fmt.Sprintf("web:other%d", i))
				if _, err := writer.Append(ctx, other, llm.UserText("hi")); err != nil {
					t.Fatal(err)
				}
				if _, err := reader.History(ctx, other); err != nil {
					t.Fatal(err)
				}
			}
			add(t, 1)
		}},
	}
	for _, step := range steps {
		t.Run(step.name, func(t *testing.T) {
			step.change(t)
			got, err := reader.History(ctx, thread)
			if err != nil {
				t.Fatal(err)
			}
			want, err := writer.Messages(ctx, thread, MessageQuery{})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, want, func(a, b StoredMessage) bool {
				return a.ID == b.ID && messageText(a.Message) == messageText(b.Message)
			}) {
				t.Fatalf("history %v, want %v", ids(got), ids(want))
			}
			// The per-turn reads that rely on the same invariants agree
			// with a plain read of every message, archived or not.
			all, err := writer.Messages(ctx, thread, MessageQuery{IncludeArchived: true})
			if err != nil {
				t.Fatal(err)
			}
			var wantLast int64
			if len(all) > 0 {
				wantLast = all[len(all)-1].ID
			}
			if last, err := reader.LastMessageID(ctx, thread); err != nil || last != wantLast {
				t.Errorf("LastMessageID = %d, %v; want %d", last, err, wantLast)
			}
			if len(all) > 1 {
				since := all[len(all)/2].ID
				wantN := len(all) - len(all)/2 - 1
				if n, err := reader.CountUserMessagesSince(ctx, thread, since); err != nil || n != wantN {
					t.Errorf("CountUserMessagesSince(%d) = %d, %v; want %d", since, n, err, wantN)
				}
			}
		})
	}
}

// A history handed out stays as it was when the cache grows.
func TestHistoryCacheResultsAreStable(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	const thread chat.ThreadID = "web:stable"
	if _, err := s.Append(ctx, thread, llm.UserText("one"), llm.AssistantText("two")); err != nil {
		t.Fatal(err)
	}
	first, err := s.History(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	first = append(first, StoredMessage{ID: -1}) // the caller's own append
	if _, err := s.Append(ctx, thread, llm.UserText("three")); err != nil {
		t.Fatal(err)
	}
	second, err := s.History(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if len(second) != 3 || second[2].ID == -1 || messageText(second[2].Message) != "three" {
		t.Fatalf("second read %v: the caller's append leaked into the cache", ids(second))
	}
	if first[2].ID != -1 {
		t.Fatalf("first read changed to %v", ids(first))
	}
}

func ids(h []StoredMessage) []int64 {
	out := make([]int64, len(h))
	for i, m := range h {
		out[i] = m.ID
	}
	return out
}

func messageText(m llm.Message) string {
	var s string
	for _, p := range m.Parts {
		if t, ok := p.(llm.Text); ok {
			s += t.Text
		}
	}
	return s
}
