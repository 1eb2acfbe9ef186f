package app

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/versioning"
	"github.com/reverie-ai/reverie/internal/world"
	"github.com/reverie-ai/reverie/tool"
)

func newBareApp(t *testing.T, dir string) *App {
	t.Helper()
	a, err := New(t.Context(), Options{DataDir: dir, Env: []string{"REVERIE_LOG__FILE=false"}, Console: io.Discard,
		Registry: []extension.Info{}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func findTool(t *testing.T, a *App, name string) tool.Tool {
	t.Helper()
	i := slices.IndexFunc(a.turnTools(), func(tl tool.Tool) bool { return tl.Name() == name })
	if i < 0 {
		t.Fatalf("tool %s not offered", name)
	}
	return a.turnTools()[i]
}

func head(t *testing.T, v *versioning.Repo) versioning.Revision {
	t.Helper()
	h, err := v.Head(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestVersionedDataDir(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	ctx := t.Context()
	a := newBareApp(t, dir)
	if a.Versions == nil {
		t.Fatal("no data dir history")
	}
	first := head(t, a.Versions)
	if first.Subject() != "initial state of the data dir" ||
		!slices.Contains(first.Files, "MEMORIES.txt") || !slices.Contains(first.Files, world.FileName) ||
		slices.Contains(first.Files, "config.yaml") {
		t.Fatalf("first commit = %+v", first)
	}

	// The world tool saves, and the save is committed.
	res, err := findTool(t, a, world.ToolName).Call(ctx, json.RawMessage(`{"ops":[{"op":"set_user_name","value":"Ada"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(res.Content, "User: Ada") {
		t.Errorf("tool result = %s", res.Content)
	}
	h := head(t, a.Versions)
	if h.Subject() != "world: set_user_name" || !slices.Equal(h.Files, []string{world.FileName}) {
		t.Errorf("commit after world_apply_ops = %+v", h)
	}
	// The prompt shows the world state.
	block, err := worldContext{a.World}.PromptContext(ctx, extension.ContextRequest{})
	if err != nil || !strings.Contains(block, "## World state\nUser: Ada") {
		t.Errorf("world context = %q, %v", block, err)
	}

	// A bad path is logged, not fatal, and commits nothing.
	a.dataChanged(ctx, "bad", "config.yaml")
	if got := head(t, a.Versions); got.Hash != h.Hash {
		t.Errorf("bad path committed %+v", got)
	}

	// Restoring the first commit puts the world state back and the store
	// sees it.
	rest, err := a.RestoreData(ctx, first.Short)
	if err != nil {
		t.Fatal(err)
	}
	if rest.Subject() != "restore "+first.Short {
		t.Errorf("restore commit = %+v", rest)
	}
	if name := a.World.Get().Identity.UserName; name != "" {
		t.Errorf("user name after restore = %q", name)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// Edits made while the agent is stopped get their own commit at start.
	if err := os.WriteFile(filepath.Join(dir, "MEMORIES.txt"), []byte("Edited by hand.\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	a = newBareApp(t, dir)
	defer a.Close()
	if h := head(t, a.Versions); h.Subject() != "external edits" || !slices.Contains(h.Files, "MEMORIES.txt") {
		t.Errorf("start-up commit = %+v", h)
	}
	if _, err := a.RestoreData(context.WithoutCancel(ctx), "nope"); err == nil {
		t.Error("restore of an unknown revision succeeded")
	}
}
