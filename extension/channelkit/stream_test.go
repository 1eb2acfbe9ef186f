package channelkit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/extension/extensiontest"
)

// board is a platform of numbered messages (a Poster) that records calls.
type board struct {
	msgs  []string
	calls []string // "post 1", "edit 1", "post* 2" (* with retries)
	// fail makes the calls of a kind ("post", "edit", "edit*") fail with
	// the error.
	fail map[string]error
}

var errLimited = errors.New("slow down")

func (b *board) take(kind string) error { return b.fail[kind] }
func (b *board) Post(_ context.Context, md string, retry bool) (string, error) {
	kind := "post"
	if retry {
		kind += "*"
	}
	if err := b.take(kind); err != nil {
		return "", err
	}
	b.msgs = append(b.msgs, md)
	id := strconv.Itoa(len(b.msgs))
	b.calls = append(b.calls, kind+" "+id)
	return id, nil
}

func (b *board) Edit(_ context.Context, id, md string, retry bool) error {
	kind := "edit"
	if retry {
		kind += "*"
	}
	if err := b.take(kind); err != nil {
		return err
	}
	n, _ := strconv.Atoi(id)
	b.msgs[n-1] = md
	b.calls = append(b.calls, kind+" "+id)
	return nil
}

func (b *board) RetryAfter(err error) (time.Duration, bool) {
	return 5 * time.Second, errors.Is(err, errLimited)
}

func TestStream(t *testing.T) {
	long := strings.TrimSpace(strings.Repeat("word ", 50)) // 249 bytes
	for _, tc := range []struct {
		name  string
		every time.Duration
		space bool
		// steps: a delta each, the clock advanced by step first.
		deltas []string
		step   time.Duration
		fail   map[string]error
		final  string
		err    error
		msgs   []string
		calls  string
		slept  string
	}{
		{name: "edited at most once per interval", every: time.Second, step: 300 * time.Millisecond,
			deltas: []string{"a", " b", " c", " d", " e", " f", " g", " h", " i"}, final: "a b c d e f g h i",
			msgs: []string{"a b c d e f g h i"}, calls: "[post 1 edit 1 edit 1]", slept: "[]"},
		{name: "final text already shown", every: time.Second, step: 2 * time.Second,
			deltas: []string{"a", " b"}, final: "a b",
			msgs: []string{"a b"}, calls: "[post 1 edit 1]", slept: "[]"},
		{name: "the final edit keeps the interval when asked", every: time.Second, space: true, step: 200 * time.Millisecond,
			deltas: []string{"a", " b"}, final: "a b c",
			msgs: []string{"a b c"}, calls: "[post 1 edit* 1]", slept: "[800ms]"},
		{name: "streaming off sends once", every: 0, step: time.Second,
			deltas: []string{"a", " b"}, final: "a b",
			msgs: []string{"a b"}, calls: "[post* 1]", slept: "[]"},
		{name: "long reply: first piece by an edit, the rest as new messages", every: time.Second, step: time.Second,
			deltas: []string{long[:100], long[100:]}, final: long,
			msgs: Split(long, 100, Bytes), calls: "[post 1 edit* 1 post* 2 post* 3]", slept: "[]"},
		{name: "a rate limit pauses the edits and is waited out at the end", every: time.Second, step: 2 * time.Second,
			deltas: []string{"a", " b"}, fail: map[string]error{"edit": errLimited}, final: "a b c",
			msgs: []string{"a b c"}, calls: "[post 1 edit* 1]", slept: "[5s]"},
		{name: "a failed edit stops the edits; the message still gets the reply", every: time.Second, step: 2 * time.Second,
			deltas: []string{"a", " b", " c"}, fail: map[string]error{"edit": errors.New("boom")}, final: "a b c",
			msgs: []string{"a b c"}, calls: "[post 1 edit* 1]", slept: "[]"},
		{name: "when even the final edit fails the reply is sent anew", every: time.Second, step: 2 * time.Second,
			deltas: []string{"a", " b"}, fail: map[string]error{"edit": errors.New("boom"), "edit*": errors.New("boom")}, final: "a b",
			msgs: []string{"a", "a b"}, calls: "[post 1 post* 2]", slept: "[]"},
		{name: "a failed turn says so, without secrets", every: time.Second, step: time.Second,
			err: errors.New("model refused key sk-123"), msgs: []string{"Sorry, that failed: model refused key [REDACTED]"},
			calls: "[post* 1]", slept: "[]"},
		{name: "nothing to say", every: time.Second, step: time.Second, calls: "[]", slept: "[]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clock := extensiontest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			b := &board{}
			var slept []time.Duration
			stopped := 0
			s := NewStream(StreamOptions{
				Poster: b, Limit: 100, Measure: Bytes, Every: tc.every, SpaceFinalEdit: tc.space,
				Now: clock.Now,
				Sleep: func(_ context.Context, d time.Duration) error {
					slept = append(slept, d)
					clock.Advance(d)
					return nil
				},
				Redact:   func(s string) string { return strings.ReplaceAll(s, "sk-123", "[REDACTED]") },
				Platform: "Test", Stopped: func() { stopped++ },
			})
			for i, d := range tc.deltas {
				if i > 0 {
					clock.Advance(tc.step)
				}
				if err := s.Delta(d); err != nil {
					t.Fatal(err)
				}
				if i == 0 {
					b.fail = tc.fail // from the second step on
				}
			}
			if err := s.Close(tc.final, tc.err); err != nil {
				t.Fatal(err)
			}
			if stopped != 1 {
				t.Errorf("Stopped called %d times, want once", stopped)
			}
			if fmt.Sprint(b.msgs) != fmt.Sprint(tc.msgs) {
				t.Errorf("messages %q, want %q", b.msgs, tc.msgs)
			}
			if got := fmt.Sprint(b.calls); got != tc.calls {
				t.Errorf("calls %s, want %s", got, tc.calls)
			}
			if got := fmt.Sprint(slept); got != tc.slept {
				t.Errorf("slept %s, want %s", got, tc.slept)
			}
		})
	}
}

// A retry wait (a rate-limited model, extension.Waiting) is shown in the
// reply's place as it happens; the reply then replaces it in the same
// message (Telegram and Matrix stream through this).
func TestStreamShowsAWait(t *testing.T) {
	clock := extensiontest.NewClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	b := &board{}
	s := NewStream(StreamOptions{Poster: b, Limit: 100, Measure: Bytes, Every: time.Second, Now: clock.Now,
		Sleep: func(context.Context, time.Duration) error { return nil }, Redact: func(s string) string { return s }, Platform: "Test"})
	if err := s.Status(extension.StreamStatus{Kind: extension.Waiting, Text: "Rate limited by the provider, retrying in 30 s", Wait: 30 * time.Second}); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(b.msgs) != "[⏳ Rate limited by the provider, retrying in 30 s…]" {
		t.Fatalf("while waiting: %q", b.msgs)
	}
	clock.Advance(30 * time.Second)
	if err := s.Delta("Here I am."); err != nil {
		t.Fatal(err)
	}
	if err := s.Close("Here I am.", nil); err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(b.msgs) != "[Here I am.]" || fmt.Sprint(b.calls) != "[post 1 edit 1]" {
		t.Errorf("after the reply: %q, calls %v", b.msgs, b.calls)
	}
}
