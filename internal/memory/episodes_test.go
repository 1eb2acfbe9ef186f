package memory

import (
	"context"
	"strings"
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

// ForgetEpisodesFrom removes a redone turn's episodes and those after it
// in its thread, and nothing when the message was never stored.
func TestForgetEpisodesFrom(t *testing.T) {
	ctx := context.Background()
	say := func(svc *Service, thread, text, reply string) {
		t.Helper()
		msg := chat.Inbound{Address: chat.Address{Channel: "web", Thread: chat.ThreadID(thread)}, Sender: chat.Sender{DisplayName: "Sam"}, Text: text}
		if _, err := svc.Ingest(ctx, nil, msg, Reply{Speaker: "Reverie", Text: reply}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name, text string
		removed    int
		left       int
	}{
		{"the last turn", "and the second?", 2, 6},
		{"from an earlier turn on, its text matched loosely", "  First question ", 4, 4},
		{"a message never stored", "a failed turn", 0, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc, _, _ := newService(t, false)
			say(svc, "web:1", "first question", "first answer")
			say(svc, "web:2", "first question", "an answer elsewhere")
			say(svc, "web:1", "And the second?", "second answer")
			say(svc, "web:2", "and the second?", "another thread")
			n, err := svc.ForgetEpisodesFrom(ctx, "web:1", tc.text)
			if err != nil || n != tc.removed {
				t.Fatalf("ForgetEpisodesFrom = %d, %v, want %d", n, err, tc.removed)
			}
			left, err := svc.List(ctx, Filter{Kinds: []Kind{KindEpisode}})
			if err != nil || len(left) != tc.left {
				t.Fatalf("%d episodes left (%v), want %d", len(left), err, tc.left)
			}
			for _, m := range left {
				if m.Thread == "web:2" {
					continue
				}
				if tc.removed == 4 || (tc.removed == 2 && strings.Contains(m.Text, "second")) {
					t.Errorf("episode %q of web:1 was not removed", m.Text)
				}
			}
		})
	}
	flat, _, _ := newService(t, true)
	if n, err := flat.ForgetEpisodesFrom(ctx, "web:1", "x"); n != 0 || err != nil {
		t.Errorf("flat: %d, %v", n, err)
	}
}
