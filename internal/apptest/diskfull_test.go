package apptest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/fulldisk"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// The disk holding the data dir fills up under a running agent: every route
// that has to write answers one clear 507, never 400 or an anonymous 500;
// reads keep working; once space is freed, writes work again and nothing
// written before was lost. On a real full file system (a small tmpfs: root
// only).
func TestDiskFullAnswers507(t *testing.T) {
	fs, err := fulldisk.Mount(t, 32<<20)
	if err != nil {
		t.Skipf("cannot fill a disk here: %v", err)
	}
	w := StartWeb(t, WithDataDir(filepath.Join(fs, "data")))
	w.JSON(t, "POST", "/memories", map[string]string{"text": "Anna lives in Lyon.", "kind": "fact"}, http.StatusCreated, nil)
	w.JSON(t, "POST", "/threads/web:before/messages", map[string]string{"text": "hello"}, http.StatusOK, nil)

	free := fulldisk.Fill(t, fs)
	at := time.Now().Add(24 * time.Hour).UTC().Format(time.RFC3339)
	writes := []struct {
		method, path string
		body         any
	}{
		{"POST", "/threads/web:full/messages", map[string]string{"text": "are you there?"}},
		{"POST", "/memories", map[string]string{"text": "Bob likes tea.", "kind": "fact"}},
		{"POST", "/pulse", map[string]any{"text": "Plan the trip", "priority": 2}},
		{"PUT", "/skills/book-train", map[string]string{"content": "How to book a train.\n1. Open the site."}},
		{"POST", "/tasks", map[string]any{"text": "Call Anna", "thread": "web:full", "schedule": map[string]string{"kind": "once", "at": at}}},
		{"PUT", "/world", map[string]any{"topics": []string{"travel"}}},
	}
	for _, c := range writes {
		code, body := w.Do(t, c.method, c.path, c.body)
		switch {
		case code == http.StatusInsufficientStorage:
			var e api.ErrorBody
			if err := json.Unmarshal(body, &e); err != nil || e.Error == "" {
				t.Errorf("%s %s: 507 with body %s", c.method, c.path, body)
			}
			t.Logf("%s %s: 507 %s", c.method, c.path, e.Error)
		case code < 300:
			// Small enough to fit in space SQLite had already reserved.
			t.Logf("%s %s: %d (it fit)", c.method, c.path, code)
		default:
			t.Errorf("%s %s on a full disk: %d %s, want 507", c.method, c.path, code, body)
		}
	}
	// The chat, at least, cannot have fit: its message and reply need new pages.
	if code, body := w.Do(t, "POST", "/threads/web:full2/messages", map[string]string{"text": "still full?"}); code != http.StatusInsufficientStorage {
		t.Errorf("a turn on a full disk: %d %s, want 507", code, body)
	}
	// The WebSocket says the same in an error frame.
	c := dialWS(t, w, "")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:ws", Text: "hello?", ID: "m1"})
	if f := readFrame(t, c); f.Type != api.FrameError || !strings.Contains(f.Error, "the disk holding the data directory is full") {
		t.Errorf("WebSocket message on a full disk: %+v, want an error frame saying the disk is full", f)
	}
	for _, path := range []string{"/threads", "/memories", "/threads/web:before/messages"} {
		if code, body := w.Do(t, "GET", path, nil); code != http.StatusOK {
			t.Errorf("GET %s on a full disk: %d %s, want 200", path, code, body)
		}
	}

	free()
	w.JSON(t, "POST", "/memories", map[string]string{"text": "Carol plays the cello.", "kind": "fact"}, http.StatusCreated, nil)
	var mems struct{ Memories []api.Memory }
	w.JSON(t, "GET", "/memories", nil, http.StatusOK, &mems)
	found := false
	for _, m := range mems.Memories {
		found = found || m.Text == "Anna lives in Lyon."
	}
	if !found {
		t.Errorf("the memory written before the disk filled is gone: %+v", mems.Memories)
	}
}

// A message refused with 507 on a full disk (the user was told to try
// again) is never answered later: nothing of it stays in the router's
// inbox, so the next start does not replay it after newer messages.
func TestDiskFullRefusedMessageIsNotReplayed(t *testing.T) {
	fs, err := fulldisk.Mount(t, 32<<20)
	if err != nil {
		t.Skipf("cannot fill a disk here: %v", err)
	}
	dir := filepath.Join(fs, "data")
	w := StartWeb(t, WithDataDir(dir))
	w.JSON(t, "POST", "/threads/web:before/messages", map[string]string{"text": "hello"}, http.StatusOK, nil)
	free := fulldisk.Fill(t, fs)
	filler := filepath.Join(fs, ".fulldisk-filler")
	st, err := os.Stat(filler)
	if err != nil {
		t.Fatal(err)
	}
	// Free a page at a time: some message fits in the inbox but not in the
	// conversation (the case that was replayed), others fit nowhere.
	refused := 0
	for i := range 48 {
		if err := os.Truncate(filler, st.Size()-int64(i+1)*4096); err != nil {
			t.Fatal(err)
		}
		text := fmt.Sprintf("refused message %d", i)
		code, body := w.Do(t, "POST", "/threads/web:full/messages", map[string]string{"text": text})
		if code == http.StatusInsufficientStorage {
			refused++
			continue
		}
		t.Logf("%s: %d %s (it fit)", text, code, body)
	}
	if refused == 0 {
		t.Fatal("no message was refused on the full disk")
	}
	free()
	if err := w.Stop(); err != nil {
		t.Fatalf("stop: %v", err)
	}
	db, err := sqlite.Open(t.Context(), filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	var left int
	err = db.QueryRowContext(t.Context(), `SELECT COUNT(*) FROM router_inbox WHERE text LIKE 'refused message %'`).Scan(&left)
	db.Close()
	if err != nil || left != 0 {
		t.Fatalf("%d refused message(s) left in the inbox for the next start (%v)", left, err)
	}
	// And the next start answers none of them.
	w2 := StartWeb(t, WithDataDir(dir))
	w2.JSON(t, "POST", "/threads/web:after/messages", map[string]string{"text": "after the restart"}, http.StatusOK, nil)
	for _, r := range w2.Model.ChatRequests() {
		if strings.Contains(lastUser(r), "refused message") {
			t.Errorf("a refused message was answered after the restart: %q", lastUser(r))
		}
	}
}
