package router

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/toolloop"
)

// MaxTurnStarts is how many times a turn is started: a turn a restart
// interrupted before any tool with side effects ran is started again until
// it has been started this many times; then it is reported as interrupted.
const MaxTurnStarts = 2

// journalTimeout bounds each journal write (made on a detached context, so
// that a cancelled turn still records what happened).
const journalTimeout = 5 * time.Second

// journalResultChars caps the result kept for a finished call: the journal
// only needs enough to tell the user what was done (the full result is in
// the conversation once its round is stored).
const journalResultChars = 2000

// TurnCall is a tool call recorded in the journal of a turn in progress.
type TurnCall struct {
	CallID    string
	Round     int
	Index     int
	Name      string
	Arguments json.RawMessage
	// ReadOnly: the tool declared itself free of side effects.
	ReadOnly bool
	// Finished is false for a call that was recorded before it ran and
	// never marked finished: it was running (or about to) when the process
	// stopped, so its effect is unknown.
	Finished bool
	Result   string
	IsError  bool
}

// journal records one turn's progress under its inbox row. callStarted
// runs on each call's goroutine (after approval, just before the call),
// callFinished on the tool loop's.
type journal struct {
	r     *Router
	inbox int64
	mu    sync.Mutex
	rows  map[string]int64 // call id → router_tool_calls row
}

// beginTurn marks j's inbox row as a turn in progress. For a turn that
// starts afresh (the item is not stored yet) it also records the thread's
// last message id, by which a start-up tells whether the item was stored.
func (r *Router) beginTurn(ctx context.Context, j *job) (*journal, error) {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalTimeout)
	defer cancel()
	now := r.o.Now().UnixNano()
	var err error
	if j.resume {
		err = r.exec(wctx,
			`UPDATE router_inbox SET started_at = ?, attempts = attempts + 1 WHERE id = ?`, now, j.id)
	} else {
		var last int64
		if last, err = r.o.Threads.LastMessageID(wctx, j.thread); err == nil {
			j.afterID = last
			err = r.exec(wctx,
				`UPDATE router_inbox SET started_at = ?, attempts = attempts + 1, after_message_id = ? WHERE id = ?`, now, last, j.id)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("mark the turn on %s as started: %w", j.thread, err)
	}
	j.attempts++
	return &journal{r: r, inbox: j.id, rows: map[string]int64{}}, nil
}

// callStarted records c before it runs (toolloop.Options.BeforeCall).
func (jl *journal) callStarted(ctx context.Context, c toolloop.Call) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalTimeout)
	defer cancel()
	res, err := jl.r.o.DB.ExecContext(wctx,
		`INSERT INTO router_tool_calls (inbox_id, call_id, round, idx, name, arguments, read_only, started_at) VALUES (?,?,?,?,?,?,?,?)`,
		jl.inbox, c.ID, c.Round, c.Index, c.Name, string(c.Arguments), c.ReadOnly, jl.r.o.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("record the tool call: %w", err)
	}
	id, err := res.LastInsertId()
	if err != nil {
		return fmt.Errorf("record the tool call: %w", err)
	}
	jl.mu.Lock()
	jl.rows[c.ID] = id
	jl.mu.Unlock()
	return nil
}

// callFinished marks a recorded call finished with its result. A failure
// is logged: the call has run, and a start-up then reports its effect as
// unknown, which is the safe side.
func (jl *journal) callFinished(ctx context.Context, rec toolloop.CallRecord) {
	jl.mu.Lock()
	id, ok := jl.rows[rec.ID]
	delete(jl.rows, rec.ID)
	jl.mu.Unlock()
	if !ok {
		return // never recorded: it did not run
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalTimeout)
	defer cancel()
	if _, err := jl.r.o.DB.ExecContext(wctx,
		`UPDATE router_tool_calls SET finished_at = ?, result = ?, is_error = ? WHERE id = ?`,
		jl.r.o.Now().UnixNano(), cutRunes(rec.Result, journalResultChars), rec.IsError, id); err != nil {
		jl.r.log.Error("could not mark a tool call finished in the turn journal", "tool", rec.Name, "err", err)
	}
}

// turnCalls returns the calls recorded for the turn of inbox row id, in the
// order they were recorded.
func (r *Router) turnCalls(ctx context.Context, id int64) ([]TurnCall, error) {
	out, err := sqlite.Rows(ctx, r.o.DB, func(row sqlite.Scanner) (TurnCall, error) {
		var (
			c        TurnCall
			args     string
			finished int64
		)
		err := row.Scan(&c.CallID, &c.Round, &c.Index, &c.Name, &args, &c.ReadOnly, &finished, &c.Result, &c.IsError)
		c.Arguments, c.Finished = json.RawMessage(args), finished != 0
		return c, err
	}, `SELECT call_id, round, idx, name, arguments, read_only, finished_at, result, is_error
		   FROM router_tool_calls WHERE inbox_id = ? ORDER BY id`, id)
	if err != nil {
		return nil, fmt.Errorf("read the turn's tool calls: %w", err)
	}
	return out, nil
}

// sideEffectFree reports whether every call is of a read-only tool.
func sideEffectFree(calls []TurnCall) bool {
	for _, c := range calls {
		if !c.ReadOnly {
			return false
		}
	}
	return true
}

func cutRunes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n]) + "…"
}
