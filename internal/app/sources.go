package app

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/skills"
)

// skillLoadRetention is how long skill load records are kept (the
// reflection cycle looks back days, not months).
const skillLoadRetention = 90 * 24 * time.Hour

// Sources supplies the variable sections of the agent's system prompt:
// memories, the active pulse and the skills. It implements agent.Sources,
// agent.Sizes and agent.SkillLoadRecorder.
type Sources struct {
	// MemoriesText returns the memories section (MEMORIES.txt or the memory
	// store's working set); nil means no memories.
	MemoriesText func(ctx context.Context) (string, error)
	// PulseStore holds the pulse items; nil means no pulse section.
	PulseStore *pulse.Store
	// SkillStore holds the skills; nil means no skills.
	SkillStore *skills.Store
}

// Memories returns MemoriesText's text.
func (s *Sources) Memories(ctx context.Context) (string, error) {
	if s.MemoriesText == nil {
		return "", nil
	}
	return s.MemoriesText(ctx)
}

// Pulse returns the active pulse items, one "[P2] #3: text" line each.
func (s *Sources) Pulse(ctx context.Context) (string, error) {
	if s.PulseStore == nil {
		return "", nil
	}
	return s.PulseStore.Format(ctx)
}

// Skills returns the non-empty skills by name (cached; see package skills).
func (s *Sources) Skills(ctx context.Context) ([]prompt.Skill, error) {
	if s.SkillStore == nil {
		return nil, nil
	}
	return s.SkillStore.Prompt(ctx)
}

// ComponentSizes measures the three size-limited components in characters.
func (s *Sources) ComponentSizes(ctx context.Context) (agent.ComponentSizes, error) {
	var out agent.ComponentSizes
	mem, err := s.Memories(ctx)
	if err != nil {
		return out, err
	}
	out.MemoriesChars = utf8.RuneCountInString(mem)
	p, err := s.Pulse(ctx)
	if err != nil {
		return out, err
	}
	out.PulseChars = utf8.RuneCountInString(p)
	if s.SkillStore != nil {
		if out.SkillsChars, err = s.SkillStore.TotalChars(ctx); err != nil {
			return out, err
		}
	}
	return out, nil
}

// RecordSkillLoads records which skills thread's prompt carried (mode
// agent.SkillLoadFull or agent.SkillLoadTOC).
func (s *Sources) RecordSkillLoads(ctx context.Context, thread chat.ThreadID, names []string, mode string) error {
	if s.SkillStore == nil {
		return nil
	}
	return s.SkillStore.RecordLoads(ctx, thread, names, skills.LoadMode(mode))
}

var (
	_ agent.Sources           = (*Sources)(nil)
	_ agent.Sizes             = (*Sources)(nil)
	_ agent.SkillLoadRecorder = (*Sources)(nil)
)

// buildPulseAndSkills opens the pulse and skills stores, builds the prompt
// sources over them and the memory service, and adds their tools.
func (a *App) buildPulseAndSkills(ctx context.Context) error {
	ps, err := pulse.Open(ctx, a.DB, pulse.Options{
		Migrations: a.migrations,
		Now:        a.opts.Now,
		Changed: func(ctx context.Context, c pulse.Change) {
			// The change is committed: publish it even if the caller's
			// context ends now.
			pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			if err := a.Bus.Publish(pctx, pulse.TopicChanged, c); err != nil {
				a.Logger.Warn("could not publish a pulse change", "change", c, "err", err)
			}
		},
	})
	if err != nil {
		return fmt.Errorf("open pulse: %w", err)
	}
	a.onClose("pulse", ps.Close)
	a.Pulse = ps
	ss, err := skills.Open(ctx, skills.Options{
		Migrations: a.migrations,
		DataDir:    a.opts.DataDir, DB: a.DB, MaxBodyChars: a.Config.Limits.SkillsChars,
		Changed: a.dataChangeHook, Now: a.opts.Now, Logger: a.Logger.With("component", "skills"),
	})
	if err != nil {
		return fmt.Errorf("open skills: %w", err)
	}
	a.Skills = ss
	a.Sources = &Sources{MemoriesText: a.memoriesText, PulseStore: ps, SkillStore: ss}
	a.coreTools = append(a.coreTools, pulse.Tool(ps), skills.AddTool(ss), skills.ReadTool(ss))
	return nil
}

// memoriesText is the memories section: the memory service's working set
// (MEMORIES.txt), or the file itself when the service is not built.
func (a *App) memoriesText(ctx context.Context) (string, error) {
	if a.Memory != nil {
		return a.Memory.WorkingSet(ctx)
	}
	return agent.DataDirSources{Dir: a.opts.DataDir}.Memories(ctx)
}

// registerPulseCommand replaces the /pulse placeholder: the active items,
// or with "all" also the most recently closed ones.
func (a *App) registerPulseCommand(rt *router.Router) error {
	return rt.Register(router.Command{
		Name: "pulse",
		Help: "show the pulse (work in progress); /pulse all adds recently closed items",
		Run: func(ctx context.Context, cc router.CommandContext) (string, error) {
			return pulseCommand(ctx, a.Pulse, cc.Args)
		},
	})
}

// pulseUsage answers /pulse with words it does not take.
const pulseUsage = "Usage: /pulse (the active items), or /pulse all (recently closed items too)."

// closedShown caps the closed items /pulse all lists.
const closedShown = 10

func pulseCommand(ctx context.Context, ps *pulse.Store, args string) (string, error) {
	all := false
	switch strings.ToLower(strings.TrimSpace(args)) {
	case "":
	case "all":
		all = true
	default:
		return pulseUsage, nil
	}
	active, err := ps.Active(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if len(active) == 0 {
		b.WriteString("The pulse is empty: nothing is in progress.")
	} else {
		fmt.Fprintf(&b, "Active pulse (%d):\n%s", len(active), pulse.FormatItems(active))
	}
	if !all {
		return b.String(), nil
	}
	var closed []pulse.Item
	for _, st := range []pulse.Status{pulse.StatusCompleted, pulse.StatusCancelled} {
		items, err := ps.List(ctx, pulse.Filter{Status: st, Limit: closedShown})
		if err != nil {
			return "", err
		}
		closed = append(closed, items...)
	}
	if len(closed) == 0 {
		return b.String(), nil
	}
	// Most recently closed first, across both statuses.
	slices.SortStableFunc(closed, func(x, y pulse.Item) int { return y.CompletedAt.Compare(x.CompletedAt) })
	if len(closed) > closedShown {
		closed = closed[:closedShown]
	}
	b.WriteString("\n\nRecently closed:")
	for _, it := range closed {
		fmt.Fprintf(&b, "\n%s (%s %s)", it.Line(), it.Status, it.CompletedAt.Format(time.DateOnly))
	}
	return b.String(), nil
}

// purgePulseAndSkillLoads is the housekeeping of this file's stores: closed
// pulse items after 30 days (dreaming does it too), skill load records after
// skillLoadRetention.
func (a *App) purgePulseAndSkillLoads(ctx context.Context) {
	if a.Pulse != nil {
		if n, err := a.Pulse.PurgeCompleted(ctx, pulse.DefaultPurgeAge); err != nil {
			a.Logger.Warn("purge closed pulse items", "err", err)
		} else if n > 0 {
			a.Logger.Info("purged closed pulse items", "count", n)
		}
	}
	if a.Skills != nil {
		if n, err := a.Skills.PurgeLoads(ctx, a.opts.Now().Add(-skillLoadRetention)); err != nil {
			a.Logger.Warn("purge skill load records", "err", err)
		} else if n > 0 {
			a.Logger.Info("purged skill load records", "count", n)
		}
	}
}
