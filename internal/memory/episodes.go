package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
)

// utterance is one message of a conversation: who said it and what.
type utterance struct {
	Speaker string // a name when the channel knows it, else ""
	Role    Role
	Text    string
}

// exchange is a stretch of conversation stored as episodes: usually a
// user's message and the reply to it.
type exchange struct {
	Thread  string
	Session string    // the sitting it belongs to (SessionOf gives the default)
	At      time.Time // when it was said (the episodes' EventTime)
	Said    []utterance
}

// SessionOf is the default session of an exchange at time at: its calendar
// day in loc (UTC when nil), "2006-01-02".
func SessionOf(at time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return at.In(loc).Format(time.DateOnly)
}

// recordExchange stores every utterance of e as an episode memory of st
// (kind episode, source conversation, with e's thread, session and time and
// the utterance's speaker and role as stored fields), in one batch, with no
// model call. An empty utterance is left out, one longer than MaxTextLen is
// cut in the middle, and one that looks like it holds a secret is left out
// (ErrSecret is returned, joined, after the others are stored). It returns
// the ids of the stored episodes in order.
func recordExchange(ctx context.Context, st Store, e exchange) ([]int64, error) {
	var ms []Memory
	var skipped error
	at := e.At
	for i, u := range e.Said {
		text := strings.TrimSpace(u.Text)
		if text == "" {
			continue
		}
		if utf8.RuneCountInString(text) > MaxTextLen {
			text = cutMiddle(text, MaxTextLen)
		}
		m := Memory{Text: text, Kind: KindEpisode, Source: SourceConversation, Thread: e.Thread, Session: e.Session,
			Speaker: u.Speaker, Role: u.Role}
		if !at.IsZero() {
			m.EventTime = &at
		}
		if err := prepare(&m); err != nil {
			skipped = errors.Join(skipped, fmt.Errorf("episode %d of %s: %w", i+1, e.Thread, err))
			continue
		}
		ms = append(ms, m)
	}
	if len(ms) == 0 {
		return nil, skipped
	}
	ids, err := st.AddBatch(ctx, ms)
	if err != nil {
		return nil, fmt.Errorf("record episodes of %s: %w", e.Thread, err)
	}
	return ids, skipped
}

// cutMiddle keeps the beginning and the end of s within max characters.
func cutMiddle(s string, max int) string {
	r := []rune(s)
	const marker = " […] "
	keep := max - utf8.RuneCountInString(marker)
	head := keep / 2
	return string(r[:head]) + marker + string(r[len(r)-(keep-head):])
}

// Reply is what the assistant said in answer to a message.
type Reply struct {
	// Speaker is the assistant's own name (the world state's agent name).
	Speaker string
	// Text is the reply; "" when the assistant only listened.
	Text string
}

// Ingest is the one way conversations enter memory: it stores msg, a
// message as a channel hands it over, and reply, the assistant's answer to
// it ("" text when there is none), as episodes of st (recordExchange: kind
// episode, source conversation). Only what a channel supplies is stored:
//
//   - the thread: msg.Address.Thread;
//   - the speaker of the message: msg.Sender.DisplayName (the sender's ID is
//     not stored), role user; the reply's: reply.Speaker, role assistant;
//   - the text: msg.Text as the channel delivered it (attachments are not
//     stored) and reply.Text;
//   - the time: msg.Received, the episodes' EventTime, and their session,
//     its calendar day in loc (SessionOf). A zero Received stores no time
//     and an empty session.
//
// Every live path calls it: the agent after each answered user turn
// (through the app's episode writer, reply set), and the router for a
// group-room message the assistant only listens to (msg.Overheard, reply
// empty). `reverie eval` feeds its datasets through it with the fields a
// channel would supply in the same situation:
//
//   - LoCoMo, a conversation between two people, is a group room with two
//     named members and the assistant listening: per dialogue turn, msg =
//     {Address: the room's thread, Sender: {DisplayName: the speaker's
//     name}, Text: the turn's text (no image caption), Received: the
//     session's date and time, Overheard: true} and an empty reply.
//   - A private web conversation between the user and the assistant (the
//     LongMemEval format) is, per round: msg = {Address: {Channel: "web",
//     Thread: one "web:…" thread per session}, Sender: {ID: "web",
//     DisplayName: the user's name from the world state, "" when none
//     is set}, Text: the user's turn, Received: the session's timestamp} and
//     reply = {Speaker: the assistant's name (world.DefaultAgentName,
//     "Reverie", unless renamed), Text: the assistant's turn after it}. A
//     user turn with no reply after it has an empty reply.
//
// It returns the ids of the stored episodes in order (an empty text is left
// out; one that looks like a secret too, with ErrSecret joined into the
// error after the others are stored).
func Ingest(ctx context.Context, st Store, loc *time.Location, msg chat.Inbound, reply Reply) ([]int64, error) {
	e := exchange{Thread: string(msg.Address.Thread), At: msg.Received,
		Said: []utterance{{Speaker: strings.TrimSpace(msg.Sender.DisplayName), Role: RoleUser, Text: msg.Text}}}
	if !msg.Received.IsZero() {
		e.Session = SessionOf(msg.Received, loc)
	}
	if strings.TrimSpace(reply.Text) != "" {
		e.Said = append(e.Said, utterance{Speaker: strings.TrimSpace(reply.Speaker), Role: RoleAssistant, Text: reply.Text})
	}
	return recordExchange(ctx, st, e)
}

// Ingest stores a message and the reply to it as episodes (see the package
// function). With the flat backend it stores nothing: MEMORIES.txt is the
// working set the user reads, not a transcript.
func (s *Service) Ingest(ctx context.Context, loc *time.Location, msg chat.Inbound, reply Reply) ([]int64, error) {
	if s.flat {
		return nil, nil
	}
	return Ingest(ctx, s.store, loc, msg, reply)
}

// ForgetEpisodesFrom removes the episodes of thread from the latest user
// message stored with text (as Ingest stores it) on, that message's
// episode included: the episodes of the turns a regeneration or an edit
// took out of the conversation, which the redone turn's episodes replace.
// It returns how many it removed: none when no message episode holds text
// (the turn failed before it was stored, episodes were off, dreaming
// condensed them), and none with the flat backend, which stores no
// episodes.
func (s *Service) ForgetEpisodesFrom(ctx context.Context, thread, text string) (int, error) {
	text = strings.TrimSpace(text)
	if s.flat || thread == "" || text == "" {
		return 0, nil
	}
	if utf8.RuneCountInString(text) > MaxTextLen {
		text = cutMiddle(text, MaxTextLen)
	}
	want := normalise(text)
	// newest first: the message's episode and what was told after it
	ms, err := s.store.List(ctx, Filter{Kinds: []Kind{KindEpisode}, Sources: []Source{SourceConversation}, Thread: thread})
	if err != nil {
		return 0, fmt.Errorf("find the redone turn's episodes on %s: %w", thread, err)
	}
	from := slices.IndexFunc(ms, func(m Memory) bool { return m.Role == RoleUser && normalise(m.Text) == want })
	if from < 0 {
		return 0, nil
	}
	for i, m := range ms[:from+1] {
		if err := s.store.Delete(ctx, m.ID); err != nil && !errors.Is(err, ErrNotFound) {
			return i, fmt.Errorf("forget the redone turn's episodes on %s: %w", thread, err)
		}
	}
	return from + 1, nil
}
