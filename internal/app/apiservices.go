package app

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/eventbus"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/pulse"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/scheduler"
	"github.com/reverie-ai/reverie/internal/skills"
	"github.com/reverie-ai/reverie/internal/toolloop"
	"github.com/reverie-ai/reverie/internal/world"
	"github.com/reverie-ai/reverie/llm"
)

// fillAPIServices sets the services the HTTP API serves (extensions reach
// them through api.ServicesFrom) from the agent's components. It runs after
// the runtime is built and before the extensions are initialised. A
// feature whose component this app does not have stays nil and its
// endpoints answer 501.
func (a *App) fillAPIServices(svc *api.Services) {
	svc.Info = apiInfo{a}
	svc.Threads = apiThreads{a.Conversations}
	svc.Chat = apiChat{a.Router}
	svc.Interactions = apiInteractions{a.Interactions}
	svc.Usage = apiUsage{a.Models}
	svc.Events = apiEvents{bus: a.Bus, db: a.DB}
	svc.Setup = apiSetup{a}
	svc.Pairing = apiPairing{a}
	svc.Endpoints = a.Kernel
	if a.prompts != nil {
		svc.Prompt = a.prompts
	}
	if a.Memory != nil {
		svc.Memories = apiMemories{a.Memory}
	}
	a.fillFeatureServices(svc)
}

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

type apiInfo struct{ a *App }

func (i apiInfo) Info(context.Context) (api.AgentInfo, error) {
	out := api.AgentInfo{Version: buildVersion(), ModelsConfigured: i.a.Models.Configured()}
	for _, c := range i.a.Router.Commands() {
		out.Commands = append(out.Commands, api.Command{Name: c.Name, Help: c.Help})
	}
	for _, st := range i.a.Kernel.Status() {
		msg := st.Error
		if st.HealthError != "" {
			msg = st.HealthError
		}
		out.Extensions = append(out.Extensions, api.ExtensionStatus{ID: st.ID, State: string(st.State), Health: string(st.Health), Error: msg})
	}
	return out, nil
}

// buildVersion is the module version and VCS revision of the binary.
func buildVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := bi.Main.Version
	if v == "" || v == "(devel)" {
		v = "dev"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += "+" + s.Value[:12]
		}
	}
	return v
}

type apiThreads struct{ c *conversation.Store }

func (t apiThreads) List(ctx context.Context, q api.ThreadQuery) ([]api.Thread, error) {
	ts, err := t.c.Threads(ctx, conversation.ListOptions{IncludeSubSessions: q.IncludeSubSessions, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]api.Thread, len(ts))
	for i, th := range ts {
		out[i] = api.Thread{ID: th.ID, Channel: th.Channel, Title: th.Title, Language: th.Language,
			CreatedAt: th.CreatedAt, UpdatedAt: th.UpdatedAt, LastUserMessageAt: api.TimePtr(th.LastUserMessageAt)}
	}
	return out, nil
}

func (t apiThreads) Messages(ctx context.Context, thread chat.ThreadID, q api.MessageQuery) ([]api.Message, error) {
	ms, err := t.c.Messages(ctx, thread, conversation.MessageQuery{AfterID: q.AfterID, IncludeArchived: q.IncludeArchived, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]api.Message, len(ms))
	for i, m := range ms {
		out[i] = messageOf(m)
	}
	return out, nil
}

func messageOf(m conversation.StoredMessage) api.Message {
	out := api.Message{ID: m.ID, Role: string(m.Message.Role), CreatedAt: m.CreatedAt, Archived: !m.ArchivedAt.IsZero()}
	var text strings.Builder
	for _, p := range m.Message.Parts {
		switch p := p.(type) {
		case llm.Text:
			text.WriteString(p.Text)
		case llm.Image:
			text.WriteString("[image saved at workspace/" + p.Path + "]")
		case llm.ToolCall:
			out.ToolCalls = append(out.ToolCalls, api.MessageCall{ID: p.ID, Name: p.Name, Arguments: jsonOrString(p.Arguments)})
		case llm.ToolResult:
			out.ToolResults = append(out.ToolResults, api.MessageResult{CallID: p.CallID, Name: p.Name, Result: p.Content, IsError: p.IsError})
		}
	}
	out.Text = text.String()
	out.SystemEvent = m.Source != conversation.SourceConversation
	return out
}

// jsonOrString returns b when it is valid JSON, else b as a JSON string
// (a model's raw arguments may be malformed); empty is {}.
func jsonOrString(b json.RawMessage) json.RawMessage {
	if len(b) == 0 {
		return json.RawMessage("{}")
	}
	if json.Valid(b) {
		return b
	}
	s, _ := json.Marshal(string(b))
	return s
}

type apiChat struct{ r *router.Router }

func (c apiChat) Cancel(_ context.Context, thread chat.ThreadID) bool { return c.r.CancelTurn(thread) }

func (c apiChat) Handle(ctx context.Context, msg chat.Inbound) (api.Reply, error) {
	res, err := c.r.Handle(ctx, msg)
	out := api.Reply{Thread: msg.Address.Thread, Reply: res.Reply, SeedReply: res.SeedReply,
		Usage:     api.Usage{InputTokens: res.Usage.InputTokens, OutputTokens: res.Usage.OutputTokens},
		ToolCalls: make([]api.ToolCall, len(res.Calls))}
	for i, call := range res.Calls {
		out.ToolCalls[i] = toolCallOf(call)
	}
	if err == nil {
		return out, nil
	}
	switch {
	case errors.Is(err, chat.ErrInvalidThreadID), errors.Is(err, router.ErrEmptyText):
		err = fmt.Errorf("%w: %w", api.ErrInvalid, err)
	case errors.Is(err, router.ErrTooLarge):
		err = fmt.Errorf("%w: %w", api.ErrTooLarge, err)
	case errors.Is(err, router.ErrQueueFull):
		err = fmt.Errorf("%w: %w", api.ErrBusy, err)
	case errors.Is(err, router.ErrStopped):
		err = fmt.Errorf("%w: %w", api.ErrUnavailable, err)
	case ctx.Err() != nil && errors.Is(err, ctx.Err()):
		// The caller gave up; the turn still completes and is stored.
	default:
		err = fmt.Errorf("%w: %w", api.ErrTurnFailed, err)
	}
	return out, err
}

func toolCallOf(c toolloop.CallRecord) api.ToolCall {
	return api.ToolCall{ID: c.ID, Name: c.Name, Arguments: jsonOrString(c.Arguments), Result: c.Result, IsError: c.IsError}
}

type apiInteractions struct{ s *interactions.Store }

// knownActions are the interaction log's action names for the filter.
var knownActions = []interactions.Action{
	interactions.ActionInference, interactions.ActionToolCall, interactions.ActionSystemEvent,
	interactions.ActionSeed, interactions.ActionCompaction, interactions.ActionSupervisorCheck,
	interactions.ActionCondenseRequest, interactions.ActionMemoryHarvest, interactions.ActionReflectionRule,
	interactions.ActionReflectionAnalysis,
}

func (i apiInteractions) List(ctx context.Context, q api.InteractionQuery) ([]api.Interaction, error) {
	es, err := i.s.List(ctx, interactions.Filter{Action: interactions.Action(q.Action), Thread: q.Thread,
		Since: q.Since, BeforeID: q.BeforeID, Limit: q.Limit})
	if err != nil {
		return nil, err
	}
	out := make([]api.Interaction, len(es))
	for n, e := range es {
		out[n] = api.Interaction{ID: e.ID, At: e.At, Thread: e.Thread, Action: string(e.Action), Summary: e.Summary,
			Detail: e.Detail, InputTokens: e.InputTokens, OutputTokens: e.OutputTokens,
			DurationMS: e.Duration.Milliseconds(), Error: e.Error}
	}
	return out, nil
}

func (i apiInteractions) Actions() []string {
	out := make([]string, len(knownActions))
	for n, a := range knownActions {
		out[n] = string(a)
	}
	return out
}

type apiUsage struct{ m *modelrouter.Router }

func (u apiUsage) Usage(ctx context.Context, from, to string) ([]api.UsageRow, error) {
	rows, err := u.m.Usage(ctx, from, to)
	if err != nil {
		return nil, err
	}
	out := make([]api.UsageRow, len(rows))
	for i, r := range rows {
		out[i] = api.UsageRow{Day: r.Day, Role: r.Role, Backend: r.Backend, Model: r.Model, Calls: r.Calls,
			Failures: r.Failures, InputTokens: r.InputTokens, OutputTokens: r.OutputTokens}
	}
	return out, nil
}

type apiEvents struct {
	bus *eventbus.Bus
	db  *sql.DB
}

func (e apiEvents) Watch(ctx context.Context, prefix string, buffer int) <-chan extension.Event {
	return e.bus.Watch(ctx, prefix, buffer)
}

func (e apiEvents) Recent(ctx context.Context, prefix string, afterID int64, limit int) ([]extension.Event, error) {
	evs, err := e.bus.Recent(ctx, prefix, afterID, limit)
	if errors.Is(err, eventbus.ErrInvalidTopic) {
		err = fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return evs, err
}

// Last finds the id before the limit-th newest matching event (reading the
// event log's table directly) and pages forward from it.
func (e apiEvents) Last(ctx context.Context, prefix string, limit int) ([]extension.Event, error) {
	var after sql.NullInt64
	err := e.db.QueryRowContext(ctx, `
		SELECT id FROM events WHERE (?1 = '' OR (topic >= ?1 AND topic < ?2))
		ORDER BY id DESC LIMIT 1 OFFSET ?3`, prefix, prefix+"\xff", limit-1).Scan(&after)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		after.Int64 = 0 // fewer than limit: all of them
	case err != nil:
		return nil, fmt.Errorf("read the newest events: %w", err)
	default:
		after.Int64--
	}
	return e.Recent(ctx, prefix, after.Int64, limit)
}

type apiMemories struct{ s *memory.Service }

func memoryError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, memory.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, memory.ErrDuplicate), errors.Is(err, memory.ErrClosed):
		return fmt.Errorf("%w: %w", api.ErrConflict, err)
	case errors.Is(err, memory.ErrEmpty), errors.Is(err, memory.ErrTooLong), errors.Is(err, memory.ErrSecret),
		errors.Is(err, memory.ErrInvalid), errors.Is(err, memory.ErrUnsupported):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func memoryOf(m memory.Memory) api.Memory {
	return api.Memory{ID: m.ID, Text: m.Text, Kind: string(m.Kind), Source: string(m.Source), CreatedAt: m.CreatedAt,
		UpdatedAt: m.UpdatedAt, ValidFrom: m.ValidFrom, ValidTo: m.ValidTo, AccessCount: m.AccessCount,
		LastAccess: m.LastAccess, EventTime: m.EventTime, Thread: m.Thread, SupersededBy: m.SupersededBy}
}

func kindsOf(ks []string) []memory.Kind {
	out := make([]memory.Kind, len(ks))
	for i, k := range ks {
		out[i] = memory.Kind(k)
	}
	return out
}

func (m apiMemories) Search(ctx context.Context, q api.MemorySearch) ([]api.Memory, error) {
	res, err := m.s.Search(ctx, memory.Query{Text: q.Text, Limit: q.Limit, Kinds: kindsOf(q.Kinds), Peek: true})
	if err != nil {
		return nil, memoryError(err)
	}
	out := make([]api.Memory, len(res))
	for i, r := range res {
		out[i] = memoryOf(r.Memory)
		score := r.Score
		out[i].Score = &score
	}
	return out, nil
}

func (m apiMemories) List(ctx context.Context, f api.MemoryFilter) ([]api.Memory, error) {
	srcs := make([]memory.Source, len(f.Sources))
	for i, s := range f.Sources {
		srcs[i] = memory.Source(s)
	}
	ms, err := m.s.List(ctx, memory.Filter{Kinds: kindsOf(f.Kinds), Sources: srcs, IncludeClosed: f.IncludeClosed,
		Limit: f.Limit, Offset: f.Offset})
	if err != nil {
		return nil, memoryError(err)
	}
	out := make([]api.Memory, len(ms))
	for i, x := range ms {
		out[i] = memoryOf(x)
	}
	return out, nil
}

func (m apiMemories) Get(ctx context.Context, id int64) (api.Memory, error) {
	x, err := m.s.Get(ctx, id)
	if err != nil {
		return api.Memory{}, memoryError(err)
	}
	return memoryOf(x), nil
}

// Add remembers a memory the user wrote: it is also kept in MEMORIES.txt.
func (m apiMemories) Add(ctx context.Context, in api.MemoryInput) (api.Memory, error) {
	r, err := m.s.Remember(ctx, memory.Memory{Text: in.Text, Kind: memory.Kind(in.Kind), Source: memory.Source(in.Source),
		EventTime: in.EventTime, Thread: in.Thread}, true)
	if err != nil {
		return api.Memory{}, memoryError(err)
	}
	return m.Get(ctx, r.ID)
}

func (m apiMemories) Update(ctx context.Context, id int64, in api.MemoryInput) (api.Memory, error) {
	x, err := m.s.Get(ctx, id)
	if err != nil {
		return api.Memory{}, memoryError(err)
	}
	// An empty source lets the service decide: a new text is the person's
	// (user_explicit), a metadata-only change keeps the source.
	x.Text, x.Kind, x.EventTime, x.Source = in.Text, memory.Kind(in.Kind), in.EventTime, memory.Source(in.Source)
	if in.Thread != "" {
		x.Thread = in.Thread
	}
	cur, err := m.s.Update(ctx, x)
	if err != nil {
		return api.Memory{}, memoryError(err)
	}
	return m.Get(ctx, cur) // a new text is a new memory (the old one is closed)
}

func (m apiMemories) Forget(ctx context.Context, id int64) error {
	_, err := m.s.Forget(ctx, id)
	return memoryError(err)
}

// apiPulse serves the working memory from the pulse store.
type apiPulse struct{ s *pulse.Store }

func pulseError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, pulse.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, pulse.ErrEmpty), errors.Is(err, pulse.ErrTooLong), errors.Is(err, pulse.ErrSecret),
		errors.Is(err, pulse.ErrPriority), errors.Is(err, pulse.ErrStatus), errors.Is(err, pulse.ErrNoChange):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func pulseItemOf(it pulse.Item) api.PulseItem {
	return api.PulseItem{ID: it.ID, Text: it.Text, Priority: it.Priority, Status: string(it.Status), Thread: string(it.Thread),
		Source: string(it.Source), CreatedAt: it.CreatedAt, UpdatedAt: it.UpdatedAt, CompletedAt: api.TimePtr(it.CompletedAt)}
}

func (p apiPulse) List(ctx context.Context, status string) ([]api.PulseItem, error) {
	f := pulse.Filter{}
	switch status {
	case "all":
	case "":
		f.Status = pulse.StatusActive
	default:
		st, err := pulse.ParseStatus(status)
		if err != nil {
			return nil, pulseError(err)
		}
		f.Status = st
	}
	items, err := p.s.List(ctx, f)
	if err != nil {
		return nil, pulseError(err)
	}
	out := make([]api.PulseItem, len(items))
	for i, it := range items {
		out[i] = pulseItemOf(it)
	}
	return out, nil
}

func (p apiPulse) Add(ctx context.Context, in api.PulseInput) (api.PulseItem, error) {
	n := pulse.NewItem{Source: pulse.SourceUser}
	if in.Text != nil {
		n.Text = *in.Text
	}
	if in.Priority != nil {
		n.Priority = *in.Priority
	}
	if in.Thread != nil {
		n.Thread = chat.ThreadID(*in.Thread)
	}
	it, err := p.s.Add(ctx, n)
	if err != nil {
		return api.PulseItem{}, pulseError(err)
	}
	if in.Status != nil && *in.Status != string(pulse.StatusActive) {
		return p.Update(ctx, it.ID, api.PulseInput{Status: in.Status})
	}
	return pulseItemOf(it), nil
}

func (p apiPulse) Update(ctx context.Context, id int64, in api.PulseInput) (api.PulseItem, error) {
	patch := pulse.Patch{Text: in.Text, Priority: in.Priority}
	if in.Status != nil {
		st, err := pulse.ParseStatus(*in.Status)
		if err != nil {
			return api.PulseItem{}, pulseError(err)
		}
		patch.Status = &st
	}
	if in.Thread != nil {
		t := chat.ThreadID(*in.Thread)
		patch.Thread = &t
	}
	it, err := p.s.Update(ctx, id, patch)
	if err != nil {
		return api.PulseItem{}, pulseError(err)
	}
	return pulseItemOf(it), nil
}

func (p apiPulse) Delete(ctx context.Context, id int64) error { return pulseError(p.s.Delete(ctx, id)) }

// apiSkills serves skills/*.md from the skills store.
type apiSkills struct{ s *skills.Store }

func skillError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, skills.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, skills.ErrInvalidName), errors.Is(err, skills.ErrEmpty), errors.Is(err, skills.ErrTooLong),
		errors.Is(err, skills.ErrSecret):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func skillOf(s skills.Skill) api.Skill {
	return api.Skill{Name: s.Name, Summary: s.Summary, Content: s.Body, Chars: s.Chars, UpdatedAt: s.Modified}
}

func (s apiSkills) List(ctx context.Context) ([]api.Skill, error) {
	list, err := s.s.List(ctx)
	if err != nil {
		return nil, skillError(err)
	}
	out := make([]api.Skill, len(list))
	for i, sk := range list {
		out[i] = skillOf(sk)
	}
	return out, nil
}

func (s apiSkills) Get(ctx context.Context, name string) (api.Skill, error) {
	sk, err := s.s.Get(ctx, name)
	if err != nil {
		return api.Skill{}, skillError(err)
	}
	return skillOf(sk), nil
}

func (s apiSkills) Put(ctx context.Context, name, content string) (api.Skill, error) {
	if _, err := s.s.Save(ctx, name, content); err != nil {
		return api.Skill{}, skillError(err)
	}
	return s.Get(ctx, name)
}

func (s apiSkills) Delete(ctx context.Context, name string) error {
	return skillError(s.s.Delete(ctx, name))
}

// apiWorld serves the world state document from the world store.
type apiWorld struct{ s *world.Store }

func (w apiWorld) Get(context.Context) (api.WorldState, error) {
	b, err := world.Encode(w.s.Get())
	if err != nil {
		return nil, fmt.Errorf("encode the world state: %w", err)
	}
	return b, nil
}

func (w apiWorld) Put(ctx context.Context, doc api.WorldState) (api.WorldState, error) {
	next, err := world.Decode(doc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	st, err := w.s.Replace(ctx, next, "world: edit on the web page")
	if err != nil {
		return nil, fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	b, err := world.Encode(st)
	if err != nil {
		return nil, fmt.Errorf("encode the world state: %w", err)
	}
	return b, nil
}

// apiTasks serves schedules and receipts from the scheduler.
type apiTasks struct{ s *scheduler.Scheduler }

func taskError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, scheduler.ErrNotFound):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, scheduler.ErrFinished), errors.Is(err, scheduler.ErrJobTask):
		return fmt.Errorf("%w: %w", api.ErrConflict, err)
	case errors.Is(err, scheduler.ErrInvalidTask), errors.Is(err, scheduler.ErrInvalidSpec),
		errors.Is(err, scheduler.ErrPast), errors.Is(err, scheduler.ErrUnknownZone):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func scheduleOf(sp scheduler.Spec) api.Schedule {
	out := api.Schedule{Kind: string(sp.Kind), At: api.TimePtr(sp.At), Time: sp.Time, Weekdays: sp.Weekdays, Day: sp.Day,
		WindowStart: sp.WindowStart, WindowEnd: sp.WindowEnd, Cron: sp.Cron, Start: api.TimePtr(sp.Start), Zone: sp.Zone}
	if sp.Every != 0 {
		out.Every = time.Duration(sp.Every).String()
	}
	return out
}

func specOf(s api.Schedule) (scheduler.Spec, error) {
	sp := scheduler.Spec{Kind: scheduler.Kind(s.Kind), Time: s.Time, Weekdays: s.Weekdays, Day: s.Day,
		WindowStart: s.WindowStart, WindowEnd: s.WindowEnd, Cron: s.Cron, Zone: s.Zone}
	if s.At != nil {
		sp.At = *s.At
	}
	if s.Start != nil {
		sp.Start = *s.Start
	}
	if s.Every != "" {
		d, err := scheduler.ParseDuration(s.Every)
		if err != nil {
			return sp, err
		}
		sp.Every = scheduler.Duration(d)
	}
	return sp, nil
}

func taskOf(t scheduler.Task) api.Task {
	return api.Task{ID: t.ID, Kind: string(t.Kind), Text: t.Text, AIPrompt: t.AIPrompt, Thread: string(t.Thread),
		SubSession: t.SubSession, Job: t.Job, Schedule: scheduleOf(t.Spec), Description: t.Description,
		Status: string(t.Status), NextRun: api.TimePtr(t.NextRun), LastRun: api.TimePtr(t.LastRun),
		LastOutcome: string(t.LastOutcome), Runs: t.Runs, Failures: t.Failures, CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
}

func (t apiTasks) List(ctx context.Context, q api.TaskQuery) ([]api.Task, error) {
	var sts []scheduler.Status
	for _, s := range q.Statuses {
		sts = append(sts, scheduler.Status(s))
	}
	list, err := t.s.List(ctx, scheduler.ListOptions{Thread: q.Thread, Statuses: sts, Jobs: q.Jobs})
	if err != nil {
		return nil, taskError(err)
	}
	out := make([]api.Task, len(list))
	for i, x := range list {
		out[i] = taskOf(x)
	}
	return out, nil
}

func (t apiTasks) one(x scheduler.Task, err error) (api.Task, error) {
	if err != nil {
		return api.Task{}, taskError(err)
	}
	return taskOf(x), nil
}

func (t apiTasks) Get(ctx context.Context, id string) (api.Task, error) {
	return t.one(t.s.Get(ctx, id))
}

func (t apiTasks) Add(ctx context.Context, in api.TaskInput) (api.Task, error) {
	sp, err := specOf(in.Schedule)
	if err != nil {
		return api.Task{}, taskError(err)
	}
	return t.one(t.s.Add(ctx, scheduler.NewTask{Text: in.Text, AIPrompt: in.AIPrompt, Thread: chat.ThreadID(in.Thread),
		SubSession: in.SubSession, Spec: sp}))
}

func (t apiTasks) Pause(ctx context.Context, id string) (api.Task, error) {
	return t.one(t.s.Pause(ctx, id))
}

func (t apiTasks) Resume(ctx context.Context, id string) (api.Task, error) {
	return t.one(t.s.Resume(ctx, id))
}

func (t apiTasks) Cancel(ctx context.Context, id string) (api.Task, error) {
	return t.one(t.s.Cancel(ctx, id))
}

func (t apiTasks) Receipts(ctx context.Context, q api.ReceiptQuery) ([]api.Receipt, error) {
	rs, err := t.s.Receipts(ctx, q.TaskID, q.Limit)
	if err != nil {
		return nil, taskError(err)
	}
	out := make([]api.Receipt, len(rs))
	for i, r := range rs {
		out[i] = api.Receipt{ID: r.ID, TaskID: r.TaskID, ScheduledAt: r.ScheduledAt, StartedAt: r.StartedAt,
			Outcome: string(r.Outcome), Reason: r.Reason, Count: r.Count, CatchUp: r.CatchUp,
			DurationMS: r.Duration.Milliseconds(), Usage: api.Usage{InputTokens: r.Usage.InputTokens, OutputTokens: r.Usage.OutputTokens}}
	}
	return out, nil
}

// apiSetup lists the configuration forms of the extensions (SetupProvider)
// and applies them.
type apiSetup struct{ a *App }

func (s apiSetup) Forms(ctx context.Context) (api.SetupStatus, error) {
	out := api.SetupStatus{Configured: s.a.Models.Configured(), Forms: []api.SetupForm{s.modelsForm()}}
	provs := s.a.Kernel.SetupProviders()
	ids := make([]string, 0, len(provs))
	for id := range provs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		out.Forms = append(out.Forms, formOf(id, provs[id].SetupSchema(ctx)))
	}
	return out, nil
}

func formOf(id string, sc extension.SetupSchema) api.SetupForm {
	f := api.SetupForm{ID: id, Title: sc.Title, Description: sc.Description, Configured: sc.Configured,
		Fields: make([]api.SetupField, len(sc.Fields))}
	for i, fl := range sc.Fields {
		f.Fields[i] = api.SetupField{Key: fl.Key, Label: fl.Label, Kind: string(fl.Kind), Options: fl.Options,
			Default: fl.Default, Required: fl.Required, Help: fl.Help}
	}
	return f
}

func (s apiSetup) Apply(ctx context.Context, form string, values map[string]string) (string, error) {
	if form == modelsFormID {
		return s.applyModels(ctx, values)
	}
	p, ok := s.a.Kernel.SetupProviders()[form]
	if !ok {
		return "", fmt.Errorf("%w: no setup form %q", api.ErrNotFound, form)
	}
	sc := p.SetupSchema(ctx)
	for _, f := range sc.Fields {
		if f.Required && strings.TrimSpace(values[f.Key]) == "" {
			return "", fmt.Errorf("%w: %s is required", api.ErrInvalid, f.Label)
		}
	}
	if err := p.ApplySetup(ctx, extension.SetupValues(values)); err != nil {
		return "", fmt.Errorf("%w: %w", api.ErrTestFailed, err)
	}
	return "Saved.", nil
}

// fillFeatureServices adds the services of the features built on their own
// stores: pulse (App.Pulse), skills (App.Skills), world state (App.World)
// and the data dir's history (App.Versions). Tasks are filled from the
// scheduler and workflows from the workflow manager once the app holds
// them.
func (a *App) fillFeatureServices(svc *api.Services) {
	if a.Pulse != nil {
		svc.Pulse = apiPulse{a.Pulse}
	}
	if a.Skills != nil {
		svc.Skills = apiSkills{a.Skills}
	}
	if a.World != nil {
		svc.World = apiWorld{a.World}
	}
	if a.Scheduler != nil {
		svc.Tasks = apiTasks{a.Scheduler}
	}
	if a.Versions != nil {
		svc.History = apiHistory{a}
	}
}

// panelURL is the web debug panel's address for /debug, asked from the web
// channel ("" when it is not running).
func (a *App) panelURL() string {
	ch, ok := a.Kernel.Channel("web")
	if !ok {
		return ""
	}
	if p, ok := ch.(interface{ PanelURL() string }); ok {
		return p.PanelURL()
	}
	return ""
}
