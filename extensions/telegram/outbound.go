package telegram

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/channelkit"
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
	for _, piece := range channelkit.Split(md, MaxMessageLen, channelkit.UTF16Len) {
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
	var typing sync.WaitGroup
	typing.Add(1)
	t.streams.Add(1)
	go func() {
		defer t.streams.Done()
		defer typing.Done()
		keepTyping(tctx, func(ctx context.Context) error {
			_, err := t.api.bot.SendChatAction(ctx, &bot.SendChatActionParams{ChatID: chatID, Action: models.ChatActionTyping})
			if err != nil && tctx.Err() == nil {
				t.log.Debug("sendChatAction failed", "chat", chatID, "err", t.api.scrub(err))
			}
			return err
		})
	}()
	return channelkit.NewStream(channelkit.StreamOptions{
		Poster: poster{t: t, chat: chatID},
		Limit:  MaxMessageLen, Measure: channelkit.UTF16Len,
		Every: editInterval, SpaceFinalEdit: true,
		Now: t.host.Now, Sleep: t.opts.Sleep, Redact: t.host.Redact,
		Log: t.log.With("chat", chatID), Platform: "Telegram",
		// The typing indicator ends before the reply goes out.
		Stopped: func() { cancel(); typing.Wait() },
	}), nil
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

// poster shows a streamed reply in a chat (channelkit.Poster).
type poster struct {
	t    *Telegram
	chat int64
}

// Post sends md as HTML: with retries, the plain-text fallback and an
// error naming the chat (sendPiece); else one attempt.
func (p poster) Post(ctx context.Context, md string, retry bool) (string, error) {
	if retry {
		id, err := p.t.sendPiece(ctx, p.chat, md)
		return strconv.Itoa(id), err
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	m, err := p.t.api.bot.SendMessage(cctx, &bot.SendMessageParams{ChatID: p.chat, Text: toHTML(md), ParseMode: models.ParseModeHTML, LinkPreviewOptions: noPreview})
	if err != nil {
		return "", p.t.api.scrub(err)
	}
	return strconv.Itoa(m.ID), nil
}

func (p poster) Edit(ctx context.Context, id, md string, retry bool) error {
	msgID, err := strconv.Atoi(id)
	if err != nil {
		return fmt.Errorf("telegram message id %q: %w", id, err)
	}
	return p.t.editPiece(ctx, p.chat, msgID, md, retry)
}

func (p poster) RetryAfter(err error) (time.Duration, bool) {
	kind, wait := classify(err)
	return wait, kind == errRateLimited
}

// Stop waits for the typing indicators of open streams.
func (t *Telegram) Stop(context.Context) error {
	t.streams.Wait()
	return nil
}

// maxUpload is the Bot API's limit for files a bot sends.
const maxUpload = 50 << 20

// uploadFile sends a workspace file to a chat (telegram_send_file): an
// image as a photo, anything else as a document.
func (t *Telegram) uploadFile(ctx context.Context, thread chat.ThreadID, f channelkit.OutgoingFile) (string, error) {
	chatID, err := threadChat(thread)
	if err != nil {
		return "", err
	}
	photo := isImage(f.Name)
	err = t.retry(ctx, func(ctx context.Context) error {
		if _, err := f.Content.Seek(0, io.SeekStart); err != nil {
			return err
		}
		up := &models.InputFileUpload{Filename: f.Name, Data: f.Content}
		var err error
		if photo {
			_, err = t.api.bot.SendPhoto(ctx, &bot.SendPhotoParams{ChatID: chatID, Photo: up, Caption: f.Caption})
		} else {
			_, err = t.api.bot.SendDocument(ctx, &bot.SendDocumentParams{ChatID: chatID, Document: up, Caption: f.Caption})
		}
		return err
	})
	if err != nil {
		return "", err
	}
	if photo {
		return "photo", nil
	}
	return "document", nil
}

// SendVoice implements extension.VoiceChannelProvider: a spoken reply
// (Ogg/Opus from the workspace) as a voice note, numbered when the reply is
// spoken in parts.
func (t *Telegram) SendVoice(ctx context.Context, addr chat.Address, sp chat.Speech) error {
	chatID, err := threadChat(addr.Thread)
	if err != nil {
		return err
	}
	root, err := os.OpenRoot(t.wsDir)
	if err != nil {
		return fmt.Errorf("open the workspace: %w", err)
	}
	defer root.Close()
	data, err := root.ReadFile(sp.Path)
	if err != nil {
		return fmt.Errorf("read the spoken reply: %w", err)
	}
	if len(data) > maxUpload {
		return fmt.Errorf("the spoken reply is %d bytes, over the Bot API's %d", len(data), maxUpload)
	}
	caption := ""
	if sp.Parts > 1 {
		caption = fmt.Sprintf("%d/%d", sp.Part, sp.Parts)
	}
	params := &bot.SendVoiceParams{ChatID: chatID, Caption: caption}
	if sp.Seconds > 0 {
		params.Duration = int(sp.Seconds + 0.5)
	}
	return t.retry(ctx, func(ctx context.Context) error {
		params.Voice = &models.InputFileUpload{Filename: path.Base(sp.Path), Data: bytes.NewReader(data)}
		_, err := t.api.bot.SendVoice(ctx, params)
		return err
	})
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
