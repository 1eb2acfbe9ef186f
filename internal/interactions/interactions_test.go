package interactions

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

func open(t *testing.T, now *time.Time) *Store {
	t.Helper()
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := Open(context.Background(), db, Options{Now: func() time.Time { return *now }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestLogAndList(t *testing.T) {
	now := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	s := open(t, &now)
	ctx := context.Background()
	if err := s.Log(ctx,
		Entry{Thread: "web:a", Action: ActionInference, Summary: "hello", InputTokens: 10, OutputTokens: 3, Duration: 1500 * time.Millisecond, Detail: json.RawMessage(`{"k":1}`)},
		Entry{Thread: "web:a", Action: ActionToolCall, Summary: "echo", Error: "boom"},
	); err != nil {
		t.Fatal(err)
	}
	now = now.Add(time.Hour)
	if err := s.Log(ctx, Entry{Thread: "web:b", Action: ActionCompaction, Summary: strings.Repeat("x", 900), Detail: json.RawMessage(`not json`)}); err != nil {
		t.Fatal(err)
	}
	if err := s.Log(ctx, Entry{Summary: "no action"}); !errors.Is(err, ErrNoAction) {
		t.Errorf("no action: %v", err)
	}
	tests := []struct {
		name   string
		f      Filter
		wantID []int64
	}{
		{"all, newest first", Filter{}, []int64{3, 2, 1}},
		{"by action", Filter{Action: ActionToolCall}, []int64{2}},
		{"by thread", Filter{Thread: "web:a"}, []int64{2, 1}},
		{"since", Filter{Since: now}, []int64{3}},
		{"page", Filter{BeforeID: 3, Limit: 1}, []int64{2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.List(ctx, tc.f)
			if err != nil {
				t.Fatal(err)
			}
			var ids []int64
			for _, e := range got {
				ids = append(ids, e.ID)
			}
			if len(ids) != len(tc.wantID) {
				t.Fatalf("ids %v, want %v", ids, tc.wantID)
			}
			for i := range ids {
				if ids[i] != tc.wantID[i] {
					t.Fatalf("ids %v, want %v", ids, tc.wantID)
				}
			}
		})
	}
	all, _ := s.List(ctx, Filter{})
	first := all[2]
	if first.InputTokens != 10 || first.Duration != 1500*time.Millisecond || string(first.Detail) != `{"k":1}` || first.Thread != "web:a" {
		t.Errorf("entry 1 = %+v", first)
	}
	if c := all[0]; len([]rune(c.Summary)) != MaxSummaryChars || string(c.Detail) != `"not json"` {
		t.Errorf("entry 3 summary %d runes, detail %s", len([]rune(c.Summary)), c.Detail)
	}
	b, err := json.Marshal(first)
	if err != nil || !strings.Contains(string(b), `"duration_ms":1500`) {
		t.Errorf("JSON %s, %v", b, err)
	}
	n, err := s.Purge(ctx, 30*time.Minute)
	if err != nil || n != 2 {
		t.Errorf("purged %d, %v", n, err)
	}
}

func TestLogRedactsSecrets(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	secrets := &redact.Secrets{}
	secrets.Add(key)
	db, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := Open(context.Background(), db, Options{Secrets: secrets})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if err := s.Log(ctx, Entry{Action: ActionInference, Summary: "key " + key,
		Detail: json.RawMessage(`{"input":"` + key + `"}`), Error: "HTTP 401: Incorrect API key provided: " + key}); err != nil {
		t.Fatal(err)
	}
	got, err := s.List(ctx, Filter{})
	if err != nil || len(got) != 1 {
		t.Fatal(got, err)
	}
	e := got[0]
	if e.Summary != "key [REDACTED]" || string(e.Detail) != `{"input":"[REDACTED]"}` || e.Error != "HTTP 401: Incorrect API key provided: [REDACTED]" {
		t.Errorf("stored %+v", e)
	}
}

// Concurrent Log calls each store their entries once, whatever batches
// they were written in.
func TestLogConcurrently(t *testing.T) {
	for _, shared := range []bool{false, true} {
		t.Run(fmt.Sprintf("shared commits %v", shared), func(t *testing.T) { logConcurrently(t, shared) })
	}
}

func logConcurrently(t *testing.T, shared bool) {
	now := time.Unix(1700000000, 0)
	s := open(t, &now)
	if shared {
		s.commits = sqlite.NewCommitter(s.db, nil)
	}
	ctx := context.Background()
	const callers = 12
	var wg sync.WaitGroup
	for c := range callers {
		wg.Go(func() {
			th := chat.ThreadID(fmt.Sprintf("web:%d", c))
			if err := s.Log(ctx, Entry{Thread: th, Action: ActionInference, Summary: "turn"},
				Entry{Thread: th, Action: ActionToolCall, Summary: "call"}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, err := s.List(ctx, Filter{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	per := map[chat.ThreadID]int{}
	for _, e := range got {
		per[e.Thread]++
	}
	if len(got) != 2*callers || len(per) != callers {
		t.Fatalf("%d entries in %d threads, want %d in %d: %v", len(got), len(per), 2*callers, callers, per)
	}
}

// A batch of several calls' rows is written in one insert, or, beyond
// maxLogRows, in one transaction of an insert per call: all rows stored
// either way, each call told of the outcome.
func TestWriteLogsBatches(t *testing.T) {
	now := time.Unix(1700000000, 0)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		rows []int // per call
	}{
		{"one call", []int{3}},
		{"one insert", []int{1, 2, 5}},
		{"beyond one insert", []int{maxLogRows - 1, 2, 7}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := open(t, &now)
			var batch []*logging
			total := 0
			for c, n := range tc.rows {
				lg := &logging{rows: n}
				for i := range n {
					lg.args = append(lg.args, now.UnixNano(), fmt.Sprintf("web:%d", c), string(ActionInference),
						fmt.Sprintf("entry %d", i), "", 0, 0, 0, "")
				}
				batch = append(batch, lg)
				total += n
			}
			s.writeLogs(ctx, batch)
			for i, lg := range batch {
				if lg.err != nil {
					t.Fatalf("call %d: %v", i, lg.err)
				}
			}
			var stored int
			if err := s.db.QueryRowContext(ctx, `SELECT count(*) FROM interactions`).Scan(&stored); err != nil {
				t.Fatal(err)
			}
			if stored != total {
				t.Fatalf("%d entries stored, want %d", stored, total)
			}
		})
	}
}
