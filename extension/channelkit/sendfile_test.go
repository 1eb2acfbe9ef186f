package channelkit

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/tool"
)

func TestSendFileTool(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "docs"), 0o700); err != nil {
		t.Fatal(err)
	}
	for name, size := range map[string]int{"docs/report.txt": 11, "big.bin": 101} {
		if err := os.WriteFile(filepath.Join(ws, name), []byte(strings.Repeat("x", size)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(t.TempDir(), "secret"), []byte("s"), 0o600); err != nil {
		t.Fatal(err)
	}
	type sent struct {
		thread  chat.ThreadID
		name    string
		caption string
		content string
	}
	var got []sent
	ready := error(nil)
	st := SendFileTool(SendFile{
		Channel: "chat", Description: "Send a file on Chat.", ThreadForm: "chat:<room>",
		Workspace: ws, MaxBytes: 100,
		CheckThread: func(th chat.ThreadID) error {
			if th.Channel() != "chat" {
				return errors.New(string(th) + " is not a chat thread")
			}
			return nil
		},
		Ready: func() error { return ready },
		Upload: func(_ context.Context, th chat.ThreadID, f OutgoingFile) (string, error) {
			b, err := io.ReadAll(f.Content)
			if err != nil {
				return "", err
			}
			if int64(len(b)) != f.Size {
				t.Errorf("size %d, content %d bytes", f.Size, len(b))
			}
			got = append(got, sent{th, f.Name, f.Caption, string(b)})
			return "file", nil
		},
	})
	if st.Name() != "chat_send_file" || !strings.Contains(st.Description(), "chat:<room>") {
		t.Errorf("tool %s: %q", st.Name(), st.Description())
	}
	if p, ok := tool.DefaultApprovalOf(st); !ok || p != tool.ApproveNewDestinations {
		t.Errorf("default approval %q, %v; want new_destinations", p, ok)
	}
	inChat := tool.WithCall(t.Context(), tool.Call{Thread: "chat:r1"})
	onWeb := tool.WithCall(t.Context(), tool.Call{Thread: "web:abc"})
	for _, tc := range []struct {
		name     string
		ctx      context.Context
		args     string
		notReady bool
		want     *sent
		result   string
		errHas   string
		dests    string
	}{
		{name: "to this conversation", ctx: inChat, args: `{"path":"docs/report.txt","caption":"here"}`,
			want: &sent{"chat:r1", "report.txt", "here", "xxxxxxxxxxx"}, result: `{"ok":true,"sent_as":"file","thread":"chat:r1"}`, dests: "[]"},
		{name: "workspace/ prefix", ctx: inChat, args: `{"path":"workspace/docs/report.txt"}`,
			want: &sent{"chat:r1", "report.txt", "", "xxxxxxxxxxx"}, result: `{"ok":true,"sent_as":"file","thread":"chat:r1"}`, dests: "[]"},
		{name: "bare thread is on this channel", ctx: onWeb, args: `{"path":"docs/report.txt","thread":"r2"}`,
			want: &sent{"chat:r2", "report.txt", "", "xxxxxxxxxxx"}, result: `{"ok":true,"sent_as":"file","thread":"chat:r2"}`, dests: "[r2]"},
		{name: "from elsewhere without a thread", ctx: onWeb, args: `{"path":"docs/report.txt"}`, errHas: "give thread (chat:<room>)"},
		{name: "a thread of another channel", ctx: inChat, args: `{"path":"docs/report.txt","thread":"web:x"}`, errHas: "not a chat thread", dests: "[web:x]"},
		{name: "not ready", ctx: inChat, args: `{"path":"docs/report.txt"}`, notReady: true, errHas: "not connected"},
		{name: "outside the workspace", ctx: inChat, args: `{"path":"../secret"}`, errHas: "in the workspace"},
		{name: "a directory", ctx: inChat, args: `{"path":"docs"}`, errHas: "is a directory"},
		{name: "too large", ctx: inChat, args: `{"path":"big.bin"}`, errHas: "101 bytes; the bot sends at most 100"},
		{name: "missing", ctx: inChat, args: `{"path":"nope.txt"}`, errHas: "open nope.txt in the workspace"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got = nil
			ready = nil
			if tc.notReady {
				ready = errors.New("chat is not connected yet")
			}
			res, err := st.Call(tc.ctx, json.RawMessage(tc.args))
			if tc.errHas != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errHas) {
					t.Fatalf("err = %v, want one containing %q", err, tc.errHas)
				}
				if len(got) != 0 {
					t.Errorf("sent %+v after an error", got)
				}
			} else {
				if err != nil {
					t.Fatal(err)
				}
				if len(got) != 1 || got[0] != *tc.want {
					t.Errorf("sent %+v, want %+v", got, *tc.want)
				}
				if res.Content != tc.result {
					t.Errorf("result %s, want %s", res.Content, tc.result)
				}
			}
			if tc.dests != "" {
				d, _ := tool.DestinationsOf(st, json.RawMessage(tc.args))
				var threads []string
				for _, x := range d {
					threads = append(threads, x.Thread)
				}
				if s := "[" + strings.Join(threads, " ") + "]"; s != tc.dests {
					t.Errorf("destinations %s, want %s", s, tc.dests)
				}
			}
		})
	}
}

func TestSaveFile(t *testing.T) {
	ws := filepath.Join(t.TempDir(), "workspace") // made when missing
	when := time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("CET", 3600))
	for _, tc := range []struct {
		name, dir, id, file, want string
	}{
		{"plain", "telegram/42", "7", "photo.jpg", "telegram/42/20260102-020405-7-photo.jpg"},
		{"unsafe name", "matrix/room", "ev", "../../etc/pass wd", "matrix/room/20260102-020405-ev-pass_wd"},
		{"nothing left of the name", "telegram/42", "8", "///", "telegram/42/20260102-020405-8-file"},
		{"long name keeps its end", "telegram/42", "9", strings.Repeat("a", 100) + ".ogg", "telegram/42/20260102-020405-9-" + strings.Repeat("a", 76) + ".ogg"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rel, err := SaveFile(ws, tc.dir, when, tc.id, tc.file, []byte("data"))
			if err != nil {
				t.Fatal(err)
			}
			if rel != tc.want {
				t.Fatalf("path %q, want %q", rel, tc.want)
			}
			fi, err := os.Stat(filepath.Join(ws, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().Perm() != 0o600 || fi.Size() != 4 {
				t.Errorf("file mode %v size %d", fi.Mode(), fi.Size())
			}
		})
	}
}
