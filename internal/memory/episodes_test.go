package memory

import (
	"context"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
)

// Ingest stores what a channel supplies, and only that: the thread, the
// sender's display name and the assistant's name as speakers, the
// message's time as the event time and its day in the zone as the session.
func TestIngest(t *testing.T) {
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	// 23:30 UTC is already the next day in Berlin.
	at := time.Date(2026, 2, 3, 23, 30, 0, 0, time.UTC)
	room := chat.Address{Channel: "telegram", Thread: "telegram:-100500"}
	type row struct{ speaker, role, text, session string }
	for _, tc := range []struct {
		name  string
		loc   *time.Location
		msg   chat.Inbound
		reply Reply
		want  []row
	}{
		{"answered turn", berlin,
			chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, Sender: chat.Sender{ID: "web", DisplayName: " Sam "},
				Text: "I moved to Lisbon", Received: at},
			Reply{Speaker: "Reverie", Text: "Welcome to Lisbon!"},
			[]row{{"Sam", "user", "I moved to Lisbon", "2026-02-04"}, {"Reverie", "assistant", "Welcome to Lisbon!", "2026-02-04"}}},
		{"overheard in a group room", nil,
			chat.Inbound{Address: room, Sender: chat.Sender{ID: "1001", DisplayName: "Alice (@alice)"}, Text: "see you at the lake", Received: at, Overheard: true},
			Reply{},
			[]row{{"Alice (@alice)", "user", "see you at the lake", "2026-02-03"}}},
		{"no display name, no time", nil,
			chat.Inbound{Address: chat.Address{Channel: "cli", Thread: "cli:x"}, Sender: chat.Sender{ID: "cli"}, Text: "hello"},
			Reply{Speaker: "Reverie", Text: "  "},
			[]row{{"", "user", "hello", ""}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			s, _, _ := newStore(t)
			ids, err := Ingest(ctx, s, tc.loc, tc.msg, tc.reply)
			if err != nil || len(ids) != len(tc.want) {
				t.Fatalf("ids %v, err %v; want %d episodes", ids, err, len(tc.want))
			}
			for i, id := range ids {
				m, err := s.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				w := tc.want[i]
				got := row{m.Speaker, string(m.Role), m.Text, m.Session}
				if got != w || m.Kind != KindEpisode || m.Source != SourceConversation || m.Thread != string(tc.msg.Address.Thread) {
					t.Errorf("episode %d: %+v (kind %s, source %s, thread %s); want %+v", i, got, m.Kind, m.Source, m.Thread, w)
				}
				switch {
				case tc.msg.Received.IsZero() && m.EventTime != nil:
					t.Errorf("episode %d: event time %v for a message without a time", i, m.EventTime)
				case !tc.msg.Received.IsZero() && (m.EventTime == nil || !m.EventTime.Equal(at)):
					t.Errorf("episode %d: event time %v, want %v", i, m.EventTime, at)
				}
			}
		})
	}
}
