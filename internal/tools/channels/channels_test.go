package channels

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/datadir"
)

type plainChannel string

func (c plainChannel) ChannelName() string                       { return string(c) }
func (c plainChannel) Send(context.Context, chat.Outbound) error { return nil }

type streamChannel struct{ plainChannel }

func (streamChannel) OpenStream(context.Context, chat.Address) (extension.Stream, error) {
	return nil, nil
}

type channelSet []extension.ChannelProvider

func (s channelSet) Channels() []extension.ChannelProvider { return s }

type threadList []chat.ThreadID

func (l threadList) Threads(context.Context, conversation.ListOptions) ([]conversation.Thread, error) {
	var out []conversation.Thread
	for _, id := range l {
		out = append(out, conversation.Thread{ID: id})
	}
	return out, nil
}

type notifier struct{ got []chat.Outbound }

func (n *notifier) Notify(ctx context.Context, out chat.Outbound) error {
	n.got = append(n.got, out)
	return nil
}

var (
	chs     = channelSet{plainChannel("telegram"), streamChannel{"web"}}
	threads = threadList{"web:2", "telegram:77", "web:1", "sub_x"}
)

func TestListChannels(t *testing.T) {
	res, err := ListChannels(chs, threads).Call(context.Background(), json.RawMessage(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"channels":[{"name":"telegram","streaming":false,"threads":["telegram:77"]},{"name":"web","streaming":true,"threads":["web:2","web:1"]}]}`
	if res.Content != want {
		t.Errorf("got  %s\nwant %s", res.Content, want)
	}
}

func TestSendToChannel(t *testing.T) {
	tests := []struct {
		name       string
		args       string
		wantThread chat.ThreadID
		wantErr    string
	}{
		{"most recent thread", `{"channel":"web","text":"hi"}`, "web:2", ""},
		{"bare target", `{"channel":"telegram","thread":"123","text":"hi"}`, "telegram:123", ""},
		{"full id", `{"channel":"web","thread":"web:1","text":"hi"}`, "web:1", ""},
		{"bare target with colons (a Matrix room id)", `{"channel":"telegram","thread":"!abc:example.org","text":"hi"}`, "telegram:!abc:example.org", ""},
		{"other channel's thread", `{"channel":"web","thread":"telegram:77","text":"hi"}`, "", "belongs to channel"},
		{"unknown channel", `{"channel":"matrix","text":"hi"}`, "", "running channels: telegram, web"},
		{"empty text", `{"channel":"web","text":" "}`, "", "text is empty"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			n := &notifier{}
			res, err := SendToChannel(n, chs, threads).Call(context.Background(), json.RawMessage(tc.args))
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(n.got) != 1 || n.got[0].Address.Thread != tc.wantThread || n.got[0].Kind != chat.Notify || n.got[0].Text != "hi" {
				t.Errorf("notified %+v (result %s)", n.got, res.Content)
			}
		})
	}
	if _, err := SendToChannel(&notifier{}, chs, threadList{}).Call(context.Background(), json.RawMessage(`{"channel":"web","text":"x"}`)); err == nil ||
		!strings.Contains(err.Error(), "no conversation is known") {
		t.Errorf("no threads: %v", err)
	}
}

func TestRequestRestart(t *testing.T) {
	dir := t.TempDir()
	now := func() time.Time { return time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC) }
	tl := RequestRestart(dir, now)
	res, err := tl.Call(context.Background(), json.RawMessage(`{"reason":"config\nchanged  "}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(dir, datadir.RestartFile))
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "config changed\n2025-01-06T09:00:00Z\n" || !strings.Contains(res.Content, "supervisor") {
		t.Errorf("file %q, result %s", b, res.Content)
	}
	if _, err := tl.Call(context.Background(), json.RawMessage(`{"reason":""}`)); err == nil {
		t.Error("empty reason accepted")
	}
}
