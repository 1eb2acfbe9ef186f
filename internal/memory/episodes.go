package memory

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"
)

// Utterance is one message of a conversation: who said it and what.
type Utterance struct {
	Speaker string // a name when the channel knows it, else ""
	Role    Role
	Text    string
}

// Exchange is a stretch of conversation stored as episodes: usually a
// user's message and the reply to it.
type Exchange struct {
	Thread  string
	Session string    // the sitting it belongs to (SessionOf gives the default)
	At      time.Time // when it was said (the episodes' EventTime)
	Said    []Utterance
}

// SessionOf is the default session of an exchange at time at: its calendar
// day in loc (UTC when nil), "2006-01-02".
func SessionOf(at time.Time, loc *time.Location) string {
	if loc == nil {
		loc = time.UTC
	}
	return at.In(loc).Format(time.DateOnly)
}

// RecordExchange stores every utterance of e as an episode memory of st
// (kind episode, source conversation, with e's thread, session and time and
// the utterance's speaker and role as stored fields), in one batch, with no
// model call. An empty utterance is left out, one longer than MaxTextLen is
// cut in the middle, and one that looks like it holds a secret is left out
// (ErrSecret is returned, joined, after the others are stored). It returns
// the ids of the stored episodes in order.
func RecordExchange(ctx context.Context, st Store, e Exchange) ([]int64, error) {
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

// RecordExchange stores e as episodes (see the package function). With the
// flat backend it stores nothing: MEMORIES.txt is the working set the user
// reads, not a transcript.
func (s *Service) RecordExchange(ctx context.Context, e Exchange) ([]int64, error) {
	if s.flat {
		return nil, nil
	}
	return RecordExchange(ctx, s.store, e)
}
