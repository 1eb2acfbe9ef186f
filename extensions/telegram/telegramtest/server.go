// Package telegramtest is a fake Telegram Bot API server for tests. It
// speaks the real wire format: POST /bot<token>/<method> with JSON,
// form or multipart bodies, the {"ok":…} envelope with error_code,
// description and parameters.retry_after, long-poll getUpdates with offsets
// (an update is confirmed, and dropped, when a later offset is asked for),
// and file downloads at /file/bot<token>/<path>. It checks HTML messages the
// way Telegram does (known tags, balanced, entities escaped) and answers 400
// "can't parse entities" otherwise.
package telegramtest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"mime"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// BotID and BotUsername describe the fake bot.
const (
	BotID       = 777000
	BotUsername = "reverie_test_bot"
)

// Server is the fake Bot API.
type Server struct {
	srv   *httptest.Server
	token string

	mu       sync.Mutex
	changed  chan struct{} // closed and replaced on every change
	updates  []json.RawMessage
	updateID []int64
	all      []json.RawMessage // every update ever sent, for Redeliver
	allIDs   []int64
	nextUpd  int64
	offset   int64 // the highest offset asked for (confirmed below it)
	nextMsg  int
	messages []*Message
	actions  []Call
	calls    []Call
	files    map[string][]byte // file_id → content
	failures map[string][]Failure
	commands []BotCommand
	polls    int
	closed   bool
}

// Call is one request the server received.
type Call struct {
	Method string
	Params map[string]string
	Files  map[string][]byte
}

// Message is a message the bot sent, with its current text.
type Message struct {
	ID        int
	ChatID    int64
	Text      string // as sent (HTML when ParseMode is HTML)
	ParseMode string
	Plain     string // what the user sees: tags stripped, entities decoded
	Edits     int
	File      []byte // for photos, documents and voice notes
	Kind      string // "text", "photo", "document", "voice"
	Caption   string
}

// Failure is an error the server answers instead of the next call of a
// method.
type Failure struct {
	Code       int
	Desc       string
	RetryAfter int
}

// BotCommand is one command set with setMyCommands.
type BotCommand struct {
	Command     string `json:"command"`
	Description string `json:"description"`
}

// New starts a server accepting token; it is closed when the test ends.
func New(t testing.TB, token string) *Server {
	s := &Server{token: token, changed: make(chan struct{}), nextUpd: 100, nextMsg: 5000,
		files: map[string][]byte{}, failures: map[string][]Failure{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

// URL is the api_url to configure.
func (s *Server) URL() string { return s.srv.URL }

// Close stops the server (pending long polls end).
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		s.signal()
	}
	s.mu.Unlock()
	s.srv.CloseClientConnections()
	s.srv.Close()
}

func (s *Server) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// User is a Telegram user in an update.
type User struct {
	ID        int64  `json:"id"`
	IsBot     bool   `json:"is_bot"`
	FirstName string `json:"first_name"`
	Username  string `json:"username,omitempty"`
}

// Chat is a chat in an update.
type Chat struct {
	ID    int64  `json:"id"`
	Type  string `json:"type"`
	Title string `json:"title,omitempty"`
}

// Private is the private chat with user.
func Private(u User) Chat { return Chat{ID: u.ID, Type: "private"} }

// Group is a group chat.
func Group(id int64, title string) Chat { return Chat{ID: id, Type: "supergroup", Title: title} }

// Bot is the fake bot as a user (for replies to it).
func Bot() User { return User{ID: BotID, IsBot: true, FirstName: "Reverie", Username: BotUsername} }

// Incoming is a message a user sends to the bot.
type Incoming struct {
	From     User
	Chat     Chat
	Text     string
	Caption  string
	Entities []Entity
	// PhotoID, DocumentID and VoiceID attach a file registered with
	// AddFile.
	PhotoID, DocumentID, VoiceID string
	DocumentName                 string
	ReplyToBot                   bool
	// Date is when it was sent (zero: now); Telegram keeps whole seconds.
	Date time.Time
}

// Entity is a message entity (offsets in UTF-16 units).
type Entity struct {
	Type   string `json:"type"`
	Offset int    `json:"offset"`
	Length int    `json:"length"`
}

// Mention returns text with a mention of the bot in front, and its entity.
func Mention(text string) (string, []Entity) {
	m := "@" + BotUsername
	return m + " " + text, []Entity{{Type: "mention", Offset: 0, Length: len(m)}}
}

// AddFile registers a file that getFile and the download serve.
func (s *Server) AddFile(id string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[id] = data
}

// Send queues an update with in and returns its update id.
func (s *Server) Send(in Incoming) int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := s.nextUpd
	s.nextUpd++
	s.nextMsg++
	date := in.Date
	if date.IsZero() {
		date = time.Now()
	}
	msg := map[string]any{
		"message_id": s.nextMsg, "date": date.Unix(), "from": in.From, "chat": in.Chat,
	}
	if in.Text != "" {
		msg["text"] = in.Text
		if len(in.Entities) > 0 {
			msg["entities"] = in.Entities
		}
	}
	if in.Caption != "" {
		msg["caption"] = in.Caption
		if len(in.Entities) > 0 {
			msg["caption_entities"] = in.Entities
		}
	}
	if in.PhotoID != "" {
		n := len(s.files[in.PhotoID])
		msg["photo"] = []map[string]any{
			{"file_id": in.PhotoID + "-small", "file_unique_id": "s" + in.PhotoID, "width": 90, "height": 60, "file_size": 100},
			{"file_id": in.PhotoID, "file_unique_id": "u" + in.PhotoID, "width": 1280, "height": 853, "file_size": n},
		}
	}
	if in.DocumentID != "" {
		msg["document"] = map[string]any{"file_id": in.DocumentID, "file_unique_id": "u" + in.DocumentID,
			"file_name": in.DocumentName, "mime_type": "application/octet-stream", "file_size": len(s.files[in.DocumentID])}
	}
	if in.VoiceID != "" {
		msg["voice"] = map[string]any{"file_id": in.VoiceID, "file_unique_id": "u" + in.VoiceID, "duration": 3,
			"mime_type": "audio/ogg", "file_size": len(s.files[in.VoiceID])}
	}
	if in.ReplyToBot {
		msg["reply_to_message"] = map[string]any{"message_id": 1, "date": time.Now().Unix(), "from": Bot(), "chat": in.Chat, "text": "earlier"}
	}
	raw, _ := json.Marshal(map[string]any{"update_id": id, "message": msg})
	s.updates = append(s.updates, raw)
	s.updateID = append(s.updateID, id)
	s.all, s.allIDs = append(s.all, raw), append(s.allIDs, id)
	s.signal()
	return id
}

// Fail makes the next calls of method answer with the failures, in order.
func (s *Server) Fail(method string, fs ...Failure) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.failures[method] = append(s.failures[method], fs...)
}

// Offset is the highest offset getUpdates was asked for.
func (s *Server) Offset() int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.offset
}

// Pending is the number of updates not yet confirmed.
func (s *Server) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.updates)
}

// Calls returns the requests of method ("" for all) so far.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			out = append(out, c)
		}
	}
	return out
}

// Commands are the commands set with setMyCommands.
func (s *Server) Commands() []BotCommand {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]BotCommand(nil), s.commands...)
}

// Messages returns copies of the messages the bot sent to chat.
func (s *Server) Messages(chatID int64) []Message {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []Message
	for _, m := range s.messages {
		if m.ChatID == chatID {
			out = append(out, *m)
		}
	}
	return out
}

// WaitTimeout bounds WaitFor: generous, since a whole-app turn under -race
// on a loaded machine (CI runs many packages at once) can take tens of
// seconds; a test that passes never waits for it.
const WaitTimeout = 90 * time.Second

// WaitFor waits until cond holds (checked after every change) or fails the
// test after WaitTimeout.
func (s *Server) WaitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.After(WaitTimeout)
	for {
		s.mu.Lock()
		ch := s.changed
		s.mu.Unlock()
		if cond() {
			return
		}
		select {
		case <-ch:
		case <-deadline:
			t.Fatalf("telegramtest: timed out waiting for %s", what)
		}
	}
}

// WaitMessages waits until chat has n messages from the bot whose text
// satisfies done (nil: any) and returns them.
func (s *Server) WaitMessages(t testing.TB, chatID int64, n int, done func([]Message) bool) []Message {
	t.Helper()
	var got []Message
	s.WaitFor(t, fmt.Sprintf("%d messages in chat %d", n, chatID), func() bool {
		got = s.Messages(chatID)
		return len(got) >= n && (done == nil || done(got))
	})
	return got
}

// Polls counts getUpdates answers given.
func (s *Server) Polls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.polls
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if rest, ok := strings.CutPrefix(r.URL.Path, "/file/bot"); ok {
		s.serveFile(w, rest)
		return
	}
	rest, ok := strings.CutPrefix(r.URL.Path, "/bot")
	if !ok {
		http.NotFound(w, r)
		return
	}
	token, method, ok := strings.Cut(rest, "/")
	if !ok {
		writeErr(w, Failure{Code: 404, Desc: "Not Found"})
		return
	}
	if token != s.token {
		writeErr(w, Failure{Code: 401, Desc: "Unauthorized"})
		return
	}
	call, err := parseCall(r, method)
	if err != nil {
		writeErr(w, Failure{Code: 400, Desc: "Bad Request: " + err.Error()})
		return
	}
	s.mu.Lock()
	s.calls = append(s.calls, call)
	if fs := s.failures[method]; len(fs) > 0 {
		f := fs[0]
		s.failures[method] = fs[1:]
		s.signal()
		s.mu.Unlock()
		writeErr(w, f)
		return
	}
	s.signal()
	s.mu.Unlock()
	switch method {
	case "getMe":
		writeOK(w, Bot())
	case "getUpdates":
		s.getUpdates(w, r, call)
	case "sendMessage":
		s.sendMessage(w, call)
	case "editMessageText":
		s.editMessage(w, call)
	case "sendChatAction", "deleteWebhook":
		writeOK(w, true)
	case "setMyCommands":
		var cmds []BotCommand
		if err := json.Unmarshal([]byte(call.Params["commands"]), &cmds); err != nil {
			writeErr(w, Failure{Code: 400, Desc: "Bad Request: can't parse commands"})
			return
		}
		s.mu.Lock()
		s.commands = cmds
		s.mu.Unlock()
		writeOK(w, true)
	case "getFile":
		id := call.Params["file_id"]
		s.mu.Lock()
		data, ok := s.files[id]
		s.mu.Unlock()
		if !ok {
			writeErr(w, Failure{Code: 400, Desc: "Bad Request: invalid file_id"})
			return
		}
		writeOK(w, map[string]any{"file_id": id, "file_unique_id": "u" + id, "file_size": len(data), "file_path": "files/" + id})
	case "sendPhoto", "sendDocument", "sendVoice":
		s.sendFile(w, method, call)
	default:
		writeErr(w, Failure{Code: 404, Desc: "Not Found: method not found"})
	}
}

func (s *Server) serveFile(w http.ResponseWriter, rest string) {
	token, p, _ := strings.Cut(rest, "/")
	if token != s.token {
		http.Error(w, "Unauthorized", http.StatusUnauthorized)
		return
	}
	s.mu.Lock()
	data, ok := s.files[strings.TrimPrefix(p, "files/")]
	s.mu.Unlock()
	if !ok {
		http.NotFound(w, nil)
		return
	}
	_, _ = w.Write(data)
}

func (s *Server) getUpdates(w http.ResponseWriter, r *http.Request, call Call) {
	offset, _ := strconv.ParseInt(call.Params["offset"], 10, 64)
	timeout, _ := strconv.Atoi(call.Params["timeout"])
	deadline := time.After(time.Duration(timeout) * time.Second)
	for {
		s.mu.Lock()
		if offset > s.offset {
			s.offset = offset
		}
		// Confirmed updates are forgotten.
		for len(s.updateID) > 0 && s.updateID[0] < s.offset {
			s.updateID, s.updates = s.updateID[1:], s.updates[1:]
		}
		if len(s.updates) > 0 || s.closed {
			out := append([]json.RawMessage{}, s.updates...)
			s.polls++
			s.signal()
			s.mu.Unlock()
			writeOK(w, out)
			return
		}
		ch := s.changed
		s.mu.Unlock()
		select {
		case <-ch:
		case <-deadline:
			s.mu.Lock()
			s.polls++
			s.signal()
			s.mu.Unlock()
			writeOK(w, []json.RawMessage{})
			return
		case <-r.Context().Done():
			return
		}
	}
}

func (s *Server) sendMessage(w http.ResponseWriter, call Call) {
	chatID, err := strconv.ParseInt(call.Params["chat_id"], 10, 64)
	if err != nil {
		writeErr(w, Failure{Code: 400, Desc: "Bad Request: chat not found"})
		return
	}
	text, mode := call.Params["text"], call.Params["parse_mode"]
	plain, ferr := visible(text, mode)
	if ferr != nil {
		writeErr(w, Failure{Code: 400, Desc: "Bad Request: can't parse entities: " + ferr.Error()})
		return
	}
	if n := utf16Len(plain); n == 0 || n > 4096 {
		writeErr(w, Failure{Code: 400, Desc: "Bad Request: message is too long"})
		return
	}
	s.mu.Lock()
	s.nextMsg++
	m := &Message{ID: s.nextMsg, ChatID: chatID, Text: text, ParseMode: mode, Plain: plain, Kind: "text"}
	s.messages = append(s.messages, m)
	s.signal()
	s.mu.Unlock()
	writeOK(w, messageJSON(m))
}

func (s *Server) editMessage(w http.ResponseWriter, call Call) {
	chatID, _ := strconv.ParseInt(call.Params["chat_id"], 10, 64)
	id, _ := strconv.Atoi(call.Params["message_id"])
	text, mode := call.Params["text"], call.Params["parse_mode"]
	plain, ferr := visible(text, mode)
	if ferr != nil {
		writeErr(w, Failure{Code: 400, Desc: "Bad Request: can't parse entities: " + ferr.Error()})
		return
	}
	if n := utf16Len(plain); n == 0 || n > 4096 {
		writeErr(w, Failure{Code: 400, Desc: "Bad Request: MESSAGE_TOO_LONG"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, m := range s.messages {
		if m.ChatID == chatID && m.ID == id {
			if m.Text == text && m.ParseMode == mode {
				writeErr(w, Failure{Code: 400, Desc: "Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message"})
				return
			}
			m.Text, m.ParseMode, m.Plain = text, mode, plain
			m.Edits++
			s.signal()
			writeOK(w, messageJSON(m))
			return
		}
	}
	writeErr(w, Failure{Code: 400, Desc: "Bad Request: message to edit not found"})
}

func (s *Server) sendFile(w http.ResponseWriter, method string, call Call) {
	chatID, _ := strconv.ParseInt(call.Params["chat_id"], 10, 64)
	field, kind := "document", "document"
	switch method {
	case "sendPhoto":
		field, kind = "photo", "photo"
	case "sendVoice":
		field, kind = "voice", "voice"
	}
	data, ok := call.Files[field]
	if !ok {
		writeErr(w, Failure{Code: 400, Desc: "Bad Request: there is no " + field + " in the request"})
		return
	}
	if method == "sendVoice" && !bytes.HasPrefix(data, []byte("OggS")) {
		// A voice note must be Ogg/Opus to show as one.
		writeErr(w, Failure{Code: 400, Desc: "Bad Request: VOICE_MESSAGES_FORBIDDEN or wrong file type: voice must be an OGG file encoded with OPUS"})
		return
	}
	s.mu.Lock()
	s.nextMsg++
	m := &Message{ID: s.nextMsg, ChatID: chatID, Kind: kind, File: data, Caption: call.Params["caption"]}
	s.messages = append(s.messages, m)
	s.signal()
	s.mu.Unlock()
	writeOK(w, messageJSON(m))
}

func messageJSON(m *Message) map[string]any {
	return map[string]any{"message_id": m.ID, "date": time.Now().Unix(), "chat": Chat{ID: m.ChatID, Type: "private"},
		"from": Bot(), "text": m.Plain}
}

// parseCall reads the parameters of a request in any of the encodings the
// Bot API accepts.
func parseCall(r *http.Request, method string) (Call, error) {
	c := Call{Method: method, Params: map[string]string{}, Files: map[string][]byte{}}
	ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch ct {
	case "application/json":
		var m map[string]json.RawMessage
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			return c, err
		}
		if len(body) > 0 {
			if err := json.Unmarshal(body, &m); err != nil {
				return c, fmt.Errorf("invalid JSON: %w", err)
			}
		}
		for k, v := range m {
			var str string
			if json.Unmarshal(v, &str) == nil {
				c.Params[k] = str
			} else {
				c.Params[k] = string(v)
			}
		}
	case "multipart/form-data":
		// A method without parameters comes as an empty multipart body
		// (go-telegram/bot sends getMe so); Telegram accepts it.
		body, err := io.ReadAll(io.LimitReader(r.Body, 64<<20))
		if err != nil {
			return c, err
		}
		if len(body) == 0 {
			return c, nil
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if err := r.ParseMultipartForm(64 << 20); err != nil {
			return c, err
		}
		for k, v := range r.MultipartForm.Value {
			c.Params[k] = v[0]
		}
		for k, fhs := range r.MultipartForm.File {
			f, err := fhs[0].Open()
			if err != nil {
				return c, err
			}
			data, err := io.ReadAll(f)
			f.Close()
			if err != nil {
				return c, err
			}
			c.Files[k] = data
		}
	default:
		if err := r.ParseForm(); err != nil {
			return c, err
		}
		for k, v := range r.Form {
			c.Params[k] = v[0]
		}
	}
	return c, nil
}

func writeOK(w http.ResponseWriter, result any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(map[string]any{"ok": true, "result": result})
}

func writeErr(w http.ResponseWriter, f Failure) {
	body := map[string]any{"ok": false, "error_code": f.Code, "description": f.Desc}
	if f.RetryAfter > 0 {
		body["parameters"] = map[string]any{"retry_after": f.RetryAfter}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(f.Code)
	_ = json.NewEncoder(w).Encode(body)
}

var (
	tagPattern = regexp.MustCompile(`<(/?)([a-zA-Z-]+)((?:\s+[a-z-]+="[^"<>]*")*)\s*>`)
	knownTags  = map[string]bool{"b": true, "strong": true, "i": true, "em": true, "u": true, "ins": true, "s": true,
		"strike": true, "del": true, "span": true, "tg-spoiler": true, "a": true, "code": true, "pre": true,
		"blockquote": true, "tg-emoji": true}
	entityPattern = regexp.MustCompile(`^&(lt|gt|amp|quot|#[0-9]+|#x[0-9a-fA-F]+);`)
)

// Visible checks text the way Telegram parses it in mode ("HTML" or ""
// for plain) and returns what the user sees, or the parse error Telegram
// would answer with.
func Visible(text, mode string) (string, error) { return visible(text, mode) }

// visible checks text in parse mode and returns what the user sees.
func visible(text, mode string) (string, error) {
	if !strings.EqualFold(mode, "HTML") {
		return text, nil
	}
	var out strings.Builder
	var stack []string
	for i := 0; i < len(text); {
		switch text[i] {
		case '<':
			m := tagPattern.FindStringSubmatchIndex(text[i:])
			if m == nil || m[0] != 0 {
				return "", fmt.Errorf("unsupported start tag at byte offset %d", i)
			}
			closing, name := text[i+m[2]:i+m[3]] == "/", strings.ToLower(text[i+m[4]:i+m[5]])
			if !knownTags[name] {
				return "", fmt.Errorf("unsupported start tag %q at byte offset %d", name, i)
			}
			if closing {
				if len(stack) == 0 || stack[len(stack)-1] != name {
					return "", fmt.Errorf("unmatched end tag at byte offset %d, expected \"</%s>\"", i, last(stack))
				}
				stack = stack[:len(stack)-1]
			} else {
				stack = append(stack, name)
			}
			i += m[1]
		case '>':
			return "", fmt.Errorf("unexpected > at byte offset %d", i)
		case '&':
			m := entityPattern.FindString(text[i:])
			if m == "" {
				return "", fmt.Errorf("unsupported entity at byte offset %d", i)
			}
			out.WriteString(html.UnescapeString(m))
			i += len(m)
		default:
			out.WriteByte(text[i])
			i++
		}
	}
	if len(stack) > 0 {
		return "", fmt.Errorf("can't find end tag corresponding to start tag %q", last(stack))
	}
	return out.String(), nil
}

func last(s []string) string {
	if len(s) == 0 {
		return ""
	}
	return s[len(s)-1]
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		if r >= 0x10000 {
			n += 2
		} else {
			n++
		}
	}
	return n
}

// Redeliver makes every update sent so far pending again, as if Telegram
// never received the acknowledgements (a crash right after fetching).
func (s *Server) Redeliver() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.updates, s.updateID = append([]json.RawMessage{}, s.all...), append([]int64{}, s.allIDs...)
	s.offset = 0
	s.signal()
}
