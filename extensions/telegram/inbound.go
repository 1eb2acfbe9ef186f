package telegram

import (
	"cmp"
	"context"
	"fmt"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf16"

	"github.com/go-telegram/bot"
	"github.com/go-telegram/bot/models"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension/channelkit"
)

// handle takes one update: a message from an allowed user goes to the
// router; a stranger in a private chat gets a pairing code; everything else
// is dropped. A non-nil error means the message was not accepted and the
// update must be fetched again.
func (t *Telegram) handle(ctx context.Context, u *models.Update) error {
	m := u.Message
	if m == nil || m.From == nil || m.From.IsBot {
		return nil
	}
	private := m.Chat.Type == models.ChatTypePrivate
	group := m.Chat.Type == models.ChatTypeGroup || m.Chat.Type == models.ChatTypeSupergroup
	if !private && !group {
		return nil
	}
	allowed, err := t.isAllowed(ctx, m.From.ID)
	if err != nil {
		return err
	}
	if !allowed {
		if private {
			t.pair(ctx, m)
		}
		return nil // strangers in groups are not heard
	}
	text, entities := m.Text, m.Entities
	if text == "" {
		text, entities = m.Caption, m.CaptionEntities
	}
	if group {
		switch t.cfg.GroupMode {
		case GroupOff:
			return nil
		case GroupMention:
			var ok bool
			if text, ok = t.addressed(m, text, entities); !ok {
				return t.overheard(ctx, m, text)
			}
		}
	}
	if private && isStart(text) {
		_ = t.sendText(ctx, m.Chat.ID, "Hello! I'm your Reverie assistant. Write anything to talk; /help lists the commands.")
		return nil
	}
	thread := chat.NewThreadID(ChannelName, strconv.FormatInt(m.Chat.ID, 10))
	in := chat.Inbound{Address: chat.Address{Channel: ChannelName, Thread: thread}, ID: messageID(m)}
	if hasFiles(m) {
		// An update fetched again (the offset was not stored before a
		// crash) is dropped by the router: its files are not downloaded
		// again over the ones saved the first time.
		if dup, err := t.wasReceived(ctx, in); err != nil || dup {
			return err
		}
	}
	notes, atts := t.saveAttachments(ctx, m)
	if len(notes) > 0 {
		text = strings.TrimSpace(strings.Join(notes, "\n") + "\n" + text)
	}
	if strings.TrimSpace(text) == "" && len(atts) == 0 {
		if private {
			_ = t.sendText(ctx, m.Chat.ID, "I can read text, photos, documents and voice notes; this kind of message I cannot use.")
		}
		return nil
	}
	in.Sender = chat.Sender{ID: strconv.FormatInt(m.From.ID, 10), DisplayName: senderName(m.From)}
	in.Text, in.Attachments, in.Received = text, atts, time.Unix(int64(m.Date), 0)
	return t.host.Receive(ctx, in)
}

// receipts is a host that knows which messages the router accepted
// before (the kernel's host does).
type receipts interface {
	WasReceived(ctx context.Context, msg chat.Inbound) (bool, error)
}

// wasReceived reports whether the router accepted in (its channel and
// ID) before; false when the host cannot tell.
func (t *Telegram) wasReceived(ctx context.Context, in chat.Inbound) (bool, error) {
	r, ok := t.host.(receipts)
	if !ok {
		return false, nil
	}
	dup, err := r.WasReceived(ctx, in)
	if err != nil {
		return false, fmt.Errorf("check whether message %s was received before: %w", in.ID, err)
	}
	if dup {
		t.log.Debug("a message received before was fetched again; its files are not downloaded again", "id", in.ID)
	}
	return dup, nil
}

// hasFiles reports whether m carries a file saveAttachments downloads.
func hasFiles(m *models.Message) bool {
	return len(m.Photo) > 0 || m.Document != nil || m.Voice != nil || m.Audio != nil
}

// overheard hands the router a group message of an allowed member that is
// not meant for the bot: it is remembered (its text or caption, with the
// sender's name and time), never answered; its files are not downloaded.
func (t *Telegram) overheard(ctx context.Context, m *models.Message, text string) error {
	if strings.TrimSpace(text) == "" {
		return nil
	}
	return t.host.Receive(ctx, chat.Inbound{
		Address:   chat.Address{Channel: ChannelName, Thread: chat.NewThreadID(ChannelName, strconv.FormatInt(m.Chat.ID, 10))},
		ID:        messageID(m),
		Sender:    chat.Sender{ID: strconv.FormatInt(m.From.ID, 10), DisplayName: senderName(m.From)},
		Text:      text,
		Received:  time.Unix(int64(m.Date), 0),
		Overheard: true,
	})
}

// messageID is the message's id on the channel (chat.Inbound.ID): a
// message id is unique within its chat only. The router accepts it once,
// so an update fetched again after a crash (the offset is stored after the
// router accepted the message) is not answered twice.
func messageID(m *models.Message) string {
	return strconv.FormatInt(m.Chat.ID, 10) + "/" + strconv.Itoa(m.ID)
}

var startCommand = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^/start(@\S+)?(\s|$)`) })

func isStart(text string) bool { return startCommand().MatchString(strings.TrimSpace(text)) }

// addressed reports whether a group message is meant for the bot (it
// mentions it, replies to it, or addresses a command to it) and returns the
// text without the mention.
func (t *Telegram) addressed(m *models.Message, text string, entities []models.MessageEntity) (string, bool) {
	me := t.bot()
	if me == nil {
		return text, false
	}
	if r := m.ReplyToMessage; r != nil && r.From != nil && r.From.ID == me.ID {
		return text, true
	}
	mention := "@" + strings.ToLower(me.Username)
	for _, e := range entities {
		part := entityText(text, e)
		switch {
		case e.Type == models.MessageEntityTypeMention && strings.EqualFold(part, mention):
			return strings.TrimSpace(strings.Replace(text, part, "", 1)), true
		case e.Type == models.MessageEntityTypeTextMention && e.User != nil && e.User.ID == me.ID:
			return text, true
		case e.Type == models.MessageEntityTypeBotCommand && strings.HasSuffix(strings.ToLower(part), mention):
			return text, true
		}
	}
	return text, false
}

// entityText is the part of text an entity covers (offsets are UTF-16).
func entityText(text string, e models.MessageEntity) string {
	units := utf16.Encode([]rune(text))
	if e.Offset < 0 || e.Length < 0 || e.Offset+e.Length > len(units) {
		return ""
	}
	return string(utf16.Decode(units[e.Offset : e.Offset+e.Length]))
}

// pair answers a stranger: a new pairing code, a reminder that one is
// waiting, or nothing (reminded recently).
func (t *Telegram) pair(ctx context.Context, m *models.Message) {
	name := senderName(m.From)
	ans, err := t.store.request(ctx, m.From.ID, m.Chat.ID, name)
	if err != nil {
		t.log.Error("could not make a pairing code", "user", m.From.ID, "err", err)
		return
	}
	var msg string
	switch {
	case ans.full:
		t.log.Warn("too many pairing codes waiting; a stranger got none", "user", m.From.ID, "name", name)
		t.tellFlood(ctx)
		return
	case ans.code != "":
		t.mu.Lock()
		t.floodTold = false
		t.mu.Unlock()
		t.log.Info("telegram pairing code issued (approve it with `reverie telegram approve CODE` or /approve CODE)",
			"user", m.From.ID, "name", name, "expires", ans.expires.UTC().Format(time.RFC3339))
		msg = fmt.Sprintf("Hi! This assistant is private. Your pairing code is:\n\n%s\n\n"+
			"Ask its owner to approve it (reverie telegram approve %s, or /approve %s in their chat). "+
			"It expires at %s UTC.", ans.code, ans.code, ans.code, ans.expires.UTC().Format("15:04"))
	case ans.remind:
		msg = fmt.Sprintf("Your pairing code (sent above) is waiting for the owner's approval; it expires at %s UTC.",
			ans.expires.UTC().Format("15:04"))
	default:
		return
	}
	if err := t.sendPlain(ctx, m.Chat.ID, msg); err != nil {
		t.log.Warn("could not send the pairing code", "user", m.From.ID, "err", err)
	}
}

// floodNotice tells the owners that strangers fill the pairing table.
const floodNotice = "Pairing is full: %d people are waiting for their pairing code to be approved, so nobody new " +
	"gets a code until codes expire (each within %s) or you clear them. If you do not know them, this is a flood: " +
	"`reverie telegram clear` removes every waiting code; `reverie telegram pending` lists who is waiting."

// tellFlood tells the owners (the private chats of telegram.allowed_users)
// once that the pairing table is full, until a code is issued again.
func (t *Telegram) tellFlood(ctx context.Context) {
	t.mu.Lock()
	told := t.floodTold
	t.floodTold = true
	t.mu.Unlock()
	if told {
		return
	}
	msg := fmt.Sprintf(floodNotice, maxPending, t.cfg.PairingTTL)
	for _, owner := range t.cfg.AllowedUsers {
		if err := t.sendPlain(ctx, owner, msg); err != nil {
			t.log.Warn("could not tell the owner that pairing is full", "user", owner, "err", err)
		}
	}
}

// saveAttachments downloads the message's photo, document, voice note or
// audio file into the workspace. The photo becomes an image attachment (the
// model sees it when it accepts images), a voice note or audio file an
// audio attachment (transcribed before the turn); documents, and a file
// that could not be saved, become a line of text for the model.
func (t *Telegram) saveAttachments(ctx context.Context, m *models.Message) ([]string, []chat.Attachment) {
	type attachment struct {
		kind, fileID, name string
		size               int64
		extra, media       string
		image, audio       bool
	}
	var atts []attachment
	if n := len(m.Photo); n > 0 {
		best := m.Photo[n-1] // sizes ascend; take the largest within the limit
		for i := n - 1; i >= 0; i-- {
			if int64(m.Photo[i].FileSize) <= t.cfg.MaxFileBytes {
				best = m.Photo[i]
				break
			}
		}
		atts = append(atts, attachment{kind: "photo", fileID: best.FileID, name: "photo.jpg", size: int64(best.FileSize),
			extra: fmt.Sprintf("%dx%d", best.Width, best.Height), image: true})
	}
	if d := m.Document; d != nil {
		atts = append(atts, attachment{kind: "document", fileID: d.FileID, name: d.FileName, size: d.FileSize, extra: d.MimeType})
	}
	// A voice note (Ogg/Opus) and an audio file are recordings: the router
	// has them transcribed and answers the words as typed text.
	if v := m.Voice; v != nil {
		atts = append(atts, attachment{kind: "voice note", fileID: v.FileID, name: "voice.ogg", size: v.FileSize,
			media: cmp.Or(v.MimeType, "audio/ogg"), audio: true})
	}
	if a := m.Audio; a != nil {
		atts = append(atts, attachment{kind: "audio file", fileID: a.FileID, name: cmp.Or(a.FileName, "audio"), size: a.FileSize,
			media: cmp.Or(a.MimeType, "audio/mpeg"), audio: true})
	}
	var notes []string
	var images []chat.Attachment
	for _, a := range atts {
		rel, err := t.saveFile(ctx, m, a.fileID, a.name, a.size)
		if err != nil {
			t.log.Warn("could not save a Telegram attachment", "kind", a.kind, "err", err)
			notes = append(notes, fmt.Sprintf("[%s attached, but it could not be saved: %v]", a.kind, err))
			continue
		}
		if a.image {
			// Telegram re-encodes every photo as JPEG.
			images = append(images, chat.Attachment{Kind: chat.AttachImage, Path: rel, MediaType: "image/jpeg"})
			continue
		}
		if a.audio {
			images = append(images, chat.Attachment{Kind: chat.AttachAudio, Path: rel, MediaType: a.media})
			continue
		}
		desc := a.kind
		if a.extra != "" {
			desc += ", " + a.extra
		}
		notes = append(notes, fmt.Sprintf("[%s (%s) saved in the workspace as %s]", a.kind, desc, rel))
	}
	return notes, images
}

// saveFile downloads a file into workspace/telegram/<chat>/ and returns its
// path relative to the workspace.
func (t *Telegram) saveFile(ctx context.Context, m *models.Message, fileID, name string, size int64) (string, error) {
	if t.cfg.MaxFileBytes == 0 {
		return "", fmt.Errorf("downloads are off (telegram.max_file_bytes: 0)")
	}
	if size > t.cfg.MaxFileBytes {
		return "", fmt.Errorf("%d bytes is over telegram.max_file_bytes (%d)", size, t.cfg.MaxFileBytes)
	}
	var f *models.File
	err := t.retry(ctx, func(ctx context.Context) (err error) {
		f, err = t.api.bot.GetFile(ctx, &bot.GetFileParams{FileID: fileID})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("getFile: %w", err)
	}
	data, err := t.api.download(ctx, f, t.cfg.MaxFileBytes)
	if err != nil {
		return "", err
	}
	return channelkit.SaveFile(t.wsDir, path.Join("telegram", strconv.FormatInt(m.Chat.ID, 10)),
		time.Unix(int64(m.Date), 0), strconv.Itoa(m.ID), name, data)
}
