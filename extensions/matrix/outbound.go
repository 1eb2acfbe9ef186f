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
	"github.com/reverie-ai/reverie/tool"
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
	for _, piece := range split(msg.Text, MaxMessageLen) {
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
	s := &stream{m: m, room: room, now: m.host.Now, stopTyping: cancel}
	m.streams.Add(1)
	go func() { // owned by m.streams (Stop waits for it)
		defer m.streams.Done()
		m.keepTyping(tctx, room)
	}()
	return s, nil
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

// stream is one reply being streamed to a room. Its methods are called
// from one goroutine (extension.Stream); each homeserver call is bounded
// by callTimeout.
type stream struct {
	m          *Matrix
	room       id.RoomID
	now        func() time.Time
	stopTyping context.CancelFunc

	buf       strings.Builder
	eventID   id.EventID // the message being edited ("": none yet)
	shown     string     // what it shows
	lastEdit  time.Time  // of the last send or edit
	notBefore time.Time  // after a rate limit
	failed    bool       // stop editing; Close still delivers the whole reply
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

// flush shows the text so far when edits are on and the rate allows it.
func (s *stream) flush() {
	now := s.now()
	if !s.m.cfg.Edits || s.failed || now.Sub(s.lastEdit) < s.m.cfg.EditInterval || now.Before(s.notBefore) {
		return
	}
	text := strings.TrimSpace(s.buf.String())
	if text == "" {
		return
	}
	if len(text) > MaxMessageLen-2 {
		text = split(text, MaxMessageLen-2)[0] + " …"
	}
	if text == s.shown {
		return
	}
	err := s.show(context.Background(), text, false)
	s.lastEdit = s.now()
	if err != nil {
		if wait, ok := retryAfter(err); ok {
			s.notBefore = s.now().Add(wait)
			return
		}
		s.m.log.Warn("streaming to matrix failed; the whole reply follows at the end", "room", s.room, "err", err)
		s.failed = true
		return
	}
	s.shown = text
}

// show sends text as the streamed message, or replaces it by an edit;
// retry makes the call with retries (Close), else once.
func (s *stream) show(ctx context.Context, text string, retry bool) error {
	content := render(text)
	if s.eventID != "" {
		content.SetEdit(s.eventID)
	}
	if retry {
		evID, err := s.m.sendContent(ctx, s.room, &content)
		if err == nil && s.eventID == "" {
			s.eventID = evID
		}
		return err
	}
	cctx, cancel := context.WithTimeout(ctx, callTimeout)
	defer cancel()
	resp, err := s.m.cli.SendMessageEvent(cctx, s.room, event.EventMessage, &content)
	if err != nil {
		return s.m.scrub(err)
	}
	if s.eventID == "" {
		s.eventID = resp.EventID
	}
	return nil
}

// Close delivers the complete reply: the streamed message gets the first
// piece (by an edit), further pieces follow as new messages.
func (s *stream) Close(final string, err error) error {
	s.stopTyping() // cleared while the reply goes out; a rate limit delays the clearing, not the reply
	text := strings.TrimSpace(final)
	if text == "" && err != nil {
		text = "Sorry, that failed: " + s.m.host.Redact(err.Error())
	}
	pieces := split(text, MaxMessageLen)
	if len(pieces) == 0 {
		return nil
	}
	ctx := context.Background() // the reply is stored; deliver it even if the turn's context ended
	if wait := s.notBefore.Sub(s.now()); wait > 0 {
		_ = s.m.opts.Sleep(ctx, wait) // the homeserver asked for a pause
	}
	first := 0
	if s.eventID != "" {
		if pieces[0] == s.shown {
			first = 1
		} else if eerr := s.show(ctx, pieces[0], true); eerr == nil {
			first = 1
		} else {
			s.m.log.Warn("could not edit the streamed matrix reply; sending it as a new message", "room", s.room, "err", eerr)
		}
	}
	for _, p := range pieces[first:] {
		if _, serr := s.m.sendContent(ctx, s.room, render(p)); serr != nil {
			return serr
		}
	}
	return nil
}

// split cuts md into pieces of at most max bytes, preferring paragraph,
// then line, then word boundaries, and never cutting inside a UTF-8
// character. A cut inside a code fence closes the fence and reopens it in
// the next piece.
func split(md string, max int) []string {
	md = strings.TrimSpace(md)
	var out []string
	for md != "" {
		if len(md) <= max {
			out = append(out, md)
			break
		}
		limit := max - 8 // room for a fence to be closed
		cut := -1
		for _, sep := range []string{"\n\n", "\n", " "} {
			if i := strings.LastIndex(md[:limit], sep); i > limit/2 {
				cut = i
				break
			}
		}
		if cut <= 0 {
			cut = limit
			for cut > 0 && md[cut]&0xC0 == 0x80 { // not inside a character
				cut--
			}
		}
		piece := strings.TrimRight(md[:cut], " \n")
		rest := strings.TrimLeft(md[cut:], " \n")
		if strings.Count(piece, "```")%2 == 1 {
			piece += "\n```"
			rest = "```\n" + rest
		}
		out = append(out, piece)
		md = rest
	}
	return out
}

// sendFileArgs are matrix_send_file's arguments.
type sendFileArgs struct {
	Path    string `json:"path" jsonschema:"the file's path in the workspace (as read_file takes it)"`
	Caption string `json:"caption,omitempty" jsonschema:"a short text sent with the file"`
	Thread  string `json:"thread,omitempty" jsonschema:"the matrix thread (matrix:<room id>); default: this conversation when it is on Matrix"`
}

// maxUpload bounds a file the bot uploads.
const maxUpload = 50 << 20

func (m *Matrix) sendFileTool() tool.Tool {
	return tool.New("matrix_send_file",
		"Send a file from the workspace to the user on Matrix (images as pictures, anything else as a file; "+
			"encrypted in encrypted rooms). In a Matrix conversation it goes to that room.",
		func(ctx context.Context, a sendFileArgs) (any, error) {
			th := chat.ThreadID(strings.TrimSpace(a.Thread))
			if th == "" {
				if c, ok := tool.CallFrom(ctx); ok {
					th = c.Thread
				}
			} else if th.Channel() == "" {
				th = chat.NewThreadID(ChannelName, string(th))
			}
			room, err := threadRoom(th)
			if err != nil {
				return nil, fmt.Errorf("%w: give thread (matrix:<room id>) when this conversation is not on Matrix", err)
			}
			if !m.isReady() {
				return nil, fmt.Errorf("matrix is not connected yet")
			}
			root, err := os.OpenRoot(m.wsDir)
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
				return nil, fmt.Errorf("%s is %d bytes; the bot sends at most %d", a.Path, fi.Size(), maxUpload)
			}
			data, err := io.ReadAll(f)
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", a.Path, err)
			}
			kind, err := m.sendFile(ctx, room, path.Base(rel), data, a.Caption)
			if err != nil {
				return nil, fmt.Errorf("send %s: %w", a.Path, err)
			}
			return map[string]any{"ok": true, "sent_as": kind, "thread": string(th)}, nil
		}, tool.SendsOutTo(sendFileDestinations), tool.WithCategories("orchestration"))
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
	upload, uploadType := data, mime
	encrypted, err := m.stateStore.IsEncrypted(ctx, room)
	if err != nil {
		return "", err
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
		return "", fmt.Errorf("upload: %w", err)
	}
	if ef != nil {
		content.File = &event.EncryptedFileInfo{EncryptedFile: *ef, URL: up.ContentURI.CUString()}
	} else {
		content.URL = up.ContentURI.CUString()
	}
	if _, err := m.sendContent(ctx, room, content); err != nil {
		return "", err
	}
	return strings.TrimPrefix(string(content.MsgType), "m."), nil
}

// sendFileDestinations: the file goes to the thread named, or to this
// conversation (no destination of its own) when none is.
func sendFileDestinations(a sendFileArgs) []tool.Destination {
	if strings.TrimSpace(a.Thread) == "" {
		return nil
	}
	return []tool.Destination{{Thread: strings.TrimSpace(a.Thread), Data: strings.TrimSpace("the file " + a.Path + " " + a.Caption)}}
}
