package telegram

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/tool"
)

// Streaming limits.
const (
	// editInterval is the least time between two edits of a streamed
	// reply (Telegram allows about one per second per chat).
	editInterval = time.Second
	// typingEvery refreshes "typing…" (Telegram shows it for 5 seconds).
	typingEvery = 4 * time.Second
)

var noPreview = &models.LinkPreviewOptions{IsDisabled: bot.True()}

// Send delivers a complete message (a command's answer, a reminder, a
// worker's result, an error).
func (t *Telegram) Send(ctx context.Context, msg chat.Outbound) error {
	chatID, err := threadChat(msg.Address.Thread)
	if err != nil {
		return err
	}
	return t.sendText(ctx, chatID, msg.Text)
}

// sendText sends markdown as HTML, split to Telegram's limit; a piece
// Telegram cannot parse is sent again as plain text.
func (t *Telegram) sendText(ctx context.Context, chatID int64, md string) error {
	for _, piece := range split(md, MaxMessageLen) {
		if _, err := t.sendPiece(ctx, chatID, piece); err != nil {
			return err
		}
	}
	return nil
}

// sendPlain sends text without formatting.
func (t *Telegram) sendPlain(ctx context.Context, chatID int64, text string) error {
	return t.retry(ctx, func(ctx context.Context) error {
		_, err := t.api.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chatID, Text: text, LinkPreviewOptions: noPreview})
		return err
	})
}

// sendPiece sends one piece (at most MaxMessageLen) and returns its id.
func (t *Telegram) sendPiece(ctx context.Context, chatID int64, md string) (int, error) {
	var sent *models.Message
	err := t.retry(ctx, func(ctx context.Context) (err error) {
		sent, err = t.api.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chatID, Text: toHTML(md),
			ParseMode: models.ParseModeHTML, LinkPreviewOptions: noPreview})
		return err
	})
	if isParseError(err) {
		t.log.Warn("Telegram could not parse a reply's formatting; sending it as plain text", "err", err)
		err = t.retry(ctx, func(ctx context.Context) (err error) {
			sent, err = t.api.bot.SendMessage(ctx, &bot.SendMessageParams{ChatID: chatID, Text: plainFallback(md), LinkPreviewOptions: noPreview})
			return err
		})
	}
	if err != nil {
		return 0, fmt.Errorf("send to telegram chat %d: %w", chatID, err)
	}
	return sent.ID, nil
}

// editPiece replaces a message's text with md; an edit that changes
// nothing is fine.
func (t *Telegram) editPiece(ctx context.Context, chatID int64, msgID int, md string, retry bool) error {
	call := func(text string, mode models.ParseMode) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := t.api.bot.EditMessageText(ctx, &bot.EditMessageTextParams{ChatID: chatID, MessageID: msgID, Text: text,
				ParseMode: mode, LinkPreviewOptions: noPreview})
			return err
		}
	}
	do := func(f func(ctx context.Context) error) error {
		if retry {
			return t.retry(ctx, f)
		}
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		defer cancel()
		return t.api.scrub(f(cctx))
	}
	err := do(call(toHTML(md), models.ParseModeHTML))
	if isParseError(err) {
		err = do(call(plainFallback(md), ""))
	}
	if isNotModified(err) {
		return nil
	}
	return err
}

// OpenStream begins a streamed reply: "typing…" until it closes, and the
// text shown by editing one message at most once per editInterval.
func (t *Telegram) OpenStream(ctx context.Context, addr chat.Address) (extension.Stream, error) {
	chatID, err := threadChat(addr.Thread)
	if err != nil {
		return nil, err
	}
	tctx, cancel := context.WithCancel(ctx)
	s := &stream{t: t, chat: chatID, now: t.host.Now, stopTyping: cancel}
	s.typing.Add(1)
	t.streams.Add(1)
	go func() {
		defer t.streams.Done()
		defer s.typing.Done()
		keepTyping(tctx, func(ctx context.Context) error {
			_, err := t.api.bot.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chatID, Action: models.ChatActionTyping})
			if err != nil && tctx.Err() == nil {
				t.log.Debug("sendChatAction failed", "chat", chatID, "err", t.api.scrub(err))
			}
			return err
		})
	}()
	return s, nil
}

// keepTyping shows "typing…" (send) now and every typingEvery until ctx
// ends.
func keepTyping(ctx context.Context, send func(ctx context.Context) error) {
	tick := time.NewTicker(typingEvery)
	defer tick.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		_ = send(cctx)
		cancel()
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// stream is one reply being streamed to a chat. Its methods are called from
// one goroutine (extension.Stream).
//
// Stream methods take no context: each Bot API call they make is bounded by
// callTimeout instead, and the typing indicator ends with the turn's
// context or Close.
type stream struct {
	t          *Telegram
	chat       int64
	now        func() time.Time
	stopTyping context.CancelFunc
	typing     sync.WaitGroup

	buf       strings.Builder
	msgID     int       // the message being edited (0: none yet)
	shown     string    // what it shows
	lastEdit  time.Time // of the last send or edit
	notBefore time.Time // after a 429
	failed    bool      // stop editing; Close still delivers the whole reply
}

func (s *stream) Delta(text string) error {
	s.buf.WriteString(text)
	s.flush()
	return nil
}

func (s *stream) Status(extension.StreamStatus) error {
	s.flush()
	return nil
}

// flush shows the text so far when the edit rate allows it.
func (s *stream) flush() {
	now := s.now()
	if s.failed || now.Sub(s.lastEdit) < editInterval || now.Before(s.notBefore) {
		return
	}
	text := strings.TrimSpace(s.buf.String())
	if text == "" {
		return
	}
	if textLen(text) > MaxMessageLen-2 {
		pieces := split(text, MaxMessageLen-2)
		text = pieces[0] + " …"
	}
	if text == s.shown {
		return
	}
	var err error
	if s.msgID == 0 {
		cctx, cancel := context.WithTimeout(context.Background(), callTimeout)
		var m *models.Message
		m, err = s.t.api.bot.SendMessage(cctx, &bot.SendMessageParams{ChatID: s.chat, Text: toHTML(text), ParseMode: models.ParseModeHTML, LinkPreviewOptions: noPreview})
		cancel()
		err = s.t.api.scrub(err)
		if err == nil {
			s.msgID = m.ID
		}
	} else {
		err = s.t.editPiece(context.Background(), s.chat, s.msgID, text, false)
	}
	s.lastEdit = s.now()
	if err != nil {
		if kind, wait := classify(err); kind == errRateLimited {
			s.notBefore = s.now().Add(wait)
			return
		}
		s.t.log.Warn("streaming to Telegram failed; the whole reply follows at the end", "chat", s.chat, "err", err)
		s.failed = true
		return
	}
	s.shown = text
}

// Close delivers the complete reply: the streamed message gets the first
// piece, further pieces follow as new messages.
func (s *stream) Close(final string, err error) error {
	s.stopTyping()
	s.typing.Wait()
	text := strings.TrimSpace(final)
	if text == "" && err != nil {
		text = "Sorry, that failed: " + s.t.host.Redact(err.Error())
	}
	pieces := split(text, MaxMessageLen)
	if len(pieces) == 0 {
		return nil
	}
	ctx := context.Background() // the reply is stored; deliver it even if the turn's context ended
	if wait := s.notBefore.Sub(s.now()); wait > 0 {
		_ = s.t.opts.Sleep(ctx, wait) // Telegram asked for a pause (429)
	}
	first := 0
	// Even after a failed edit the streamed message gets the whole reply
	// (with retries) rather than a second copy; only if that fails too is
	// the reply sent anew.
	if s.msgID != 0 {
		if pieces[0] != s.shown {
			if wait := editInterval - s.now().Sub(s.lastEdit); wait > 0 {
				_ = s.t.opts.Sleep(ctx, wait)
			}
			if eerr := s.t.editPiece(ctx, s.chat, s.msgID, pieces[0], true); eerr == nil {
				first = 1
			} else {
				s.t.log.Warn("could not edit the streamed reply; sending it as a new message", "chat", s.chat, "err", eerr)
			}
		} else {
			first = 1
		}
	}
	for _, p := range pieces[first:] {
		if _, serr := s.t.sendPiece(ctx, s.chat, p); serr != nil {
			return serr
		}
	}
	return nil
}

// Stop waits for the typing indicators of open streams.
func (t *Telegram) Stop(context.Context) error {
	t.streams.Wait()
	return nil
}

// sendFileArgs are telegram_send_file's arguments.
type sendFileArgs struct {
	Path    string `json:"path" jsonschema:"the file's path in the workspace (as read_file takes it)"`
	Caption string `json:"caption,omitempty" jsonschema:"a short text shown with the file"`
	Thread  string `json:"thread,omitempty" jsonschema:"the telegram thread (telegram:<chat id>); default: this conversation when it is on Telegram"`
}

// maxUpload is the Bot API's limit for files a bot sends.
const maxUpload = 50 << 20

func (t *Telegram) sendFileTool() tool.Tool {
	return tool.New("telegram_send_file",
		"Send a file from the workspace to the user on Telegram (images as photos, anything else as a document). "+
			"In a Telegram conversation it goes to that chat.",
		func(ctx context.Context, a sendFileArgs) (any, error) {
			th := chat.ThreadID(strings.TrimSpace(a.Thread))
			if th == "" {
				if c, ok := tool.CallFrom(ctx); ok {
					th = c.Thread
				}
			} else if th.Channel() == "" {
				th = chat.NewThreadID(ChannelName, string(th))
			}
			chatID, err := threadChat(th)
			if err != nil {
				return nil, fmt.Errorf("%w: give thread (telegram:<chat id>) when this conversation is not on Telegram", err)
			}
			root, err := os.OpenRoot(t.wsDir)
			if err != nil {
				return nil, fmt.Errorf("open the workspace: %w", err)
			}
			defer root.Close()
			rel := strings.TrimPrefix(path.Clean("/"+strings.TrimPrefix(a.Path, "workspace/")), "/")
			f, err := root.Open(rel)
			if err != nil {
				return nil, fmt.Errorf("open %s in the workspace: %w", a.Path, err)
			}
			defer f.Close()
			fi, err := f.Stat()
			switch {
			case err != nil:
				return nil, err
			case fi.IsDir():
				return nil, fmt.Errorf("%s is a directory", a.Path)
			case fi.Size() > maxUpload:
				return nil, fmt.Errorf("%s is %d bytes; Telegram takes at most %d from a bot", a.Path, fi.Size(), maxUpload)
			}
			name := path.Base(rel)
			photo := isImage(name)
			err = t.retry(ctx, func(ctx context.Context) error {
				if _, err := f.Seek(0, 0); err != nil {
					return err
				}
				up := &models.InputFileUpload{Filename: name, Data: f}
				var err error
				if photo {
					_, err = t.api.bot.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: chatID, Photo: up, Caption: a.Caption})
				} else {
					_, err = t.api.bot.SendDocument(ctx, &bot.SendDocumentParams{ChatID: chatID, Document: up, Caption: a.Caption})
				}
				return err
			})
			if err != nil {
				return nil, fmt.Errorf("send %s: %w", a.Path, err)
			}
			kind := "document"
			if photo {
				kind = "photo"
			}
			return map[string]any{"ok": true, "sent_as": kind, "thread": string(th)}, nil
		}, tool.SendsOutTo(sendFileDestinations), tool.WithCategories("orchestration"))
}

func isImage(name string) bool {
	switch strings.ToLower(path.Ext(name)) {
	case ".jpg", ".jpeg", ".png", ".webp":
		return true
	}
	return false
}

// SetupSchema is the Telegram form of the web page's setup screen: the
// pairing requests waiting and a field to approve one.
func (t *Telegram) SetupSchema(ctx context.Context) extension.SetupSchema {
	desc := "People who wrote to the bot get a one-time pairing code; enter one here to let that person in."
	if reqs, err := t.store.pending(ctx); err == nil && len(reqs) > 0 {
		var b strings.Builder
		b.WriteString(desc + " Waiting:")
		for _, r := range reqs {
			fmt.Fprintf(&b, " %s (id %d, until %s UTC);", r.Name, r.UserID, r.Expires.UTC().Format("15:04"))
		}
		desc = strings.TrimSuffix(b.String(), ";") + "."
	}
	return extension.SetupSchema{
		Title:       "Telegram pairing",
		Description: desc,
		Configured:  true,
		Fields: []extension.SetupField{{Key: "code", Label: "Pairing code", Kind: extension.FieldText, Required: true,
			Help: "the 8-character code the person received from the bot"}},
	}
}

// ApplySetup approves the pairing code entered on the setup screen.
func (t *Telegram) ApplySetup(ctx context.Context, values extension.SetupValues) error {
	_, err := t.ApprovePairing(ctx, values["code"])
	return err
}

// sendFileDestinations: the file goes to the thread named, or to this
// conversation (no destination of its own) when none is.
func sendFileDestinations(a sendFileArgs) []tool.Destination {
	if strings.TrimSpace(a.Thread) == "" {
		return nil
	}
	return []tool.Destination{{Thread: strings.TrimSpace(a.Thread), Data: strings.TrimSpace("the file " + a.Path + " " + a.Caption)}}
}
