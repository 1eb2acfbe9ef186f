package apptest

import (
	"context"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extensions/telegram"
	"github.com/reverie-ai/reverie/extensions/telegram/telegramtest"
	"github.com/reverie-ai/reverie/internal/embed"
	locomo "github.com/reverie-ai/reverie/internal/eval"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/world"
)

// `reverie eval locomo` measures what users get: a LoCoMo conversation fed
// through the eval's ingest (a group room with two named members, the
// assistant listening) stores exactly the memory rows the running app
// stores when the same two people say the same things, at the same times,
// in a Telegram group where the bot only listens. Both run on the
// conversation's own clock, as a live room stores a message when it is
// said: the rows' creation and validity times are each session's date on
// both sides (an eval on the machine's clock would date them today, and
// read recency and retention years after the conversation). A turn that shared an
// image is sent as a photo with the turn's words as its caption: the
// dataset's machine caption of the image reaches neither store.
func TestLoCoMoIngestEqualsGroupRoom(t *testing.T) {
	f, err := os.Open("../eval/testdata/synthetic.json")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	convs, err := locomo.ParseLoCoMo(f)
	if err != nil || len(convs) == 0 {
		t.Fatalf("parse: %d conversations, %v", len(convs), err)
	}
	conv := convs[0]
	group := telegramtest.Group(-100700, "two friends")
	room := chat.Address{Channel: telegram.ChannelName, Thread: chat.NewThreadID(telegram.ChannelName, strconv.FormatInt(group.ID, 10))}

	// The eval's side: a fresh store on its own clock, as `reverie eval
	// locomo` opens it.
	ctx := context.Background()
	db, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	evalClock := &locomo.Clock{}
	store, err := memory.OpenVector(ctx, db, embed.NewOffline(embed.DefaultDimensions), evalClock.Now, nil, memory.DefaultTuning)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Shutdown(ctx)
	if _, err := locomo.Ingest(ctx, store, evalClock, conv, room); err != nil {
		t.Fatal(err)
	}
	want, err := store.List(ctx, memory.Filter{Kinds: []memory.Kind{memory.KindEpisode}})
	if err != nil {
		t.Fatal(err)
	}

	// The product's side: the two speakers are allowed members of a
	// Telegram group (group_mode mention: the bot listens to what is not
	// addressed to it). The app's clock stands at each session's date
	// while its messages are said and handled.
	srv := telegramtest.New(t, tgToken)
	appClock := &locomo.Clock{}
	appClock.Set(conv.Sessions[0].Date)
	// The nightly dream is off: the clock jumps weeks between sessions, so
	// the scheduler would catch up a dream in the middle of the ingest,
	// which sends episodes to the model and may condense them (CI run 62
	// saw its model call). The eval compares what ingest stores; dreaming
	// has its own tests.
	h, _ := startTelegram(t, srv, WithEnv("REVERIE_TIMEZONE=UTC", "REVERIE_DREAMING__ENABLED=false"), WithNow(appClock.Now))
	members := map[string]telegramtest.User{}
	var last int64
	for _, s := range conv.Sessions {
		appClock.Set(s.Date)
		for _, turn := range s.Turns {
			u, ok := members[turn.Speaker]
			if !ok {
				if len(members) == 2 {
					t.Fatalf("a third speaker %q", turn.Speaker)
				}
				u = []telegramtest.User{{ID: 1001, FirstName: turn.Speaker}, {ID: 1002, FirstName: turn.Speaker}}[len(members)]
				members[turn.Speaker] = u
			}
			in := telegramtest.Incoming{From: u, Chat: group, Text: turn.Text, Date: s.Date}
			if turn.BlipCaption != "" {
				srv.AddFile("photo-"+turn.DiaID, []byte("\xff\xd8\xff\xe0 a photo"))
				in.Text, in.Caption, in.PhotoID = "", turn.Text, "photo-"+turn.DiaID
			}
			last = srv.Send(in)
		}
		// An update is confirmed once handled, and an overheard message
		// is handled once it is stored: the session is over.
		srv.WaitFor(t, "the session's messages to be handled", func() bool { return srv.Offset() > last })
	}
	got, err := h.App.Memory.List(ctx, memory.Filter{Kinds: []memory.Kind{memory.KindEpisode}})
	if err != nil {
		t.Fatal(err)
	}

	if len(got) != len(want) || len(want) == 0 {
		t.Fatalf("the app stored %d episodes, the eval %d", len(got), len(want))
	}
	byID := func(a, b memory.Memory) int { return int(a.ID - b.ID) }
	slices.SortFunc(got, byID)
	slices.SortFunc(want, byID)
	for i := range want {
		g, w := storedFields(got[i]), storedFields(want[i])
		if !reflect.DeepEqual(g, w) {
			gv, wv := reflect.ValueOf(g), reflect.ValueOf(w)
			for j := range gv.NumField() {
				if !reflect.DeepEqual(gv.Field(j).Interface(), wv.Field(j).Interface()) {
					t.Errorf("episode %d, %s: app %v, eval %v", i+1, gv.Type().Field(j).Name, gv.Field(j).Interface(), wv.Field(j).Interface())
				}
			}
		}
	}
	for _, s := range conv.Sessions {
		for _, turn := range s.Turns {
			if sawUser(h, turn.Text) != 0 {
				t.Errorf("an overheard message reached the model: %q", turn.Text)
			}
		}
	}
	if ms := srv.Messages(group.ID); len(ms) != 0 {
		t.Errorf("the bot spoke in a room where it only listens: %+v", ms)
	}
}

// storedFields is m without its id, which only says in which order a store
// wrote it, and with its times in UTC; every other field — text, kind,
// source, the creation, update and validity times, thread, session,
// speaker, role, event time, vector — stays.
func storedFields(m memory.Memory) memory.Memory {
	m.ID = 0
	utc := func(t *time.Time) *time.Time {
		if t == nil {
			return nil
		}
		u := t.UTC()
		return &u
	}
	m.CreatedAt, m.UpdatedAt, m.ValidFrom = m.CreatedAt.UTC(), m.UpdatedAt.UTC(), m.ValidFrom.UTC()
	m.ValidTo, m.LastAccess, m.EventTime = utc(m.ValidTo), utc(m.LastAccess), utc(m.EventTime)
	return m
}

// On the web, the user is the name in the world state (set on the World
// page, PUT /api/v1/world, or by the assistant when told) and the
// assistant is its own name there: both are the speakers of the episodes
// of a turn.
func TestWebEpisodeSpeakers(t *testing.T) {
	app := StartWeb(t)
	ctx := context.Background()
	turn := func(thread, text string) (user, assistant string) {
		t.Helper()
		app.JSON(t, http.MethodPost, "/threads/"+thread+"/messages", map[string]string{"text": text}, http.StatusOK, nil)
		eps, err := app.App.Memory.List(ctx, memory.Filter{Kinds: []memory.Kind{memory.KindEpisode}})
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range eps {
			if e.Thread == thread && e.Role == memory.RoleUser && e.Text == text {
				user = e.Speaker
			}
			if e.Thread == thread && e.Role == memory.RoleAssistant {
				assistant = e.Speaker
			}
		}
		return user, assistant
	}
	if u, a := turn("web:before", "hello there"); u != "" || a != world.DefaultAgentName {
		t.Errorf("no name set: speakers %q / %q, want \"\" / %q", u, a, world.DefaultAgentName)
	}
	// The setup screen's Names form.
	var st api.SetupStatus
	app.JSON(t, http.MethodGet, "/setup", nil, http.StatusOK, &st)
	if !slices.ContainsFunc(st.Forms, func(f api.SetupForm) bool { return f.ID == "names" && !f.Configured }) {
		t.Fatalf("no Names form on the setup screen: %+v", st.Forms)
	}
	app.JSON(t, http.MethodPost, "/setup/names", map[string]any{"values": map[string]string{"user_name": "Sam", "agent_name": "Ada"}}, http.StatusOK, nil)
	if u, a := turn("web:setup", "I moved to Lisbon"); u != "Sam" || a != "Ada" {
		t.Errorf("speakers %q / %q, want Sam / Ada", u, a)
	}
	// The World page (PUT /api/v1/world).
	var doc map[string]any
	app.JSON(t, http.MethodGet, "/world", nil, http.StatusOK, &doc)
	doc["identity"] = map[string]any{"user_name": "Samira", "agent_name": "Ada"}
	app.JSON(t, http.MethodPut, "/world", doc, http.StatusOK, nil)
	if u, _ := turn("web:world", "I work at the harbour"); u != "Samira" {
		t.Errorf("speaker %q, want Samira", u)
	}
}
