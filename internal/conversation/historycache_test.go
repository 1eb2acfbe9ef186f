package conversation

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm"
)

// History keeps the active histories it read and then reads only what was
// added; whatever another writer does to the thread (append, a failed or
// stopped reply, archive, compaction, an edit's or a regeneration's
// branch, /new, purge, a thread deleted and made again, or a different
// thread, or the cache dropped), the history it returns equals a fresh read, and so do
// ModelHistory (whose message list and token count are extended
// incrementally: they equal a recount of the fresh read), LastMessageID and
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
		{name: "cache dropped (an idle agent's release)", change: func(t *testing.T) {
			reader.DropCachedHistories()
			if n := len(reader.recent.threads); n != 0 || reader.recent.bytes != 0 {
				t.Fatalf("%d histories (%d bytes) cached after the drop", n, reader.recent.bytes)
			}
			add(t, 1)
		}},
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
		{name: "a failed reply", change: func(t *testing.T) {
			if _, err := writer.AppendMarked(ctx, thread, StatusFailed, "the model is unreachable", llm.AssistantText("partial answ")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "after the failed reply", change: func(t *testing.T) {
			add(t, 1)
			if _, err := writer.Append(ctx, thread, llm.AssistantText("a longer answer that counts more tokens than the others do")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "a stopped reply after it", change: func(t *testing.T) {
			if _, err := writer.AppendMarked(ctx, thread, StatusStopped, "stopped", llm.AssistantText("")); err != nil {
				t.Fatal(err)
			}
			add(t, 1)
		}},
		{name: "regenerated (branch of the last reply)", change: func(t *testing.T) {
			h, _ := writer.History(ctx, thread)
			if _, err := writer.Branch(ctx, thread, h[len(h)-1].ID); err != nil {
				t.Fatal(err)
			}
			if _, err := writer.Append(ctx, thread, llm.AssistantText("the regenerated answer")); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "edited (branch of the last two)", change: func(t *testing.T) {
			h, _ := writer.History(ctx, thread)
			if _, err := writer.Branch(ctx, thread, h[len(h)-2].ID); err != nil {
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
			// together more than the cache holds: this thread's history
			// is dropped
			for i := range 3 {
				other := chat.ThreadID(fmt.Sprintf("web:other%d", i))
				if _, err := writer.Append(ctx, other, llm.UserText(strings.Repeat("long ", historyCacheBytes/10))); err != nil {
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
			same := func(a, b StoredMessage) bool {
				return a.ID == b.ID && messageText(a.Message) == messageText(b.Message)
			}
			if !slices.EqualFunc(got, want, same) {
				t.Fatalf("history %v, want %v", ids(got), ids(want))
			}
			// What goes to the model, recounted from the fresh read.
			mh, err := reader.ModelHistory(ctx, thread)
			if err != nil {
				t.Fatal(err)
			}
			sent := slices.DeleteFunc(slices.Clone(want), StoredMessage.Marked)
			tokens := 0
			for _, m := range sent {
				tokens += m.Tokens
			}
			if !slices.EqualFunc(mh.Stored, sent, same) || mh.Tokens != tokens || len(mh.Messages) != len(sent) {
				t.Fatalf("ModelHistory %v (%d messages, %d tokens), want %v (%d tokens)", ids(mh.Stored), len(mh.Messages), mh.Tokens, ids(sent), tokens)
			}
			for i, m := range mh.Messages {
				if messageText(m) != messageText(sent[i].Message) || m.Role != sent[i].Message.Role {
					t.Fatalf("ModelHistory message %d is %q, want %q", i, messageText(m), messageText(sent[i].Message))
				}
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
				wantN := 0
				for _, m := range all[len(all)/2+1:] {
					if m.Message.Role == llm.RoleUser && m.Source == SourceConversation {
						wantN++
					}
				}
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

// A ModelHistory handed out stays as it was when the cache grows, also when
// a marked reply makes its list of sent messages part from the history.
func TestModelHistoryResultsAreStable(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	const thread chat.ThreadID = "web:stable"
	if _, err := s.Append(ctx, thread, llm.UserText("one"), llm.AssistantText("two")); err != nil {
		t.Fatal(err)
	}
	first, err := s.ModelHistory(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	firstTokens := first.Tokens
	first.Stored = append(first.Stored, StoredMessage{ID: -1}) // the caller's own appends
	first.Messages = append(first.Messages, llm.UserText("mine"))
	if _, err := s.AppendMarked(ctx, thread, StatusFailed, "failed", llm.AssistantText("thr")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Append(ctx, thread, llm.UserText("three")); err != nil {
		t.Fatal(err)
	}
	second, err := s.ModelHistory(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Stored) != 3 || second.Stored[2].ID == -1 || messageText(second.Messages[2]) != "three" || second.Tokens <= firstTokens {
		t.Fatalf("second read %v %d tokens: the caller's append leaked into the cache", ids(second.Stored), second.Tokens)
	}
	if first.Stored[2].ID != -1 || messageText(first.Messages[2]) != "mine" {
		t.Fatalf("first read changed to %v", ids(first.Stored))
	}
	all, err := s.History(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 4 || all[2].Status != StatusFailed {
		t.Fatalf("history %v: the failed reply is not in it", ids(all))
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

// The cache keeps every history that fits in historyCacheBytes (twenty
// short conversations at once), drops the least recently used first, and
// keeps the one just used whatever its size.
func TestHistoryCacheBytes(t *testing.T) {
	var c historyCache
	msgs := func(n, size int) []StoredMessage {
		out := make([]StoredMessage, n)
		for i := range out {
			out[i] = StoredMessage{ID: int64(i + 1), Message: llm.UserText(strings.Repeat("x", size))}
		}
		return out
	}
	cached := func() []chat.ThreadID {
		var ids []chat.ThreadID
		for _, h := range c.threads {
			ids = append(ids, h.id)
		}
		return ids
	}
	for i := range 20 {
		c.put(chat.ThreadID(fmt.Sprintf("web:c%d", i)), msgs(40, 200))
	}
	if got := len(c.threads); got != 20 {
		t.Fatalf("%d of 20 short histories cached, want all", got)
	}
	// one more message on the oldest makes it the most recently used
	v, ok := c.get("web:c0")
	if !ok {
		t.Fatal("web:c0 not cached")
	}
	c.extend("web:c0", v, msgs(1, 200))
	if ids := cached(); ids[len(ids)-1] != "web:c0" {
		t.Fatalf("cached %v, want web:c0 last (most recently used)", ids)
	}
	// a long one takes the room of the least recently used
	c.put("web:long", msgs(1, historyCacheBytes*3/4))
	if _, ok := c.get("web:c1"); ok {
		t.Fatalf("web:c1 (least recently used) still cached: %v", cached())
	}
	if _, ok := c.get("web:c0"); !ok {
		t.Fatalf("web:c0 (used recently) dropped: %v", cached())
	}
	if c.bytes > historyCacheBytes || c.bytes != sumBytes(c.threads) {
		t.Fatalf("cache holds %d bytes (its histories %d), bound %d", c.bytes, sumBytes(c.threads), historyCacheBytes)
	}
	// one longer than the bound stays, alone
	c.put("web:huge", msgs(3, historyCacheBytes/2))
	if ids := cached(); !slices.Equal(ids, []chat.ThreadID{"web:huge"}) {
		t.Fatalf("cached %v, want only web:huge", ids)
	}
	if c.bytes != sumBytes(c.threads) {
		t.Fatalf("cache counts %d bytes, its histories hold %d", c.bytes, sumBytes(c.threads))
	}
}

func sumBytes(hs []cachedHistory) int {
	n := 0
	for _, h := range hs {
		n += messagesBytes(h.view.all)
	}
	return n
}
