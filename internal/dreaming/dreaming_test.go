package dreaming

import (
	"context"
	"errors"
	"hash/fnv"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// topicEmbedder places texts on known axes so tests control similarity:
// every keyword found adds its weight on its axis, and a per-text noise
// axis adds 0.3. Two texts sharing one weight-1 keyword are at cosine ≈
// 0.92; "home + city" texts with different cities at ≈ 0.58.
type topicEmbedder struct{}

var axes = map[string]struct {
	axis int
	w    float32
}{
	"coffee": {0, 1}, "lives": {1, 1}, "lyon": {2, 0.8}, "berlin": {3, 0.8}, "piano": {4, 1}, "deploy": {5, 1},
	"cat": {6, 1}, "dentist": {7, 1}, "marathon": {8, 1}, "sister": {9, 1}, "python": {10, 1}, "garden": {11, 1},
	"bicycle": {12, 1}, "novel": {13, 1}, "allergy": {14, 1}, "passport": {15, 1}, "sushi": {16, 1}, "chess": {17, 1},
	"trip": {18, 1}, "budget": {19, 1},
	// A chain: "niece lives porto" ~ "nephew lives porto" ~ "nephew lives
	// lisbon" at ≈ 0.86 each step, the two ends at ≈ 0.79.
	"niece": {20, 0.3}, "nephew": {21, 0.3}, "porto": {22, 0.3}, "lisbon": {23, 0.3},
}

const topicDims = 128

func (topicEmbedder) Dimensions() int { return topicDims }
func (topicEmbedder) ID() string      { return "topics" }
func (topicEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	for i, t := range texts {
		v := make([]float32, topicDims)
		for _, w := range strings.Fields(strings.ToLower(t)) {
			if a, ok := axes[strings.TrimSuffix(strings.Trim(w, ".,!?"), "'s")]; ok {
				v[a.axis] += a.w
			}
		}
		h := fnv.New32a()
		h.Write([]byte(t))
		v[32+int(h.Sum32()%96)] += 0.3
		embed.Normalize(v)
		out[i] = v
	}
	return out, nil
}

type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

type fixture struct {
	dir     string
	svc     *memory.Service
	vs      *memory.VectorStore
	pulse   *pulse.Store
	clk     *clock
	d       *Dreamer
	calls   []string // prompt file each model call used
	mu      sync.Mutex
	reply   func(prompt string) string
	commits []string
}

func newFixture(t *testing.T, flat bool) *fixture {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	if _, err := datadir.Bootstrap(dir, nil); err != nil {
		t.Fatal(err)
	}
	// No starter skills: tests that want skills write their own.
	entries, _ := os.ReadDir(filepath.Join(dir, "skills"))
	for _, e := range entries {
		os.Remove(filepath.Join(dir, "skills", e.Name()))
	}
	db, err := sqlite.Open(ctx, filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{dir: dir, clk: &clock{t: time.Date(2026, 1, 10, 1, 0, 0, 0, time.UTC)}}
	var st memory.Store
	if flat {
		st = memory.NewFlat(filepath.Join(dir, memory.MemoriesFile), f.clk.now, nil)
	} else {
		vs, err := memory.OpenVector(ctx, db, topicEmbedder{}, f.clk.now, nil, memory.DefaultTuning)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { vs.Shutdown(context.Background()) })
		f.vs, st = vs, vs
	}
	f.svc, err = memory.NewService(memory.ServiceOptions{Store: st, DataDir: dir, Now: f.clk.now})
	if err != nil {
		t.Fatal(err)
	}
	f.pulse, err = pulse.Open(ctx, db, pulse.Options{Now: f.clk.now})
	if err != nil {
		t.Fatal(err)
	}
	model := llmtest.Func(func(ctx context.Context, req llm.Request) (llm.Response, error) {
		p := req.Messages[0].Text()
		f.mu.Lock()
		f.calls = append(f.calls, p)
		reply := f.reply
		f.mu.Unlock()
		if reply == nil {
			return llm.Response{}, errors.New("no reply scripted")
		}
		return llm.Response{Message: llm.AssistantText(reply(p)), Usage: llm.Usage{InputTokens: 10, OutputTokens: 5}}, nil
	})
	f.d, err = New(ctx, Options{DB: db, DataDir: dir, Memory: f.svc, Pulse: f.pulse, Model: model, Embedder: topicEmbedder{},
		Now: f.clk.now, Commit: func(_ context.Context, msg string, paths ...string) (string, error) {
			f.commits = append(f.commits, msg+": "+strings.Join(paths, ","))
			return "abc1234", nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) remember(t *testing.T, text string, src memory.Source, keep bool) int64 {
	t.Helper()
	r, err := f.svc.Remember(context.Background(), memory.Memory{Text: text, Kind: memory.KindFact, Source: src}, keep)
	if err != nil {
		t.Fatal(err)
	}
	return r.ID
}

func (f *fixture) isCurrent(t *testing.T, id int64) bool {
	t.Helper()
	m, err := f.svc.Get(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return m.ValidTo == nil
}

func (f *fixture) current(t *testing.T) []string {
	t.Helper()
	ms, err := f.svc.List(context.Background(), memory.Filter{})
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, m := range ms {
		out = append(out, m.Text)
	}
	slices.Sort(out)
	return out
}

func component(rep Report, name string) ComponentReport {
	for _, c := range rep.Components {
		if c.Name == name {
			return c
		}
	}
	return ComponentReport{}
}

var fillers = []string{"Plays the piano on Sundays.", "Has a cat called Miso.", "Sees the dentist in March.", "Ran a marathon in 2024.",
	"Writes Python at work.", "Grows tomatoes in the garden.", "Commutes by bicycle.", "Is writing a novel.",
	"Loves sushi.", "Plays chess online.", "Keeps a monthly budget.", "The sister is called Ana."}

// vectorReply answers each prompt file as a sensible model would.
func vectorReply(decision string) func(string) string {
	return func(p string) string {
		switch {
		case strings.Contains(p, "are worded alike"):
			return `{"decision":"merge","merged":"The user drinks black coffee every morning.","reason":"same habit"}`
		case strings.Contains(p, "may contradict each other"):
			if decision == "merge" {
				return `{"decision":"merge","merged":"The user lived in Lyon and now lives in Berlin.","reason":"moved"}`
			}
			return "```json\n{\"decision\":\"" + decision + "\",\"merged\":\"\",\"reason\":\"newer\"}\n```"
		case strings.Contains(p, "reviewing the pulse"):
			return `{"actions":[]}`
		}
		return ""
	}
}

func TestVectorDream(t *testing.T) {
	for _, decision := range []string{"keep_first", "keep_second", "merge"} {
		t.Run(decision, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(t, false)
			f.reply = vectorReply(decision)
			c1 := f.remember(t, "User drinks coffee every morning.", memory.SourceAgent, true)
			c2 := f.remember(t, "The user has coffee each morning.", memory.SourceAgent, true)
			c3 := f.remember(t, "User drinks black coffee in the morning.", memory.SourceAgent, false)
			lyon := f.remember(t, "The user lives in Lyon.", memory.SourceAgent, false)
			// Stale: recorded 120 days ago, never recalled.
			f.clk.add(-120 * 24 * time.Hour)
			stale := f.remember(t, "Booked a trip to Rome.", memory.SourceAgent, false)
			kept := f.remember(t, "Has a passport from Portugal.", memory.SourceUserExplicit, false)
			f.clk.add(120 * 24 * time.Hour)
			berlin := f.remember(t, "The user lives in Berlin.", memory.SourceAgent, false)
			for _, s := range fillers {
				f.remember(t, s, memory.SourceAgent, false)
			}
			// A hand-written line only in MEMORIES.txt.
			ws, _ := os.ReadFile(filepath.Join(f.dir, "MEMORIES.txt"))
			os.WriteFile(filepath.Join(f.dir, "MEMORIES.txt"), append(ws, []byte("Allergy to penicillin.\n")...), 0o600)
			before := f.current(t)

			rep, err := f.d.Dream(ctx, "test")
			if err != nil {
				t.Fatal(err)
			}
			mc := component(rep, "memories")
			if mc.Status != StatusOK {
				t.Fatalf("memories: %+v", mc)
			}
			for _, id := range []int64{c1, c2, c3} {
				if f.isCurrent(t, id) {
					t.Errorf("duplicate #%d still current", id)
				}
			}
			cur := f.current(t)
			if !slices.Contains(cur, "The user drinks black coffee every morning.") {
				t.Errorf("merged memory missing: %v", cur)
			}
			switch decision {
			case "keep_first":
				if f.isCurrent(t, berlin) || !f.isCurrent(t, lyon) {
					t.Error("keep_first did not close the second entry")
				}
			case "keep_second":
				if !f.isCurrent(t, berlin) || f.isCurrent(t, lyon) {
					t.Error("keep_second did not close the first entry")
				}
			case "merge":
				if f.isCurrent(t, berlin) || f.isCurrent(t, lyon) || !slices.Contains(cur, "The user lived in Lyon and now lives in Berlin.") {
					t.Errorf("merge: %v", cur)
				}
			}
			if f.isCurrent(t, stale) {
				t.Error("stale memory not pruned")
			}
			if !f.isCurrent(t, kept) {
				t.Error("user_explicit memory pruned")
			}
			ms, _ := os.ReadFile(filepath.Join(f.dir, "MEMORIES.txt"))
			if !strings.Contains(string(ms), "black coffee every morning") || !strings.Contains(string(ms), "Allergy to penicillin") {
				t.Errorf("MEMORIES.txt export:\n%s", ms)
			}
			if rep.ModelCalls != 2 { // one cluster, one pair (no pulse items: no review)
				t.Errorf("model calls = %d, want 2", rep.ModelCalls)
			}
			if len(f.commits) != 1 || !strings.Contains(f.commits[0], "MEMORIES.txt") || rep.Revision != "abc1234" {
				t.Errorf("commits %v, revision %q", f.commits, rep.Revision)
			}
			if !strings.HasSuffix(rep.Format(), "\nUndo with: reverie dream revert 1") || rep.Changes == 0 {
				t.Errorf("report (%d changes): %s", rep.Changes, rep.Format())
			}

			// Revert restores the store and the file.
			if n, err := f.d.Revert(ctx, rep.ID); err != nil || n != rep.Changes {
				t.Fatalf("revert: %d change(s) undone, %v; the report counted %d", n, err, rep.Changes)
			}
			after := f.current(t)
			want := append(slices.Clone(before), "Allergy to penicillin.")
			slices.Sort(want)
			if !slices.Equal(after, want) {
				t.Errorf("after revert:\n got %v\nwant %v", after, want)
			}
			if got, _ := os.ReadFile(filepath.Join(f.dir, "MEMORIES.txt")); string(got) != string(ws)+"Allergy to penicillin.\n" {
				t.Errorf("MEMORIES.txt after revert = %q", got)
			}
			if _, err := f.d.Revert(ctx, rep.ID); !errors.Is(err, ErrReverted) {
				t.Errorf("second revert: %v", err)
			}
			reps, err := f.d.Reports(ctx, 5)
			if err != nil || len(reps) != 1 || !reps[0].Reverted || reps[0].Changes != rep.Changes {
				t.Errorf("reports %+v, %v", reps, err)
			}
			// A reverted dream offers no undo.
			if got := reps[0].Format(); strings.Contains(got, "Undo") || !strings.Contains(got, "[reverted]") {
				t.Errorf("reverted report:\n%s", got)
			}
		})
	}
}

func TestVectorDreamGuardRefuses(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	f.reply = vectorReply("keep_first")
	for _, s := range []string{"User drinks coffee every morning.", "The user has coffee each morning.", "Coffee is the user's morning drink.",
		"Piano lessons on Sunday."} {
		f.remember(t, s, memory.SourceAgent, true)
	}
	ms, _ := os.ReadFile(filepath.Join(f.dir, "MEMORIES.txt"))
	before := f.current(t)
	rep, err := f.d.Dream(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	mc := component(rep, "memories")
	if mc.Status != StatusRefused || !strings.Contains(mc.Detail, "2 of 4") {
		t.Fatalf("memories: %+v", mc)
	}
	// The report says "refused" once, as the status.
	if want := "\n- memories: refused — it would remove 2 of 4 entries (50%"; !strings.Contains(rep.Format(), want) {
		t.Errorf("report:\n%s\nwant a line starting %q", rep.Format(), want)
	}
	if got := f.current(t); !slices.Equal(got, before) {
		t.Errorf("store changed: %v", got)
	}
	if got, _ := os.ReadFile(filepath.Join(f.dir, "MEMORIES.txt")); string(got) != string(ms) {
		t.Errorf("MEMORIES.txt changed: %q", got)
	}
	// Nothing changed: no undo is offered, now or when listed.
	reps, err := f.d.Reports(ctx, 1)
	if err != nil || len(reps) != 1 {
		t.Fatalf("reports %+v, %v", reps, err)
	}
	for _, r := range []Report{rep, reps[0]} {
		if got := r.Format(); r.Changes != 0 || !strings.HasSuffix(got, "\nNothing was changed, so there is nothing to undo.") {
			t.Errorf("report of a dream that changed nothing (%d changes):\n%s", r.Changes, got)
		}
	}
}

func TestFlatDream(t *testing.T) {
	cases := []struct {
		name, reply string
		status      Status
		want        string // MEMORIES.txt after; "" = unchanged
	}{
		{"consolidated", "```\n- Likes tea.\nLives in Lyon since 2024.\nHas two cats.\nWorks as a nurse.\nSpeaks French.\nBorn in 1990.\n```", StatusOK, "Likes tea.\nLives in Lyon since 2024.\nHas two cats.\nWorks as a nurse.\nSpeaks French.\nBorn in 1990.\n"},
		{"drops too much", "Likes tea.\n", StatusRefused, ""},
		{"replaces every fact, same line count", "Owns a boat.\nLives in Oslo.\nHas a dog.\nWorks as a pilot.\nSpeaks Danish.\nPlays chess.\nDrives a van.\nGrows tomatoes.\n", StatusRefused, ""},
		{"keeps half, replaces the rest", "Likes green tea.\nLives in Lyon since 2024.\nOwns a dog.\nFlies planes.\nPlays chess.\nDrives a van.\n", StatusRefused, ""},
		{"reworded and merged", "Enjoys tea, green in particular.\nLives in Lyon (moved there in 2024).\nHas 2 cats.\nNurse by profession.\nSpeaks French.\nBorn in 1990.\n", StatusOK, "Enjoys tea, green in particular.\nLives in Lyon (moved there in 2024).\nHas 2 cats.\nNurse by profession.\nSpeaks French.\nBorn in 1990.\n"},
		{"empty", "   ", StatusRefused, ""},
		{"secret line left out", "Likes tea.\nLives in Lyon since 2024.\nHas two cats.\nWorks as a nurse.\nSpeaks French.\nBorn in 1990.\npassword: hunter22\n", StatusOK, "Likes tea.\nLives in Lyon since 2024.\nHas two cats.\nWorks as a nurse.\nSpeaks French.\nBorn in 1990.\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, true)
			orig := "Likes tea.\nLikes green tea.\nLives in Lyon.\nMoved to Lyon in 2024.\nHas two cats.\nWorks as a nurse.\nSpeaks French.\nBorn in 1990.\n"
			os.WriteFile(filepath.Join(f.dir, "MEMORIES.txt"), []byte(orig), 0o600)
			f.reply = func(p string) string {
				if strings.Contains(p, "long-term memory file") {
					return c.reply
				}
				return `{"actions":[]}`
			}
			rep, err := f.d.Dream(context.Background(), "test")
			if err != nil {
				t.Fatal(err)
			}
			mc := component(rep, "memories")
			if mc.Status != c.status {
				t.Fatalf("status %s (%s), want %s", mc.Status, mc.Detail, c.status)
			}
			got, _ := os.ReadFile(filepath.Join(f.dir, "MEMORIES.txt"))
			want := c.want
			if want == "" {
				want = orig
			}
			if string(got) != want {
				t.Fatalf("MEMORIES.txt = %q, want %q", got, want)
			}
			if c.status == StatusOK {
				if _, err := f.d.Revert(context.Background(), rep.ID); err != nil {
					t.Fatal(err)
				}
				if got, _ := os.ReadFile(filepath.Join(f.dir, "MEMORIES.txt")); string(got) != orig {
					t.Fatalf("after revert %q", got)
				}
			}
		})
	}
}

func TestPulseDream(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	var ids []int64
	for _, s := range []string{"Send the tax form", "Renew passport", "Call the plumber", "Plan the trip", "Buy a gift", "Fix the bike"} {
		it, err := f.pulse.Add(ctx, pulse.NewItem{Text: s, Priority: 5})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, it.ID)
	}
	f.reply = func(p string) string {
		if !strings.Contains(p, "reviewing the pulse") {
			return ""
		}
		return `Here you go: {"actions":[{"id":` + itoa(ids[0]) + `,"action":"complete","reason":"sent"},` +
			`{"id":` + itoa(ids[1]) + `,"action":"update","content":"Renew passport before June","priority":2,"reason":"trip"},` +
			`{"id":9999,"action":"complete"},{"id":` + itoa(ids[2]) + `,"action":"keep"}]}`
	}
	rep, err := f.d.Dream(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	pc := component(rep, "pulse")
	if pc.Status != StatusOK {
		t.Fatalf("pulse: %+v", pc)
	}
	got, _ := f.pulse.Get(ctx, ids[0])
	if got.Status != pulse.StatusCompleted {
		t.Errorf("#%d status %s", ids[0], got.Status)
	}
	got, _ = f.pulse.Get(ctx, ids[1])
	if got.Text != "Renew passport before June" || got.Priority != 2 {
		t.Errorf("#%d = %+v", ids[1], got)
	}
	if !strings.Contains(strings.Join(pc.Lines, "\n"), "unknown or repeated item #9999") {
		t.Errorf("lines: %v", pc.Lines)
	}
	if _, err := f.d.Revert(ctx, rep.ID); err != nil {
		t.Fatal(err)
	}
	got, _ = f.pulse.Get(ctx, ids[0])
	if got.Status != pulse.StatusActive {
		t.Errorf("after revert #%d status %s", ids[0], got.Status)
	}
	got, _ = f.pulse.Get(ctx, ids[1])
	if got.Text != "Renew passport" || got.Priority != 5 {
		t.Errorf("after revert #%d = %+v", ids[1], got)
	}

	// Completing 4 of 6 at once is refused; bad JSON is refused.
	f.reply = func(p string) string {
		var b strings.Builder
		b.WriteString(`{"actions":[`)
		for i, id := range ids[:4] {
			if i > 0 {
				b.WriteString(",")
			}
			b.WriteString(`{"id":` + itoa(id) + `,"action":"complete"}`)
		}
		b.WriteString("]}")
		return b.String()
	}
	rep, _ = f.d.Dream(ctx, "test")
	if pc := component(rep, "pulse"); pc.Status != StatusRefused {
		t.Errorf("mass completion: %+v", pc)
	}
	f.reply = func(string) string { return "I think all is fine." }
	rep, _ = f.d.Dream(ctx, "test")
	if pc := component(rep, "pulse"); pc.Status != StatusRefused {
		t.Errorf("unparseable: %+v", pc)
	}
	active, _ := f.pulse.Active(ctx)
	if len(active) != 6 {
		t.Errorf("active items %d, want 6", len(active))
	}
}

func TestComponentFailureIsolated(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	f.remember(t, "User drinks coffee every morning.", memory.SourceAgent, true)
	f.remember(t, "The user has coffee each morning.", memory.SourceAgent, true)
	for _, s := range fillers {
		f.remember(t, s, memory.SourceAgent, false)
	}
	if _, err := f.pulse.Add(ctx, pulse.NewItem{Text: "Renew passport"}); err != nil {
		t.Fatal(err)
	}
	f.reply = func(p string) string {
		if strings.Contains(p, "reviewing the pulse") {
			return `{"actions":[{"id":1,"action":"update","priority":1}]}`
		}
		return "" // the memory model call "fails" with an empty merge
	}
	rep, err := f.d.Dream(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	if mc := component(rep, "memories"); mc.Status != StatusOK || !strings.Contains(strings.Join(mc.Lines, " "), "was empty") {
		t.Errorf("memories: %+v", mc)
	}
	if pc := component(rep, "pulse"); pc.Status != StatusOK {
		t.Errorf("pulse: %+v", pc)
	}
	// A model that errors fails its component only.
	f.reply = nil
	rep, err = f.d.Dream(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	if mc := component(rep, "memories"); mc.Status != StatusFailed {
		t.Errorf("memories with failing model: %+v", mc)
	}
	if sc := component(rep, "skills"); sc.Status == "" {
		t.Errorf("skills component missing: %+v", rep)
	}
}

func TestFindSimilarLSHFindsPlantedDuplicates(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	const n, dims = ExactLimit + 2000, 64
	items := make([]item, n)
	for i := range items {
		v := make([]float32, dims)
		for d := range v {
			v[d] = float32(rng.NormFloat64())
		}
		embed.Normalize(v)
		items[i] = item{id: int64(i), vec: v}
	}
	// Plant 30 near-duplicates (cosine ≈ 0.95) of random items.
	planted := map[[2]int]bool{}
	for k := range 30 {
		src := k * 97
		dst := n - 1 - k
		v := slices.Clone(items[src].vec)
		for d := range v {
			v[d] += float32(rng.NormFloat64()) * 0.04
		}
		embed.Normalize(v)
		items[dst].vec = v
		planted[[2]int{src, dst}] = true
	}
	sim := findSimilar(items, 0.5, 0.85, 20, nil)
	found := 0
	for _, cl := range sim.clusters {
		for p := range planted {
			if slices.Contains(cl, p[0]) && slices.Contains(cl, p[1]) {
				found++
			}
		}
	}
	if found < 29 {
		t.Errorf("LSH found %d of 30 planted duplicates", found)
	}
	if limit := lshTables * n * lshMaxBucket; sim.compared > limit || sim.compared > n*n/2/4 {
		t.Errorf("compared %d pairs; the bound is %d and a quarter of all pairs is %d", sim.compared, limit, n*n/8)
	}
}

// The nightly dream runs as a scheduled job (dreaming/nightly) at its
// time in the configured zone, one receipt per night.
func TestNightlyJob(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		dir := t.TempDir()
		datadir.Bootstrap(dir, nil)
		db, err := sqlite.Open(ctx, filepath.Join(dir, "reverie.db"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		svc, _ := memory.NewService(memory.ServiceOptions{Store: memory.NewFlat(filepath.Join(dir, "MEMORIES.txt"), nil, nil), DataDir: dir})
		d, err := New(ctx, Options{DB: db, DataDir: dir, Memory: svc, Model: llmtest.Func(func(context.Context, llm.Request) (llm.Response, error) {
			return llm.Response{}, nil
		})})
		if err != nil {
			t.Fatal(err)
		}
		loc, _ := time.LoadLocation("Europe/Berlin")
		sch, err := scheduler.Open(ctx, scheduler.Options{DB: db, Location: loc})
		if err != nil {
			t.Fatal(err)
		}
		jobs := Nightly{Dreamer: d, Hour: 1}.ScheduledJobs()
		if len(jobs) != 1 || jobs[0].Timeout != JobTimeout {
			t.Fatalf("jobs %+v", jobs)
		}
		if err := sch.RegisterJob(ctx, scheduler.ExtensionJob(Owner, jobs[0])); err != nil {
			t.Fatal(err)
		}
		done := make(chan error)
		go func() { done <- sch.Run(ctx) }()
		time.Sleep(3*24*time.Hour + time.Hour) // fake time inside the bubble
		synctest.Wait()
		reps, _ := d.Reports(ctx, 10)
		rs, _ := sch.Receipts(ctx, "job:"+Owner+"/"+Job, 10)
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		sch.Close()
		if len(reps) != 3 || len(rs) != 3 {
			t.Fatalf("%d dreams and %d receipts in 3 days, want 3", len(reps), len(rs))
		}
		for _, r := range reps {
			if h := r.Started.In(loc).Hour(); h != 1 || r.Trigger != "schedule" {
				t.Errorf("dream at %v (%s)", r.Started.In(loc), r.Trigger)
			}
		}
		if rs[0].Outcome != scheduler.OutcomeFired || !strings.HasPrefix(rs[0].Reason, "dream #") {
			t.Errorf("receipt %+v", rs[0])
		}
		// The first night condenses the starter skills; later nights, with
		// nothing changed, make no model call at all.
		for _, r := range reps[:2] {
			if r.ModelCalls != 0 {
				t.Errorf("dream #%d made %d model calls with nothing changed", r.ID, r.ModelCalls)
			}
		}
	})
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// Old conversation sessions are condensed into facts and their episodes
// closed; recent ones stay; episodes never reach MEMORIES.txt; Revert
// restores the episodes and removes the facts.
func TestVectorDreamCondensesEpisodes(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, false)
	var asked string
	f.reply = func(p string) string {
		if strings.Contains(p, "worth remembering about the user") {
			asked = p
			return "- The user adopted a kitten called Miso.\n- password: hunter2hunter2\n"
		}
		return vectorReply("keep_first")(p)
	}
	for _, s := range fillers {
		f.remember(t, s, memory.SourceAgent, false)
	}
	now := f.clk.now()
	record := func(at time.Time, message, reply string) []int64 {
		msg := chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, Sender: chat.Sender{ID: "web"}, Text: message, Received: at}
		ids, err := memory.Ingest(ctx, f.svc.Store(), nil, msg, memory.Reply{Speaker: "Reverie", Text: reply})
		if err != nil {
			t.Fatal(err)
		}
		return ids
	}
	old := record(now.Add(-10*24*time.Hour), "I adopted a kitten called Miso", "Congratulations!")
	recent := record(now.Add(-time.Hour), "Miso broke a vase today", "Oh no!")
	rep, err := f.d.Dream(ctx, "test")
	if err != nil {
		t.Fatal(err)
	}
	mc := component(rep, "memories")
	if mc.Status != StatusOK || !strings.Contains(mc.Detail, "2 episode(s) condensed into 1 fact(s)") {
		t.Fatalf("memories: %+v", mc)
	}
	if !strings.Contains(asked, "user: I adopted a kitten called Miso") || strings.Contains(asked, "vase") {
		t.Errorf("condensation prompt:\n%s", asked)
	}
	for _, id := range old {
		if f.isCurrent(t, id) {
			t.Errorf("old episode #%d still current", id)
		}
	}
	for _, id := range recent {
		if !f.isCurrent(t, id) {
			t.Errorf("recent episode #%d closed", id)
		}
	}
	facts, err := f.svc.List(ctx, memory.Filter{Sources: []memory.Source{memory.SourceDream}})
	if err != nil || len(facts) != 1 || facts[0].Text != "The user adopted a kitten called Miso." || facts[0].Kind != memory.KindFact {
		t.Fatalf("condensed facts %+v, %v", facts, err)
	}
	ms, _ := os.ReadFile(filepath.Join(f.dir, "MEMORIES.txt"))
	if strings.Contains(string(ms), "vase") || strings.Contains(string(ms), "Congratulations") {
		t.Errorf("episodes exported to MEMORIES.txt:\n%s", ms)
	}
	if _, err := f.d.Revert(ctx, rep.ID); err != nil {
		t.Fatal(err)
	}
	for _, id := range old {
		if !f.isCurrent(t, id) {
			t.Errorf("episode #%d not restored by revert", id)
		}
	}
	if facts, _ := f.svc.List(ctx, memory.Filter{Sources: []memory.Source{memory.SourceDream}}); len(facts) != 0 {
		t.Errorf("facts after revert: %+v", facts)
	}
}
