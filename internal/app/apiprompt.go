package app

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/llm"
)

// promptRecorder wraps the router's agent and keeps the system prompt of
// the last turns (the debug panel shows the exact prompt).
type promptRecorder struct {
	router.Agent
	now func() time.Time

	mu     sync.Mutex
	last   api.SystemPrompt
	recent []api.SystemPrompt // newest last, one per thread
}

// maxPromptThreads bounds the threads whose last prompt is kept.
const maxPromptThreads = 16

func newPromptRecorder(ag router.Agent, now func() time.Time) *promptRecorder {
	return &promptRecorder{Agent: ag, now: now}
}

func (p *promptRecorder) record(thread chat.ThreadID, res agent.Result) {
	if res.SystemPrompt == "" {
		return
	}
	sp := api.SystemPrompt{Thread: thread, At: p.now().UTC(), Text: res.SystemPrompt, Chars: len([]rune(res.SystemPrompt))}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last = sp
	p.recent = slices.DeleteFunc(p.recent, func(x api.SystemPrompt) bool { return x.Thread == thread })
	p.recent = append(p.recent, sp)
	if len(p.recent) > maxPromptThreads {
		p.recent = slices.Delete(p.recent, 0, len(p.recent)-maxPromptThreads)
	}
}

func (p *promptRecorder) Turn(ctx context.Context, in agent.Input) (agent.Result, error) {
	res, err := p.Agent.Turn(ctx, in)
	p.record(in.Thread, res)
	return res, err
}

func (p *promptRecorder) Seed(ctx context.Context, thread chat.ThreadID, stream llm.StreamFunc) (agent.Result, error) {
	res, err := p.Agent.Seed(ctx, thread, stream)
	p.record(thread, res)
	return res, err
}

// LastPrompt implements api.Prompt.
func (p *promptRecorder) LastPrompt(_ context.Context, thread chat.ThreadID) (api.SystemPrompt, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if thread == "" {
		if p.last.Text == "" {
			return api.SystemPrompt{}, fmt.Errorf("%w: no turn has run since the start", api.ErrNotFound)
		}
		return p.last, nil
	}
	for i := len(p.recent) - 1; i >= 0; i-- {
		if p.recent[i].Thread == thread {
			return p.recent[i], nil
		}
	}
	return api.SystemPrompt{}, fmt.Errorf("%w: no turn on %s since the start", api.ErrNotFound, thread)
}
