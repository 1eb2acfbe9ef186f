package router

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
)

// process runs one item on its thread's worker.
func (r *Router) process(ctx context.Context, j *job) outcome {
	switch j.kind {
	case jobNotify:
		return r.processNotify(ctx, j)
	case jobSystemEvent:
		if j.started {
			return r.processInterrupted(ctx, j)
		}
		return r.processEvent(ctx, j)
	case jobRegenerate, jobRetry, jobEdit:
		if !j.started && !r.admit(ctx, j) {
			return r.refuseDeleted(ctx, j)
		}
		return r.processRedo(ctx, j)
	case jobMessage:
		switch {
		case j.started:
			return r.processInterrupted(ctx, j)
		case j.resume:
			return r.processMessage(ctx, j)
		}
		if !r.admit(ctx, j) {
			return r.refuseDeleted(ctx, j)
		}
		if name, args, ok := parseCommand(j.text); ok {
			return r.processCommand(ctx, j, name, args)
		}
		return r.processMessage(ctx, j)
	default:
		r.log.Error("unknown item in the inbox; dropped", "kind", j.kind, "thread", j.thread)
		r.forget(ctx, j)
		return outcome{err: fmt.Errorf("unknown inbox item kind %q", j.kind)}
	}
}

// admit applies a deletion to a user's item on its thread and reports
// whether the item may run. On a deleted thread of a channel whose user
// makes threads (extension.ThreadMaker: the web page) nothing runs until
// the thread is restored. On another channel's (a Telegram chat, a Matrix
// room, the terminal), a message starts a new conversation: the deleted one
// is closed, readable in the archive, never the new one's history
// (conversation.Store.Reopen); a regeneration, retry or edit does not run
// (what it would redo is in the closed conversation).
func (r *Router) admit(ctx context.Context, j *job) bool {
	th, found, err := r.o.Threads.Thread(ctx, j.thread)
	if err != nil {
		// The turn's own store calls will say what is wrong.
		r.log.Warn("could not check whether the conversation was deleted; handled as not", "thread", j.thread, "err", err)
		return true
	}
	if !found || th.ArchivedAt.IsZero() {
		return true
	}
	if j.kind != jobMessage {
		return false
	}
	if tm, ok := r.channel(j.thread.Channel()).(extension.ThreadMaker); ok && tm.MakesThreads() {
		return false
	}
	if _, err := r.o.Threads.Reopen(ctx, j.thread); err != nil {
		r.log.Error("could not start a new conversation on a deleted thread; the message is refused", "thread", j.thread, "err", err)
		return false
	}
	j.greet = true
	r.log.Info("a message to a deleted conversation starts a new one; the deleted one is kept closed", "thread", j.thread, "channel", j.channel)
	return true
}

// refuseDeleted answers an item admit refused: its sender is told
// (DeletedReply) and it is dropped.
func (r *Router) refuseDeleted(ctx context.Context, j *job) outcome {
	r.forget(ctx, j)
	res := agent.Result{Reply: DeletedReply}
	if j.delivers() {
		r.send(ctx, j.channel, chat.Outbound{Address: chat.Address{Channel: j.channel, Thread: j.thread}, Kind: chat.Error, Text: DeletedReply})
	}
	return outcome{res: res, err: fmt.Errorf("%w (%s): restore it to go on with it, or start a new one", ErrDeleted, j.thread)}
}

func (r *Router) processMessage(ctx context.Context, j *job) outcome {
	start := r.o.Now()
	deliver := j.delivers()
	if hasAudio(j.attachments) {
		if reply, ok := r.hear(ctx, j, deliver); !ok {
			return outcome{res: agent.Result{Reply: reply}}
		}
	}
	// A new conversation is greeted in the same model call that answers
	// its first message (the seed is stored before the message): one wait,
	// and the stored order is the order shown.
	greet := r.needsSeed(ctx, j.thread) || j.greet
	in := agent.Input{Thread: j.thread, Sender: j.sender, Received: j.received,
		Text: j.text, Attachments: j.attachments, Kind: agent.KindUser, Greet: greet}
	if r.txEvents() != nil {
		// message.replied is written with the inbox row's removal, one
		// commit, and the agent's closing event (turn.completed) before
		// it. It says the reply was delivered: the turn delivers a reply
		// the router delivers before that commit (turn); a caller that
		// waits for the outcome (Handle) delivers it after.
		j.replied = func(res agent.Result, err error) any { return r.repliedPayload(j, start, res, err) }
		in.EndEvent = func(topic string, payload any) { j.ended = append(j.ended, pendingEvent{topic, payload}) }
	}
	res, err := r.turn(ctx, j, in, deliver, chat.Reply)
	if !j.repliedDone {
		r.publishReplied(ctx, j, start, res, err)
	}
	if err == nil && deliver {
		r.speak(ctx, j, res.Reply)
	}
	if err == nil && r.o.Titles != nil {
		r.o.Titles.Title(ctx, j.thread, j.text, res.Reply)
	}
	return outcome{res, err}
}

// publishReplied publishes the message.replied of j's turn, which began
// at start.
func (r *Router) publishReplied(ctx context.Context, j *job, start time.Time, res agent.Result, err error) {
	r.publish(ctx, TopicMessageReplied, r.repliedPayload(j, start, res, err))
}

// repliedPayload is the payload of the message.replied of j's turn, which
// began at start.
func (r *Router) repliedPayload(j *job, start time.Time, res agent.Result, err error) any {
	return struct {
		Thread     chat.ThreadID `json:"thread"`
		Chars      int           `json:"chars"`
		ToolCalls  int           `json:"tool_calls"`
		DurationMS int64         `json:"duration_ms"`
		Failed     bool          `json:"failed,omitempty"`
	}{j.thread, len([]rune(res.Reply)), len(res.Calls), r.o.Now().Sub(start).Milliseconds(), err != nil}
}

func (r *Router) processEvent(ctx context.Context, j *job) outcome {
	// The supervisor's correction is the assistant correcting its own
	// reply: it is delivered (streamed) as a reply, not as a notification.
	kind := chat.Notify
	if j.origin == agent.OriginSupervisor {
		kind = chat.Reply
	}
	res, err := r.turn(ctx, j, agent.Input{Thread: j.thread, Text: j.text, Kind: agent.KindSystemEvent, Origin: j.origin}, true, kind)
	return outcome{res, err}
}

// processNotify stores and delivers a notification, once: its inbox row is
// marked (with the thread's last message id) before it is stored, so that a
// crash between storing it and removing the row does not store it twice.
func (r *Router) processNotify(ctx context.Context, j *job) outcome {
	if j.started {
		msgs, err := r.o.Threads.Messages(ctx, j.thread, conversation.MessageQuery{AfterID: j.afterID, IncludeArchived: true})
		if err != nil {
			r.log.Error("could not check a notification interrupted by a stop; it stays for the next start", "thread", j.thread, "err", err)
			return outcome{err: fmt.Errorf("check the notification on %s: %w", j.thread, err)}
		}
		if slices.ContainsFunc(msgs, func(m conversation.StoredMessage) bool {
			return m.Message.Role == llm.RoleAssistant && m.Message.Text() == j.text
		}) {
			r.forget(ctx, j)
			return outcome{res: agent.Result{Reply: j.text}}
		}
	} else if _, err := r.beginTurn(ctx, j); err != nil {
		r.log.Error("could not store a notification; it stays for the next start", "thread", j.thread, "err", err)
		return outcome{err: fmt.Errorf("store notification on %s: %w", j.thread, err)}
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	_, err := r.o.Threads.Append(sctx, j.thread, llm.AssistantText(j.text))
	cancel()
	if err != nil {
		// Keep it in the inbox: it is replayed on the next start.
		r.log.Error("could not store a notification", "thread", j.thread, "err", err)
		return outcome{err: fmt.Errorf("store notification on %s: %w", j.thread, err)}
	}
	r.forget(ctx, j)
	r.send(ctx, j.channel, chat.Outbound{Address: chat.Address{Channel: j.channel, Thread: j.thread}, Kind: chat.Notify, Text: j.text})
	return outcome{res: agent.Result{Reply: j.text}}
}

// needsSeed reports whether the thread is new (or has never had a message).
func (r *Router) needsSeed(ctx context.Context, t chat.ThreadID) bool {
	r.mu.Lock()
	known := r.known[t]
	r.mu.Unlock()
	if known {
		return false
	}
	_, created, err := r.o.Threads.EnsureThread(ctx, t)
	if err != nil {
		r.log.Warn("could not check the thread; no seed", "thread", t, "err", err)
		return false
	}
	need := created
	if !created {
		last, err := r.o.Threads.LastMessageID(ctx, t)
		if err != nil {
			r.log.Warn("could not check the thread; no seed", "thread", t, "err", err)
			return false
		}
		need = last == 0
	}
	r.mu.Lock()
	r.known[t] = true
	r.mu.Unlock()
	return need
}

// turn runs in as a turn of j and delivers the reply when deliver is set:
// streamed to a streaming channel (for user messages), else sent with kind.
// The turn is journaled under j's inbox row (see journal.go): the row is
// marked started, every tool call is recorded before it runs and marked
// finished after, and the row goes when the turn has ended — unless the
// router's shutdown cut the turn off, which leaves it for the next start.
func (r *Router) turn(ctx context.Context, j *job, in agent.Input, deliver bool, kind chat.OutboundKind) (agent.Result, error) {
	addr := chat.Address{Channel: j.channel, Thread: j.thread}
	var ch extension.ChannelProvider
	if deliver {
		ch = r.channel(j.channel)
	}
	jl, err := r.beginTurn(ctx, j)
	if err != nil && api.IsDiskFull(err) {
		// The sender is told to send it again (HTTP 507): it must not
		// also be answered after the next start.
		r.log.Error("could not start a turn: the disk is full; the message is dropped and its sender told to send it again", "thread", j.thread, "err", err)
		r.forget(ctx, j)
		res := agent.Result{Reply: "Your message could not be stored: " + api.ErrDiskFull.Error() + ". Free some space and send it again."}
		if ch != nil {
			r.send(ctx, j.channel, chat.Outbound{Address: addr, Kind: chat.Error, Text: res.Reply})
		}
		return res, err
	}
	if err != nil {
		// The item stays in the inbox, unmarked: it is answered after the
		// next start.
		r.log.Error("could not start a turn; the message stays queued for the next start", "thread", j.thread, "err", err)
		res := agent.Result{Reply: "Your message is kept, but its answer could not be started (" + err.Error() + "); it will be answered after the assistant restarts."}
		if ch != nil {
			r.send(ctx, j.channel, chat.Outbound{Address: addr, Kind: chat.Error, Text: res.Reply})
		}
		return res, err
	}
	in.Resume = j.resume
	in.BeforeToolCall = jl.callStarted
	var s *stream
	if sc, ok := ch.(extension.StreamingChannelProvider); ok && kind == chat.Reply {
		s = r.openStream(ctx, sc, addr)
	}
	in.OnToolResult = func(rec toolloop.CallRecord) {
		jl.callFinished(ctx, rec)
		if s != nil {
			s.toolResult(rec)
		}
	}
	if s != nil {
		in.Stream, in.OnToolCall = s.stream, s.toolCall
	}
	res, err := r.o.Agent.Turn(ctx, in)
	deliverReply := func(kept bool) {
		if s != nil {
			s.close(res.Reply, err)
		}
		if s == nil && !kept && ch != nil && strings.TrimSpace(res.Reply) != "" {
			if err != nil {
				kind = chat.Error
			}
			r.send(ctx, j.channel, chat.Outbound{Address: addr, Kind: kind, Text: res.Reply})
		}
	}
	if j.replied != nil && ch != nil && !r.cutOff(j, err) {
		// message.replied, which says the reply was delivered, is written
		// with the inbox row's removal: the delivery comes first (a crash
		// between them delivers the reply again at the next start, as
		// processInterrupted does for a stored reply).
		deliverReply(false)
		r.endTurn(ctx, j, res, err)
		r.handleFollowUps(ctx, res.FollowUps)
		return res, err
	}
	kept := r.endTurn(ctx, j, res, err)
	deliverReply(kept)
	r.handleFollowUps(ctx, res.FollowUps)
	return res, err
}

// endTurn removes j's inbox row once its turn has ended, and reports
// whether it kept it instead: when the router's shutdown cancelled the
// turn, the row stays, and the next start resumes the turn or reports it
// interrupted (see processInterrupted).
func (r *Router) endTurn(ctx context.Context, j *job, res agent.Result, err error) (kept bool) {
	if r.cutOff(j, err) {
		r.log.Info("turn cut off by the shutdown; it is resumed or reported at the next start", "thread", j.thread)
		r.publishEnded(ctx, j)
		return true
	}
	if j.replied != nil && r.forgetReplied(ctx, j, j.replied(res, err)) {
		j.repliedDone = true
		return false
	}
	r.publishEnded(ctx, j)
	r.forget(ctx, j)
	return false
}

// cutOff reports whether the router's shutdown cut j's turn off (it ended
// with err): its inbox row stays for the next start.
func (r *Router) cutOff(j *job, err error) bool {
	return err != nil && errors.Is(err, context.Canceled) && r.shuttingDown()
}

// txEvents returns the event publisher that writes within the shared
// group commit's transactions, or nil when the router cannot (its
// Publisher is no TxPublisher, or it has no Options.Commits).
func (r *Router) txEvents() TxPublisher {
	if tp, ok := r.o.Events.(TxPublisher); ok && r.o.Commits != nil {
		return tp
	}
	return nil
}

// publishEnded publishes the closing events the agent handed j's turn
// (j.ended), when they were not written with its inbox row's removal.
func (r *Router) publishEnded(ctx context.Context, j *job) {
	for _, ev := range j.ended {
		r.publish(ctx, ev.topic, ev.payload)
	}
	j.ended = nil
}

// forgetReplied removes j's inbox row and writes the agent's closing
// event (j.ended) and its message.replied (payload), in this order, in one
// transaction of the shared group commit, and reports whether it did:
// false when the bus cannot write events within it, or the write failed
// (then none is written, and the caller publishes the events and removes
// the row as without it).
func (r *Router) forgetReplied(ctx context.Context, j *job, payload any) bool {
	tp := r.txEvents()
	if tp == nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	evs := append(slices.Clip(j.ended), pendingEvent{TopicMessageReplied, payload})
	var published []func()
	err := r.o.Commits.Write(ctx, func(ctx context.Context, tx *sql.Tx) error {
		published = published[:0]
		if _, err := tx.ExecContext(ctx, `DELETE FROM router_inbox WHERE id = ?`, j.id); err != nil {
			return err
		}
		for _, ev := range evs {
			p, err := tp.PublishTx(ctx, tx, ev.topic, ev.payload)
			if err != nil {
				return err
			}
			published = append(published, p)
		}
		return nil
	}, func() {
		for _, p := range published {
			p()
		}
	})
	if err != nil {
		r.log.Debug("could not remove a processed item from the inbox with its event; trying them apart", "thread", j.thread, "err", err)
		return false
	}
	j.ended = nil
	if r.hasUnforgotten() {
		r.retryForget(ctx)
	}
	return true
}

// processInterrupted handles an item whose turn had started when the
// process last stopped. If the item never reached the conversation it runs
// afresh; if its reply is stored it is delivered (again: the crash may have
// come between storing and delivering it); if no tool
// with side effects had run (every recorded call is read-only) and it has
// been started fewer than MaxTurnStarts times, the turn carries on from the
// stored history; otherwise it is answered with a stored and delivered note
// saying that it was interrupted and what was done.
func (r *Router) processInterrupted(ctx context.Context, j *job) outcome {
	msgs, err := r.o.Threads.Messages(ctx, j.thread, conversation.MessageQuery{AfterID: j.afterID, IncludeArchived: true})
	if err != nil {
		r.log.Error("could not check an interrupted turn; it stays for the next start", "thread", j.thread, "err", err)
		return outcome{err: fmt.Errorf("check the interrupted turn on %s: %w", j.thread, err)}
	}
	// The item is the first user-role message after afterID (a greeting's
	// seed comes before it); replies that failed or stopped do not count.
	msgs = slices.DeleteFunc(msgs, func(m conversation.StoredMessage) bool {
		return m.Marked() || m.Source == conversation.SourceSeed
	})
	stored := slices.IndexFunc(msgs, func(m conversation.StoredMessage) bool { return m.Message.Role == llm.RoleUser })
	j.started = false
	if stored < 0 {
		r.log.Info("a turn stopped before it stored its message; running it again", "thread", j.thread)
		return r.process(ctx, j)
	}
	after := msgs[stored+1:]
	if next := slices.IndexFunc(after, func(m conversation.StoredMessage) bool { return m.Message.Role == llm.RoleUser }); next >= 0 {
		after = after[:next] // another item's (it cannot be: interrupted turns run first)
	}
	if n := len(after); n > 0 && after[n-1].Message.Role == llm.RoleAssistant && len(after[n-1].Message.ToolCalls()) == 0 {
		// The reply was stored; the crash may have come before it was
		// delivered. Deliver it (again: a repeat is better than silence),
		// after removing the row, as reportInterrupted does.
		text := after[n-1].Message.Text()
		r.log.Info("delivering the stored reply of a turn a restart interrupted", "thread", j.thread)
		kind := chat.Reply
		if j.kind == jobSystemEvent {
			kind = chat.Notify
		}
		r.forget(ctx, j)
		r.send(ctx, j.channel, chat.Outbound{Address: chat.Address{Channel: j.channel, Thread: j.thread}, Kind: kind, Text: text})
		return outcome{res: agent.Result{Reply: text}}
	}
	calls, err := r.turnCalls(ctx, j.id)
	if err != nil {
		r.log.Error("could not read an interrupted turn's tool calls; it stays for the next start", "thread", j.thread, "err", err)
		return outcome{err: fmt.Errorf("check the interrupted turn on %s: %w", j.thread, err)}
	}
	if j.attempts < MaxTurnStarts && sideEffectFree(calls) {
		r.log.Info("resuming a turn a restart interrupted", "thread", j.thread, "read_only_calls", len(calls), "starts", j.attempts)
		j.resume = true
		if j.kind == jobSystemEvent {
			return r.processEvent(ctx, j)
		}
		return r.processMessage(ctx, j)
	}
	return r.reportInterrupted(ctx, j, calls)
}

// reportInterrupted stores and delivers the note answering an interrupted
// turn, then removes its inbox row.
func (r *Router) reportInterrupted(ctx context.Context, j *job, calls []TurnCall) outcome {
	text := InterruptedReply(calls, j.attempts)
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	_, err := r.o.Threads.Append(sctx, j.thread, llm.AssistantText(text))
	cancel()
	if err != nil {
		r.log.Error("could not store the note of an interrupted turn; it stays for the next start", "thread", j.thread, "err", err)
		return outcome{err: fmt.Errorf("store the note of the interrupted turn on %s: %w", j.thread, err)}
	}
	r.forget(ctx, j)
	r.log.Warn("a turn interrupted by a restart was answered with a note", "thread", j.thread, "tool_calls", len(calls), "starts", j.attempts)
	kind := chat.Reply
	if j.kind == jobSystemEvent {
		kind = chat.Notify
	}
	r.send(ctx, j.channel, chat.Outbound{Address: chat.Address{Channel: j.channel, Thread: j.thread}, Kind: kind, Text: text})
	return outcome{res: agent.Result{Reply: text}}
}

// InterruptedPrefix starts the note answering a turn a restart interrupted.
const InterruptedPrefix = "My answer to this was interrupted by a restart"

// InterruptedReply is the note answering a turn a restart interrupted after
// starts starts, with calls the tool calls it had recorded.
func InterruptedReply(calls []TurnCall, starts int) string {
	if len(calls) == 0 || sideEffectFree(calls) {
		return fmt.Sprintf("%s %d times, so I stopped trying. Nothing was changed; send it again to retry.", InterruptedPrefix, starts)
	}
	recs := make([]toolloop.CallRecord, len(calls))
	for i, c := range calls {
		recs[i] = toolloop.CallRecord{ID: c.CallID, Name: c.Name, Arguments: c.Arguments, Result: c.Result, IsError: c.IsError, Round: c.Round, Index: c.Index, Interrupted: !c.Finished}
	}
	return InterruptedPrefix + " after tool calls that may have changed things, so I did not start it again. What was done:\n" +
		agent.DescribeCalls(recs) + "\nTell me whether to carry on."
}

func (r *Router) handleFollowUps(ctx context.Context, fs []agent.FollowUp) {
	for _, f := range fs {
		if err := r.enqueueEvent(ctx, f.Thread, f.Text, f.Origin); err != nil {
			r.log.Warn("could not queue a follow-up system event", "thread", f.Thread, "origin", f.Origin, "err", err)
		}
	}
}

// channel returns the named channel, or nil.
func (r *Router) channel(name string) extension.ChannelProvider {
	if r.o.Channels == nil || name == "" {
		return nil
	}
	ch, ok := r.o.Channels.Channel(name)
	if !ok {
		return nil
	}
	return ch
}

// send delivers a complete message; failures are logged (the message is
// already stored).
func (r *Router) send(ctx context.Context, channel string, out chat.Outbound) {
	ch := r.channel(channel)
	if ch == nil {
		r.log.Debug("no channel to deliver to; stored only", "thread", out.Address.Thread, "channel", channel)
		return
	}
	if err := ch.Send(ctx, out); err != nil {
		r.log.Error("channel could not deliver; the message is stored", "channel", channel, "thread", out.Address.Thread, "kind", out.Kind, "err", err)
	}
}

// stream adapts a channel stream to the agent's callbacks. After the first
// channel error it stops writing (the reply is still stored).
type stream struct {
	r      *Router
	s      extension.Stream
	addr   chat.Address
	failed bool
}

func (r *Router) openStream(ctx context.Context, sc extension.StreamingChannelProvider, addr chat.Address) *stream {
	s, err := sc.OpenStream(ctx, addr)
	if err != nil {
		r.log.Warn("could not open a stream; sending the whole reply instead", "channel", addr.Channel, "thread", addr.Thread, "err", err)
		return nil
	}
	return &stream{r: r, s: s, addr: addr}
}

func (s *stream) check(err error) {
	if err != nil && !s.failed {
		s.failed = true
		s.r.log.Error("stream to the channel failed; the reply is stored", "channel", s.addr.Channel, "thread", s.addr.Thread, "err", err)
	}
}

func (s *stream) stream(ev llm.Event) {
	if s.failed {
		return
	}
	if ev.Kind == llm.EventWait && ev.Wait != nil {
		s.check(s.s.Status(extension.StreamStatus{Kind: extension.Waiting, Text: ev.Wait.Words(), Wait: ev.Wait.Delay}))
		return
	}
	if ev.Text == "" {
		return
	}
	switch ev.Kind {
	case llm.EventTextDelta:
		s.check(s.s.Delta(ev.Text))
	case llm.EventThinkingDelta:
		s.check(s.s.Status(extension.StreamStatus{Kind: extension.Thinking, Text: ev.Text}))
	}
}

func (s *stream) toolCall(c toolloop.Call) {
	if s.failed {
		return
	}
	s.check(s.s.Status(extension.StreamStatus{Kind: extension.ToolCallStarted, CallID: c.ID, Tool: c.Name, Arguments: c.Arguments}))
}

func (s *stream) toolResult(c toolloop.CallRecord) {
	if s.failed {
		return
	}
	s.check(s.s.Status(extension.StreamStatus{Kind: extension.ToolCallFinished, CallID: c.ID, Tool: c.Name, Result: c.Result, IsError: c.IsError}))
}

func (s *stream) close(final string, err error) {
	if cerr := s.s.Close(final, err); cerr != nil && !s.failed {
		s.r.log.Error("closing the stream failed; the reply is stored", "channel", s.addr.Channel, "thread", s.addr.Thread, "err", cerr)
	}
}
