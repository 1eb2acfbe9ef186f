package matrix

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
	"time"

	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/channelkit"
)

// handleMember follows the bot's memberships: invites from allowed users
// are accepted, others refused; a room where no allowed user remains is
// left.
func (m *Matrix) handleMember(ctx context.Context, evt *event.Event) {
	content := evt.Content.AsMember()
	me := m.cli.UserID
	switch {
	case evt.GetStateKey() == me.String() && content.Membership == event.MembershipInvite &&
		evt.Mautrix.EventSource&event.SourceInvite != 0:
		m.handleInvite(ctx, evt)
	case evt.GetStateKey() == me.String() && content.Membership == event.MembershipJoin &&
		evt.Mautrix.EventSource&event.SourceTimeline != 0:
		// Joined by any means: older messages are history.
		if err := m.store.setFloor(ctx, evt.RoomID.String(), evt.Timestamp); err != nil {
			m.log.Warn("could not store a matrix room", "room", evt.RoomID, "err", err)
		}
	case evt.GetStateKey() != me.String() && evt.Mautrix.EventSource&event.SourceJoin != 0 &&
		(content.Membership == event.MembershipLeave || content.Membership == event.MembershipBan) &&
		m.allowed[id.UserID(evt.GetStateKey())]:
		m.leaveIfAlone(ctx, evt.RoomID)
	}
}

func (m *Matrix) handleInvite(ctx context.Context, evt *event.Event) {
	room := evt.RoomID
	if !m.allowed[evt.Sender] {
		m.logStranger(evt.Sender, "invite refused")
		if err := m.retry(ctx, func(ctx context.Context) error {
			_, err := m.cli.LeaveRoom(ctx, room)
			return err
		}); err != nil {
			m.log.Warn("could not refuse a matrix invite", "room", room, "from", evt.Sender, "err", err)
		}
		return
	}
	// Messages from the invite on are questions (a client may send the
	// first message before the bot joins); older ones are history.
	floor := evt.Timestamp
	if floor <= 0 {
		floor = m.host.Now().Add(-5 * time.Minute).UnixMilli()
	}
	if err := m.store.setFloor(ctx, room.String(), floor); err != nil {
		m.log.Warn("could not store a matrix room", "room", room, "err", err)
	}
	if err := m.retry(ctx, func(ctx context.Context) error {
		_, err := m.cli.JoinRoomByID(ctx, room)
		return err
	}); err != nil {
		m.log.Warn("could not join a matrix room", "room", room, "from", evt.Sender, "err", err)
		return
	}
	m.log.Info("joined a matrix room", "room", room, "invited_by", evt.Sender)
}

// leaveIfAlone leaves room when none of its members is an allowed user.
func (m *Matrix) leaveIfAlone(ctx context.Context, room id.RoomID) {
	members, err := m.stateStore.GetRoomJoinedOrInvitedMembers(ctx, room)
	if err != nil {
		m.log.Warn("could not list a matrix room's members", "room", room, "err", err)
		return
	}
	for _, u := range members {
		if m.allowed[u] {
			return
		}
	}
	if err := m.retry(ctx, func(ctx context.Context) error {
		_, err := m.cli.LeaveRoom(ctx, room)
		return err
	}); err != nil {
		m.log.Warn("could not leave a matrix room without allowed users", "room", room, "err", err)
		return
	}
	m.log.Info("left a matrix room: no allowed user remains in it", "room", room)
}

// logStranger logs, once per user, that someone not allowed was ignored.
func (m *Matrix) logStranger(user id.UserID, what string) {
	m.mu.Lock()
	seen := m.strangers[user]
	m.strangers[user] = true
	m.mu.Unlock()
	if !seen {
		m.log.Warn("matrix user not in matrix.allowed_users ignored (logged once per user)", "user", user, "what", what)
	}
}

// handleMessage hands a message from an allowed user to the router. When
// the router refuses it, batchErr makes the sync loop fetch the batch
// again.
func (m *Matrix) handleMessage(ctx context.Context, evt *event.Event) {
	if evt.Sender == m.cli.UserID || evt.Mautrix.EventSource&event.SourceJoin == 0 ||
		evt.Mautrix.EventSource&event.SourceTimeline == 0 {
		return
	}
	content := evt.Content.AsMessage()
	if content.RelatesTo != nil && content.RelatesTo.GetReplaceID() != "" {
		return // an edit of an earlier message
	}
	if content.MsgType == event.MsgNotice {
		return // bots talk in notices; never answer one
	}
	if !m.allowed[evt.Sender] {
		m.logStranger(evt.Sender, "message ignored")
		return
	}
	floor, _, err := m.store.floor(ctx, evt.RoomID.String())
	if err != nil {
		m.batchErr = err
		return
	}
	if evt.Timestamp < floor {
		return
	}
	// The router drops a message it accepted before anyway; skipping it
	// here saves a batch fetched again its downloads and lookups.
	if done, err := m.store.handled(ctx, evt.ID.String()); err != nil || done {
		if err != nil {
			m.batchErr = err
		}
		return
	}
	content.RemoveReplyFallback()
	text := content.Body
	if content.MsgType != event.MsgText && content.MsgType != event.MsgEmote && content.MsgType != "" {
		text = "" // a file's body is its name
	}
	if m.isGroup(ctx, evt.RoomID) {
		switch m.cfg.GroupMode {
		case GroupOff:
			return
		case GroupMention:
			var ok bool
			if text, ok = m.addressed(ctx, evt, content, text); !ok {
				m.overheard(ctx, evt, content, text)
				return
			}
		}
	}
	var atts []chat.Attachment
	switch content.MsgType {
	case event.MsgImage, event.MsgFile, event.MsgAudio, event.MsgVideo:
		note, att := m.saveAttachment(ctx, evt, content)
		if note != "" {
			text = strings.TrimSpace(note + "\n" + content.GetCaption())
		} else if c := content.GetCaption(); c != "" {
			text = c
		}
		if att != nil {
			atts = append(atts, *att)
		}
	}
	if content.MsgType == event.MsgEmote {
		text = "* " + text
	}
	if strings.TrimSpace(text) == "" && len(atts) == 0 {
		return
	}
	thread := chat.NewThreadID(ChannelName, evt.RoomID.String())
	err = m.host.Receive(ctx, chat.Inbound{
		Address:     chat.Address{Channel: ChannelName, Thread: thread},
		ID:          evt.ID.String(),
		Sender:      m.sender(ctx, evt),
		Text:        text,
		Attachments: atts,
		Received:    time.UnixMilli(evt.Timestamp),
	})
	if err != nil {
		m.log.Warn("could not hand a matrix message to the router; the batch is fetched again", "room", evt.RoomID, "err", err)
		m.batchErr = err
		return
	}
	rctx, cancel := context.WithTimeout(ctx, callTimeout)
	if err := m.cli.MarkRead(rctx, evt.RoomID, evt.ID); err != nil {
		m.log.Debug("could not send a matrix read receipt", "room", evt.RoomID, "err", m.scrub(err))
	}
	cancel()
}

// sender is evt's sender with their display name in the room.
func (m *Matrix) sender(ctx context.Context, evt *event.Event) chat.Sender {
	name := ""
	if mem, err := m.stateStore.GetMember(ctx, evt.RoomID, evt.Sender); err == nil && mem != nil {
		name = mem.Displayname
	}
	return chat.Sender{ID: evt.Sender.String(), DisplayName: name}
}

// overheard hands the router a group-room message of an allowed member that
// is not meant for the bot: it is remembered (its text or a file's caption,
// with the sender's display name and time), never answered; files are not
// downloaded. When the router refuses it, batchErr makes the sync loop
// fetch the batch again.
func (m *Matrix) overheard(ctx context.Context, evt *event.Event, content *event.MessageEventContent, text string) {
	if text == "" {
		text = content.GetCaption()
	}
	if content.MsgType == event.MsgEmote {
		text = "* " + text
	}
	if strings.TrimSpace(strings.TrimPrefix(text, "* ")) == "" {
		return
	}
	err := m.host.Receive(ctx, chat.Inbound{
		Address:   chat.Address{Channel: ChannelName, Thread: chat.NewThreadID(ChannelName, evt.RoomID.String())},
		ID:        evt.ID.String(),
		Sender:    m.sender(ctx, evt),
		Text:      text,
		Received:  time.UnixMilli(evt.Timestamp),
		Overheard: true,
	})
	if err != nil {
		m.log.Warn("could not hand an overheard matrix message to the router; the batch is fetched again", "room", evt.RoomID, "err", err)
		m.batchErr = err
	}
}

// isGroup reports whether the room has more than one member besides the
// bot (joined or invited).
func (m *Matrix) isGroup(ctx context.Context, room id.RoomID) bool {
	n, err := m.othersIn(ctx, room)
	return err == nil && n > 1
}

// othersIn counts the room's joined or invited members besides the bot.
func (m *Matrix) othersIn(ctx context.Context, room id.RoomID) (int, error) {
	members, err := m.stateStore.GetRoomJoinedOrInvitedMembers(ctx, room)
	if err != nil {
		return 0, err
	}
	n := 0
	for _, u := range members {
		if u != m.cli.UserID {
			n++
		}
	}
	return n, nil
}

// addressed reports whether a group message is meant for the bot (it
// mentions the bot or replies to one of its messages) and returns the text
// without a leading mention.
func (m *Matrix) addressed(ctx context.Context, evt *event.Event, content *event.MessageEventContent, text string) (string, bool) {
	me := m.cli.UserID
	names := []string{me.String(), me.Localpart()}
	if mem, err := m.stateStore.GetMember(ctx, evt.RoomID, me); err == nil && mem != nil && mem.Displayname != "" {
		names = append(names, mem.Displayname)
	}
	mentioned := content.Mentions != nil && content.Mentions.Has(me)
	if !mentioned && strings.Contains(content.FormattedBody, "https://matrix.to/#/"+me.String()) {
		mentioned = true
	}
	lower := strings.ToLower(text)
	for _, n := range names {
		if n != "" && strings.Contains(lower, strings.ToLower(n)) {
			mentioned = true
		}
	}
	if mentioned {
		return stripMention(text, names), true
	}
	if reply := content.RelatesTo.GetReplyTo(); reply != "" {
		cctx, cancel := context.WithTimeout(ctx, callTimeout)
		orig, err := m.cli.GetEvent(cctx, evt.RoomID, reply)
		cancel()
		if err == nil && orig.Sender == me {
			return text, true
		}
	}
	return text, false
}

// stripMention removes a leading "name:", "@name" or "name," from text.
func stripMention(text string, names []string) string {
	t := strings.TrimSpace(text)
	for _, n := range names {
		for _, pre := range []string{n, "@" + n} {
			if len(t) >= len(pre) && strings.EqualFold(t[:len(pre)], pre) {
				rest := strings.TrimLeft(t[len(pre):], ":, ")
				if rest != t[len(pre):] || rest == "" {
					return rest
				}
			}
		}
	}
	return t
}

// saveAttachment downloads (and decrypts) a file the user sent into
// workspace/matrix/<room>/. An image becomes an image attachment for the
// model, an m.audio message an audio attachment (transcribed by the
// router); other files, and files that could not be saved, a line of text.
func (m *Matrix) saveAttachment(ctx context.Context, evt *event.Event, content *event.MessageEventContent) (string, *chat.Attachment) {
	kind := strings.TrimPrefix(string(content.MsgType), "m.")
	rel, mime, err := m.saveFile(ctx, evt, content)
	if err != nil {
		m.log.Warn("could not save a matrix attachment", "kind", kind, "err", err)
		return fmt.Sprintf("[%s attached, but it could not be saved: %v]", kind, err), nil
	}
	if content.MsgType == event.MsgImage && isImageType(mime) {
		return "", &chat.Attachment{Kind: chat.AttachImage, Path: rel, MediaType: mime}
	}
	if content.MsgType == event.MsgAudio {
		// A recording: transcribed before the turn, answered as typed text.
		return "", &chat.Attachment{Kind: chat.AttachAudio, Path: rel, MediaType: cmp.Or(mime, "audio/ogg")}
	}
	desc := kind
	if mime != "" {
		desc += ", " + mime
	}
	return fmt.Sprintf("[%s (%s) saved in the workspace as %s]", kind, desc, rel), nil
}

func isImageType(mime string) bool {
	switch mime {
	case "image/jpeg", "image/png", "image/gif", "image/webp":
		return true
	}
	return false
}

func (m *Matrix) saveFile(ctx context.Context, evt *event.Event, content *event.MessageEventContent) (rel, mime string, err error) {
	if m.cfg.MaxFileBytes == 0 {
		return "", "", fmt.Errorf("downloads are off (matrix.max_file_bytes: 0)")
	}
	if content.Info != nil {
		mime = content.Info.MimeType
		if int64(content.Info.Size) > m.cfg.MaxFileBytes {
			return "", "", fmt.Errorf("%d bytes is over matrix.max_file_bytes (%d)", content.Info.Size, m.cfg.MaxFileBytes)
		}
	}
	uri := content.URL
	if content.File != nil {
		uri = content.File.URL
	}
	mxc, err := uri.Parse()
	if err != nil {
		return "", "", fmt.Errorf("bad content URL %q: %w", uri, err)
	}
	var data []byte
	err = m.retry(ctx, func(ctx context.Context) error {
		resp, err := m.cli.Download(ctx, mxc)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		data, err = io.ReadAll(io.LimitReader(resp.Body, m.cfg.MaxFileBytes+1))
		return err
	})
	if err != nil {
		return "", "", fmt.Errorf("download: %w", err)
	}
	if int64(len(data)) > m.cfg.MaxFileBytes {
		return "", "", fmt.Errorf("the file is over matrix.max_file_bytes (%d)", m.cfg.MaxFileBytes)
	}
	if content.File != nil {
		if err := content.File.DecryptInPlace(data); err != nil {
			return "", "", fmt.Errorf("decrypt: %w", err)
		}
	}
	name := content.FileName
	if name == "" {
		name = content.Body
	}
	idPart := extension.SafeName(evt.ID.String())
	if len(idPart) > 12 {
		idPart = idPart[:12]
	}
	rel, err = channelkit.SaveFile(m.wsDir, path.Join("matrix", extension.SafeName(evt.RoomID.String())),
		time.UnixMilli(evt.Timestamp), idPart, name, data)
	if err != nil {
		return "", "", err
	}
	return rel, mime, nil
}

// sharedLookup bounds the state-store reads of SharedThread, which the
// approval service calls without a request context.
const sharedLookup = 5 * time.Second

// SharedThread implements extension.SharedThreads: a room with more than one
// member besides the bot is shared (its members would read an approval
// request's data); the owner's private thread is a room whose only members
// are the bot and the first of matrix.allowed_users, "" when there is none
// (the request is then answered on the web page only). When the room's
// members cannot be read, it counts as shared: the data is never shown to a
// room Reverie cannot vouch for.
func (m *Matrix) SharedThread(thread chat.ThreadID) (chat.ThreadID, bool) {
	room, err := threadRoom(thread)
	if err != nil || m.stateStore == nil || m.cli == nil {
		return "", false
	}
	ctx, cancel := context.WithTimeout(context.Background(), sharedLookup)
	defer cancel()
	switch others, err := m.othersIn(ctx, room); {
	case err != nil:
		m.log.Warn("could not read a matrix room's members; treating it as shared", "room", room, "err", err)
	case others <= 1:
		return "", false
	}
	return m.ownerRoom(ctx), true
}

// ownerRoom returns the thread of a room whose only joined or invited
// members are the bot and the owner (the first of matrix.allowed_users),
// or "" when there is none.
func (m *Matrix) ownerRoom(ctx context.Context) chat.ThreadID {
	if len(m.cfg.AllowedUsers) == 0 {
		return ""
	}
	owner, bot := m.cfg.AllowedUsers[0], m.cli.UserID.String()
	var room string
	err := m.stateStore.QueryRow(ctx, `
		SELECT room_id FROM mx_user_profile
		WHERE membership IN ('join', 'invite')
		GROUP BY room_id
		HAVING COUNT(*) = 2 AND SUM(user_id = $1) = 1 AND SUM(user_id = $2) = 1
		ORDER BY room_id LIMIT 1`, owner, bot).Scan(&room)
	if err != nil {
		if !errors.Is(err, sql.ErrNoRows) {
			m.log.Warn("could not look for the owner's private matrix room", "err", err)
		}
		return ""
	}
	return chat.NewThreadID(ChannelName, room)
}
