package memory

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// Migration 009 moves each memory's access statistics from its row of
// memories to a row of memory_access (only for memories ever recalled),
// and reads see the same counts as before it.
func TestAccessTableMigration(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	// the store as it was before 009
	before := fstest.MapFS{}
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.Compare(filepath.Base(name), "009") < 0 {
			data, err := fs.ReadFile(migrationFiles, name)
			if err != nil {
				t.Fatal(err)
			}
			before[name] = &fstest.MapFile{Data: data}
		}
	}
	if err := sqlite.NewMigrations(db).Migrate(ctx, db, "memory", before, "migrations"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct {
		text  string
		count int
		last  any
	}{
		{"recalled three times", 3, int64(7_000)},
		{"never recalled", 0, nil},
		{"recalled once", 1, int64(9_000)},
	} {
		if _, err := db.ExecContext(ctx, `INSERT INTO memories (text, norm, kind, source, created_at, updated_at, valid_from, access_count, last_access)
			VALUES (?, ?, 'fact', 'user', 1, 1, 1, ?, ?)`, r.text, r.text, r.count, r.last); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()

	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	s := openStore(t, path, embed.NewOffline(0), clk)
	want := map[string]struct {
		count int
		last  int64
	}{"recalled three times": {3, 7_000}, "never recalled": {0, 0}, "recalled once": {1, 9_000}}
	all, err := s.List(ctx, Filter{})
	if err != nil || len(all) != 3 {
		t.Fatalf("List = %v, %v", all, err)
	}
	for _, m := range all {
		var last int64
		if m.LastAccess != nil {
			last = m.LastAccess.UnixNano()
		}
		if w := want[m.Text]; m.AccessCount != w.count || last != w.last {
			t.Errorf("%q: access count %d, last access %d; want %d, %d", m.Text, m.AccessCount, last, w.count, w.last)
		}
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_access`).Scan(&rows); err != nil || rows != 2 {
		t.Errorf("memory_access holds %d rows (%v), want 2: one per memory ever recalled", rows, err)
	}
	cols, err := sqlite.Rows(ctx, s.db, func(r sqlite.Scanner) (string, error) {
		var cid, notNull, pk int
		var name, typ string
		var dflt any
		err := r.Scan(&cid, &name, &typ, &notNull, &dflt, &pk)
		return name, err
	}, `PRAGMA table_info(memories)`)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(cols, "access_count") || slices.Contains(cols, "last_access") {
		t.Errorf("memories still has its access columns: %v", cols)
	}
}

// A memory's access row follows it: a new version carries the old one's
// counts, and a deleted memory takes its row along.
func TestAccessRowFollowsMemory(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	id, err := s.Add(ctx, Memory{Text: "The user's sister is called Anna."})
	if err != nil {
		t.Fatal(err)
	}
	s.access.add([]int64{id, id}, 4_000)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	id2, err := s.Update(ctx, Memory{ID: id, Text: "The user's sister is called Anne."})
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Get(ctx, id2)
	if err != nil || m.AccessCount != 2 || m.LastAccess == nil || m.LastAccess.UnixNano() != 4_000 {
		t.Fatalf("new version = %+v, %v; want the old one's 2 accesses, the last at 4000", m, err)
	}
	for _, del := range []int64{id, id2} {
		if err := s.Delete(ctx, del); err != nil {
			t.Fatal(err)
		}
	}
	var rows int
	if err := s.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM memory_access`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("memory_access holds %d rows (%v) after the deletes, want 0", rows, err)
	}
}

// The reads of memories with their statistics (the view memories_read) and
// the flush look memories and their access rows up by key: none scans a
// table that grows with the store, nor sorts what it reads (but a thread's
// list, sorted by time as before migration 009).
func TestAccessReadsUseKeys(t *testing.T) {
	s, _, _ := newStore(t)
	const byKey = "INTEGER PRIMARY KEY"
	type step struct{ start, uses string } // a plan line's start and what it uses
	for _, tc := range []struct {
		name, query string
		want        []step
		sorts       bool
	}{
		{"recall's fetch", `SELECT ` + selectCols + ` FROM memories_read WHERE id IN (1, 2, 3)`,
			[]step{{"SEARCH m ", byKey}, {"SEARCH a ", byKey}}, false},
		{"Get", `SELECT ` + selectCols + `, embedding FROM memories_read WHERE id = 1`,
			[]step{{"SEARCH m ", byKey}, {"SEARCH a ", byKey}}, false},
		{"List of a thread", `SELECT ` + selectCols + ` FROM memories_read WHERE valid_to IS NULL AND thread = 'web:1' ORDER BY created_at DESC, id DESC`,
			[]step{{"SEARCH m ", "memories_thread_session"}, {"SEARCH a ", byKey}}, true},
		{"the index load (every memory)", `SELECT id, access_count, last_access FROM memories_read ORDER BY id`,
			[]step{{"SCAN m", ""}, {"SEARCH a ", byKey}}, false},
		{"the flush", flushAccessSQL,
			[]step{{"SCAN json_each", ""}, {"SEARCH memories ", byKey}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan, err := sqlite.Rows(context.Background(), s.db, func(rows sqlite.Scanner) (string, error) {
				var id, parent, unused int
				var detail string
				err := rows.Scan(&id, &parent, &unused, &detail)
				return detail, err
			}, `EXPLAIN QUERY PLAN `+tc.query, `[]`)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !slices.ContainsFunc(plan, func(d string) bool { return strings.HasPrefix(d, w.start) && strings.Contains(d, w.uses) }) {
					t.Errorf("no step %q using %q in the plan %q", w.start, w.uses, plan)
				}
			}
			for _, d := range plan {
				scans := strings.HasPrefix(d, "SCAN") && !slices.ContainsFunc(tc.want, func(w step) bool { return strings.HasPrefix(d, w.start) })
				if scans || (!tc.sorts && strings.Contains(d, "TEMP B-TREE")) {
					t.Errorf("unexpected step %q in the plan %q", d, plan)
				}
			}
		})
	}
}

// openShared opens a store at path whose writes go through a Committer.
func openShared(t *testing.T, ctx context.Context, path string) (*VectorStore, *sqlite.Committer, *sql.DB) {
	t.Helper()
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	c := sqlite.NewCommitter(db, nil)
	clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
	st, err := Open(ctx, Options{DB: db, Commits: c, Embedder: embed.NewOffline(0), Now: clk.now})
	if err != nil {
		db.Close()
		t.Fatal(err)
	}
	return st.(*VectorStore), c, db
}

// accessCounts reads the stored access counts of ids.
func accessCounts(t *testing.T, ctx context.Context, db *sql.DB, ids []int64) []int64 {
	t.Helper()
	out := make([]int64, len(ids))
	for i, id := range ids {
		if err := db.QueryRowContext(ctx, `SELECT access_count FROM memories_read WHERE id = ?`, id).Scan(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestAccessRidesSharedCommit: with a Committer, the accesses a recall
// records go out with the next shared transaction (a turn's next write),
// not in a commit of their own; when no write comes, the Committer's Run
// commits them within sqlite.DeferWithin; accesses recorded within
// accessDeferEvery of a write queued wait for the next one.
func TestAccessRidesSharedCommit(t *testing.T) {
	dir := t.TempDir()
	synctest.Test(t, func(t *testing.T) {
		ctx := t.Context()
		s, c, db := openShared(t, ctx, filepath.Join(dir, "m.db"))
		defer db.Close()
		defer func() {
			if err := s.Shutdown(context.Background()); err != nil {
				t.Error(err)
			}
		}()
		if _, err := db.ExecContext(ctx, `CREATE TABLE turn_writes (n INTEGER)`); err != nil {
			t.Fatal(err)
		}
		ids := seed(t, s, Memory{Text: "The ferry leaves at nine."}, Memory{Text: "The user likes green tea."})
		rctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		wg.Go(func() {
			if err := c.Run(rctx); err != nil {
				t.Errorf("Run = %v", err)
			}
		})
		defer wg.Wait()
		defer stop()
		synctest.Wait() // Run runs

		before := c.Committed()
		if err := s.RecordAccess(ctx, ids, time.Time{}); err != nil {
			t.Fatal(err)
		}
		if err := c.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
			_, err := tx.ExecContext(ctx, `INSERT INTO turn_writes VALUES (1)`)
			return err
		}, nil); err != nil {
			t.Fatal(err)
		}
		if got := accessCounts(t, ctx, db, ids); !slices.Equal(got, []int64{1, 1}) {
			t.Errorf("access counts after the next write = %v; want [1 1]", got)
		}
		if n := c.Committed() - before; n != 1 {
			t.Errorf("%d shared transactions for an access and a write; want 1", n)
		}

		time.Sleep(accessDeferEvery)
		before = c.Committed()
		if err := s.RecordAccess(ctx, ids[:1], time.Time{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(sqlite.DeferWithin)
		synctest.Wait()
		if got := accessCounts(t, ctx, db, ids); !slices.Equal(got, []int64{2, 1}) {
			t.Errorf("access counts %v after DeferWithin with no write; want [2 1]", got)
		}
		if n := c.Committed() - before; n != 1 {
			t.Errorf("%d shared transactions for an access alone; want 1", n)
		}

		// Within accessDeferEvery of the last, an access waits for the
		// next write queued (under concurrent turns: one a second).
		before = c.Committed()
		if err := s.RecordAccess(ctx, ids[1:], time.Time{}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(sqlite.DeferWithin)
		synctest.Wait()
		if got := accessCounts(t, ctx, db, ids); !slices.Equal(got, []int64{2, 1}) || c.Committed() != before {
			t.Errorf("access counts %v, %d shared transactions, right after one went out; want [2 1] and none", got, c.Committed()-before)
		}
		time.Sleep(accessFlushEvery)
		synctest.Wait()
		if got := accessCounts(t, ctx, db, ids); !slices.Equal(got, []int64{2, 2}) {
			t.Errorf("access counts %v after accessFlushEvery; want [2 2]", got)
		}
		if n := c.Committed() - before; n != 1 {
			t.Errorf("%d shared transactions for the waiting access; want 1", n)
		}
	})
}

// TestAccessSharedCommitFails: what a shared transaction that failed to
// commit took is written by the next one, once; two writes of the
// accesses in one transaction count each access once.
func TestAccessSharedCommitFails(t *testing.T) {
	ctx := context.Background()
	s, _, db := openShared(t, ctx, filepath.Join(t.TempDir(), "m.db"))
	t.Cleanup(func() {
		if err := s.Shutdown(context.Background()); err != nil {
			t.Error(err)
		}
		db.Close()
	})
	ids := seed(t, s, Memory{Text: "The ferry leaves at nine."}, Memory{Text: "The user likes green tea."})
	a := s.access
	// as a shared transaction would, with two access writes in it
	inTx := func(commit bool) {
		t.Helper()
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, id := range []int64{ids[1], ids[0]} {
			a.mu.Lock()
			a.pending[id] = accessDelta{count: 1, last: 20}
			a.mu.Unlock()
			if err := a.writeTx(ctx, tx); err != nil {
				t.Fatal(err)
			}
		}
		if !commit {
			tx.Rollback() // the commit failed
			return
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		a.committed()
	}
	inTx(false)
	if got := accessCounts(t, ctx, db, ids); !slices.Equal(got, []int64{0, 0}) {
		t.Fatalf("access counts after a failed commit = %v; want [0 0]", got)
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := accessCounts(t, ctx, db, ids); !slices.Equal(got, []int64{1, 1}) {
		t.Fatalf("access counts after the failed commit's retry = %v; want [1 1]", got)
	}
	inTx(true)
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := accessCounts(t, ctx, db, ids); !slices.Equal(got, []int64{2, 2}) {
		t.Fatalf("access counts after a committed transaction = %v; want [2 2]", got)
	}
}
