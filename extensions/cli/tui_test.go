package cli

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extensions/cli/clitest"
)

var testEnv = []string{"TERM=xterm-256color", "NO_COLOR=1"}

func recvText(t *testing.T, ch <-chan string) string {
	t.Helper()
	select {
	case s := <-ch:
		return s
	case <-time.After(clitest.Timeout):
		t.Fatal("the chat sent nothing")
		return ""
	}
}

func recvDone(t *testing.T, ch <-chan error) error {
	t.Helper()
	select {
	case err := <-ch:
		return err
	case <-time.After(clitest.Timeout):
		t.Fatal("the chat did not end")
		return nil
	}
}

// startChat runs RunInteractive on a pseudo-terminal with b.
func startChat(t *testing.T, b Backend, hist *History) (*clitest.Terminal, <-chan error) {
	t.Helper()
	tm := clitest.New(t, 100, 30)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		done <- RunInteractive(ctx, b, InteractiveOptions{In: tm.TTY, Out: tm.TTY, Env: testEnv, History: hist})
	}()
	t.Cleanup(func() {
		// Quit as a user does (Ctrl+U empties the prompt, Ctrl+D quits):
		// bubbletea then waits for its input reader before closing it.
		// Cancelling the context kills the program without that wait, and
		// the reader goroutine of its terminal library races with the close
		// (a data race inside muesli/cancelreader); cancel is the fallback.
		select {
		case <-finished:
		default:
			tm.Type("\x15", clitest.CtrlD)
			select {
			case <-finished:
			case <-time.After(clitest.Timeout):
			}
		}
		cancel()
		select {
		case <-finished:
		case <-time.After(clitest.Timeout):
			t.Error("the chat did not stop")
		}
	})
	tm.WaitFor("Reverie · cli:tester · fake backend")
	tm.WaitFor("Enter sends")
	return tm, done
}

func TestInteractive(t *testing.T) {
	b := newFakeBackend(nil)
	histPath := filepath.Join(t.TempDir(), HistoryFile)
	hist, err := OpenHistory(histPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	tm, done := startChat(t, b, hist)
	reply := func(evs ...Event) {
		for _, ev := range evs {
			b.q.Push(ev)
		}
	}

	// A message: its reply streams, tool calls show folded, the final
	// reply is rendered.
	tm.Type("hello", clitest.Enter)
	if got := recvText(t, b.sentc); got != "hello" {
		t.Fatalf("sent %q", got)
	}
	tm.WaitFor("› hello")
	reply(Event{Kind: EventDelta, Text: "Partial9Qz "})
	tm.WaitFor("Partial9Qz")
	reply(Event{Kind: EventToolCall, Tool: "read_file", Arguments: json.RawMessage(`{"path":"x.md"}`)},
		Event{Kind: EventToolResult, Tool: "read_file", Result: "line1\nline2\nline3"})
	tm.WaitFor(`⚙ read_file {"path":"x.md"}`)
	tm.WaitFor("↳ line1 (+2 lines)")
	reply(Event{Kind: EventDone, Text: "# Heading9\n\nThe final answer9."}, Event{Kind: EventIdle})
	tm.WaitFor("Heading9")
	tm.WaitFor("final answer9.")

	// Ctrl+C during a slow reply cancels that turn; the chat goes on.
	tm.Type("slow", clitest.Enter)
	if got := recvText(t, b.sentc); got != "slow" {
		t.Fatalf("sent %q", got)
	}
	reply(Event{Kind: EventDelta, Text: "Slow7Wx"})
	tm.WaitFor("Slow7Wx")
	tm.Type(clitest.CtrlC)
	select {
	case <-b.cancel:
	case <-time.After(clitest.Timeout):
		t.Fatal("Ctrl+C did not cancel the turn")
	}
	reply(Event{Kind: EventError, Text: "The answer was interrupted; your message is saved."}, Event{Kind: EventIdle, Err: "context canceled"})
	tm.WaitFor("✗ The answer was interrupted")

	// Multiline input: Alt+Enter, and a trailing backslash.
	tm.Type("first", clitest.AltEnter, "second", clitest.Enter)
	if got := recvText(t, b.sentc); got != "first\nsecond" {
		t.Fatalf("sent %q", got)
	}
	reply(Event{Kind: EventDone, Text: "ok1"}, Event{Kind: EventIdle})
	tm.Type(`a\`, clitest.Enter, "b", clitest.Enter)
	if got := recvText(t, b.sentc); got != "a\nb" {
		t.Fatalf("sent %q", got)
	}
	reply(Event{Kind: EventDone, Text: "ok2"}, Event{Kind: EventIdle})
	tm.WaitFor("ok2")

	// History: ↑ recalls the last message, ↑↑ the one before.
	tm.Type(clitest.Up, clitest.Up, clitest.Up, clitest.Enter)
	if got := recvText(t, b.sentc); got != "first\nsecond" {
		t.Fatalf("history recalled %q", got)
	}
	reply(Event{Kind: EventDone, Text: "ok3"}, Event{Kind: EventIdle})
	tm.WaitFor("ok3")

	// A message typed while a reply is being written waits for it.
	var idlePushed atomic.Bool
	tm.Type("q1", clitest.Enter)
	recvText(t, b.sentc)
	tm.Type("q2", clitest.Enter)
	tm.WaitFor("1 queued")
	reply(Event{Kind: EventDone, Text: "r1"})
	idlePushed.Store(true)
	reply(Event{Kind: EventIdle})
	if got := recvText(t, b.sentc); got != "q2" || !idlePushed.Load() {
		t.Fatalf("sent %q (after the first reply ended: %v)", got, idlePushed.Load())
	}
	reply(Event{Kind: EventDone, Text: "r2"}, Event{Kind: EventIdle})
	tm.WaitFor("r2")

	// A proactive message between turns.
	reply(Event{Kind: EventNotify, Text: "Reminder: call Anna9"})
	tm.WaitFor("◆ Reminder: call Anna9")

	// Model output cannot drive the terminal.
	reply(Event{Kind: EventNotify, Text: "evil\x1b]0;title\x07\x1b[2Jdone8"})
	tm.WaitFor("evil]0;title[2Jdone8")

	// Ctrl+C at an empty prompt asks for confirmation; the second quits.
	tm.Type(clitest.CtrlC)
	tm.WaitFor("press Ctrl+C again or Ctrl+D to quit")
	tm.Type(clitest.CtrlC)
	if err := recvDone(t, done); err != nil {
		t.Fatalf("chat ended with %v", err)
	}

	// The history was saved, privately.
	st, err := os.Stat(histPath)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Errorf("history mode %v", st.Mode().Perm())
	}
	saved, err := OpenHistory(histPath, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"hello", "slow", "first\nsecond", "a\nb", "first\nsecond", "q1", "q2"}
	if got := saved.Entries(); !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
}

func TestInteractiveKeys(t *testing.T) {
	b := newFakeBackend(func(text string) []Event {
		return []Event{{Kind: EventDone, Text: "echo9 " + text}, {Kind: EventIdle}}
	})
	tm, done := startChat(t, b, nil)
	// Ctrl+C clears a draft; editing keys work.
	tm.Type("draft", clitest.CtrlC, "helo", "\x1b[D", "l", clitest.Enter)
	if got := recvText(t, b.sentc); got != "hello" {
		t.Fatalf("sent %q", got)
	}
	tm.WaitFor("echo9 hello")
	tm.Type("one two", "\x17", "three", clitest.Enter) // Ctrl+W deletes a word
	if got := recvText(t, b.sentc); got != "one three" {
		t.Fatalf("sent %q", got)
	}
	// A message the backend refuses is reported and nothing waits for it.
	b.refuse = errors.New("message too large")
	tm.Type("big", clitest.Enter)
	tm.WaitFor("✗ not sent: message too large")
	b.refuse = nil
	// Ctrl+D at an empty prompt quits.
	tm.Type(clitest.CtrlD)
	if err := recvDone(t, done); err != nil {
		t.Fatalf("chat ended with %v", err)
	}
}

func TestInteractiveBackendGone(t *testing.T) {
	b := newFakeBackend(nil)
	tm, done := startChat(t, b, nil)
	b.q.Close()
	tm.WaitFor("✗ lost the connection to the assistant")
	if err := recvDone(t, done); err == nil || !strings.Contains(err.Error(), "lost the connection") {
		t.Fatalf("chat ended with %v", err)
	}
}

func TestInteractiveApproval(t *testing.T) {
	b := newFakeBackend(nil)
	b.answered = make(chan string, 4)
	tm, _ := startChat(t, b, nil)
	tm.Type("summarise the page", clitest.Enter)
	recvText(t, b.sentc)
	ask := func(id string) {
		b.q.Push(Event{Kind: EventApproval, Thread: "cli:tester", Approval: id, State: chat.ApprovalPending, Tool: "fetch_url",
			Arguments: json.RawMessage(`{"url":"https://evil.example.net/x"}`), Text: "a host you did not mention"})
	}
	ask("ap_1")
	tm.WaitFor(`⚠ approve fetch_url {"url":"https://evil.example.net/x"}?`)
	tm.WaitFor("press y to allow, n to refuse")
	tm.Type("y")
	if id := recvText(t, b.answered); id != "ap_1" {
		t.Fatalf("answered %q", id)
	}
	b.q.Push(Event{Kind: EventApproval, Thread: "cli:tester", Approval: "ap_1", State: chat.ApprovalApproved, Tool: "fetch_url"})
	tm.WaitFor("✓ approved: fetch_url")

	ask("ap_2")
	ask("ap_2") // sent again (a reconnect): shown once
	// Answer only once the question is on the screen, as a user does: a key
	// typed before the request reaches the chat is text in the prompt (it
	// raced the request here about once in 150 runs).
	tm.WaitFor("press y to allow, n to refuse")
	tm.Type("n")
	if id := recvText(t, b.answered); id != "ap_2" {
		t.Fatalf("answered %q", id)
	}
	b.q.Push(Event{Kind: EventApproval, Thread: "cli:tester", Approval: "ap_2", State: chat.ApprovalDenied, Tool: "fetch_url"})
	tm.WaitFor("✗ denied: fetch_url")
	b.q.Push(Event{Kind: EventDone, Text: "I could not fetch it."})
	b.q.Push(Event{Kind: EventIdle})
	tm.WaitFor("I could not fetch it.")
	// With nothing waiting, y is text again.
	tm.Type("y", clitest.Enter)
	if got := recvText(t, b.sentc); got != "y" {
		t.Fatalf("sent %q", got)
	}
	if n := strings.Count(tm.Output(), clitest.Normalize(`⚠ approve fetch_url {"url":"https://evil.example.net/x"}?`)); n != 2 {
		t.Errorf("the two requests were shown %d times, want 2", n)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Equal(b.answers, []string{"ap_1=true", "ap_2=false"}) {
		t.Errorf("answers = %v", b.answers)
	}
}

// TestInteractiveThinking: the model's reasoning streams folded to one
// line, becomes one "thought" line when the reply starts, and Ctrl+T
// unfolds it; a table in the reply renders as columns.
func TestInteractiveThinking(t *testing.T) {
	b := newFakeBackend(nil)
	tm, _ := startChat(t, b, nil)
	tm.Type("plan my day", clitest.Enter)
	recvText(t, b.sentc)
	b.q.Push(Event{Kind: EventThinking, Text: "First the calendar, "})
	b.q.Push(Event{Kind: EventThinking, Text: "then the weather Ponder4."})
	// Redrawn in place as it grows: only its start and its end are sure to
	// be written in one piece.
	tm.WaitFor("▸ thinking: First")
	tm.WaitFor("Ponder4.")
	b.q.Push(Event{Kind: EventDelta, Text: "Here is "})
	tm.WaitFor("▸ thought (7 words) · Ctrl+T shows it")
	b.q.Push(Event{Kind: EventDone, Text: "Here is your day:\n\n| When | What |\n|---|---|\n| 09:00 | standup |\n| 12:30 | lunch with Anna |"})
	b.q.Push(Event{Kind: EventIdle})
	tm.WaitFor("When  │ What")
	tm.WaitFor("12:30 │ lunch with Anna")
	tm.Type("\x14") // Ctrl+T
	tm.WaitFor("First the calendar, then the weather Ponder4.")
}

// TestInteractiveThreads: /threads lists the conversations numbered,
// /switch N and /switch NAME move the chat to another one; neither is sent
// to the assistant.
func TestInteractiveThreads(t *testing.T) {
	b := newFakeBackend(nil)
	tm, _ := startChat(t, b, nil)
	tm.Type("/threads", clitest.Enter)
	tm.WaitFor("1. Groceries · cli:tester")
	tm.WaitFor("← this one")
	tm.WaitFor("2. Quarterly report · cli:work")
	tm.Type("/switch 2", clitest.Enter)
	tm.WaitFor("Now in cli:work")
	tm.Type("/switch holiday", clitest.Enter)
	tm.WaitFor("Now in cli:holiday")
	tm.Type("/switch 9", clitest.Enter)
	tm.WaitFor("✗ no conversation 9")
	tm.Type("hello", clitest.Enter)
	if got := recvText(t, b.sentc); got != "hello" {
		t.Fatalf("sent %q (the chat's own commands must not be sent)", got)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !slices.Equal(b.switched, []chat.ThreadID{"cli:work", "cli:holiday"}) {
		t.Errorf("switched to %v", b.switched)
	}
}

// TestInteractiveRedo: /retry, /edit and /rename are the chat's own
// commands (never sent as messages): each calls the backend, the new reply
// streams below a mark, and misuse is explained; /help adds them to the
// assistant's list.
func TestInteractiveRedo(t *testing.T) {
	last := &api.Message{ID: 7, Role: "user", Text: "plan my day"}
	redone := func(t *testing.T, b *fakeBackend, want string) {
		t.Helper()
		if got := recvText(t, b.redone); got != want {
			t.Fatalf("backend got %q, want %q", got, want)
		}
	}
	tests := []struct {
		name   string
		last   *api.Message
		refuse error
		run    func(t *testing.T, b *fakeBackend, tm *clitest.Terminal)
		sent   []string // what was sent as messages
	}{
		{"retry streams the new reply", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/retry", clitest.Enter)
			redone(t, b, "regenerate")
			tm.WaitFor("↻ answering again (the reply above is kept as an earlier version):")
			tm.WaitFor("› plan my day")
			b.q.Push(Event{Kind: EventDelta, Text: "Again9 "})
			tm.WaitFor("Again9")
			b.q.Push(Event{Kind: EventDone, Text: "Again9 a second answer"})
			b.q.Push(Event{Kind: EventIdle})
			tm.WaitFor("Again9 a second answer")
			// Idle again: the next message goes at once.
			tm.Type("thanks", clitest.Enter)
			recvText(t, b.sentc)
		}, []string{"thanks"}},
		{"retry without a message", nil, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/retry", clitest.Enter)
			tm.WaitFor("✗ nothing to retry yet: this conversation has no message of yours; send one first")
		}, nil},
		{"retry with an argument", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/retry now", clitest.Enter)
			tm.WaitFor("/retry takes no argument")
		}, nil},
		{"retry while a reply is written waits for it", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("hello", clitest.Enter)
			recvText(t, b.sentc)
			tm.Type("/retry", clitest.Enter)
			tm.WaitFor("1 queued")
			b.q.Push(Event{Kind: EventDone, Text: "First9"})
			b.q.Push(Event{Kind: EventIdle})
			redone(t, b, "regenerate")
			tm.WaitFor("↻ answering again")
		}, []string{"hello"}},
		{"bare edit while a reply is written waits for it", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("hello", clitest.Enter)
			recvText(t, b.sentc)
			tm.Type("/edit", clitest.Enter)
			tm.WaitFor("1 queued")
			b.q.Push(Event{Kind: EventDone, Text: "First9"})
			b.q.Push(Event{Kind: EventIdle})
			tm.WaitFor("✎ editing your last message")
			tm.WaitFor("plan my day") // the last message, in the input
		}, []string{"hello"}},
		{"what waits after a bare edit is sent once the edit is", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("hello", clitest.Enter)
			recvText(t, b.sentc)
			tm.Type("/edit", clitest.Enter)
			tm.Type("then this", clitest.Enter)
			tm.WaitFor("2 queued")
			b.q.Push(Event{Kind: EventDone, Text: "First9"})
			b.q.Push(Event{Kind: EventIdle})
			tm.WaitFor("✎ editing your last message")
			tm.Type("\x1b")
			tm.WaitFor("edit cancelled")
			if got := recvText(t, b.sentc); got != "then this" {
				t.Errorf("sent %q after the cancelled edit, want %q", got, "then this")
			}
		}, []string{"hello", "then this"}},
		{"a draft typed while a bare edit waits is kept", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("hello", clitest.Enter)
			recvText(t, b.sentc)
			tm.Type("/edit", clitest.Enter)
			tm.WaitFor("1 queued")
			tm.Type("my draft")
			tm.WaitFor("my draft")
			b.q.Push(Event{Kind: EventDone, Text: "First9"})
			b.q.Push(Event{Kind: EventIdle})
			tm.WaitFor("✗ not editing: the input holds a draft; send or clear it, then /edit")
		}, []string{"hello"}},
		{"retry refused", last, errors.New("the server is busy"), func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/retry", clitest.Enter)
			tm.WaitFor("✗ not retried: the server is busy")
		}, nil},
		{"edit with the new text", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/edit plan my week", clitest.Enter)
			redone(t, b, "edit 7 plan my week")
			tm.WaitFor("✎ your last message, edited")
			tm.WaitFor("› plan my week")
			b.q.Push(Event{Kind: EventDone, Text: "Week9 planned"})
			b.q.Push(Event{Kind: EventIdle})
			tm.WaitFor("Week9 planned")
		}, nil},
		{"bare edit puts the message in the input", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/edit", clitest.Enter)
			tm.WaitFor("✎ editing your last message · Enter resends it · Esc cancels")
			tm.Type(" and evening", clitest.Enter)
			redone(t, b, "edit 7 plan my day and evening")
			tm.WaitFor("› plan my day and evening")
		}, nil},
		{"esc cancels an edit", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/edit", clitest.Enter)
			tm.WaitFor("✎ editing your last message")
			tm.Type("\x1b")
			tm.WaitFor("edit cancelled; your message stays as it was")
			tm.Type("hello", clitest.Enter)
			if got := recvText(t, b.sentc); got != "hello" {
				t.Fatalf("after the cancelled edit, sent %q", got)
			}
		}, []string{"hello"}},
		{"edit without a message", nil, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/edit hello", clitest.Enter)
			tm.WaitFor("✗ nothing to edit yet")
		}, nil},
		{"rename", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/rename Lyon trip", clitest.Enter)
			tm.WaitFor("This conversation is now “Lyon trip”")
			b.mu.Lock()
			defer b.mu.Unlock()
			if !slices.Equal(b.renamed, []string{"Lyon trip"}) {
				t.Errorf("renamed %q", b.renamed)
			}
		}, nil},
		{"rename without a title", last, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/rename", clitest.Enter)
			tm.WaitFor("/rename TITLE names this conversation (shown by /threads and on the web page), e.g. /rename Lyon trip")
		}, nil},
		{"rename refused", last, errNoConversation, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/rename Lyon", clitest.Enter)
			tm.WaitFor("✗ not renamed: this conversation has no messages yet; send one first, then name it")
		}, nil},
		{"help lists the chat's commands", nil, nil, func(t *testing.T, b *fakeBackend, tm *clitest.Terminal) {
			tm.Type("/help", clitest.Enter)
			recvText(t, b.sentc)
			tm.WaitFor("This chat's own commands:")
			tm.WaitFor("/retry — answer your last message again")
			tm.WaitFor("/edit TEXT — replace your last message")
			tm.WaitFor("/rename TITLE — name this conversation")
		}, []string{"/help"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			b := newFakeBackend(nil)
			b.last, b.refuse = tc.last, tc.refuse
			tm, _ := startChat(t, b, nil)
			tc.run(t, b, tm)
			b.mu.Lock()
			defer b.mu.Unlock()
			if !slices.Equal(b.sent, tc.sent) {
				t.Errorf("sent as messages %q, want %q", b.sent, tc.sent)
			}
			if n := len(b.redone); n > 0 {
				t.Errorf("%d unexpected regenerations or edits", n)
			}
		})
	}
}
