package memory

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/embed"
)

// TestUpdateSupersedes covers VectorStore.Update: a new text closes the old
// memory and inserts its successor; anything else stays in place.
func TestUpdateSupersedes(t *testing.T) {
	type fixture struct {
		s     *VectorStore
		clk   *clock
		blue  int64 // "Favourite colour is blue", agent fact, recalled 3 times
		bike  int64 // "Owns a bicycle"
		start time.Time
	}
	cases := []struct {
		name    string
		edit    func(f fixture) Memory
		before  func(t *testing.T, f fixture) // extra set-up
		wantErr error
		wantNew bool // a successor was inserted
		check   func(t *testing.T, f fixture, old, cur Memory)
	}{
		{
			name: "new text closes the old memory",
			edit: func(f fixture) Memory {
				return Memory{ID: f.blue, Text: "Favourite colour is green", Kind: KindPreference}
			},
			wantNew: true,
			check: func(t *testing.T, f fixture, old, cur Memory) {
				if old.Text != "Favourite colour is blue" || old.ValidTo == nil || !old.ValidTo.Equal(f.clk.now()) || old.SupersededBy != cur.ID {
					t.Errorf("old version = %+v", old)
				}
				if cur.Text != "Favourite colour is green" || cur.Kind != KindPreference || cur.Source != SourceAgent ||
					cur.ValidTo != nil || cur.SupersededBy != 0 || !cur.ValidFrom.Equal(f.clk.now()) {
					t.Errorf("new version = %+v", cur)
				}
				if cur.AccessCount != 3 || cur.LastAccess == nil || !cur.LastAccess.Equal(f.start) {
					t.Errorf("access statistics not carried over: %d, %v", cur.AccessCount, cur.LastAccess)
				}
			},
		},
		{
			name:    "empty kind and source keep the old ones",
			edit:    func(f fixture) Memory { return Memory{ID: f.blue, Text: "Favourite colour is navy"} },
			wantNew: true,
			check: func(t *testing.T, f fixture, old, cur Memory) {
				if cur.Kind != KindFact || cur.Source != SourceAgent {
					t.Errorf("new version = %+v", cur)
				}
			},
		},
		{
			name: "a given source is the new version's",
			edit: func(f fixture) Memory {
				return Memory{ID: f.blue, Text: "Favourite colour is teal", Source: SourceUserExplicit}
			},
			wantNew: true,
			check: func(t *testing.T, f fixture, old, cur Memory) {
				if old.Source != SourceAgent || cur.Source != SourceUserExplicit {
					t.Errorf("sources old %s, new %s", old.Source, cur.Source)
				}
			},
		},
		{
			name:    "punctuation is a new text too",
			edit:    func(f fixture) Memory { return Memory{ID: f.blue, Text: "Favourite colour is blue!"} },
			wantNew: true,
			check: func(t *testing.T, f fixture, old, cur Memory) {
				if cur.Text != "Favourite colour is blue!" || old.SupersededBy != cur.ID {
					t.Errorf("old %+v, new %+v", old, cur)
				}
			},
		},
		{
			name: "metadata only stays in place",
			edit: func(f fixture) Memory {
				ev := time.Date(2024, 2, 3, 0, 0, 0, 0, time.UTC)
				return Memory{ID: f.blue, Text: "  Favourite colour is blue ", Kind: KindPreference, Source: SourceUserExplicit, EventTime: &ev, Thread: "web:x"}
			},
			check: func(t *testing.T, f fixture, old, cur Memory) {
				if cur.Kind != KindPreference || cur.Source != SourceUserExplicit || cur.Thread != "web:x" ||
					cur.EventTime == nil || cur.EventTime.Year() != 2024 || cur.ValidTo != nil || cur.AccessCount != 3 {
					t.Errorf("updated in place = %+v", cur)
				}
			},
		},
		{
			name:    "duplicate of another current memory",
			edit:    func(f fixture) Memory { return Memory{ID: f.blue, Text: "owns a BICYCLE."} },
			wantErr: ErrDuplicate,
		},
		{
			name: "a closed memory is history",
			before: func(t *testing.T, f fixture) {
				if _, err := f.s.Update(context.Background(), Memory{ID: f.blue, Text: "Favourite colour is red"}); err != nil {
					t.Fatal(err)
				}
			},
			edit:    func(f fixture) Memory { return Memory{ID: f.blue, Text: "Favourite colour is yellow"} },
			wantErr: ErrClosed,
		},
		{
			name:    "metadata of a closed memory neither",
			before:  func(t *testing.T, f fixture) { _ = f.s.Close(context.Background(), f.blue, time.Time{}) },
			edit:    func(f fixture) Memory { return Memory{ID: f.blue, Text: "Favourite colour is blue", Kind: KindOpinion} },
			wantErr: ErrClosed,
		},
		{
			name:    "unknown id",
			edit:    func(f fixture) Memory { return Memory{ID: 4242, Text: "x"} },
			wantErr: ErrNotFound,
		},
		{
			name: "secret",
			edit: func(f fixture) Memory {
				return Memory{ID: f.blue, Text: "api key is sk-proj-abcdefghijklmnopqrstuvwxyz"}
			},
			wantErr: ErrSecret,
		},
		{
			name:    "empty",
			edit:    func(f fixture) Memory { return Memory{ID: f.blue, Text: " \n "} },
			wantErr: ErrEmpty,
		},
		{
			name:    "unknown kind",
			edit:    func(f fixture) Memory { return Memory{ID: f.blue, Text: "Favourite colour is grey", Kind: "gossip"} },
			wantErr: ErrInvalid,
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			s, clk, _ := newStore(t)
			ids := seed(t, s, Memory{Text: "Favourite colour is blue", Source: SourceAgent}, Memory{Text: "Owns a bicycle"})
			f := fixture{s: s, clk: clk, blue: ids[0], bike: ids[1], start: clk.now()}
			if err := s.RecordAccess(ctx, []int64{f.blue, f.blue}, f.start); err != nil {
				t.Fatal(err)
			}
			if err := s.RecordAccess(ctx, []int64{f.blue}, f.start); err != nil {
				t.Fatal(err)
			}
			clk.advance(time.Hour)
			if c.before != nil {
				c.before(t, f)
			}
			allBefore, _ := s.Count(ctx, true)
			curBefore, _ := s.Count(ctx, false)
			id, err := s.Update(ctx, c.edit(f))
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				if all, _ := s.Count(ctx, true); all != allBefore {
					t.Errorf("a refused update wrote: %d memories, were %d", all, allBefore)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (id != f.blue) != c.wantNew {
				t.Fatalf("update returned %d (edited %d), want new version %v", id, f.blue, c.wantNew)
			}
			all, _ := s.Count(ctx, true)
			cur, _ := s.Count(ctx, false)
			if wantAll := allBefore + map[bool]int{true: 1}[c.wantNew]; all != wantAll || cur != curBefore {
				t.Errorf("counts all %d current %d, want %d and %d", all, cur, wantAll, curBefore)
			}
			old, err := s.Get(ctx, f.blue)
			if err != nil {
				t.Fatal(err)
			}
			now, err := s.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if c.check != nil {
				c.check(t, f, old, now)
			}
		})
	}
}

// TestSupersededHistory: the old version leaves recall and the default
// list, stays reachable with IncludeClosed, and all of it survives a
// reopen of the store.
func TestSupersededHistory(t *testing.T) {
	ctx := context.Background()
	s, clk, path := newStore(t)
	ids := seed(t, s, Memory{Text: "The user's dentist is Dr. Weber in Basel"}, Memory{Text: "Owns a bicycle"})
	clk.advance(time.Hour)
	v2, err := s.Update(ctx, Memory{ID: ids[0], Text: "The user's dentist is Dr. Keller in Zurich"})
	if err != nil {
		t.Fatal(err)
	}
	v3, err := s.Update(ctx, Memory{ID: v2, Text: "The user's dentist is Dr. Keller in Zug"})
	if err != nil {
		t.Fatal(err)
	}
	check := func(t *testing.T, s *VectorStore) {
		t.Helper()
		res, err := s.Recall(ctx, Query{Text: "who is the dentist", Peek: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range res {
			if r.ID == ids[0] || r.ID == v2 {
				t.Errorf("superseded memory %d recalled: %q", r.ID, r.Text)
			}
		}
		if len(res) == 0 || res[0].ID != v3 {
			t.Errorf("recall = %q, want the current version first", texts(res))
		}
		res, _ = s.Recall(ctx, Query{Text: "dentist Weber Basel", IncludeClosed: true, Peek: true})
		if len(res) == 0 || res[0].ID != ids[0] {
			t.Errorf("recall with closed = %q", texts(res))
		}
		cur, _ := s.List(ctx, Filter{})
		all, _ := s.List(ctx, Filter{IncludeClosed: true})
		if len(cur) != 2 || len(all) != 4 {
			t.Fatalf("list: %d current, %d in all", len(cur), len(all))
		}
		chain := map[int64]int64{}
		for _, m := range all {
			chain[m.ID] = m.SupersededBy
		}
		if chain[ids[0]] != v2 || chain[v2] != v3 || chain[v3] != 0 || chain[ids[1]] != 0 {
			t.Errorf("successor links %v (versions %d → %d → %d)", chain, ids[0], v2, v3)
		}
	}
	check(t, s)
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	t.Run("after reopening", func(t *testing.T) { check(t, openStore(t, path, embed.NewOffline(0), clk)) })
}

// TestReopenClearsSuccessor: making a superseded memory current again
// drops its successor link (current memories have none).
func TestReopenClearsSuccessor(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	ids := seed(t, s, Memory{Text: "Lives in Lyon"})
	if _, err := s.Update(ctx, Memory{ID: ids[0], Text: "Lives in Paris"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Reopen(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	m, _ := s.Get(ctx, ids[0])
	if m.ValidTo != nil || m.SupersededBy != 0 {
		t.Fatalf("reopened = %+v", m)
	}
}

func TestServiceUpdate(t *testing.T) {
	cases := []struct {
		name       string
		flat       bool
		edit       Memory // ID filled in
		wantFile   string
		wantSource Source
		wantKind   Kind
		wantNew    bool
		wantChange bool
	}{
		{"person edits the text", false, Memory{Text: "Drives a blue Fiat."}, "Drives a blue Fiat.\nPlays the cello.\n", SourceUserExplicit, KindFact, true, true},
		{"edit with a source", false, Memory{Text: "Drives a blue Fiat.", Source: SourceHarvest}, "Drives a blue Fiat.\nPlays the cello.\n", SourceHarvest, KindFact, true, true},
		// An episode leaves MEMORIES.txt (left there, the next Reconcile
		// stored the line again as a fact).
		{"kind only", false, Memory{Text: "Drives a red Fiat.", Kind: KindEpisode}, "Plays the cello.\n", SourceAgent, KindEpisode, false, true},
		{"kind only, not an episode", false, Memory{Text: "Drives a red Fiat.", Kind: KindPreference}, "Drives a red Fiat.\nPlays the cello.\n", SourceAgent, KindPreference, false, false},
		{"flat", true, Memory{Text: "Drives a blue Fiat."}, "Drives a blue Fiat.\nPlays the cello.\n", SourceImport, KindFact, true, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			svc, dir, ch := newService(t, c.flat)
			a, err := svc.Remember(ctx, Memory{Text: "Drives a red Fiat.", Kind: KindFact, Source: SourceAgent}, true)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Remember(ctx, Memory{Text: "Plays the cello.", Kind: KindFact, Source: SourceAgent}, true); err != nil {
				t.Fatal(err)
			}
			changes := ch.count()
			e := c.edit
			e.ID = a.ID
			id, err := svc.Update(ctx, e)
			if err != nil {
				t.Fatal(err)
			}
			if (id != a.ID) != c.wantNew {
				t.Errorf("id %d (was %d), want a new one: %v", id, a.ID, c.wantNew)
			}
			if got := readFile(t, dir); got != c.wantFile {
				t.Errorf("MEMORIES.txt = %q", got)
			}
			if got := ch.count() - changes; (got > 0) != c.wantChange {
				t.Errorf("%d change(s) recorded: %v", got, ch.msgs)
			}
			m, err := svc.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			if m.Source != c.wantSource || m.Kind != c.wantKind || m.Text != strings.TrimSpace(e.Text) {
				t.Errorf("current version %+v", m)
			}
			if c.wantNew && !c.flat {
				old, err := svc.Get(ctx, a.ID)
				if err != nil || old.ValidTo == nil || old.SupersededBy != id || old.Text != "Drives a red Fiat." {
					t.Errorf("old version %+v, %v", old, err)
				}
			}
		})
	}
}

func TestServiceUpdateRefused(t *testing.T) {
	ctx := context.Background()
	svc, dir, ch := newService(t, false)
	a, _ := svc.Remember(ctx, Memory{Text: "Drives a red Fiat.", Kind: KindFact, Source: SourceAgent}, true)
	b, _ := svc.Remember(ctx, Memory{Text: "Plays the cello.", Kind: KindFact, Source: SourceAgent}, true)
	next, err := svc.Update(ctx, Memory{ID: a.ID, Text: "Drives a green Fiat."})
	if err != nil {
		t.Fatal(err)
	}
	const file = "Drives a green Fiat.\nPlays the cello.\n"
	changes := ch.count()
	for _, c := range []struct {
		name string
		edit Memory
		want error
	}{
		{"duplicate", Memory{ID: next, Text: "plays the cello"}, ErrDuplicate},
		{"superseded version", Memory{ID: a.ID, Text: "Drives a blue Fiat."}, ErrClosed},
		{"secret", Memory{ID: b.ID, Text: "password: hunter2hunter2"}, ErrSecret},
		{"too long", Memory{ID: b.ID, Text: strings.Repeat("x", MaxTextLen+1)}, ErrTooLong},
		{"unknown", Memory{ID: 999999, Text: "x"}, ErrNotFound},
	} {
		t.Run(c.name, func(t *testing.T) {
			if _, err := svc.Update(ctx, c.edit); !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if got := readFile(t, dir); got != file {
				t.Fatalf("MEMORIES.txt = %q", got)
			}
		})
	}
	if ch.count() != changes {
		t.Errorf("refused edits recorded changes: %v", ch.msgs[changes:])
	}
}

// TestServiceReconcile: MEMORIES.txt is rewritten behind the service's
// back (a restore, a hand edit) and Reconcile brings the store in line.
func TestServiceReconcile(t *testing.T) {
	type state struct {
		svc *Service
		ids map[string]int64 // text → id of the memory remembered in set-up
	}
	remember := func(t *testing.T, st state, text string, keep bool) {
		t.Helper()
		r, err := st.svc.Remember(context.Background(), Memory{Text: text, Kind: KindPreference, Source: SourceUserExplicit}, keep)
		if err != nil {
			t.Fatal(err)
		}
		st.ids[text] = r.ID
	}
	cases := []struct {
		name  string
		setup func(t *testing.T, st state)
		file  string // MEMORIES.txt as restored
		want  Reconciled
		check func(t *testing.T, st state)
	}{
		{name: "no file", file: "", want: Reconciled{}},
		{
			name: "all present",
			setup: func(t *testing.T, st state) {
				remember(t, st, "Likes tea.", true)
				remember(t, st, "Hates rain.", true)
			},
			file: "Likes tea.\nHates rain.\n",
			want: Reconciled{Lines: 2, Present: 2},
		},
		{
			name: "forgotten line is imported again",
			setup: func(t *testing.T, st state) {
				remember(t, st, "Likes tea.", true)
				if _, err := st.svc.Forget(context.Background(), st.ids["Likes tea."]); err != nil {
					t.Fatal(err)
				}
			},
			file: "Likes tea.\n",
			want: Reconciled{Lines: 1, Imported: 1},
			check: func(t *testing.T, st state) {
				res, err := st.svc.Search(context.Background(), Query{Text: "tea", Peek: true})
				if err != nil || len(res) != 1 || res[0].Text != "Likes tea." || res[0].Source != SourceImport || res[0].Kind != KindFact {
					t.Fatalf("search = %+v, %v", res, err)
				}
			},
		},
		{
			name: "superseded line is reopened",
			setup: func(t *testing.T, st state) {
				remember(t, st, "Lives in Lyon.", true)
				id, err := st.svc.Update(context.Background(), Memory{ID: st.ids["Lives in Lyon."], Text: "Lives in Paris."})
				if err != nil {
					t.Fatal(err)
				}
				st.ids["Lives in Paris."] = id
			},
			file: "Lives in Lyon.\n",
			want: Reconciled{Lines: 1, Reopened: 1},
			check: func(t *testing.T, st state) {
				ctx := context.Background()
				m, _ := st.svc.Get(ctx, st.ids["Lives in Lyon."])
				if m.ValidTo != nil || m.SupersededBy != 0 || m.Source != SourceUserExplicit || m.Kind != KindPreference {
					t.Errorf("reopened = %+v", m)
				}
				// The file is only the top: its successor stays current.
				if m, _ := st.svc.Get(ctx, st.ids["Lives in Paris."]); m.ValidTo != nil {
					t.Errorf("successor closed: %+v", m)
				}
			},
		},
		{
			name: "closed text equal only after normalisation is imported",
			setup: func(t *testing.T, st state) {
				remember(t, st, "Lives in Lyon.", true)
				if err := st.svc.Store().Close(context.Background(), st.ids["Lives in Lyon."], time.Time{}); err != nil {
					t.Fatal(err)
				}
			},
			file: "lives in LYON\n",
			want: Reconciled{Lines: 1, Imported: 1},
			check: func(t *testing.T, st state) {
				if m, _ := st.svc.Get(context.Background(), st.ids["Lives in Lyon."]); m.ValidTo == nil {
					t.Errorf("closed memory reopened: %+v", m)
				}
			},
		},
		{
			name: "line gone from the file stays in the store",
			setup: func(t *testing.T, st state) {
				remember(t, st, "Likes tea.", true)
				remember(t, st, "Hates rain.", true)
			},
			file: "Hates rain.\n",
			want: Reconciled{Lines: 1, Present: 1},
			check: func(t *testing.T, st state) {
				if n, _ := st.svc.Store().Count(context.Background(), false); n != 2 {
					t.Errorf("store holds %d current memories, want 2", n)
				}
			},
		},
		{
			name:  "kept out of view is present",
			setup: func(t *testing.T, st state) { remember(t, st, "Minor: the vet is Dr. Roux.", false) },
			file:  "minor: the vet is dr. roux\n",
			want:  Reconciled{Lines: 1, Present: 1},
		},
		{
			name: "hand-written lines, duplicates and refused ones",
			file: "\uFEFFWorks night shifts.\r\n\n  works night shifts  \npassword: hunter2hunter2\n" + strings.Repeat("y", MaxTextLen+1) + "\nHas a dog.\n",
			want: Reconciled{Lines: 4, Imported: 2, Skipped: 2},
			check: func(t *testing.T, st state) {
				all, _ := st.svc.List(context.Background(), Filter{IncludeClosed: true})
				if len(all) != 2 {
					t.Errorf("stored %d memories: %+v", len(all), all)
				}
				for _, m := range all {
					if strings.Contains(m.Text, "hunter2") {
						t.Errorf("secret stored: %q", m.Text)
					}
				}
			},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			svc, dir, ch := newService(t, false)
			st := state{svc: svc, ids: map[string]int64{}}
			if c.setup != nil {
				c.setup(t, st)
			}
			path := filepath.Join(dir, MemoriesFile)
			if c.file == "" {
				_ = os.Remove(path)
			} else if err := os.WriteFile(path, []byte(c.file), 0o600); err != nil {
				t.Fatal(err)
			}
			changes := ch.count()
			got, err := svc.Reconcile(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want {
				t.Errorf("reconcile = %+v, want %+v", got, c.want)
			}
			if c.check != nil {
				c.check(t, st)
			}
			again, err := svc.Reconcile(ctx)
			want := Reconciled{Lines: c.want.Lines, Present: c.want.Lines - c.want.Skipped, Skipped: c.want.Skipped}
			if err != nil || again != want || again.Changed() {
				t.Errorf("second reconcile = %+v, %v; want %+v", again, err, want)
			}
			if b, _ := os.ReadFile(path); string(b) != c.file {
				t.Errorf("MEMORIES.txt changed to %q", b)
			}
			if ch.count() != changes {
				t.Errorf("reconcile recorded file changes: %v", ch.msgs[changes:])
			}
		})
	}
}

func TestServiceReconcileFlat(t *testing.T) {
	ctx := context.Background()
	svc, dir, _ := newService(t, true)
	if err := os.WriteFile(filepath.Join(dir, MemoriesFile), []byte("A.\nB.\na\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	got, err := svc.Reconcile(ctx)
	if err != nil || got != (Reconciled{Lines: 2, Present: 2}) {
		t.Fatalf("reconcile = %+v, %v", got, err)
	}
}

// TestReconcileSameSizeRestore: a restore that rewrites MEMORIES.txt with
// a text of the same size right after a read is still seen.
func TestReconcileSameSizeRestore(t *testing.T) {
	ctx := context.Background()
	svc, dir, _ := newService(t, false)
	if _, err := svc.Remember(ctx, Memory{Text: "Likes tea.", Kind: KindFact}, true); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, MemoriesFile)
	st, _ := os.Stat(path)
	if _, err := svc.WorkingSet(ctx); err != nil { // cached
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("Likes gin.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	_ = os.Chtimes(path, st.ModTime(), st.ModTime()) // same size, same time
	got, err := svc.Reconcile(ctx)
	if err != nil || got != (Reconciled{Lines: 1, Imported: 1}) {
		t.Fatalf("reconcile = %+v, %v", got, err)
	}
}

// TestEnsureCurrent covers the store side of Reconcile directly.
func TestEnsureCurrent(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	ids := seed(t, s, Memory{Text: "Alpha"}, Memory{Text: "Beta"}, Memory{Text: "Gamma"})
	if err := s.Close(ctx, ids[1], time.Time{}); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	out, err := s.EnsureCurrent(ctx, []Memory{{Text: "alpha."}, {Text: "Beta"}, {Text: "Gamma"}, {Text: "Gamma"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != 4 || out[0] != (Ensured{ids[0], EnsurePresent}) || out[1] != (Ensured{ids[1], EnsureReopened}) ||
		out[2].Outcome != EnsureAdded || out[3] != (Ensured{out[2].ID, EnsurePresent}) {
		t.Fatalf("ensure = %+v (ids %v)", out, ids)
	}
	res, _ := s.Recall(ctx, Query{Text: "gamma beta", Peek: true})
	if got := fmt.Sprint(texts(res)); !strings.Contains(got, "Gamma") || !strings.Contains(got, "Beta") {
		t.Errorf("recall after ensure = %s", got)
	}
	if _, err := s.EnsureCurrent(ctx, []Memory{{Text: "fine"}, {Text: "token ghp_abcdefghijklmnopqrstuvwxyz0123"}}); !errors.Is(err, ErrSecret) {
		t.Errorf("secret: %v", err)
	}
	if n, _ := s.Count(ctx, true); n != 3 {
		t.Errorf("refused batch wrote: %d memories", n)
	}
}

// TestConcurrentEdits: racing edits of one memory leave one successor (the
// others find it closed), and reconciles racing writers stay consistent.
func TestConcurrentEdits(t *testing.T) {
	ctx := context.Background()
	svc, dir, _ := newService(t, false)
	r, err := svc.Remember(ctx, Memory{Text: "The meeting is on Monday.", Kind: KindFact}, true)
	if err != nil {
		t.Fatal(err)
	}
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = svc.Update(ctx, Memory{ID: r.ID, Text: fmt.Sprintf("The meeting is on day %d.", i)})
		})
	}
	for i := range n {
		wg.Go(func() {
			if _, err := svc.Reconcile(ctx); err != nil {
				t.Error(err)
			}
			if _, err := svc.Remember(ctx, Memory{Text: fmt.Sprintf("Side note %d.", i), Kind: KindFact}, true); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case !errors.Is(err, ErrClosed):
			t.Errorf("racing edit: %v", err)
		}
	}
	if ok != 1 {
		t.Fatalf("%d edits succeeded, want 1: %v", ok, errs)
	}
	if cur, _ := svc.Store().Count(ctx, false); cur != 1+n {
		t.Errorf("%d current memories, want %d", cur, 1+n)
	}
	if all, _ := svc.Store().Count(ctx, true); all != 2+n {
		t.Errorf("%d memories in all, want %d", all, 2+n)
	}
	lines := strings.Split(strings.TrimSpace(readFile(t, dir)), "\n")
	if len(lines) != 1+n || !strings.HasPrefix(lines[0], "The meeting is on day ") {
		t.Errorf("MEMORIES.txt:\n%s", strings.Join(lines, "\n"))
	}
	if got, err := svc.Reconcile(ctx); err != nil || got.Changed() || got.Present != 1+n {
		t.Errorf("final reconcile = %+v, %v", got, err)
	}
}
