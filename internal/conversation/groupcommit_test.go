package conversation

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
)

// TestAppendGroupCommit: appends that wait for one another are written
// together (one transaction, a savepoint each): each caller gets its own
// ids once they are committed, every thread holds its own messages, and an
// append that fails leaves the others' in place.
func TestAppendGroupCommit(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	// The first write's clock reading waits until the others are queued.
	var once sync.Once
	hold := make(chan struct{})
	now := func() time.Time {
		once.Do(func() { <-hold })
		return time.Date(2025, 1, 15, 12, 0, 0, 0, time.UTC)
	}
	s, err := Open(ctx, db, Options{Now: now})
	if err != nil {
		t.Fatal(err)
	}
	// a message saying "explode" cannot be stored
	if _, err := db.ExecContext(ctx, `CREATE TRIGGER test_refuse BEFORE INSERT ON messages
		WHEN new.parts LIKE '%explode%' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	const callers = 8
	failing := map[int]bool{3: true, 6: true} // two, so that the batch holds one
	ids := make([][]int64, callers)
	errs := make([]error, callers)
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			text := fmt.Sprintf("Hello from caller %d.", c)
			if failing[c] {
				text = "This one will explode."
			}
			ids[c], errs[c] = s.Append(ctx, chat.ThreadID(fmt.Sprintf("web:gc%d", c)), llm.UserText(text), llm.AssistantText(fmt.Sprintf("Hi, caller %d.", c)))
		})
	}
	// Every caller is inside Write: the first writer's batch may hold
	// more than its own item (those queued before it took the batch).
	for s.appends.Pending() < callers {
		runtime.Gosched()
	}
	close(hold)
	wg.Wait()

	seen := map[int64]bool{}
	for c := range callers {
		if failing[c] {
			if errs[c] == nil || !strings.Contains(errs[c].Error(), "refused by the test") || ids[c] != nil {
				t.Fatalf("caller %d = %v, %v; want the trigger's refusal", c, ids[c], errs[c])
			}
			continue
		}
		if errs[c] != nil || len(ids[c]) != 2 {
			t.Fatalf("caller %d = %v, %v", c, ids[c], errs[c])
		}
		for _, id := range ids[c] {
			if seen[id] {
				t.Fatalf("id %d given twice", id)
			}
			seen[id] = true
		}
	}
	for c := range callers {
		h, err := s.History(ctx, chat.ThreadID(fmt.Sprintf("web:gc%d", c)))
		if err != nil {
			t.Fatal(err)
		}
		if failing[c] {
			if len(h) != 0 {
				t.Errorf("failed caller %d's thread holds %d messages", c, len(h))
			}
			continue
		}
		if len(h) != 2 || h[0].ID != ids[c][0] || h[0].Message.Text() != fmt.Sprintf("Hello from caller %d.", c) ||
			h[1].Message.Text() != fmt.Sprintf("Hi, caller %d.", c) {
			t.Errorf("caller %d's thread = %+v", c, h)
		}
	}
}

// TestAppendSharedCommits: appends through the database's shared group
// commit (Options.Commits) each get their own ids once committed, every
// thread holds its own messages, an append that fails leaves the others in
// place, and the appends index the search index's batches as they come due.
func TestAppendSharedCommits(t *testing.T) {
	ctx := context.Background()
	db := openDB(t)
	s, err := Open(ctx, db, Options{Commits: sqlite.NewCommitter(db, nil)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TRIGGER test_refuse BEFORE INSERT ON messages
		WHEN new.parts LIKE '%explode%' BEGIN SELECT RAISE(ABORT, 'refused by the test'); END`); err != nil {
		t.Fatal(err)
	}
	const callers, rounds = 8, 3
	failing := map[int]bool{3: true}
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			th := chat.ThreadID(fmt.Sprintf("web:sc%d", c))
			for r := range rounds {
				text := fmt.Sprintf("Hello %d from caller %d.", r, c)
				if failing[c] {
					text = "This one will explode."
				}
				ids, err := s.Append(ctx, th, llm.UserText(text), llm.AssistantText(fmt.Sprintf("Hi %d, caller %d.", r, c)))
				if failing[c] {
					if err == nil || !strings.Contains(err.Error(), "refused by the test") || ids != nil {
						t.Errorf("caller %d = %v, %v; want the trigger's refusal", c, ids, err)
					}
				} else if err != nil || len(ids) != 2 {
					t.Errorf("caller %d = %v, %v", c, ids, err)
				}
			}
		})
	}
	wg.Wait()
	for c := range callers {
		h, err := s.History(ctx, chat.ThreadID(fmt.Sprintf("web:sc%d", c)))
		if err != nil {
			t.Fatal(err)
		}
		want := 2 * rounds
		if failing[c] {
			want = 0
		}
		if len(h) != want {
			t.Fatalf("caller %d's thread holds %d messages, want %d", c, len(h), want)
		}
		for r := range len(h) / 2 {
			if h[2*r].Message.Text() != fmt.Sprintf("Hello %d from caller %d.", r, c) || h[2*r+1].Message.Text() != fmt.Sprintf("Hi %d, caller %d.", r, c) {
				t.Errorf("caller %d's thread = %+v", c, h)
			}
		}
	}
	// 42 messages stored: the appends indexed at least one batch of 32
	var mark int64
	if err := db.QueryRowContext(ctx, `SELECT id FROM messages_fts_done`).Scan(&mark); err != nil {
		t.Fatal(err)
	}
	if mark < ftsBatch {
		t.Errorf("search index mark %d after %d messages: no batch indexed", mark, 2*rounds*(callers-1))
	}
}
