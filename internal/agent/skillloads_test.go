package agent

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// recordingSources serves fixed sections and records skill loads.
type recordingSources struct {
	skills []prompt.Skill
	err    error

	mu    sync.Mutex
	loads []string
}

func (r *recordingSources) Memories(context.Context) (string, error) { return "", nil }
func (r *recordingSources) Pulse(context.Context) (string, error) {
	return "[P2] #1: Fix auth bug", nil
}
func (r *recordingSources) Skills(context.Context) ([]prompt.Skill, error) {
	return r.skills, nil
}

func (r *recordingSources) RecordSkillLoads(_ context.Context, thread chat.ThreadID, names []string, mode string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.loads = append(r.loads, fmt.Sprintf("%s %s %s", thread, strings.Join(names, ","), mode))
	return r.err
}

func (r *recordingSources) recorded() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.loads...)
}

func TestSkillLoadsAreRecorded(t *testing.T) {
	skills := []prompt.Skill{
		{Name: "deploy", Summary: "Deploy the blog", Body: "Deploy the blog\n" + strings.Repeat("step ", 20)},
		{Name: "research", Body: "Research a topic\n1. search"},
	}
	cases := []struct {
		name       string
		skills     []prompt.Skill
		limit      int
		err        error
		want       []string
		wantPrompt string
	}{
		{"full", skills, 0, nil, []string{"web:a deploy,research full"}, "### Skill: deploy"},
		{"table of contents over the limit", skills, 50, nil, []string{"web:a deploy,research toc"}, "- deploy: Deploy the blog"},
		{"recorder failure does not fail the turn", skills, 0, errors.New("disk full"), []string{"web:a deploy,research full"}, "### Skill: research"},
		{"no skills, no call", nil, 0, nil, nil, "[P2] #1: Fix auth bug"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			src := &recordingSources{skills: c.skills, err: c.err}
			e := newEnv(t, llmtest.NewScripted(t, llmtest.Reply("ok")), func(o *Options) {
				o.Sources = src
				if c.limit > 0 {
					o.Limits = prompt.Limits{MemoriesChars: 10000, PulseChars: 5000, SkillsChars: c.limit}
				}
			})
			res, err := e.agent.Turn(context.Background(), Input{Thread: "web:a", Text: "hello"})
			if err != nil {
				t.Fatal(err)
			}
			if got := src.recorded(); fmt.Sprint(got) != fmt.Sprint(c.want) {
				t.Errorf("recorded %q, want %q", got, c.want)
			}
			if !strings.Contains(res.SystemPrompt, c.wantPrompt) {
				t.Errorf("system prompt lacks %q:\n%s", c.wantPrompt, res.SystemPrompt)
			}
		})
	}
}
