package router

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
	"github.com/reverie-ai/reverie/tool"
)

// TestToolCallsAreJournaled: during a turn, a tool call is recorded with
// its arguments before it runs (the tool finds its own row unfinished) and
// marked finished with its result after; the row goes with the turn.
func TestToolCallsAreJournaled(t *testing.T) {
	type args struct {
		Text string `json:"text"`
	}
	var h *harness
	var seen atomic.Value
	note := tool.New("note", "Write a note.", func(ctx context.Context, a args) (any, error) {
		var name, arguments string
		var finished int64
		err := h.db.QueryRowContext(ctx, `SELECT name, arguments, finished_at FROM router_tool_calls`).Scan(&name, &arguments, &finished)
		seen.Store([]string{name, arguments, strings.Repeat("x", int(min(finished, 1))), errString(err)})
		return "noted", nil
	})
	look := tool.New("look", "Read.", func(ctx context.Context, a args) (any, error) {
		var n int
		var result string
		err := h.db.QueryRowContext(ctx, `SELECT count(*), max(result) FROM router_tool_calls WHERE finished_at != 0`).Scan(&n, &result)
		if err != nil || n != 1 || result != "noted" {
			return nil, err
		}
		return "finished call recorded", nil
	}, tool.ReadOnly())
	m := llmtest.NewScripted(t, llmtest.CallTool("note", `{"text":"milk"}`), llmtest.CallTool("look", `{"text":"?"}`), llmtest.Reply("Noted."))
	h = newHarness(t, m, []tool.Tool{note, look}, nil)
	h.markKnown("web:j")
	h.run()
	res, err := h.router.Handle(context.Background(), chat.Inbound{Address: chat.Address{Thread: "web:j"}, Text: "remember milk"})
	if err != nil || res.Reply != "Noted." {
		t.Fatalf("Handle = %q, %v", res.Reply, err)
	}
	if got, want := seen.Load().([]string), []string{"note", `{"text":"milk"}`, "", ""}; !slices.Equal(got, want) {
		t.Errorf("while running, the call's row was %q, want %q", got, want)
	}
	if len(res.Calls) != 2 || res.Calls[1].Result != "finished call recorded" {
		t.Errorf("calls %+v", res.Calls)
	}
	var rows int
	if err := h.db.QueryRow(`SELECT (SELECT count(*) FROM router_inbox) + (SELECT count(*) FROM router_tool_calls)`).Scan(&rows); err != nil || rows != 0 {
		t.Errorf("journal rows left after the turn: %d (%v)", rows, err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestInterruptedTurns: what a start-up does with a turn that a crash left
// in each state.
func TestInterruptedTurns(t *testing.T) {
	type call struct {
		name     string
		readOnly bool
		finished bool
		result   string
	}
	cases := []struct {
		name     string
		stored   bool   // the message reached the conversation
		replied  bool   // and so did the reply
		starts   int    // turn starts so far
		calls    []call // recorded tool calls
		wantSent string // delivered ("" = nothing)
		wantHist []string
	}{
		{name: "message not stored yet runs afresh", starts: 1,
			wantSent: "answer: hi", wantHist: []string{"user:hi", "assistant:answer: hi"}},
		{name: "no tool ran: resumed", stored: true, starts: 1,
			wantSent: "answer: hi", wantHist: []string{"user:hi", "assistant:answer: hi"}},
		{name: "only read-only tools ran: resumed", stored: true, starts: 1,
			calls:    []call{{name: "read_file", readOnly: true, finished: true, result: "text"}, {name: "search_memory", readOnly: true}},
			wantSent: "answer: hi", wantHist: []string{"user:hi", "assistant:answer: hi"}},
		{name: "a side effect ran: reported", stored: true, starts: 1,
			calls: []call{{name: "read_file", readOnly: true, finished: true, result: "text"}, {name: "set_reminder", finished: true, result: `{"ok":true,"id":7}`}, {name: "execute_shell"}},
			wantSent: InterruptedPrefix + " after tool calls that may have changed things, so I did not start it again. What was done:\n" +
				"- read_file {\"n\":0} → text\n- set_reminder {\"n\":1} → {\"ok\":true,\"id\":7}\n- execute_shell {\"n\":2} → stopped before it finished; its effect is unknown\nTell me whether to carry on.",
		},
		{name: "started too often: reported", stored: true, starts: MaxTurnStarts,
			wantSent: InterruptedPrefix + " 2 times, so I stopped trying. Nothing was changed; send it again to retry."},
		{name: "reply stored, row left: the stored reply is delivered", stored: true, replied: true, starts: 1,
			wantSent: "stored answer", wantHist: []string{"user:hi", "assistant:stored answer"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var modelCalls atomic.Int32
			m := llmtest.Func(func(ctx context.Context, r llm.Request) (llm.Response, error) {
				modelCalls.Add(1)
				return echo("answer")(ctx, r)
			})
			h := newHarness(t, m, nil, nil)
			ctx := context.Background()
			const thread chat.ThreadID = "web:x"
			if _, _, err := h.store.EnsureThread(ctx, thread); err != nil {
				t.Fatal(err)
			}
			if _, err := h.store.Append(ctx, thread, llm.AssistantText("before")); err != nil {
				t.Fatal(err)
			}
			last, err := h.store.LastMessageID(ctx, thread)
			if err != nil {
				t.Fatal(err)
			}
			res, err := h.db.Exec(`INSERT INTO router_inbox (thread, kind, channel, text, received_at, started_at, after_message_id, attempts) VALUES (?,?,?,?,?,?,?,?)`,
				string(thread), string(jobMessage), "web", "hi", 1, 2, last, tc.starts)
			if err != nil {
				t.Fatal(err)
			}
			inbox, _ := res.LastInsertId()
			if tc.stored {
				if _, err := h.store.Append(ctx, thread, llm.UserText("hi")); err != nil {
					t.Fatal(err)
				}
			}
			if tc.replied {
				if _, err := h.store.Append(ctx, thread, llm.AssistantText("stored answer")); err != nil {
					t.Fatal(err)
				}
			}
			for i, c := range tc.calls {
				finished := 0
				if c.finished {
					finished = 3
				}
				args, _ := json.Marshal(map[string]int{"n": i})
				if _, err := h.db.Exec(`INSERT INTO router_tool_calls (inbox_id, call_id, round, idx, name, arguments, read_only, started_at, finished_at, result) VALUES (?,?,?,?,?,?,?,?,?,?)`,
					inbox, "c"+string(rune('0'+i)), 1, i, c.name, string(args), c.readOnly, 2, finished, c.result); err != nil {
					t.Fatal(err)
				}
			}
			done := make(chan error, 1)
			h.run()
			if tc.wantSent != "" {
				got := recv(t, h.web.out)
				if got.Text != tc.wantSent || got.Thread != thread {
					t.Errorf("sent %+v\nwant %q", got, tc.wantSent)
				}
			} else {
				// Nothing is delivered for it; a message queued after it
				// is answered after it.
				go func() {
					_, err := h.router.Handle(ctx, chat.Inbound{Address: chat.Address{Thread: thread}, Text: "next"})
					done <- err
				}()
				if err := recv(t, done); err != nil {
					t.Fatal(err)
				}
				tc.wantHist = append(tc.wantHist, "user:next", "assistant:answer: next")
			}
			want := tc.wantHist
			if want == nil {
				want = []string{"user:hi", "assistant:" + tc.wantSent}
			}
			if got := roles(t, h.store, thread); !slices.Equal(got[1:], want) {
				t.Errorf("history %q, want %q", got[1:], want)
			}
			var left int
			if err := h.db.QueryRow(`SELECT count(*) FROM router_inbox`).Scan(&left); err != nil || left != 0 {
				t.Errorf("inbox rows left: %d (%v)", left, err)
			}
			if strings.HasPrefix(tc.wantSent, InterruptedPrefix) && modelCalls.Load() != 0 {
				t.Errorf("a reported turn called the model %d times", modelCalls.Load())
			}
		})
	}
}

// An interrupted turn is handled first in its thread at start-up, before
// items accepted earlier that had not started (concurrent acceptances can
// run out of inbox order), so nothing lands between it and its answer.
func TestInterruptedTurnRunsFirstInItsThread(t *testing.T) {
	h := newHarness(t, echo("answer"), nil, nil)
	ctx := context.Background()
	const thread chat.ThreadID = "web:o"
	h.markKnown(thread)
	last, err := h.store.LastMessageID(ctx, thread)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.Exec(`INSERT INTO router_inbox (thread, kind, channel, text, received_at) VALUES (?,?,?,?,?)`,
		string(thread), string(jobMessage), "web", "waiting", 1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.db.Exec(`INSERT INTO router_inbox (thread, kind, channel, text, received_at, started_at, after_message_id, attempts) VALUES (?,?,?,?,?,?,?,?)`,
		string(thread), string(jobMessage), "web", "interrupted", 2, 3, last, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Append(ctx, thread, llm.UserText("interrupted")); err != nil {
		t.Fatal(err)
	}
	h.run()
	for _, want := range []string{"answer: interrupted", "answer: waiting"} {
		if got := recv(t, h.web.out); got.Text != want {
			t.Errorf("sent %q, want %q", got.Text, want)
		}
	}
	want := []string{"assistant:earlier", "user:interrupted", "assistant:answer: interrupted", "user:waiting", "assistant:answer: waiting"}
	if got := roles(t, h.store, thread); !slices.Equal(got, want) {
		t.Errorf("history %q, want %q", got, want)
	}
}

// A notification stored before a crash removed its inbox row is not
// stored again; one that was not stored is.
func TestInterruptedNotificationIsStoredOnce(t *testing.T) {
	for _, stored := range []bool{true, false} {
		t.Run(map[bool]string{true: "stored", false: "not stored"}[stored], func(t *testing.T) {
			h := newHarness(t, echo("answer"), nil, nil)
			ctx := context.Background()
			const thread chat.ThreadID = "web:n"
			h.markKnown(thread)
			last, err := h.store.LastMessageID(ctx, thread)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := h.db.Exec(`INSERT INTO router_inbox (thread, kind, channel, text, received_at, started_at, after_message_id, attempts) VALUES (?,?,?,?,?,?,?,?)`,
				string(thread), string(jobNotify), "web", "reminder: tea", 1, 2, last, 1); err != nil {
				t.Fatal(err)
			}
			if stored {
				if _, err := h.store.Append(ctx, thread, llm.AssistantText("reminder: tea")); err != nil {
					t.Fatal(err)
				}
			}
			h.run()
			// A message after it is answered after it.
			if _, err := h.router.Handle(ctx, chat.Inbound{Address: chat.Address{Thread: thread}, Text: "next"}); err != nil {
				t.Fatal(err)
			}
			want := []string{"assistant:earlier", "assistant:reminder: tea", "user:next", "assistant:answer: next"}
			if got := roles(t, h.store, thread); !slices.Equal(got, want) {
				t.Errorf("history %q, want %q", got, want)
			}
		})
	}
}
