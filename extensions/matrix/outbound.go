package matrix

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"maunium.net/go/mautrix"
	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/channelkit"
)

// MaxMessageLen is the longest text (in bytes) put in one message; longer
// replies are split on paragraph, line or word boundaries. Matrix events
// may be 64 KiB with their HTML and encryption overhead.
const MaxMessageLen = 16000

// typingFor is how long one typing notification lasts; it is renewed
// every typingEvery while a turn runs.
const (
	typingFor   = 30 * time.Second
	typingEvery = 20 * time.Second
	// typingClearWait bounds clearing "typing…" at the end of a turn.
	typingClearWait = 5 * time.Second
)

// Send delivers a complete message (a command's answer, a reminder, a
// worker's result, an error).
func (m *Matrix) Send(ctx context.Context, msg chat.Outbound) error {
	room, err := threadRoom(msg.Address.Thread)
	if err != nil {
		return err
	}
	if !m.isReady() {
		return fmt.Errorf("matrix is not connected yet: %w", m.Health(ctx))
	}
	for _, piece := range channelkit.Split(msg.Text, MaxMessageLen, channelkit.Bytes) {
		if _, err := m.sendContent(ctx, room, render(piece)); err != nil {
			return err
		}
	}
	return nil
}

// notice sends a short plain m.notice (errors and channel messages).
func (m *Matrix) notice(ctx context.Context, room id.RoomID, text string) {
	c := event.MessageEventContent{MsgType: event.MsgNotice, Body: text, Mentions: &event.Mentions{}}
	if _, err := m.sendContent(ctx, room, c); err != nil {
		m.log.Warn("could not send a matrix notice", "room", room, "err", err)
	}
}

// sendContent sends one m.room.message (encrypted in encrypted rooms) with
// retries and returns its event id.
func (m *Matrix) sendContent(ctx context.Context, room id.RoomID, content any) (id.EventID, error) {
	txn := m.cli.TxnID() // the same transaction id on retries: sent once
	var resp *mautrix.RespSendEvent
	err := m.retry(ctx, func(ctx context.Context) (err error) {
		resp, err = m.cli.SendMessageEvent(ctx, room, event.EventMessage, content, mautrix.ReqSendEvent{TransactionID: txn})
		return err
	})
	if err != nil {
		return "", fmt.Errorf("send to matrix room %s: %w", room, err)
	}
	return resp.EventID, nil
}

// OpenStream begins a streamed reply: "typing…" until it closes, and with
// edits on, the text shown by editing one message at most once per
// edit_interval.
func (m *Matrix) OpenStream(ctx context.Context, addr chat.Address) (extension.Stream, error) {
	room, err := threadRoom(addr.Thread)
	if err != nil {
		return nil, err
	}
	if !m.isReady() {
		return nil, fmt.Errorf("matrix is not connected yet: %w", m.Health(ctx))
	}
	tctx, cancel := context.WithCancel(ctx)
	m.streams.Add(1)
	go func() { // owned by m.streams (Stop waits for it)
		defer m.streams.Done()
		m.keepTyping(tctx, room)
	}()
	every := m.cfg.EditInterval
	if !m.cfg.Edits {
		every = 0
	}
	return channelkit.NewStream(channelkit.StreamOptions{
		Poster: poster{m: m, room: room},
		Limit:  MaxMessageLen, Measure: channelkit.Bytes,
		Every: every,
		Now:   m.host.Now, Sleep: m.opts.Sleep, Redact: m.host.Redact,
		Log: m.log.With("room", room), Platform: "Matrix",
		// "typing…" is cleared while the reply goes out; a rate limit
		// delays the clearing, not the reply.
		Stopped: cancel,
	}), nil
}

// keepTyping shows "typing…" now and every typingEvery until ctx ends,
// then clears it.
func (m *Matrix) keepTyping(ctx context.Context, room id.RoomID) {
	tick := time.NewTicker(typingEvery)
	defer tick.Stop()
	for {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		if _, err := m.cli.UserTyping(cctx, room, true, typingFor); err != nil && ctx.Err() == nil {
			m.log.Debug("matrix typing notification failed", "room", room, "err", m.scrub(err))
		}
		cancel()
		select {
		case <-ctx.Done():
			// Cleared even when rate-limited (once the homeserver allows
			// it, within a few seconds): else clients show "typing…"
			// for typingFor after the reply.
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), typingClearWait)
			_ = m.retry(cctx, func(ctx context.Context) error {
				_, err := m.cli.UserTyping(ctx, room, false, 0)
				return err
			})
			cancel()
			return
		case <-tick.C:
		}
	}
}

// poster shows a streamed reply in a room (channelkit.Poster).
type poster struct {
	m    *Matrix
	room id.RoomID
}

// Post sends md as a new message: with retries (sendContent), else once.
func (p poster) Post(ctx context.Context, md string, retry bool) (string, error) {
	content := render(md)
	return p.send(ctx, &content, retry)
}

// Edit replaces message evID's text with md (m.replace).
func (p poster) Edit(ctx context.Context, evID, md string, retry bool) error {
	content := render(md)
	content.SetEdit(id.EventID(evID))
	_, err := p.send(ctx, &content, retry)
	return err
}

func (p poster) send(ctx context.Context, content *event.MessageEventContent, retry bool) (string, error) {
	if retry {
		evID, err := p.m.sendContent(ctx, p.room, content)
		return string(evID), err
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := p.m.cli.SendMessageEvent(cctx, p.room, event.EventMessage, content)
	if err != nil {
		return "", p.m.scrub(err)
	}
	return string(resp.EventID), nil
}

func (poster) RetryAfter(err error) (time.Duration, bool) { return retryAfter(err) }

// maxUpload bounds a file the bot uploads.
const maxUpload = 50 << 20

// uploadFile sends a workspace file to a room (matrix_send_file).
func (m *Matrix) uploadFile(ctx context.Context, thread chat.ThreadID, f channelkit.OutgoingFile) (string, error) {
	room, err := threadRoom(thread)
	if err != nil {
		return "", err
	}
	data, err := io.ReadAll(f.Content)
	if err != nil {
		return "", fmt.Errorf("read %s: %w", f.Name, err)
	}
	return m.sendFile(ctx, room, f.Name, data, f.Caption)
}

// sendFile uploads data (encrypted first in an encrypted room) and sends
// it as an m.image or m.file message.
func (m *Matrix) sendFile(ctx context.Context, room id.RoomID, name string, data []byte, caption string) (string, error) {
	mime := http.DetectContentType(data)
	if i := strings.IndexByte(mime, ';'); i > 0 {
		mime = mime[:i]
	}
	content := &event.MessageEventContent{MsgType: event.MsgFile, Body: name, FileName: name,
		Info: &event.FileInfo{MimeType: mime, Size: len(data)}, Mentions: &event.Mentions{}}
	if isImageType(mime) {
		content.MsgType = event.MsgImage
	}
	if caption != "" {
		content.Body = caption
	}
	if err := m.sendMedia(ctx, room, content, data); err != nil {
		return "", err
	}
	return strings.TrimPrefix(string(content.MsgType), "m."), nil
}

// SendVoice implements extension.VoiceChannelProvider: a spoken reply
// (Ogg/Opus from the workspace) as an m.audio message marked as a voice
// message (MSC3245, which Element shows as one), numbered when the reply is
// spoken in parts.
func (m *Matrix) SendVoice(ctx context.Context, addr chat.Address, sp chat.Speech) error {
	room, err := threadRoom(addr.Thread)
	if err != nil {
		return err
	}
	if !m.isReady() {
		return fmt.Errorf("matrix is not connected yet: %w", m.Health(ctx))
	}
	root, err := os.OpenRoot(m.wsDir)
	if err != nil {
		return fmt.Errorf("open the workspace: %w", err)
	}
	defer root.Close()
	data, err := root.ReadFile(sp.Path)
	if err != nil {
		return fmt.Errorf("read the spoken reply: %w", err)
	}
	ms := int(sp.Seconds * 1000)
	body := "Spoken reply"
	if sp.Parts > 1 {
		body = fmt.Sprintf("Spoken reply, part %d of %d", sp.Part, sp.Parts)
	}
	content := &event.MessageEventContent{MsgType: event.MsgAudio, Body: body, FileName: path.Base(sp.Path),
		Info: &event.FileInfo{MimeType: sp.MediaType, Size: len(data), Duration: ms}, Mentions: &event.Mentions{},
		MSC1767Audio: &event.MSC1767Audio{Duration: ms}, MSC3245Voice: &event.MSC3245Voice{}}
	return m.sendMedia(ctx, room, content, data)
}

// sendMedia uploads data (encrypted first in an encrypted room) and sends
// content pointing at it.
func (m *Matrix) sendMedia(ctx context.Context, room id.RoomID, content *event.MessageEventContent, data []byte) error {
	upload, uploadType := data, content.Info.MimeType
	encrypted, err := m.stateStore.IsEncrypted(ctx, room)
	if err != nil {
		return err
	}
	var ef *attachment.EncryptedFile
	if encrypted && m.mach != nil {
		ef = attachment.NewEncryptedFile()
		upload, uploadType = ef.Encrypt(data), "application/octet-stream"
	}
	var up *mautrix.RespMediaUpload
	err = m.retry(ctx, func(ctx context.Context) (err error) {
		up, err = m.cli.UploadBytes(ctx, upload, uploadType)
		return err
	})
	if err != nil {
		return fmt.Errorf("upload: %w", err)
	}
	if ef != nil {
		content.File = &event.EncryptedFileInfo{EncryptedFile: *ef, URL: up.ContentURI.CUString()}
	} else {
		content.URL = up.ContentURI.CUString()
	}
	_, err = m.sendContent(ctx, room, content)
	return err
}
