package apptest

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/channelkit"
	"github.com/reverie-ai/reverie/extensions/telegram"
	"github.com/reverie-ai/reverie/extensions/telegram/telegramtest"
	"github.com/reverie-ai/reverie/internal/app"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

const tgToken = "123456:TEST-token-abcdefghijklmnopqrstuvwxyz"

// Telegram users of the tests: two allowed, the rest strangers.
var (
	alice   = telegramtest.User{ID: 1001, FirstName: "Alice", Username: "alice"}
	bob     = telegramtest.User{ID: 1002, FirstName: "Bob"}
	mallory = telegramtest.User{ID: 6666, FirstName: "Mallory", Username: "mallory"}
	carol   = telegramtest.User{ID: 4004, FirstName: "Carol"}
)

// sleeps records the waits the channel asks for and returns at once: the
// tests assert which waits were asked (retry_after, backoff), never how
// long anything took.
type sleeps struct {
	mu sync.Mutex
	d  []time.Duration
}

func (s *sleeps) Sleep(ctx context.Context, d time.Duration) error {
	s.mu.Lock()
	s.d = append(s.d, d)
	s.mu.Unlock()
	return ctx.Err()
}

// waited reports a wait of d, or of a little less (the rest of d after
// the time a call took).
func (s *sleeps) waited(d time.Duration) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.ContainsFunc(s.d, func(w time.Duration) bool { return w <= d && w > d-time.Second })
}

// startTelegram runs the whole app with the Telegram channel talking to
// srv, configured only through the environment.
func startTelegram(t *testing.T, srv *telegramtest.Server, opts ...Option) (*Harness, *sleeps) {
	t.Helper()
	sl := &sleeps{}
	h := Start(t, append([]Option{
		WithExtensions(telegram.Info(telegram.Options{Sleep: sl.Sleep})),
		WithEnv("REVERIE_TELEGRAM__TOKEN="+tgToken, "REVERIE_TELEGRAM__API_URL="+srv.URL(),
			"REVERIE_TELEGRAM__ALLOWED_USERS=1001, 1002"),
	}, opts...)...)
	h.Model.Handle(telegramAssistant)
	return h, sl
}

// telegramAssistant greets new conversations, sets a reminder when asked
// and otherwise repeats the message with some markdown.
func telegramAssistant(req llmtest.ChatRequest) llmtest.ServerReply {
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
	case strings.Contains(user, "send me the outside file"):
		return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_3", Name: "telegram_send_file",
			Arguments: json.RawMessage(`{"path":"../outside.txt"}`)}}}
	case strings.Contains(user, "send me the linked file"):
		return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_4", Name: "telegram_send_file",
			Arguments: json.RawMessage(`{"path":"link/outside.txt"}`)}}}
	case strings.Contains(user, "send me the notes"):
		return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "call_2", Name: "telegram_send_file",
			Arguments: json.RawMessage(`{"path":"notes/list.txt","caption":"your notes"}`)}}}
	default:
		text := "You said: " + user + " — **noted** <ok> & done."
		if greets(req) {
			text = Greeting + text
		}
		return llmtest.ServerReply{Text: text}
	}
}

// sawUser reports whether the model ever got a user message containing s.
func sawUser(h *Harness, s string) int {
	n := 0
	for _, r := range h.Model.ChatRequests() {
		if strings.Contains(lastUser(r), s) {
			n++
		}
	}
	return n
}

func hasPlain(ms []telegramtest.Message, s string) bool {
	return slices.ContainsFunc(ms, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, s) })
}

// An allowed user's private message is answered in its chat: streamed by
// editing a message, formatted as Telegram HTML, with "typing…" shown, the
// commands registered, and the update acknowledged.
func TestTelegramDirectMessage(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	startTelegram(t, srv)
	id := srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "hello there"})
	// The new conversation is greeted in the reply itself: one message.
	ms := srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: hello there") })
	reply := ms[len(ms)-1]
	if reply.ParseMode != "HTML" || !strings.Contains(reply.Text, "<b>noted</b> &lt;ok&gt; &amp; done.") ||
		reply.Plain != Greeting+"You said: hello there — noted <ok> & done." {
		t.Errorf("reply not converted to Telegram HTML: %+v", reply)
	}
	if len(srv.Calls("sendChatAction")) == 0 {
		t.Error("no typing action while the turn ran")
	}
	cmds := srv.Commands()
	names := make([]string, len(cmds))
	for i, c := range cmds {
		names[i] = c.Command
	}
	for _, want := range []string{"help", "new", "status", "approve"} {
		if !slices.Contains(names, want) {
			t.Errorf("setMyCommands lacks /%s: %v", want, names)
		}
	}
	srv.WaitFor(t, "the update to be acknowledged", func() bool { return srv.Offset() > id })

	// A slash command is handled like on every channel.
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "/help@" + telegramtest.BotUsername})
	srv.WaitMessages(t, alice.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "/approve") })
}

// In a group only allowed users who mention the bot (or reply to it) are
// heard; strangers never reach the model.
func TestTelegramGroupMention(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	h, _ := startTelegram(t, srv)
	group := telegramtest.Group(-100500, "family")
	srv.Send(telegramtest.Incoming{From: alice, Chat: group, Text: "just chatting among us"})
	text, ents := telegramtest.Mention("from mallory")
	srv.Send(telegramtest.Incoming{From: mallory, Chat: group, Text: text, Entities: ents})
	text, ents = telegramtest.Mention("what's up?")
	srv.Send(telegramtest.Incoming{From: alice, Chat: group, Text: text, Entities: ents})
	srv.WaitMessages(t, group.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: what's up?") })
	srv.Send(telegramtest.Incoming{From: bob, Chat: group, Text: "and a reply to you", ReplyToBot: true})
	srv.WaitMessages(t, group.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: and a reply to you") })
	if sawUser(h, "among us") != 0 || sawUser(h, "mallory") != 0 {
		t.Error("a message not meant for the bot, or from a stranger, reached the model")
	}
	if sawUser(h, "@"+telegramtest.BotUsername) != 0 {
		t.Error("the mention was not removed from the text")
	}
	if ms := srv.Messages(mallory.ID); len(ms) != 0 {
		t.Errorf("a stranger in a group got messages: %+v", ms)
	}
}

var codePattern = regexp.MustCompile(`pairing code is:\s+([A-Z2-9]{8})`)

// A stranger gets a one-time pairing code and nothing else; the owner
// approves it with /approve from their own chat; the stranger is told and
// is answered from then on. A second code is approved through the web API.
func TestTelegramPairing(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	h, _ := startTelegram(t, srv)
	srv.Send(telegramtest.Incoming{From: carol, Chat: telegramtest.Private(carol), Text: "/start"})
	ms := srv.WaitMessages(t, carol.ID, 1, nil)
	m := codePattern.FindStringSubmatch(ms[0].Plain)
	if m == nil {
		t.Fatalf("no pairing code in %q", ms[0].Plain)
	}
	code := m[1]
	srv.Send(telegramtest.Incoming{From: carol, Chat: telegramtest.Private(carol), Text: "please let me in"})
	// The owner approves it from their Telegram chat (a wrong code first).
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "/approve ZZZZ2222"})
	srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool {
		return hasPlain(ms, "Nobody was let in: unknown, used or expired pairing code: ZZZZ2222; the person gets a new code")
	})
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "/approve " + strings.ToLower(code)})
	srv.WaitMessages(t, alice.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "Approved: Carol") })
	ms = srv.WaitMessages(t, carol.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You're in") })
	if len(ms) != 2 {
		t.Errorf("the stranger got more than the code and the approval (no reminder within a minute): %+v", ms)
	}
	if sawUser(h, "please let me in") != 0 || sawUser(h, "/start") != 0 {
		t.Error("a stranger's message reached the model")
	}
	srv.Send(telegramtest.Incoming{From: carol, Chat: telegramtest.Private(carol), Text: "thanks!"})
	srv.WaitMessages(t, carol.ID, 3, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: thanks!") })

	// Someone let in by pairing cannot let in others: only the owners
	// (allowed_users) approve codes.
	srv.Send(telegramtest.Incoming{From: mallory, Chat: telegramtest.Private(mallory), Text: "hi"})
	ms = srv.WaitMessages(t, mallory.ID, 1, nil)
	mcode := codePattern.FindStringSubmatch(ms[0].Plain)[1]
	srv.Send(telegramtest.Incoming{From: carol, Chat: telegramtest.Private(carol), Text: "/approve " + mcode})
	srv.WaitMessages(t, carol.ID, 4, func(ms []telegramtest.Message) bool { return hasPlain(ms, "Only the owner can approve pairing codes") })
	if ms := srv.Messages(mallory.ID); len(ms) != 1 {
		t.Errorf("a paired user let a stranger in: %+v", ms)
	}

	// The code is one-time.
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "/approve " + code})
	srv.WaitMessages(t, alice.ID, 3, func(ms []telegramtest.Message) bool {
		return strings.Contains(ms[len(ms)-1].Plain, "Nobody was let in: unknown, used or expired pairing code: "+code+";")
	})
}

// POST /api/v1/telegram/approve approves a code through the standard
// authentication; a wrong token or a wrong code changes nothing.
func TestTelegramApproveOverWebAPI(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	sl := &sleeps{}
	w := StartWeb(t, WithExtensions(telegram.Info(telegram.Options{Sleep: sl.Sleep})),
		WithEnv("REVERIE_TELEGRAM__TOKEN="+tgToken, "REVERIE_TELEGRAM__API_URL="+srv.URL()))
	srv.Send(telegramtest.Incoming{From: mallory, Chat: telegramtest.Private(mallory), Text: "hi"})
	ms := srv.WaitMessages(t, mallory.ID, 1, nil)
	code := codePattern.FindStringSubmatch(ms[0].Plain)[1]

	if status, _ := w.DoAuth(t, "POST", "/telegram/approve", map[string]string{"code": code}, "Bearer wrong"); status != http.StatusUnauthorized {
		t.Fatalf("wrong token: %d", status)
	}
	// The page's session cookie works only from the page's own origin.
	if status := cookiePost(t, w, "/telegram/approve", `{"code":"`+code+`"}`, "https://evil.example"); status != http.StatusForbidden {
		t.Fatalf("cross-origin approval with the session cookie: %d", status)
	}
	if status, _ := w.DoAuth(t, "POST", "/telegram/approve", map[string]string{"code": code}, ""); status != http.StatusUnauthorized {
		t.Fatalf("no token: %d", status)
	}
	if status, body := w.Do(t, "POST", "/telegram/approve", map[string]string{"code": "ABCD2345"}); status != http.StatusNotFound {
		t.Fatalf("wrong code: %d %s", status, body)
	}
	var got api.PairingApproval
	w.JSON(t, "POST", "/telegram/approve", map[string]string{"code": code}, http.StatusOK, &got)
	if got.Channel != "telegram" || got.UserID != strconv.FormatInt(mallory.ID, 10) {
		t.Fatalf("approval %+v", got)
	}
	srv.WaitMessages(t, mallory.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You're in") })
}

// 429 answers are obeyed (retry_after), a reply Telegram cannot parse is
// resent as plain text, 409 and server errors on getUpdates are retried
// with backoff, and nothing is lost on the way.
func TestTelegramFailurePaths(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	h, sl := startTelegram(t, srv)
	srv.Fail("getUpdates",
		telegramtest.Failure{Code: 409, Desc: "Conflict: terminated by other getUpdates request; make sure that only one bot instance is running"},
		telegramtest.Failure{Code: 502, Desc: "Bad Gateway"},
		telegramtest.Failure{Code: 429, Desc: "Too Many Requests: retry after 11", RetryAfter: 11})
	srv.Fail("sendMessage",
		telegramtest.Failure{Code: 429, Desc: "Too Many Requests: retry after 7", RetryAfter: 7},
		telegramtest.Failure{Code: 400, Desc: "Bad Request: can't parse entities: unsupported start tag \"x\" at byte offset 0"})
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "are you there"})
	srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: are you there") })
	for _, d := range []time.Duration{7 * time.Second, 11 * time.Second, time.Second} {
		if !sl.waited(d) {
			t.Errorf("no wait of %s (retry_after or backoff); waits: %v", d, sl.d)
		}
	}
	// One of the answers went out as plain text after the parse error.
	var plain int
	for _, c := range srv.Calls("sendMessage") {
		if c.Params["parse_mode"] == "" {
			plain++
		}
	}
	if plain == 0 {
		t.Error("no plain-text resend after the parse error")
	}
	if n := sawUser(h, "are you there"); n != 1 {
		t.Errorf("the message reached the model %d times, want 1", n)
	}
}

// A Bot API that answers sends with 500 for a while (an outage of a minute
// or so) delays a reply, it does not drop it: the send is retried with
// backoff (the waits recorded, not slept) and the reply arrives once. A
// stop while the reply waits to be sent again ends the retries: the
// shutdown does not wait minutes for a failing Bot API.
func TestTelegramSendFailsForAWhile(t *testing.T) {
	const failures = 6 // the first waits add up to at most 63 s, within the channel's two minutes
	srv := telegramtest.New(t, tgToken)
	var block atomic.Bool
	blocked := make(chan struct{}, 1)
	// With block set a wait lasts until its context ends (or the channel
	// stops); else it is only recorded.
	sleep := func(ctx context.Context, d time.Duration) error {
		if block.Load() {
			select {
			case blocked <- struct{}{}:
			default:
			}
			<-ctx.Done()
		}
		return ctx.Err()
	}
	h := Start(t, WithExtensions(telegram.Info(telegram.Options{Sleep: sleep})),
		WithEnv("REVERIE_TELEGRAM__TOKEN="+tgToken, "REVERIE_TELEGRAM__API_URL="+srv.URL(), "REVERIE_TELEGRAM__ALLOWED_USERS=1001"))
	h.Model.Handle(telegramAssistant)
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "hello"})
	srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: hello") })

	sends := len(srv.Calls("sendMessage"))
	fail := make([]telegramtest.Failure, failures)
	for i := range fail {
		fail[i] = telegramtest.Failure{Code: 500, Desc: "Internal Server Error"}
	}
	srv.Fail("sendMessage", fail...)
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "are you there?"})
	srv.WaitMessages(t, alice.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: are you there?") })
	if n := len(srv.Calls("sendMessage")) - sends; n < failures+1 {
		t.Errorf("%d sends, want the %d that failed and one more", n, failures)
	}
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "thanks"})
	ms := srv.WaitMessages(t, alice.ID, 3, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: thanks") })
	if n := countPlain(ms, "You said: are you there?"); n != 1 {
		t.Errorf("the reply is in the chat %d times, want once", n)
	}

	// A stop while a reply waits to be sent again ends the retries.
	block.Store(true)
	fail = make([]telegramtest.Failure, 1000)
	for i := range fail {
		fail[i] = telegramtest.Failure{Code: 502, Desc: "Bad Gateway"}
	}
	srv.Fail("sendMessage", fail...)
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "and now?"})
	stopEndsRetries(t, blocked, h.Stop, telegramtest.WaitTimeout)
}

// countPlain counts the messages whose plain text contains s.
func countPlain(ms []telegramtest.Message, s string) int {
	n := 0
	for _, m := range ms {
		if strings.Contains(m.Plain, s) {
			n++
		}
	}
	return n
}

// Updates that arrived while Reverie was stopped are answered after the
// restart, once; updates Telegram repeats (it never saw the acknowledgement)
// are not answered again.
func TestTelegramRestartWithPendingUpdates(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	h, _ := startTelegram(t, srv)
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "alpha note"})
	srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: alpha note") })
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "beta note"})
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "gamma note"})
	srv.Redeliver() // as if the acknowledgement of the first never reached Telegram

	h2, _ := startTelegram(t, srv, WithDataDir(h.DataDir))
	srv.WaitMessages(t, alice.ID, 3, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: gamma note") })
	srv.WaitFor(t, "every update acknowledged", func() bool { return srv.Pending() == 0 })
	for _, text := range []string{"alpha note", "beta note", "gamma note"} {
		if n := sawUser(h, text) + sawUser(h2, text); n != 1 {
			t.Errorf("%q reached the model %d times, want 1", text, n)
			for _, r := range append(h.Model.ChatRequests(), h2.Model.ChatRequests()...) {
				t.Logf("request: %q", lastUser(r))
			}
		}
	}
}

// A crash between the router accepting a message and the channel storing
// the offset (Telegram's at-least-once window) fetches the update again at
// the next start: it is not answered twice, since the router accepts a
// message id (chat.Inbound.ID) once.
func TestTelegramUpdateRedeliveredAfterACrashIsAnsweredOnce(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	h, _ := startTelegram(t, srv)
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "alpha note"})
	srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: alpha note") })
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	// The offset write never happened, and Telegram never saw it.
	forgetOffset(t, h.DataDir)
	srv.Redeliver()

	h2, _ := startTelegram(t, srv, WithDataDir(h.DataDir))
	srv.WaitFor(t, "the redelivered update acknowledged", func() bool { return srv.Pending() == 0 })
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "beta note"})
	ms := srv.WaitMessages(t, alice.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: beta note") })
	answers := 0
	for _, m := range ms {
		if strings.Contains(m.Plain, "You said: alpha note") {
			answers++
		}
	}
	if answers != 1 {
		t.Errorf("alpha answered %d times, want once: %+v", answers, ms)
	}
	if n := sawUser(h, "alpha note") + sawUser(h2, "alpha note"); n != 1 {
		t.Errorf("alpha reached the model %d times, want 1", n)
	}
}

// A document whose update is fetched again after a crash (the offset was
// never stored) is not downloaded again: the router would drop the
// message, so its file is not fetched over the one saved the first time
// (which the agent may have changed since), and it is answered once.
func TestTelegramRedeliveredFileIsNotDownloadedAgain(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	h, _ := startTelegram(t, srv)
	srv.AddFile("doc1", []byte("day 1: Lyon"))
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Caption: "my plan", DocumentID: "doc1", DocumentName: "plan.txt"})
	srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "my plan") })
	if err := h.Stop(); err != nil {
		t.Fatal(err)
	}
	saved, _ := filepath.Glob(filepath.Join(h.DataDir, "workspace", "telegram", "1001", "*plan.txt"))
	if len(saved) != 1 {
		t.Fatalf("saved files: %v", saved)
	}
	// The agent edited the file since.
	if err := os.WriteFile(saved[0], []byte("day 1: Lyon\nday 2: Annecy\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The offset write never happened, and Telegram never saw it.
	forgetOffset(t, h.DataDir)
	srv.Redeliver()

	h2, _ := startTelegram(t, srv, WithDataDir(h.DataDir))
	srv.WaitFor(t, "the redelivered update acknowledged", func() bool { return srv.Pending() == 0 })
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "beta note"})
	srv.WaitMessages(t, alice.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: beta note") })
	if n := len(srv.Calls("getFile")); n != 1 {
		t.Errorf("getFile was called %d times, want once (the redelivered document was fetched again)", n)
	}
	if got, err := os.ReadFile(saved[0]); err != nil || string(got) != "day 1: Lyon\nday 2: Annecy\n" {
		t.Errorf("the saved file after the redelivery: %q, %v (overwritten)", got, err)
	}
	if files, _ := filepath.Glob(filepath.Join(h.DataDir, "workspace", "telegram", "1001", "*")); len(files) != 1 {
		t.Errorf("files saved: %v, want the one", files)
	}
	if n := sawUser(h, "my plan") + sawUser(h2, "my plan"); n != 1 {
		t.Errorf("the document's message reached the model %d times, want 1", n)
	}
}

// forgetOffset deletes the Telegram offset a stopped app stored, as if a
// crash came before its write: the next start fetches the updates again.
func forgetOffset(t *testing.T, dataDir string) {
	t.Helper()
	db, err := sqlite.Open(t.Context(), filepath.Join(dataDir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(`DELETE FROM telegram_state WHERE key = 'offset'`); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// A reminder set in a Telegram chat is delivered to that chat.
func TestTelegramReminder(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	startTelegram(t, srv)
	srv.Send(telegramtest.Incoming{From: bob, Chat: telegramtest.Private(bob), Text: "remind me to stretch in a second"})
	srv.WaitMessages(t, bob.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "Reminder: stretch") })
}

// A photo is saved in the workspace and handed to the model (as its path:
// the model messages carry text); a file from the workspace is sent back.
func TestTelegramPhotoAndFiles(t *testing.T) {
	photo := []byte("\xff\xd8\xff\xe0 fake jpeg bytes")
	notePattern := regexp.MustCompile(`\[image saved at workspace/(telegram/1001/\S+\.jpg); this model cannot see images\]\nwhat is this\?`)
	// photoSent sends a captioned photo, waits for the answer and returns
	// the user message holding it, as the model received it.
	photoSent := func(t *testing.T, opts ...Option) (*Harness, *telegramtest.Server, llmtest.ChatMessage) {
		srv := telegramtest.New(t, tgToken)
		h, _ := startTelegram(t, srv, opts...)
		srv.AddFile("ph1", photo)
		srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Caption: "what is this?", PhotoID: "ph1"})
		srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "what is this?") })
		reqs := h.Model.ChatRequests()
		for i := len(reqs) - 1; i >= 0; i-- {
			for _, m := range reqs[i].Messages {
				if m.Role == "user" && strings.Contains(m.Text(), "what is this?") {
					return h, srv, m
				}
			}
		}
		t.Fatalf("no request holds the photo's message: %+v", reqs)
		return nil, nil, llmtest.ChatMessage{}
	}
	savedPhoto := func(t *testing.T, h *Harness) string {
		files, _ := filepath.Glob(filepath.Join(h.DataDir, "workspace", "telegram", "1001", "*-photo.jpg"))
		if len(files) != 1 {
			t.Fatalf("saved photos: %v", files)
		}
		got, err := os.ReadFile(files[0])
		if err != nil || string(got) != string(photo) {
			t.Fatalf("saved photo: %q, %v", got, err)
		}
		return "telegram/1001/" + filepath.Base(files[0])
	}

	t.Run("vision model sees the photo", func(t *testing.T) {
		h, _, m := photoSent(t, WithEnv("REVERIE_MODEL_VISION=true"))
		savedPhoto(t, h)
		want := []string{"data:image/jpeg;base64," + base64.StdEncoding.EncodeToString(photo)}
		if !reflect.DeepEqual(m.Images(), want) || m.Text() != "what is this?" {
			t.Fatalf("user message: images %q, text %q; want the photo as an image_url part and the caption", m.Images(), m.Text())
		}
	})

	h, srv, m := photoSent(t)
	path := savedPhoto(t, h)
	if got := notePattern.FindStringSubmatch(m.Text()); got == nil || got[1] != path || m.Images() != nil {
		t.Fatalf("a model without vision got %q (images %q), want a note naming %s", m.Text(), m.Images(), path)
	}

	if err := os.MkdirAll(filepath.Join(h.DataDir, "workspace", "notes"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(h.DataDir, "workspace", "notes", "list.txt"), []byte("milk\neggs\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "send me the notes"})
	ms := srv.WaitMessages(t, alice.ID, 3, func(ms []telegramtest.Message) bool {
		return slices.ContainsFunc(ms, func(m telegramtest.Message) bool { return m.Kind == "document" })
	})
	for _, m := range ms {
		if m.Kind == "document" && (string(m.File) != "milk\neggs\n" || m.Caption != "your notes") {
			t.Errorf("document %+v", m)
		}
	}

	// A file outside the workspace is refused, by a relative path or
	// through a symbolic link inside the workspace, and the model is told.
	if err := os.WriteFile(filepath.Join(h.DataDir, "outside.txt"), []byte("not for sending"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(h.DataDir, filepath.Join(h.DataDir, "workspace", "link")); err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"send me the outside file", "send me the linked file"} {
		told := func(ms []telegramtest.Message) int {
			n := 0
			for _, m := range ms {
				if strings.Contains(m.Plain, "Tool said:") && strings.Contains(m.Plain, `"ok":false`) {
					n++
				}
			}
			return n
		}
		before := told(srv.Messages(alice.ID))
		srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: text})
		srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return told(ms) > before })
	}
	for _, m := range srv.Messages(alice.ID) {
		if string(m.File) == "not for sending" {
			t.Fatalf("a file outside the workspace was sent: %+v", m)
		}
	}
}

// A token Telegram refuses is a configuration error (exit code 2), and the
// token appears in no error.
func TestTelegramWrongToken(t *testing.T) {
	srv := telegramtest.New(t, "999:another-token-abcdefghijklmnopqrstu")
	model := llmtest.NewOpenAIServer(t)
	_, err := app.New(t.Context(), app.Options{DataDir: filepath.Join(t.TempDir(), "data"), Console: testWriter{t},
		Registry: []extension.Info{telegram.Info(telegram.Options{})},
		Env: []string{"OPENAI_BASE_URL=" + model.BaseURL(), "OPENAI_API_KEY=sk-test", "REVERIE_MODEL=gpt-test", "REVERIE_LOG__FILE=false",
			"REVERIE_TELEGRAM__TOKEN=" + tgToken, "REVERIE_TELEGRAM__API_URL=" + srv.URL()}})
	if !errors.Is(err, extension.ErrInvalidConfig) {
		t.Fatalf("err = %v, want ErrInvalidConfig", err)
	}
	if strings.Contains(err.Error(), "TEST-token") {
		t.Fatalf("the token leaked into the error: %v", err)
	}
}

// `reverie telegram approve` writes to the database while the agent runs;
// the running channel tells the person at its next poll.
func TestTelegramApproveFromCommandLine(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	sl := &sleeps{}
	h := Start(t, WithExtensions(telegram.Info(telegram.Options{Sleep: sl.Sleep, PollTimeout: time.Second})),
		WithEnv("REVERIE_TELEGRAM__TOKEN="+tgToken, "REVERIE_TELEGRAM__API_URL="+srv.URL()))
	srv.Send(telegramtest.Incoming{From: carol, Chat: telegramtest.Private(carol), Text: "hello?"})
	ms := srv.WaitMessages(t, carol.ID, 1, nil)
	code := codePattern.FindStringSubmatch(ms[0].Plain)[1]
	st, err := telegram.OpenStore(t.Context(), h.App.DB, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	if reqs, err := st.Pending(t.Context()); err != nil || len(reqs) != 1 || reqs[0].UserID != carol.ID {
		t.Fatalf("pending: %+v, %v", reqs, err)
	}
	if _, err := st.Approve(t.Context(), code); err != nil {
		t.Fatal(err)
	}
	srv.WaitMessages(t, carol.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You're in") })
}

// list_channels names Telegram and send_to_channel delivers to a Telegram
// chat from another channel's conversation.
func TestTelegramSendToChannel(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	h, _ := startTelegram(t, srv)
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "hi"})
	srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: hi") })
	h.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		last := req.Messages[len(req.Messages)-1]
		switch {
		case last.Role == "tool" && strings.Contains(last.Text(), `"name":"telegram"`):
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "c2", Name: "send_to_channel",
				Arguments: json.RawMessage(`{"channel":"telegram","thread":"1001","text":"A note from the web: **buy milk**"}`)}}}
		case last.Role == "tool":
			return llmtest.ServerReply{Text: "sent"}
		case strings.Contains(lastUser(req), "tell alice"):
			return llmtest.ServerReply{ToolCalls: []llm.ToolCall{{ID: "c1", Name: "list_channels", Arguments: json.RawMessage(`{}`)}}}
		}
		return llmtest.ServerReply{Text: "ok"}
	})
	h.Send(t, "desk", "tell alice to buy milk")
	// A message to another channel than the one asked on waits for the
	// user's approval (tools.approval: send_to_channel is other_channels).
	if req := waitApproval(t, h, "desk"); req.Approval.Tool != "send_to_channel" || !strings.Contains(req.Text, "telegram") {
		t.Fatalf("approval request = %+v", req)
	}
	h.Send(t, "desk", "yes")
	ms := srv.WaitMessages(t, alice.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "A note from the web: buy milk") })
	if last := ms[len(ms)-1]; !strings.Contains(last.Text, "<b>buy milk</b>") {
		t.Errorf("not formatted: %+v", last)
	}
}

// cookiePost signs in for a session cookie and POSTs body to path with it,
// from origin; it returns the status.
func cookiePost(t *testing.T, w *WebHarness, path, body, origin string) int {
	t.Helper()
	login, err := http.NewRequestWithContext(t.Context(), "POST", w.Base+"/api/v1/login", strings.NewReader(`{"token":"`+w.Token+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	login.Header.Set("Content-Type", "application/json")
	login.Header.Set("Origin", w.Base) // the sign-in of the page itself
	resp, err := http.DefaultClient.Do(login)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Value != "" {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("login set no cookie (%d)", resp.StatusCode)
	}
	req, err := http.NewRequestWithContext(t.Context(), "POST", w.Base+"/api/v1"+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.AddCookie(cookie)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Origin", origin)
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// The telegram: section decodes through the real configuration loader:
// lists written as YAML lists or comma-separated (the environment's form),
// the token as any secret form, and bad values named with their line.
func TestTelegramConfigForms(t *testing.T) {
	for _, tc := range []struct {
		name, yaml string
		env        []string
		want       channelkit.UserIDs[int64]
		bad        string
	}{
		{"yaml list", "telegram:\n  token: {env: TG}\n  allowed_users: [1, 2]\n", nil, channelkit.UserIDs[int64]{1, 2}, ""},
		{"comma string", "telegram:\n  allowed_users: \"3,4\"\n", nil, channelkit.UserIDs[int64]{3, 4}, ""},
		{"env comma list", "", []string{"REVERIE_TELEGRAM__ALLOWED_USERS=5, 6"}, channelkit.UserIDs[int64]{5, 6}, ""},
		{"env one id", "", []string{"REVERIE_TELEGRAM__ALLOWED_USERS=7"}, channelkit.UserIDs[int64]{7}, ""},
		{"bad id", "telegram:\n  allowed_users: [x]\n", nil, nil, "config.yaml:2"},
		{"unknown key", "telegram:\n  tokn: x\n", nil, nil, "tokn"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			cfg, err := config.Load(path, tc.env, []string{telegram.ID})
			if err == nil {
				got := telegram.DefaultConfig()
				err = cfg.DecodeExtension(telegram.ID, &got)
				if err == nil && fmt.Sprint(got.AllowedUsers) != fmt.Sprint(tc.want) {
					t.Fatalf("allowed_users = %v, want %v", got.AllowedUsers, tc.want)
				}
			}
			if (err != nil) != (tc.bad != "") || (err != nil && !strings.Contains(err.Error(), tc.bad)) {
				t.Fatalf("err = %v, want one naming %q", err, tc.bad)
			}
		})
	}
}

// TestTelegramDeletedChatStartsAfresh: a Telegram chat's conversation
// deleted (from the page or the API) and then written to starts a new
// conversation, greeted, whose model request carries nothing of the
// deleted one; the deleted one stays readable, closed, in the archive.
func TestTelegramDeletedChatStartsAfresh(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	h, _ := startTelegram(t, srv)
	ctx := context.Background()
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "plan the garden"})
	srv.WaitMessages(t, alice.ID, 1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: plan the garden") })
	list, err := h.App.Conversations.Threads(ctx, conversation.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var th chat.ThreadID
	for _, x := range list {
		if x.Channel == "telegram" {
			th = x.ID
		}
	}
	if th == "" {
		t.Fatalf("no Telegram thread in %+v", list)
	}
	if _, err := h.App.Conversations.ArchiveThread(ctx, th); err != nil {
		t.Fatal(err)
	}
	before := len(h.Model.ChatRequests())

	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "book a dentist"})
	ms := srv.WaitMessages(t, alice.ID, 2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "You said: book a dentist") })
	if reply := ms[len(ms)-1].Plain; !strings.HasPrefix(reply, Greeting) {
		t.Errorf("reply %q: the new conversation is not greeted", reply)
	}
	for _, req := range h.Model.ChatRequests()[before:] {
		for _, m := range req.Messages {
			if strings.Contains(m.Text(), "garden") {
				t.Errorf("the new conversation's request carries the deleted one: %q", m.Text())
			}
		}
	}
	got, _, err := h.App.Conversations.Thread(ctx, th)
	if err != nil || !got.ArchivedAt.IsZero() || got.Title != "book a dentist" {
		t.Errorf("thread = %+v, %v; want listed again with the new conversation's title", got, err)
	}
	segs, err := h.App.Conversations.Segments(ctx, conversation.SegmentQuery{Thread: th, Kind: conversation.SegmentConversation})
	if err != nil || len(segs) != 1 || segs[0].Title != "plan the garden" {
		t.Errorf("the deleted conversation is not kept closed: %+v %v", segs, err)
	}
}
