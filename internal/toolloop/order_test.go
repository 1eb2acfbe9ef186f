package toolloop

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/synctest"

	"github.com/reverie-ai/reverie/tool"
)

// TestInOrderTool: calls of a tool declared tool.InOrder run one after
// another in issue order, while other tools' calls run alongside.
func TestInOrderTool(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		release := make(chan struct{})
		var mu sync.Mutex
		var events []string
		record := func(e string) {
			mu.Lock()
			events = append(events, e)
			mu.Unlock()
		}
		snapshot := func() []string {
			mu.Lock()
			defer mu.Unlock()
			return slices.Clone(events)
		}
		spawn := tool.New("spawn", "Ordered tool.", func(ctx context.Context, a echoArgs) (any, error) {
			record("start " + a.Text)
			if a.Text == "first" {
				<-release
			}
			record("end " + a.Text)
			return "ok", nil
		}, tool.InOrder())
		other := funcTool("other", func(context.Context) (any, error) {
			record("other")
			return "ok", nil
		})
		if !tool.RunsInOrder(spawn) || tool.RunsInOrder(other) {
			t.Fatal("RunsInOrder does not report the option")
		}
		m := script(callTools(
			tc("a", "spawn", `{"text":"first"}`),
			tc("b", "other", `{}`),
			tc("c", "spawn", `{"text":"second"}`),
		), say("done"))
		done := make(chan struct{})
		go func() {
			defer close(done)
			mustRun(t, m, userQ(), []tool.Tool{spawn, other}, Options{Parallel: 4})
		}()
		// Everything that can run has run: "other" ran alongside the held
		// first call, the second call of the ordered tool has not started.
		synctest.Wait()
		// ("start first" and "other" run concurrently: either order.)
		if got, want := slices.Sorted(slices.Values(snapshot())), []string{"other", "start first"}; !slices.Equal(got, want) {
			t.Errorf("while the first call holds: events = %v, want %v", got, want)
		}
		close(release)
		<-done
		if got, want := snapshot()[2:], []string{"end first", "start second", "end second"}; !slices.Equal(got, want) {
			t.Errorf("events = %v, want … %v", got, want)
		}
	})
}

// TestPositionAndBeforeCall: every call's handler finds its place in the
// turn in its context; BeforeCall sees each validated call
// with normalised arguments, before the handler runs, and an error from it
// keeps the handler from running.
func TestPositionAndBeforeCall(t *testing.T) {
	var mu sync.Mutex
	positions := map[string]tool.Position{}
	ran := map[string]bool{}
	var before []Call
	echo := tool.New("echo", "Echo.", func(ctx context.Context, a echoArgs) (any, error) {
		p, ok := tool.PositionFrom(ctx)
		if !ok {
			return nil, errors.New("no position")
		}
		mu.Lock()
		defer mu.Unlock()
		positions[a.Text] = p
		// BeforeCall ran before this handler.
		if !slices.ContainsFunc(before, func(c Call) bool { return c.ID == p.ID }) {
			return nil, errors.New("handler ran before BeforeCall")
		}
		ran[a.Text] = true
		return "ok", nil
	})
	look := tool.New("look", "Read only.", func(ctx context.Context, a echoArgs) (any, error) { return "seen", nil }, tool.ReadOnly())
	m := script(
		callTools(tc("a", "echo", `"{\"text\":\"r1a\"}"`), tc("b", "echo", `{"text":"r1b"}`), tc("bad", "echo", `{}`)),
		callTools(tc("c", "look", `{"text":"x"}`), tc("d", "echo", `{"text":"refused"}`), tc("e", "echo", `{"text":"r2c"}`)),
		say("done"),
	)
	res := mustRun(t, m, userQ(), []tool.Tool{echo, look}, Options{
		BeforeCall: func(_ context.Context, c Call) error {
			mu.Lock()
			defer mu.Unlock()
			before = append(before, c)
			if strings.Contains(string(c.Arguments), "refused") {
				return errors.New("journal is full")
			}
			return nil
		},
	})
	wantPos := map[string]tool.Position{
		"r1a": {ID: "a", Round: 1, Index: 0},
		"r1b": {ID: "b", Round: 1, Index: 1},
		"r2c": {ID: "e", Round: 2, Index: 2},
	}
	for k, w := range wantPos {
		if positions[k] != w {
			t.Errorf("position of %s = %+v, want %+v", k, positions[k], w)
		}
	}
	if ran["refused"] {
		t.Error("a call BeforeCall refused ran")
	}
	// Calls of a round reach BeforeCall concurrently: compare as sets.
	var ids []string
	for _, c := range before {
		ids = append(ids, c.ID)
	}
	slices.Sort(ids)
	slices.SortFunc(before, func(a, b Call) int { return strings.Compare(a.ID, b.ID) })
	// "bad" fails validation (text is required) and never reaches BeforeCall.
	if want := []string{"a", "b", "c", "d", "e"}; !slices.Equal(ids, want) {
		t.Errorf("BeforeCall ids = %v, want %v", ids, want)
	}
	if string(before[0].Arguments) != `{"text":"r1a"}` {
		t.Errorf("BeforeCall arguments not normalised: %s", before[0].Arguments)
	}
	if !before[2].ReadOnly || before[0].ReadOnly {
		t.Errorf("ReadOnly flags: look=%v echo=%v", before[2].ReadOnly, before[0].ReadOnly)
	}
	var refused CallRecord
	for _, c := range res.Calls {
		if c.ID == "d" {
			refused = c
		}
		if c.ID == "e" && (c.Round != 2 || c.Index != 2) {
			t.Errorf("record of e: round %d index %d", c.Round, c.Index)
		}
	}
	if !refused.IsError || !strings.Contains(errorShape(t, refused.Result), "journal is full") {
		t.Errorf("refused call's result = %+v", refused)
	}
}

type approveFunc func(context.Context, ApprovalRequest) error

func (f approveFunc) Approve(ctx context.Context, r ApprovalRequest) error { return f(ctx, r) }

// A call is recorded (BeforeCall) only once it is approved: one waiting
// for approval, or refused, has not started and is never recorded, so a
// turn stopped while a call waits has done nothing with that call.
func TestBeforeCallComesAfterApproval(t *testing.T) {
	var mu sync.Mutex
	var recorded []string
	m := script(callTools(tc("a", "echo", `{"text":"yes"}`), tc("b", "echo", `{"text":"no"}`)), say("done"))
	res := mustRun(t, m, userQ(), []tool.Tool{echoTool()}, Options{
		Approver: approveFunc(func(_ context.Context, r ApprovalRequest) error {
			mu.Lock()
			defer mu.Unlock()
			if len(recorded) != 0 {
				return errors.New("a call was recorded before it was approved")
			}
			if r.Call.ID == "b" {
				return errors.New("the user said no")
			}
			return nil
		}),
		BeforeCall: func(_ context.Context, c Call) error {
			mu.Lock()
			defer mu.Unlock()
			recorded = append(recorded, c.ID)
			return nil
		},
	})
	if !slices.Equal(recorded, []string{"a"}) {
		t.Errorf("recorded %v, want only the approved call", recorded)
	}
	if len(res.Calls) != 2 || res.Calls[0].IsError || !res.Calls[1].IsError {
		t.Errorf("calls %+v", res.Calls)
	}
}
