package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/tool"
)

type changeLog struct {
	mu   sync.Mutex
	msgs []string
}

func (c *changeLog) record(_ context.Context, msg string, paths ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.msgs = append(c.msgs, msg+" "+strings.Join(paths, ","))
}

func (c *changeLog) count() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.msgs)
}

func newService(t *testing.T, flat bool) (*Service, string, *changeLog) {
	t.Helper()
	dir := t.TempDir()
	var st Store
	if flat {
		st = NewFlat(filepath.Join(dir, MemoriesFile), nil, nil)
	} else {
		vs, _, _ := newStore(t)
		st = vs
	}
	ch := &changeLog{}
	svc, err := NewService(ServiceOptions{Store: st, DataDir: dir, Changed: ch.record})
	if err != nil {
		t.Fatal(err)
	}
	return svc, dir, ch
}

func readFile(t *testing.T, dir string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, MemoriesFile))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	return string(b)
}

func TestServiceRemember(t *testing.T) {
	for _, flat := range []bool{false, true} {
		name := map[bool]string{false: "vector", true: "flat"}[flat]
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			svc, dir, ch := newService(t, flat)
			r, err := svc.Remember(ctx, Memory{Text: "The user lives in Lyon.", Kind: KindFact, Source: SourceAgent}, true)
			if err != nil {
				t.Fatal(err)
			}
			if r.Existing || !r.InWorkingSet {
				t.Fatalf("first remember = %+v", r)
			}
			// The same fact again, differently spaced and cased: no duplicate.
			r2, err := svc.Remember(ctx, Memory{Text: "the user  lives in lyon", Kind: KindFact, Source: SourceAgent}, true)
			if err != nil {
				t.Fatal(err)
			}
			if !r2.Existing || r2.ID != r.ID {
				t.Fatalf("duplicate remember = %+v, first %+v", r2, r)
			}
			if got := readFile(t, dir); got != "The user lives in Lyon.\n" {
				t.Fatalf("MEMORIES.txt = %q", got)
			}
			if n, _ := svc.Store().Count(ctx, false); n != 1 {
				t.Fatalf("store holds %d memories, want 1", n)
			}
			if ch.count() != 1 {
				t.Fatalf("change hook called %d times, want 1: %v", ch.count(), ch.msgs)
			}
			// Refused input writes nothing.
			for _, bad := range []string{"", "   ", "my api key is sk-proj-abcdefghijklmnopqrstuvwxyz123456", strings.Repeat("x", MaxTextLen+1)} {
				if _, err := svc.Remember(ctx, Memory{Text: bad, Kind: KindFact, Source: SourceAgent}, true); err == nil {
					t.Errorf("Remember(%.20q) succeeded", bad)
				}
			}
			if got := readFile(t, dir); got != "The user lives in Lyon.\n" {
				t.Fatalf("MEMORIES.txt after bad input = %q", got)
			}
		})
	}
}

func TestServiceRememberNotKept(t *testing.T) {
	ctx := context.Background()
	svc, dir, _ := newService(t, false)
	if _, err := svc.Remember(ctx, Memory{Text: "Minor detail: the cat's vet is Dr. Roux.", Kind: KindFact, Source: SourceAgent}, false); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir); got != "" {
		t.Fatalf("MEMORIES.txt = %q, want empty", got)
	}
	res, err := svc.Search(ctx, Query{Text: "who is the vet of the cat", Peek: true})
	if err != nil || len(res) == 0 || !strings.Contains(res[0].Memory.Text, "Dr. Roux") {
		t.Fatalf("search = %v, %v", res, err)
	}
}

// An episode is not kept in MEMORIES.txt even when asked (the command
// line's and the API's default): kept, the next start's Reconcile stored
// its line again as a fact, a duplicate of another kind.
func TestServiceRememberEpisodeNotKept(t *testing.T) {
	ctx := context.Background()
	svc, dir, ch := newService(t, false)
	r, err := svc.Remember(ctx, Memory{Text: "Walked the dog along the river.", Kind: KindEpisode, Source: SourceUserExplicit}, true)
	if err != nil || r.InWorkingSet {
		t.Fatalf("Remember = %+v, %v", r, err)
	}
	if got := readFile(t, dir); got != "" || ch.count() != 0 {
		t.Fatalf("MEMORIES.txt = %q (%d change(s)), want it untouched", got, ch.count())
	}
	if rec, err := svc.Reconcile(ctx); err != nil || rec.Changed() {
		t.Fatalf("Reconcile = %+v, %v", rec, err)
	}
	ms, err := svc.List(ctx, Filter{})
	if err != nil || len(ms) != 1 || ms[0].Kind != KindEpisode {
		t.Fatalf("memories %+v, %v; want the one episode", ms, err)
	}
}

// A fact that becomes an episode leaves MEMORIES.txt, and an episode's
// edit leaves the file alone: a line left there came back at the next
// Reconcile as a fact beside the episode.
func TestServiceUpdateToEpisodeLeavesWorkingSet(t *testing.T) {
	ctx := context.Background()
	svc, dir, _ := newService(t, false)
	for _, text := range []string{"Lives in Lyon.", "Walked the dog along the river."} {
		if _, err := svc.Remember(ctx, Memory{Text: text, Kind: KindFact, Source: SourceUserExplicit}, true); err != nil {
			t.Fatal(err)
		}
	}
	ms, err := svc.List(ctx, Filter{})
	if err != nil || len(ms) != 2 {
		t.Fatalf("memories %+v, %v", ms, err)
	}
	dog := ms[0].ID
	if ms[0].Text != "Walked the dog along the river." {
		dog = ms[1].ID
	}
	id, err := svc.Update(ctx, Memory{ID: dog, Text: "Walked the dog along the river.", Kind: KindEpisode})
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir); got != "Lives in Lyon.\n" {
		t.Fatalf("MEMORIES.txt = %q after the fact became an episode", got)
	}
	if _, err := svc.Update(ctx, Memory{ID: id, Text: "Walked the dog along the Saône."}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir); got != "Lives in Lyon.\n" {
		t.Fatalf("MEMORIES.txt = %q after the episode's edit", got)
	}
	if rec, err := svc.Reconcile(ctx); err != nil || rec.Changed() {
		t.Fatalf("Reconcile = %+v, %v", rec, err)
	}
	ms, err = svc.List(ctx, Filter{})
	if err != nil || len(ms) != 2 {
		t.Fatalf("memories %+v, %v; want the fact and the episode", ms, err)
	}
}

func TestServiceRewriteWorkingSet(t *testing.T) {
	ctx := context.Background()
	svc, dir, ch := newService(t, false)
	if _, err := svc.Remember(ctx, Memory{Text: "Likes green tea.", Kind: KindPreference, Source: SourceAgent}, true); err != nil {
		t.Fatal(err)
	}
	rw, err := svc.RewriteWorkingSet(ctx, "Works as a nurse.\n\n  Has two cats.  \r\n", SourceAgent)
	if err != nil {
		t.Fatal(err)
	}
	if rw != (Rewrite{Lines: 2, Added: 2, Removed: 1}) {
		t.Fatalf("rewrite = %+v", rw)
	}
	if got := readFile(t, dir); got != "Works as a nurse.\nHas two cats.\n" {
		t.Fatalf("MEMORIES.txt = %q", got)
	}
	// The dropped line left the working set, not the memory.
	if n, _ := svc.Store().Count(ctx, false); n != 3 {
		t.Fatalf("store holds %d, want 3", n)
	}
	before := ch.count()
	cases := []struct {
		name, content string
	}{
		{"secret line", "Works as a nurse.\npassword: hunter2hunter2\n"},
		{"too long line", strings.Repeat("y", MaxTextLen+1)},
		{"invalid utf-8", "caf\xe9\n"},
		{"enormous", strings.Repeat("a line\n", MaxWorkingSetChars/7+10)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if _, err := svc.RewriteWorkingSet(ctx, c.content, SourceAgent); err == nil {
				t.Fatal("rewrite succeeded")
			}
			if got := readFile(t, dir); got != "Works as a nurse.\nHas two cats.\n" {
				t.Fatalf("MEMORIES.txt changed: %q", got)
			}
		})
	}
	if ch.count() != before {
		t.Fatal("refused rewrites reported a change")
	}
	// An identical rewrite is not a change.
	if _, err := svc.RewriteWorkingSet(ctx, "Works as a nurse.\nHas two cats.", SourceAgent); err != nil {
		t.Fatal(err)
	}
	if ch.count() != before {
		t.Fatal("identical rewrite reported a change")
	}
}

func TestServiceForgetAndUpdate(t *testing.T) {
	ctx := context.Background()
	svc, dir, _ := newService(t, false)
	a, _ := svc.Remember(ctx, Memory{Text: "Drives a red Fiat.", Kind: KindFact, Source: SourceAgent}, true)
	b, _ := svc.Remember(ctx, Memory{Text: "Plays the cello.", Kind: KindFact, Source: SourceAgent}, true)
	if _, err := svc.Update(ctx, Memory{ID: a.ID, Text: "Drives a blue Fiat.", Kind: KindFact}); err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, dir); got != "Drives a blue Fiat.\nPlays the cello.\n" {
		t.Fatalf("after update MEMORIES.txt = %q", got)
	}
	m, err := svc.Forget(ctx, b.ID)
	if err != nil || m.Text != "Plays the cello." {
		t.Fatalf("forget = %v, %v", m, err)
	}
	if got := readFile(t, dir); got != "Drives a blue Fiat.\n" {
		t.Fatalf("after forget MEMORIES.txt = %q", got)
	}
	if _, err := svc.Forget(ctx, b.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("second forget: %v", err)
	}
}

// Forgetting an id a newer version replaced (what "memory edit 1" told
// the user was "#1") refuses and names the current version instead of
// forgetting the old text and leaving the memory; once nothing current
// descends from it, the old version is forgotten like any other.
func TestServiceForgetReplaced(t *testing.T) {
	ctx := context.Background()
	svc, dir, _ := newService(t, false)
	a, _ := svc.Remember(ctx, Memory{Text: "Drives a red Fiat.", Kind: KindFact, Source: SourceUserExplicit}, true)
	b, err := svc.Update(ctx, Memory{ID: a.ID, Text: "Drives a blue Fiat.", Kind: KindFact})
	if err != nil {
		t.Fatal(err)
	}
	c, err := svc.Update(ctx, Memory{ID: b, Text: "Drives a green Fiat.", Kind: KindFact})
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int64{a.ID, b} {
		_, err := svc.Forget(ctx, id)
		var re *ReplacedError
		if !errors.As(err, &re) || re.ID != id || re.Current != c || !errors.Is(err, ErrClosed) {
			t.Fatalf("forget of replaced #%d = %v, want a ReplacedError naming #%d", id, err, c)
		}
		if want := fmt.Sprintf("replaced by memory %d", c); !strings.Contains(err.Error(), want) {
			t.Errorf("forget of replaced #%d says %q, want it to name %q", id, err, want)
		}
		if _, err := svc.Get(ctx, id); err != nil {
			t.Fatalf("the refused forget deleted #%d: %v", id, err)
		}
	}
	// The model's forget_memory refuses the same way, in words it can act on.
	if _, err := callTool(t, Tools(svc), ctx, "forget_memory", fmt.Sprintf(`{"id":%d}`, a.ID)); err == nil ||
		!strings.Contains(err.Error(), fmt.Sprintf("replaced by memory %d, its current version: forget %d", c, c)) {
		t.Fatalf("forget_memory of replaced #%d: %v", a.ID, err)
	}
	if got := readFile(t, dir); got != "Drives a green Fiat.\n" {
		t.Fatalf("after the refused forgets MEMORIES.txt = %q", got)
	}
	// A dream closed the current version: nothing current descends from
	// b, which is forgotten.
	if err := svc.store.Close(ctx, c, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if m, err := svc.Forget(ctx, b); err != nil || m.Text != "Drives a blue Fiat." {
		t.Fatalf("forget of #%d under a closed version = %+v, %v", b, m, err)
	}
	// The link to a forgotten version leads nowhere: a is forgotten too.
	if m, err := svc.Forget(ctx, a.ID); err != nil || m.Text != "Drives a red Fiat." {
		t.Fatalf("forget of #%d whose successor is gone = %+v, %v", a.ID, m, err)
	}
}

func TestServiceConcurrentRemember(t *testing.T) {
	ctx := context.Background()
	svc, dir, _ := newService(t, false)
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Go(func() {
			text := "Fact number " + string(rune('A'+i%10)) // 10 distinct, each twice
			if _, err := svc.Remember(ctx, Memory{Text: text, Kind: KindFact, Source: SourceAgent}, true); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	lines := strings.Split(strings.TrimSpace(readFile(t, dir)), "\n")
	if len(lines) != 10 {
		t.Fatalf("MEMORIES.txt has %d lines, want 10:\n%s", len(lines), strings.Join(lines, "\n"))
	}
	if n, _ := svc.Store().Count(ctx, false); n != 10 {
		t.Fatalf("store holds %d, want 10", n)
	}
}

func callTool(t *testing.T, tools []tool.Tool, ctx context.Context, name, args string) (string, error) {
	t.Helper()
	for _, tl := range tools {
		if tl.Name() == name {
			if err := tool.Validate(tl, json.RawMessage(args)); err != nil {
				return "", err
			}
			r, err := tl.Call(ctx, json.RawMessage(args))
			return r.Content, err
		}
	}
	t.Fatalf("no tool %s", name)
	return "", nil
}

func TestTools(t *testing.T) {
	svc, dir, _ := newService(t, false)
	tools := Tools(svc)
	ctx := tool.WithCall(context.Background(), tool.Call{Thread: "web:abc", Agent: "main"})

	out, err := callTool(t, tools, ctx, "append_memory", `{"text":"The user's daughter Mia was born on 2019-03-04.","kind":"fact","user_asked":true}`)
	if err != nil {
		t.Fatal(err)
	}
	var rem Remembered
	if err := json.Unmarshal([]byte(out), &rem); err != nil || rem.ID == 0 {
		t.Fatalf("append result %s (%v)", out, err)
	}
	m, err := svc.Get(context.Background(), rem.ID)
	if err != nil || m.Source != SourceUserExplicit || m.Thread != "web:abc" {
		t.Fatalf("stored %+v, %v", m, err)
	}
	if _, err := callTool(t, tools, ctx, "append_memory", `{"text":"Went hiking in the Alps.","kind":"episode","when":"2026-07-14","keep_in_view":false}`); err != nil {
		t.Fatal(err)
	}

	out, err = callTool(t, tools, ctx, "search_memory", `{"query":"when was Mia born","limit":3}`)
	if err != nil || !strings.Contains(out, "2019-03-04") {
		t.Fatalf("search = %s, %v", out, err)
	}
	out, err = callTool(t, tools, ctx, "search_memory", `{"query":"hiking"}`)
	if err != nil || !strings.Contains(out, `"when":"2026-07-14"`) {
		t.Fatalf("search episode = %s, %v", out, err)
	}

	errCases := []struct{ name, tool, args, want string }{
		{"secret", "append_memory", `{"text":"my token is ghp_abcdefghijklmnopqrstuvwxyz0123"}`, "refused"},
		{"empty", "append_memory", `{"text":"  "}`, "empty"},
		{"bad kind", "append_memory", `{"text":"x","kind":"gossip"}`, "kind"},
		{"bad date", "append_memory", `{"text":"x happened","when":"last tuesday"}`, "when"},
		{"unknown field", "append_memory", `{"text":"x","importance":3}`, "importance"},
		{"empty query", "search_memory", `{"query":""}`, "empty"},
		{"forget nothing", "forget_memory", `{}`, "id"},
		{"forget unknown id", "forget_memory", `{"id":999999}`, "no memory"},
		{"forget unknown text", "forget_memory", `{"text":"never said"}`, "no memory"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := callTool(t, tools, ctx, c.tool, c.args)
			if err == nil || !strings.Contains(strings.ToLower(err.Error()), c.want) {
				t.Fatalf("err = %v, want it to mention %q", err, c.want)
			}
		})
	}

	out, err = callTool(t, tools, ctx, "forget_memory", `{"text":"the user's daughter mia was born on 2019-03-04"}`)
	if err != nil || !strings.Contains(out, "Mia") {
		t.Fatalf("forget by text = %s, %v", out, err)
	}
	if got := readFile(t, dir); got != "" {
		t.Fatalf("MEMORIES.txt after forget = %q", got)
	}

	out, err = callTool(t, tools, ctx, "update_memories", `{"content":"Prefers mornings.\nSpeaks French."}`)
	if err != nil || !strings.Contains(out, `"added":2`) {
		t.Fatalf("update_memories = %s, %v", out, err)
	}
}

func TestRecallContext(t *testing.T) {
	ctx := context.Background()
	svc, _, _ := newService(t, false)
	if _, err := svc.Remember(ctx, Memory{Text: "Allergic to peanuts.", Kind: KindFact, Source: SourceAgent}, true); err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{"Bought peanut butter for the kids on 2026-05-02.", "The kids' school is Ecole Jaures.", "Favourite colour is teal."} {
		if _, err := svc.Remember(ctx, Memory{Text: s, Kind: KindFact, Source: SourceAgent}, false); err != nil {
			t.Fatal(err)
		}
	}
	rc := &RecallContext{Service: svc, Budget: 60}
	var _ extension.ContextProvider = rc
	block, err := rc.PromptContext(ctx, extension.ContextRequest{Thread: "web:x", Query: "can I give the kids peanut butter?"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(block, "peanut butter") {
		t.Fatalf("block lacks the relevant memory:\n%s", block)
	}
	if strings.Contains(block, "Allergic") {
		t.Fatalf("block repeats MEMORIES.txt:\n%s", block)
	}
	if n := (len(block) + 3) / 4; n > 60 {
		t.Fatalf("block of ~%d tokens exceeds the budget of 60:\n%s", n, block)
	}
	// The shown memory's access was counted, and only it.
	if err := svc.Store().(*VectorStore).Flush(ctx); err != nil {
		t.Fatal(err)
	}
	all, _ := svc.List(ctx, Filter{})
	var accessed []string
	for _, m := range all {
		if m.AccessCount > 0 {
			accessed = append(accessed, m.Text)
		}
	}
	for _, a := range accessed {
		if !strings.Contains(block, a) {
			t.Errorf("access counted for %q, which was not shown", a)
		}
	}
	if !slices.ContainsFunc(accessed, func(s string) bool { return strings.Contains(s, "peanut butter") }) {
		t.Error("shown memory's access not counted")
	}
	if b, _ := rc.PromptContext(ctx, extension.ContextRequest{Query: "  "}); b != "" {
		t.Errorf("empty query gave %q", b)
	}
	flat, _, _ := newService(t, true)
	if b, _ := (&RecallContext{Service: flat}).PromptContext(ctx, extension.ContextRequest{Query: "peanuts"}); b != "" {
		t.Errorf("flat backend gave %q", b)
	}
}

func TestWorkingSetSeesHandEdits(t *testing.T) {
	ctx := context.Background()
	svc, dir, _ := newService(t, false)
	if _, err := svc.Remember(ctx, Memory{Text: "Likes tea.", Kind: KindFact, Source: SourceAgent}, true); err != nil {
		t.Fatal(err)
	}
	if ws, _ := svc.WorkingSet(ctx); ws != "Likes tea.\n" {
		t.Fatalf("working set %q", ws)
	}
	if err := os.WriteFile(filepath.Join(dir, MemoriesFile), []byte("Likes coffee now.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if ws, _ := svc.WorkingSet(ctx); ws != "Likes coffee now.\n" {
		t.Fatalf("hand edit not seen: %q", ws)
	}
	if _, err := svc.RewriteWorkingSet(ctx, "A.\nB.", SourceAgent); err != nil {
		t.Fatal(err)
	}
	if ws, _ := svc.WorkingSet(ctx); ws != "A.\nB.\n" {
		t.Fatalf("own write not seen: %q", ws)
	}
}

// countingReader is the vector store counting the rows a recall reads.
type countingReader struct {
	*VectorStore
	read  int
	reads int // materialise calls: a statement each
}

func (c *countingReader) materialise(ctx context.Context, out []Scored, peek bool) ([]Scored, error) {
	c.read += len(out)
	c.reads++
	return c.VectorStore.materialise(ctx, out, peek)
}

// wholeRecall hides the vector store's ranking, so a turn's recall reads
// every ranked memory (the path of the stores that cannot rank alone).
type wholeRecall struct{ Store }

func (wholeRecall) measuresMatch(Memory) bool { return true }

func TestRecallContextReadsOnlyWhatItMayShow(t *testing.T) {
	ctx := context.Background()
	vs, _, _ := newStore(t)
	dir := t.TempDir()
	lazy := &countingReader{VectorStore: vs}
	svc, err := NewService(ServiceOptions{Store: lazy, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	whole, err := NewService(ServiceOptions{Store: wholeRecall{vs}, DataDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	// In MEMORIES.txt (never shown again), facts close to the query, and
	// an exchange of episodes that share some of its words.
	for _, s := range []string{"The garden plan: red tomatoes by the shed.", "Anna waters the garden on Sundays."} {
		if _, err := svc.Remember(ctx, Memory{Text: s, Kind: KindFact, Source: SourceAgent}, true); err != nil {
			t.Fatal(err)
		}
	}
	var ms []Memory
	for i := range 50 {
		text := fmt.Sprintf("Week %d: we talked about the garden plan and the %s tomatoes.", i, []string{"red", "yellow", "green"}[i%3])
		if i%4 == 0 {
			text = fmt.Sprintf("Note %d about the car insurance renewal.", i)
		}
		ms = append(ms, Memory{Text: text, Kind: KindEpisode, Source: SourceConversation, Thread: "web:g", Role: []Role{RoleUser, RoleAssistant}[i%2]})
	}
	ids, err := vs.AddBatch(ctx, ms)
	if err != nil {
		t.Fatal(err)
	}
	// deleted after the index saw it: recall drops it when reading
	if err := vs.Delete(ctx, ids[7]); err != nil {
		t.Fatal(err)
	}
	query := "what was the garden plan for the red tomatoes?"
	for _, tc := range []struct {
		name    string
		budget  int
		gate    Gate
		maxRead int // the lines shown, the two of MEMORIES.txt and the deleted one
		// maxReads bounds the reads (0: any number)
		maxReads int
	}{
		{"default gate", 0, Gate{}, 13, 0},
		// the lines shown fill MaxLines: nothing more read
		{"three lines", 0, Gate{MinMatch: 0.3, MinCosine: 0.6, Ratio: 0.3, MaxLines: 3}, 6, 1},
		// the budget fills first: one chunk of MaxLines read
		{"small budget", 90, Gate{}, 10, 1},
		// more lines allowed than are ranked: every ranked memory that
		// holds enough of the words is read
		{"every word counts", 0, Gate{MinMatch: 0.05, Ratio: 0.01, MaxLines: 40}, RecallContextLimit, 1},
		// after the first read, the rest score below the ratio of the
		// best shown: not read
		{"below the ratio", 0, Gate{MinMatch: 0.05, Ratio: 0.999, MaxLines: 10}, 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			lazy.read, lazy.reads = 0, 0
			got, err := (&RecallContext{Service: svc, Budget: tc.budget, Gate: tc.gate}).Recall(ctx, query)
			if err != nil {
				t.Fatal(err)
			}
			want, err := (&RecallContext{Service: whole, Budget: tc.budget, Gate: tc.gate}).Recall(ctx, query)
			if err != nil {
				t.Fatal(err)
			}
			if len(want.Memories) == 0 {
				t.Fatal("nothing recalled: the case tests nothing")
			}
			if got.Text != want.Text || got.Tokens != want.Tokens || len(got.Memories) != len(want.Memories) {
				t.Fatalf("reading as needed shows\n%s (%d tokens)\nreading every ranked memory shows\n%s (%d tokens)", got.Text, got.Tokens, want.Text, want.Tokens)
			}
			for i := range got.Memories {
				if g, w := got.Memories[i], want.Memories[i]; g.ID != w.ID || g.Score != w.Score || g.Text != w.Text {
					t.Errorf("memory %d: %d %q, want %d %q", i, g.ID, g.Text, w.ID, w.Text)
				}
			}
			if lazy.read == 0 || lazy.read > tc.maxRead {
				t.Errorf("read %d memories to show %d, want at most %d", lazy.read, len(got.Memories), tc.maxRead)
			}
			if tc.maxReads > 0 && lazy.reads > tc.maxReads {
				t.Errorf("read the memories in %d statements, want at most %d", lazy.reads, tc.maxReads)
			}
		})
	}
}
