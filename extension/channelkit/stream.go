package channelkit

import (
	"context"
	"log/slog"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/extension"
)

// Poster puts up and edits the one message a streamed reply is shown in;
// the channel implements it for its platform.
type Poster interface {
	// Post sends md as a new message and returns its id. retry: with the
	// channel's retries and fallbacks (the final delivery); else one
	// attempt, bounded by the channel's call timeout (a streaming step
	// that may fail).
	Post(ctx context.Context, md string, retry bool) (id string, err error)
	// Edit replaces the text of message id with md (retry as for Post).
	Edit(ctx context.Context, id, md string, retry bool) error
	// RetryAfter reports how long a rate-limited call's answer asks to
	// wait.
	RetryAfter(err error) (time.Duration, bool)
}

// StreamOptions configure a Stream.
type StreamOptions struct {
	// Poster shows the reply (required).
	Poster Poster
	// Limit is a message's size limit as Measure counts it (Bytes,
	// UTF16Len); a longer reply is split (Split).
	Limit   int
	Measure func(string) int
	// Every is the least time between two edits; zero turns streaming
	// off (the reply is sent whole by Close).
	Every time.Duration
	// SpaceFinalEdit makes Close keep Every between the last edit and the
	// final one too (a platform that limits edits per chat).
	SpaceFinalEdit bool
	// Now is the clock (the host's); Sleep waits out a rate limit (nil:
	// extension.Sleep).
	Now   func() time.Time
	Sleep func(ctx context.Context, d time.Duration) error
	// Redact removes secrets from an error's text shown to the user.
	Redact func(string) string
	// Log gets the stream's warnings (with the conversation's attribute);
	// Platform names the platform in them ("Telegram").
	Log      *slog.Logger
	Platform string
	// Stopped, when set, is called first by Close: it stops the typing
	// indicator (and may wait for it).
	Stopped func()
}

// Stream is a reply streamed into one message: the text so far is shown by
// posting a message, then editing it at most once per Every (later when
// the platform asks for a pause); a failed edit stops the edits. Close
// delivers the whole reply: the streamed message gets the first piece (by
// an edit, unless it shows it already), further pieces follow as new
// messages, and when even the final edit fails the reply is sent anew.
// It implements extension.Stream: its methods are called from one
// goroutine, Close last. Each platform call is bounded by the channel's
// call timeout, not by the turn's context, so a reply is delivered even
// after the turn's context ended.
type Stream struct {
	o StreamOptions

	buf       strings.Builder
	id        string    // the message being edited ("": none yet)
	shown     string    // what it shows
	waiting   string    // a retry wait, shown until the reply's text comes
	lastEdit  time.Time // of the last post or edit
	notBefore time.Time // after a rate limit
	failed    bool      // stop editing; Close still delivers the whole reply
}

// NewStream returns a stream with nothing shown yet.
func NewStream(o StreamOptions) *Stream {
	if o.Sleep == nil {
		o.Sleep = extension.Sleep
	}
	if o.Log == nil {
		o.Log = slog.New(slog.DiscardHandler)
	}
	return &Stream{o: o}
}

// Delta appends text and shows the reply so far when the edit rate allows.
func (s *Stream) Delta(text string) error {
	s.buf.WriteString(text)
	s.flush()
	return nil
}

// Status shows the reply so far when the edit rate allows (tool activity
// is not shown). A retry wait (extension.Waiting: a rate-limited model) is
// shown in the reply's place until the reply comes, while the typing
// indicator goes on: a wait is not a hang.
func (s *Stream) Status(st extension.StreamStatus) error {
	if st.Kind == extension.Waiting {
		s.waiting = "⏳ " + st.Text + "…"
	}
	s.flush()
	return nil
}

// flush shows the text so far when streaming is on and the rate allows it.
func (s *Stream) flush() {
	now := s.o.Now()
	if s.o.Every <= 0 || s.failed || now.Sub(s.lastEdit) < s.o.Every || now.Before(s.notBefore) {
		return
	}
	text := strings.TrimSpace(s.buf.String())
	if text == "" {
		text = s.waiting
	}
	if text == "" {
		return
	}
	if s.o.Measure(text) > s.o.Limit-2 {
		text = Split(text, s.o.Limit-2, s.o.Measure)[0] + " …"
	}
	if text == s.shown {
		return
	}
	err := s.show(context.Background(), text, false)
	s.lastEdit = s.o.Now()
	if err != nil {
		if wait, ok := s.o.Poster.RetryAfter(err); ok {
			s.notBefore = s.o.Now().Add(wait)
			return
		}
		s.o.Log.Warn("streaming to "+s.o.Platform+" failed; the whole reply follows at the end", "err", err)
		s.failed = true
		return
	}
	s.shown = text
}

// show posts text as the streamed message, or edits it to text.
func (s *Stream) show(ctx context.Context, text string, retry bool) error {
	if s.id != "" {
		return s.o.Poster.Edit(ctx, s.id, text, retry)
	}
	id, err := s.o.Poster.Post(ctx, text, retry)
	if err == nil {
		s.id = id
	}
	return err
}

// Close delivers the complete reply, or a line saying the turn failed
// (err) when there is no reply text.
func (s *Stream) Close(final string, err error) error {
	if s.o.Stopped != nil {
		s.o.Stopped()
	}
	text := strings.TrimSpace(final)
	if text == "" && err != nil {
		text = "Sorry, that failed: " + s.o.Redact(err.Error())
	}
	pieces := Split(text, s.o.Limit, s.o.Measure)
	if len(pieces) == 0 {
		return nil
	}
	ctx := context.Background() // the reply is stored; deliver it even if the turn's context ended
	if wait := s.notBefore.Sub(s.o.Now()); wait > 0 {
		_ = s.o.Sleep(ctx, wait) // the platform asked for a pause
	}
	first := 0
	// Even after a failed edit the streamed message gets the whole reply
	// (with retries) rather than a second copy; only if that fails too is
	// the reply sent anew.
	if s.id != "" {
		if pieces[0] == s.shown {
			first = 1
		} else {
			if wait := s.o.Every - s.o.Now().Sub(s.lastEdit); s.o.SpaceFinalEdit && wait > 0 {
				_ = s.o.Sleep(ctx, wait)
			}
			if eerr := s.o.Poster.Edit(ctx, s.id, pieces[0], true); eerr == nil {
				first = 1
			} else {
				s.o.Log.Warn("could not edit the streamed reply; sending it as a new message", "err", eerr)
			}
		}
	}
	for _, p := range pieces[first:] {
		if _, serr := s.o.Poster.Post(ctx, p, true); serr != nil {
			return serr
		}
	}
	return nil
}

var _ extension.Stream = (*Stream)(nil)
