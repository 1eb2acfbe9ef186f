package router

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/llm"
)

// process runs one item on its thread's worker.
func (r *Router) process(ctx context.Context, j *job) outcome {
	switch j.kind {
	case jobNotify:
		return r.processNotify(ctx, j)
	case jobSystemEvent:
		return r.processEvent(ctx, j)
	case jobMessage:
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

func (r *Router) processMessage(ctx context.Context, j *job) outcome {
	start := r.o.Now()
	deliver := j.done == nil
	var seedReply string
	if r.needsSeed(ctx, j.thread) {
		res, err := r.seed(ctx, j.thread, j.channel, deliver)
		if err == nil {
			seedReply = res.Reply
		}
	}
	res, err := r.turn(ctx, j, agent.Input{Thread: j.thread, Text: j.text, Kind: agent.KindUser}, deliver, chat.Reply)
	res.SeedReply = seedReply
	r.publish(ctx, TopicMessageReplied, struct {
		Thread     chat.ThreadID `json:"thread"`
		Chars      int           `json:"chars"`
		ToolCalls  int           `json:"tool_calls"`
		DurationMS int64         `json:"duration_ms"`
		Failed     bool          `json:"failed,omitempty"`
	}{j.thread, len([]rune(res.Reply)), len(res.Calls), r.o.Now().Sub(start).Milliseconds(), err != nil})
	return outcome{res, err}
}

func (r *Router) processEvent(ctx context.Context, j *job) outcome {
	res, err := r.turn(ctx, j, agent.Input{Thread: j.thread, Text: j.text, Kind: agent.KindSystemEvent, Origin: j.origin}, true, chat.Notify)
	return outcome{res, err}
}

func (r *Router) processNotify(ctx context.Context, j *job) outcome {
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

// seed runs the conversation seed and delivers its reply (streamed when the
// channel streams) when deliver is set. A failed seed is logged, not
// delivered: the user's own message comes next and reports the problem.
func (r *Router) seed(ctx context.Context, t chat.ThreadID, channel string, deliver bool) (agent.Result, error) {
	var ch extension.ChannelProvider
	if deliver {
		ch = r.channel(channel)
	}
	if sc, ok := ch.(extension.StreamingChannelProvider); ok {
		if s := r.openStream(ctx, sc, chat.Address{Channel: channel, Thread: t}); s != nil {
			res, err := r.o.Agent.Seed(ctx, t, s.stream)
			s.close(res.Reply, err)
			if err != nil {
				r.log.Warn("conversation seed failed", "thread", t, "err", err)
			}
			return res, err
		}
	}
	res, err := r.o.Agent.Seed(ctx, t, nil)
	if err != nil {
		r.log.Warn("conversation seed failed", "thread", t, "err", err)
		return res, err
	}
	r.handleFollowUps(ctx, res.FollowUps)
	if ch != nil && res.Reply != "" {
		r.send(ctx, channel, chat.Outbound{Address: chat.Address{Channel: channel, Thread: t}, Kind: chat.Notify, Text: res.Reply})
	}
	return res, nil
}

// turn runs in as a turn of j and delivers the reply when deliver is set:
// streamed to a streaming channel (for user messages), else sent with kind.
func (r *Router) turn(ctx context.Context, j *job, in agent.Input, deliver bool, kind chat.OutboundKind) (agent.Result, error) {
	in.Saved = func() { r.forget(ctx, j) }
	addr := chat.Address{Channel: j.channel, Thread: j.thread}
	var ch extension.ChannelProvider
	if deliver {
		ch = r.channel(j.channel)
	}
	if sc, ok := ch.(extension.StreamingChannelProvider); ok && kind == chat.Reply {
		if s := r.openStream(ctx, sc, addr); s != nil {
			in.Stream, in.OnToolCall, in.OnToolResult = s.stream, s.toolCall, s.toolResult
			res, err := r.o.Agent.Turn(ctx, in)
			s.close(res.Reply, err)
			r.handleFollowUps(ctx, res.FollowUps)
			return res, err
		}
	}
	res, err := r.o.Agent.Turn(ctx, in)
	r.handleFollowUps(ctx, res.FollowUps)
	if ch != nil && strings.TrimSpace(res.Reply) != "" {
		if err != nil {
			kind = chat.Error
		}
		r.send(ctx, j.channel, chat.Outbound{Address: addr, Kind: kind, Text: res.Reply})
	}
	return res, err
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
	if s.failed || ev.Kind != llm.EventTextDelta || ev.Text == "" {
		return
	}
	s.check(s.s.Delta(ev.Text))
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
