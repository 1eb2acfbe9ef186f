package world

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// changes records the Changed hook's calls.
type changes struct {
	mu    sync.Mutex
	calls []string
}

func (c *changes) hook(_ context.Context, message string, paths ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.calls = append(c.calls, message+" "+strings.Join(paths, ","))
}

func (c *changes) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return slices.Clone(c.calls)
}

func openStore(t *testing.T, dir string, ch *changes) *Store {
	t.Helper()
	tick := fixed
	var mu sync.Mutex
	now := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick = tick.Add(time.Minute)
		return tick
	}
	s, err := OpenStore(dir, StoreOptions{Now: now, Changed: ch.hook})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func fileState(t *testing.T, dir string) *State {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(dir, FileName))
	if err != nil {
		t.Fatal(err)
	}
	s, err := Decode(data)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStoreApply(t *testing.T) {
	dir := t.TempDir()
	ch := &changes{}
	s := openStore(t, dir, ch)
	ctx := t.Context()

	got, err := s.Apply(ctx, []Op{SetUserName{UserName: "Ada"}, AddTopic{Topic: "tea"}, AddTopic{Topic: "cake"}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Identity.UserName != "Ada" || len(got.Topics) != 2 || !got.UpdatedAt.After(fixed) {
		t.Errorf("state = %+v", got)
	}
	if f := fileState(t, dir); !sameContent(f, got) || !f.UpdatedAt.Equal(got.UpdatedAt) {
		t.Errorf("file = %+v, want %+v", f, got)
	}
	if want := []string{"world: set_user_name, add_topic ×2 world_state.json"}; !slices.Equal(ch.list(), want) {
		t.Errorf("changes = %q, want %q", ch.list(), want)
	}

	// The copy handed out is not the store's.
	got.Topics[0] = "mutated"
	if s.Get().Topics[0] != "tea" {
		t.Error("Get shares memory with a returned state")
	}

	// No change: nothing saved, nobody told, updated_at kept.
	stamp := s.Get().UpdatedAt
	if _, err := s.Apply(ctx, []Op{AddTopic{Topic: "TEA"}}); err != nil {
		t.Fatal(err)
	}
	if len(ch.list()) != 1 || !s.Get().UpdatedAt.Equal(stamp) {
		t.Errorf("a no-op saved: changes %q", ch.list())
	}

	// A failing op changes nothing, in memory or on disk.
	before, _ := os.ReadFile(filepath.Join(dir, FileName))
	if _, err := s.Apply(ctx, []Op{AddTopic{Topic: "x"}, RemoveGoal{Goal: "none"}}); err == nil {
		t.Fatal("bad op applied")
	}
	after, _ := os.ReadFile(filepath.Join(dir, FileName))
	if string(before) != string(after) || slices.Contains(s.Get().Topics, "x") || len(ch.list()) != 1 {
		t.Error("a failed Apply changed something")
	}

	// Replace (the web editor) validates and saves.
	next := s.Get()
	next.Rules = []string{"be kind"}
	next.Version = 0 // the store sets it
	if _, err := s.Replace(ctx, next, ""); err != nil {
		t.Fatal(err)
	}
	if f := fileState(t, dir); !slices.Equal(f.Rules, []string{"be kind"}) {
		t.Errorf("rules after Replace = %v", f.Rules)
	}
	bad := s.Get()
	bad.Goals = []Goal{{Text: "x", Status: "maybe"}}
	if _, err := s.Replace(ctx, bad, "web: edit"); err == nil {
		t.Error("Replace accepted an invalid state")
	}
	if got := ch.list(); len(got) != 2 || got[1] != "world: edit world_state.json" {
		t.Errorf("changes = %q", got)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.Apply(cctx, []Op{SetProject{Project: "y"}}); err == nil {
		t.Error("Apply ran with a cancelled context")
	}
}

func TestStoreSeesEditsOnDisk(t *testing.T) {
	dir := t.TempDir()
	ch := &changes{}
	s := openStore(t, dir, ch)
	ctx := t.Context()
	path := filepath.Join(dir, FileName)
	if _, err := s.Apply(ctx, []Op{SetProject{Project: "one"}}); err != nil {
		t.Fatal(err)
	}

	// A hand edit (or a restore) is picked up, not overwritten.
	edited := s.Get()
	edited.Rules = []string{"edited by hand"}
	data, err := Encode(edited)
	if err != nil {
		t.Fatal(err)
	}
	writeLater(t, path, data)
	if got := s.Get(); !slices.Equal(got.Rules, []string{"edited by hand"}) {
		t.Errorf("hand edit not seen: %+v", got)
	}
	if _, err := s.Apply(ctx, []Op{AddTopic{Topic: "tea"}}); err != nil {
		t.Fatal(err)
	}
	if f := fileState(t, dir); !slices.Equal(f.Rules, []string{"edited by hand"}) || !slices.Equal(f.Topics, []string{"tea"}) {
		t.Errorf("file after Apply = %+v", f)
	}

	// A broken edit is kept aside and the last good state written back.
	writeLater(t, path, []byte("{broken"))
	if got := s.Get(); got.Project != "one" {
		t.Errorf("state after a broken edit = %+v", got)
	}
	kept, _ := filepath.Glob(path + ".corrupt-*")
	if len(kept) != 1 {
		t.Fatalf("broken edit not kept aside: %v", kept)
	}
	if f := fileState(t, dir); f.Project != "one" {
		t.Errorf("last good state not written back: %+v", f)
	}

	// A deleted file comes back.
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if got := s.Get(); got.Project != "one" {
		t.Errorf("state after deletion = %+v", got)
	}
	if f := fileState(t, dir); f.Project != "one" {
		t.Errorf("file not written back: %+v", f)
	}

	// An older version written over it (a restore of old history) is migrated.
	writeLater(t, path, []byte(`{"version":1,"project":"from v1","identity":{"agent_name":"Reverie"}}`))
	s.Reload()
	if got := s.Get(); got.Project != "from v1" || got.Version != Version {
		t.Errorf("state after a v1 restore = %+v", got)
	}
	if f := fileState(t, dir); f.Project != "from v1" {
		t.Errorf("restored v1 not migrated on disk: %+v", f)
	}

	// A newer version on disk is left alone.
	future := []byte(`{"version":99}`)
	writeLater(t, path, future)
	if got := s.Get(); got.Project != "from v1" {
		t.Errorf("state after a future edit = %+v", got)
	}
	if got, _ := os.ReadFile(path); string(got) != string(future) {
		t.Errorf("future-version file rewritten: %s", got)
	}
}

// writeLater writes data to path with a modification time distinct from
// the current one, as a later edit has.
func writeLater(t *testing.T, path string, data []byte) {
	t.Helper()
	var mod time.Time
	if fi, err := os.Stat(path); err == nil {
		mod = fi.ModTime()
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(path, mod.Add(time.Second), mod.Add(time.Second)); err != nil {
		t.Fatal(err)
	}
}

func TestStoreConcurrentApply(t *testing.T) {
	dir := t.TempDir()
	ch := &changes{}
	s := openStore(t, dir, ch)
	ctx := t.Context()
	const n = 20
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if _, err := s.Apply(ctx, []Op{AddRule{Rule: fmt.Sprintf("rule %02d", i)}}); err != nil {
				t.Error(err)
			}
			_ = s.Get().Summary()
		})
	}
	wg.Wait()
	got := s.Get()
	if len(got.Rules) != n {
		t.Errorf("%d rules, want %d", len(got.Rules), n)
	}
	if f := fileState(t, dir); len(f.Rules) != n {
		t.Errorf("file has %d rules, want %d", len(f.Rules), n)
	}
	if len(ch.list()) != n {
		t.Errorf("%d change notifications, want %d", len(ch.list()), n)
	}
}

func TestApplyOpsTool(t *testing.T) {
	dir := t.TempDir()
	ch := &changes{}
	s := openStore(t, dir, ch)
	tl := ApplyOpsTool(s)
	if tl.Name() != ToolName {
		t.Fatalf("name %q", tl.Name())
	}
	var schema struct {
		Properties struct {
			Ops struct {
				Items struct {
					Properties map[string]struct {
						Enum []string `json:"enum"`
					} `json:"properties"`
				} `json:"items"`
			} `json:"ops"`
		} `json:"properties"`
	}
	if err := json.Unmarshal(tl.Schema(), &schema); err != nil {
		t.Fatal(err)
	}
	if got := schema.Properties.Ops.Items.Properties["op"].Enum; !slices.Contains(got, "set_timezone") || len(got) != len(opNames) {
		t.Errorf("op enum = %v\nschema %s", got, tl.Schema())
	}

	res, err := tl.Call(t.Context(), json.RawMessage(`{"ops":[{"op":"set_user_name","value":"Ada"},{"op":"add_goal","value":"publish"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	var out applyResult
	if err := json.Unmarshal([]byte(res.Content), &out); err != nil {
		t.Fatal(err)
	}
	if out.Applied != 2 || !out.Changed || !strings.Contains(out.State, "User: Ada") || !strings.Contains(out.State, "- publish (active)") {
		t.Errorf("result = %+v", out)
	}
	res, err = tl.Call(t.Context(), json.RawMessage(`{"ops":[{"op":"set_user_name","value":"Ada"}]}`))
	if err != nil || !strings.Contains(res.Content, `"changed":false`) {
		t.Errorf("repeat = %v, %v", res, err)
	}
	if _, err := tl.Call(t.Context(), json.RawMessage(`{"ops":[{"op":"set_goal_status","value":"publish"}]}`)); err == nil ||
		!strings.Contains(err.Error(), "needs a status") {
		t.Errorf("missing status = %v", err)
	}
	if _, err := tl.Call(t.Context(), json.RawMessage(`{"ops":[{"op":"remove_goal","value":"fly"}]}`)); err == nil ||
		!strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("unknown goal = %v", err)
	}
}
