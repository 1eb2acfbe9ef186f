package memory

import (
	"context"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
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
