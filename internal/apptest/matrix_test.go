package apptest

import (
	"encoding/json"
	"strings"
	"testing"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/reverie-ai/reverie/extensions/matrix"
	"github.com/reverie-ai/reverie/extensions/matrix/matrixtest"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// Accounts on the test homeserver.
const (
	mxBotPass   = "bot-password-123"
	mxAlicePass = "alice-password-123"
	mxBobPass   = "bob-password-123"
	mxEvePass   = "eve-password-123"
)

// mxWorld is a homeserver with the bot's account and three people: alice
// and bob are allowed, eve is a stranger.
type mxWorld struct {
	srv             *matrixtest.Server
	bot, alice, bob string
	eve             string
}

func newMatrixWorld(t *testing.T) *mxWorld {
	t.Helper()
	srv := matrixtest.Start(t)
	return &mxWorld{srv: srv,
		bot:   srv.CreateUser(t, "reverie", mxBotPass),
		alice: srv.CreateUser(t, "alice", mxAlicePass),
		bob:   srv.CreateUser(t, "bob", mxBobPass),
		eve:   srv.CreateUser(t, "eve", mxEvePass),
	}
}

// env configures the channel through the environment only.
func (w *mxWorld) env(extra ...string) Option {
	return WithEnv(append([]string{
		"REVERIE_MATRIX__HOMESERVER=" + w.srv.URL(),
		"REVERIE_MATRIX__USER_ID=" + w.bot,
		"REVERIE_MATRIX__PASSWORD=" + mxBotPass,
		"REVERIE_MATRIX__ALLOWED_USERS=" + w.alice + ", " + w.bob,
		"REVERIE_MATRIX__EDIT_INTERVAL=500ms",
	}, extra...)...)
}

// startMatrix runs the whole app with the Matrix channel.
func startMatrix(t *testing.T, w *mxWorld, opts ...Option) *Harness {
	t.Helper()
	h := Start(t, append([]Option{WithExtensions(matrix.Info(matrix.Options{})), w.env()}, opts...)...)
	h.Model.Handle(matrixAssistant)
	return h
}

// matrixAssistant greets new conversations, sets a reminder when asked and
// otherwise repeats the message with some markdown.
func matrixAssistant(req llmtest.ChatRequest) llmtest.ServerReply {
	last := req.Messages[len(req.Messages)-1]
	user := lastUser(req)
	switch {
	case last.Role == "tool" && strings.Contains(last.Text(), `"set":true`):
		return llmtest.ServerReply{Text: "Done: I'll remind you."}
	case last.Role == "tool":
		return llmtest.ServerReply{Text: "Tool said: " + last.Text()}
	case strings.HasPrefix(user, "[SYSTEM EVENT]"):
		return llmtest.ServerReply{Text: "Hello, I'm Reverie."}
	case strings.Contains(user, "remind me"):
		return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_1", Name: "set_reminder",
			Arguments: json.RawMessage(`{"text":"stretch","in":"1s"}`)}}}
	default:
		return llmtest.ServerReply{Text: "You said: " + user + " — **noted** <ok> & done."}
	}
}

// botSaid reports whether a message from the bot in room contains s.
func botSaid(evs []*event.Event, room id.RoomID, bot, s string) bool {
	for _, e := range matrixtest.Messages(evs, room, id.UserID(bot)) {
		if strings.Contains(e.Content.AsMessage().Body, s) {
			return true
		}
	}
	return false
}

func joined(room id.RoomID, user string) func([]*event.Event) bool {
	return func(evs []*event.Event) bool {
		return matrixtest.Membership(evs, room, id.UserID(user)) == event.MembershipJoin
	}
}

// An allowed user's direct message (unencrypted room) is answered in the
// room: rendered to Matrix HTML with a plain body, with typing shown and a
// read receipt; a slash command works as on every channel.
func TestMatrixDirectMessage(t *testing.T) {
	w := newMatrixWorld(t)
	h := startMatrix(t, w, WithEnv("REVERIE_MATRIX__ENCRYPTION=false"))
	alice := w.srv.Login(t, "alice", mxAlicePass)
	room := alice.CreateRoom(t, false, w.bot)
	alice.Wait(t, "the bot to join", joined(room, w.bot))
	alice.Send(t, room, "hello there")
	evs := alice.Wait(t, "the answer", func(evs []*event.Event) bool {
		return botSaid(evs, room, w.bot, "You said: hello there")
	})
	var reply *event.MessageEventContent
	for _, e := range matrixtest.Messages(evs, room, id.UserID(w.bot)) {
		if c := e.Content.AsMessage(); strings.Contains(c.Body, "You said") {
			reply = c
		}
	}
	if reply.Format != event.FormatHTML || !strings.Contains(reply.FormattedBody, "<strong>noted</strong>") ||
		!strings.Contains(reply.FormattedBody, "&lt;ok&gt;") || strings.Contains(reply.FormattedBody, "<ok>") {
		t.Errorf("reply not rendered to sanitised HTML: %+v", reply)
	}
	if !strings.Contains(reply.Body, "noted") || strings.Contains(reply.Body, "<strong>") {
		t.Errorf("plain body: %q", reply.Body)
	}
	if !botSaid(evs, room, w.bot, "Hello, I'm Reverie.") {
		t.Error("no greeting for the new conversation")
	}
	alice.Wait(t, "a read receipt and typing from the bot", func(evs []*event.Event) bool {
		var receipt, typing bool
		for _, e := range evs {
			switch e.Type {
			case event.EphemeralEventReceipt:
				b, _ := json.Marshal(e.Content.Raw)
				receipt = receipt || strings.Contains(string(b), w.bot)
			case event.EphemeralEventTyping:
				b, _ := json.Marshal(e.Content.Raw)
				typing = typing || strings.Contains(string(b), w.bot)
			}
		}
		return receipt && typing
	})
	alice.Send(t, room, "/help")
	alice.Wait(t, "the /help answer", func(evs []*event.Event) bool { return botSaid(evs, room, w.bot, "/reminders") })
	if n := sawUser(h, "/help"); n != 0 {
		t.Errorf("/help reached the model %d times", n)
	}
}
