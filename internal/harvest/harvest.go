// Package harvest is the memory harvest of seed 001: it mines user-facing
// conversations for personal facts and preferences that the assistant did
// not store itself, by spawning a fire-and-forget sub-session worker (the
// sub_sessions model pool) that reads the current memories and calls
// harvest_memory (append_memory labelling its memories source harvest) for
// each new fact.
//
// # Triggers (per thread, either one)
//
//   - at least MessageThreshold (20) user messages since the last harvest;
//   - IdleTimeout (15 minutes) without activity and at least IdleMinMessages
//     (5) new user messages.
//
// Only user-facing threads are harvested: sub-session threads (sub_…) never
// are. The transcript holds user and assistant messages only (no system
// events, tool calls or results); a message longer than MaxMessageChars is
// cut in the middle (beginning and end kept); the whole transcript keeps the
// most recent messages within MaxTranscriptChars (about 60,000). Each
// harvest is recorded in the interaction log as memory_harvest.
//
// # Cost when idle
//
// Nothing polls: Run reacts to turn.completed events and arms one timer for
// the earliest idle deadline. With no conversation, it does nothing.
//
// # Concurrency and delivery
//
// Run owns the only goroutine. The harvested position of a thread is
// stored (table harvest_state) when the worker is spawned; the workflow
// manager makes the spawned worker durable, so a harvest accepted before a
// crash still runs after the restart. A message is offered to at most one
// harvest.
package harvest

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/conversation"
	"github.com/reverie-ai/reverie/internal/interactions"
	"github.com/reverie-ai/reverie/internal/prompt"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/workflow"
	"github.com/reverie-ai/reverie/llm"
)

//go:embed migrations/*.sql
var migrations embed.FS

// Component is the migration component name.
const Component = "harvest"

// TopicTurnCompleted is the event that makes Run look at a thread (the
// agent's turn.completed).
const TopicTurnCompleted = "turn.completed"

// Threads is what the harvest reads of the conversations.
type Threads interface {
	Threads(ctx context.Context, opts conversation.ListOptions) ([]conversation.Thread, error)
	Thread(ctx context.Context, id chat.ThreadID) (conversation.Thread, bool, error)
	CountUserMessagesSince(ctx context.Context, id chat.ThreadID, sinceID int64) (int, error)
	Messages(ctx context.Context, id chat.ThreadID, q conversation.MessageQuery) ([]conversation.StoredMessage, error)
}

// Spawner starts the worker.
type Spawner interface {
	Spawn(ctx context.Context, req workflow.SpawnRequest) (workflow.SpawnResult, error)
}

// Log records interactions.
type Log interface {
	Log(ctx context.Context, entries ...interactions.Entry) error
}

// Options configure New.
type Options struct {
	DB      *sql.DB
	Threads Threads
	Spawner Spawner
	// Memories returns the current MEMORIES.txt for the worker's context.
	Memories func(ctx context.Context) (string, error)
	// World, when set, returns the world state as the prompt shows it; the
	// same worker then also brings the world state's topics up to date
	// with WorldTool (world_apply_ops), instead of a call every turn.
	World     func(ctx context.Context) string
	WorldTool string
	Log       Log
	// Watch subscribes to live bus events (eventbus.Bus.Watch).
	Watch func(ctx context.Context, prefix string, buffer int) <-chan extension.Event

	MessageThreshold   int           // 20
	IdleTimeout        time.Duration // 15m
	IdleMinMessages    int           // 5
	MaxMessageChars    int           // 2,000
	MaxTranscriptChars int           // 60,000
	// ToolNames are the worker's tools (harvest_memory, the append_memory
	// whose memories are labelled source harvest, and search_memory).
	ToolNames []string
	Now       func() time.Time
	Logger    *slog.Logger
	// Migrations, when set, is the start's shared record of applied
	// migrations (one read for every component); nil: this component
	// reads its own.
	Migrations *sqlite.Migrations
}

// Harvester runs harvests.
type Harvester struct {
	o   Options
	log *slog.Logger

	// pos caches harvest_state (thread → harvested position): the
	// Harvester is its only writer (one agent per data dir), and Run
	// checks a thread after every turn.
	mu  sync.Mutex
	pos map[chat.ThreadID]int64
}

// New migrates the harvest table and returns the Harvester.
func New(ctx context.Context, o Options) (*Harvester, error) {
	if o.DB == nil || o.Threads == nil || o.Spawner == nil {
		return nil, errors.New("harvest: DB, Threads and Spawner are required")
	}
	if err := o.Migrations.Migrate(ctx, o.DB, Component, migrations, "migrations"); err != nil {
		return nil, err
	}
	if o.MessageThreshold <= 0 {
		o.MessageThreshold = 20
	}
	if o.IdleTimeout <= 0 {
		o.IdleTimeout = 15 * time.Minute
	}
	if o.IdleMinMessages <= 0 {
		o.IdleMinMessages = 5
	}
	if o.MaxMessageChars <= 0 {
		o.MaxMessageChars = 2000
	}
	if o.MaxTranscriptChars <= 0 {
		o.MaxTranscriptChars = 60_000
	}
	if len(o.ToolNames) == 0 {
		o.ToolNames = []string{"harvest_memory", "search_memory"}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return &Harvester{o: o, log: o.Logger, pos: map[chat.ThreadID]int64{}}, nil
}

// eligible reports whether a thread may be harvested at all.
func eligible(t chat.ThreadID) bool {
	return t != "" && !strings.HasPrefix(string(t), "sub_")
}

// state is a thread's harvested position.
func (h *Harvester) state(ctx context.Context, t chat.ThreadID) (int64, error) {
	h.mu.Lock()
	last, ok := h.pos[t]
	h.mu.Unlock()
	if ok {
		return last, nil
	}
	err := h.o.DB.QueryRowContext(ctx, `SELECT last_message_id FROM harvest_state WHERE thread = ?`, string(t)).Scan(&last)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return 0, fmt.Errorf("read harvest state of %s: %w", t, err)
	}
	h.remember(t, last)
	return last, nil
}

// remember caches a thread's harvested position, as long as the cache is
// not full (maxCachedPositions: past it, positions are read each time).
func (h *Harvester) remember(t chat.ThreadID, last int64) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if _, ok := h.pos[t]; ok || len(h.pos) < maxCachedPositions {
		h.pos[t] = last
	}
}

// maxCachedPositions bounds the harvested positions kept in memory.
const maxCachedPositions = 4096

// Decision is what Check found for a thread.
type Decision struct {
	NewUserMessages int
	// Now: a harvest is due now (message threshold, or idle long enough).
	Now bool
	// IdleAt is when the idle trigger will be due (zero when it cannot be:
	// too few messages).
	IdleAt time.Time
	Reason string
}

// Check evaluates a thread's triggers at the current time.
func (h *Harvester) Check(ctx context.Context, t chat.ThreadID) (Decision, error) {
	if !eligible(t) {
		return Decision{}, nil
	}
	last, err := h.state(ctx, t)
	if err != nil {
		return Decision{}, err
	}
	n, err := h.o.Threads.CountUserMessagesSince(ctx, t, last)
	if err != nil {
		return Decision{}, err
	}
	d := Decision{NewUserMessages: n}
	if n >= h.o.MessageThreshold {
		d.Now, d.Reason = true, fmt.Sprintf("%d new user messages", n)
		return d, nil
	}
	if n < h.o.IdleMinMessages {
		return d, nil
	}
	th, ok, err := h.o.Threads.Thread(ctx, t)
	if err != nil || !ok {
		return d, err
	}
	d.IdleAt = th.UpdatedAt.Add(h.o.IdleTimeout)
	if !h.o.Now().Before(d.IdleAt) {
		d.Now, d.Reason = true, fmt.Sprintf("idle for %s with %d new user messages", h.o.IdleTimeout, n)
	}
	return d, nil
}

// Harvest spawns the worker for a thread's messages since the last harvest
// and records the new position. It returns the worker's session id, or ""
// when there was nothing to harvest.
func (h *Harvester) Harvest(ctx context.Context, t chat.ThreadID, reason string) (string, error) {
	if !eligible(t) {
		return "", fmt.Errorf("harvest %s: sub-session threads are never harvested", t)
	}
	start := h.o.Now()
	last, err := h.state(ctx, t)
	if err != nil {
		return "", err
	}
	msgs, err := h.o.Threads.Messages(ctx, t, conversation.MessageQuery{AfterID: last, IncludeArchived: true})
	if err != nil {
		return "", fmt.Errorf("harvest %s: %w", t, err)
	}
	if len(msgs) == 0 {
		return "", nil
	}
	transcript, used := Transcript(msgs, h.o.MaxMessageChars, h.o.MaxTranscriptChars)
	newest := msgs[len(msgs)-1].ID
	if used == 0 {
		h.saveState(ctx, t, newest, "")
		return "", nil
	}
	memories := ""
	if h.o.Memories != nil {
		if memories, err = h.o.Memories(ctx); err != nil {
			return "", fmt.Errorf("harvest %s: read memories: %w", t, err)
		}
	}
	obj, tools, wctx := objective, h.o.ToolNames, ""
	if h.o.World != nil && h.o.WorldTool != "" {
		obj += " " + fmt.Sprintf(topicsObjective, h.o.WorldTool)
		tools = append(slices.Clone(tools), h.o.WorldTool)
		wctx = "World state now:\n" + orNone(h.o.World(ctx)) + "\n\n"
	}
	res, err := h.o.Spawner.Spawn(ctx, workflow.SpawnRequest{
		Objective: obj,
		Context:   wctx + "Memories already stored (MEMORIES.txt):\n" + orNone(memories) + "\n\nConversation to mine (" + string(t) + "):\n" + transcript,
		Mode:      prompt.ModeMinimal,
		ToolNames: tools,
	})
	entry := interactions.Entry{Thread: t, Action: interactions.ActionMemoryHarvest, Duration: h.o.Now().Sub(start)}
	detail, _ := json.Marshal(struct {
		Reason   string `json:"reason"`
		Messages int    `json:"messages"`
		Chars    int    `json:"transcript_chars"`
		Session  string `json:"session,omitempty"`
	}{reason, used, utf8.RuneCountInString(transcript), res.ID})
	entry.Detail = detail
	if err != nil {
		entry.Error = err.Error()
		entry.Summary = "memory harvest could not start"
		h.logEntry(ctx, entry)
		return "", fmt.Errorf("harvest %s: spawn worker: %w", t, err)
	}
	entry.Summary = fmt.Sprintf("memory harvest of %d message(s) started as %s (%s)", used, res.ID, reason)
	h.logEntry(ctx, entry)
	h.saveState(ctx, t, newest, res.ID)
	h.log.Info("memory harvest started", "thread", t, "session", res.ID, "messages", used, "reason", reason)
	return res.ID, nil
}

func (h *Harvester) saveState(ctx context.Context, t chat.ThreadID, last int64, session string) {
	if _, err := h.o.DB.ExecContext(context.WithoutCancel(ctx), `INSERT INTO harvest_state (thread, last_message_id, harvested_at, session) VALUES (?, ?, ?, ?)
		ON CONFLICT(thread) DO UPDATE SET last_message_id = excluded.last_message_id, harvested_at = excluded.harvested_at, session = excluded.session`,
		string(t), last, h.o.Now().UnixNano(), session); err != nil {
		h.log.Error("could not save the harvest position; the messages may be harvested again", "thread", t, "err", err)
		h.mu.Lock()
		delete(h.pos, t) // read from the database next time
		h.mu.Unlock()
		return
	}
	h.remember(t, last)
}

func (h *Harvester) logEntry(ctx context.Context, e interactions.Entry) {
	if h.o.Log == nil {
		return
	}
	if err := h.o.Log.Log(context.WithoutCancel(ctx), e); err != nil {
		h.log.Warn("could not log the harvest", "err", err)
	}
}

const objective = `Read the conversation below and store every durable personal fact or preference about the user (people, places, work, health, habits, likes and dislikes, plans with dates, standing decisions) that is not already among the stored memories: call harvest_memory once per fact, with one self-contained sentence each (use search_memory when unsure whether something is already known). Skip small talk, one-off requests, things the assistant said about itself, and anything that looks like a password, key or token. When there is nothing new, store nothing. Finish with one line saying how many facts you stored.`

// topicsObjective is added to the objective when the worker keeps the
// world state's topics (%s: the tool's name).
const topicsObjective = `Then bring the world state's topics up to date: if the topics in play in this conversation differ from the world state's, call %s once with add_topic and remove_topic ops (short topics, the current ones only); otherwise leave it.`

func orNone(s string) string {
	if strings.TrimSpace(s) == "" {
		return "(none)"
	}
	return strings.TrimSpace(s)
}

// Transcript renders user and assistant messages ("User: …" /
// "Assistant: …"), each cut in the middle beyond maxMsg characters, keeping
// the most recent messages within maxTotal characters. It returns the text
// and how many messages it holds.
func Transcript(msgs []conversation.StoredMessage, maxMsg, maxTotal int) (string, int) {
	var parts []string
	total := 0
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i].Message
		var who string
		switch m.Role {
		case llm.RoleUser:
			who = "User"
		case llm.RoleAssistant:
			who = "Assistant"
		default:
			continue
		}
		text := strings.TrimSpace(m.Text())
		if text == "" || msgs[i].Source != conversation.SourceConversation {
			continue
		}
		line := who + ": " + midTruncate(text, maxMsg)
		n := utf8.RuneCountInString(line) + 1
		if total+n > maxTotal {
			break
		}
		total += n
		parts = append(parts, line)
	}
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return strings.Join(parts, "\n"), len(parts)
}

// midTruncate keeps the beginning and the end of s within max characters.
func midTruncate(s string, max int) string {
	r := []rune(s)
	if len(r) <= max {
		return s
	}
	const marker = " […] "
	keep := max - utf8.RuneCountInString(marker)
	if keep < 2 {
		return string(r[:max])
	}
	head := keep / 2
	return string(r[:head]) + marker + string(r[len(r)-(keep-head):])
}

// Run harvests threads as their triggers come due, until ctx ends: at
// start it checks every thread, then reacts to turn.completed events and to
// one timer armed for the earliest idle deadline.
func (h *Harvester) Run(ctx context.Context) error {
	var events <-chan extension.Event
	if h.o.Watch != nil {
		events = h.o.Watch(ctx, TopicTurnCompleted, 256)
	}
	due := map[chat.ThreadID]time.Time{}
	check := func(t chat.ThreadID) {
		d, err := h.Check(ctx, t)
		if err != nil {
			h.log.Warn("harvest check failed", "thread", t, "err", err)
			return
		}
		delete(due, t)
		if d.Now {
			if _, err := h.Harvest(ctx, t, d.Reason); err != nil && ctx.Err() == nil {
				h.log.Warn("memory harvest failed", "thread", t, "err", err)
			}
			return
		}
		if !d.IdleAt.IsZero() {
			due[t] = d.IdleAt
		}
	}
	threads, err := h.o.Threads.Threads(ctx, conversation.ListOptions{})
	if err != nil {
		h.log.Warn("harvest: could not list threads", "err", err)
	}
	for _, th := range threads {
		check(th.ID)
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var next time.Time
		for _, at := range due {
			if next.IsZero() || at.Before(next) {
				next = at
			}
		}
		if !next.IsZero() {
			timer.Reset(max(next.Sub(h.o.Now()), 0))
		}
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			var p struct {
				Thread chat.ThreadID `json:"thread"`
			}
			if json.Unmarshal(ev.Payload, &p) == nil && eligible(p.Thread) {
				check(p.Thread)
			}
		case <-timer.C:
			now := h.o.Now()
			for t, at := range due {
				if !now.Before(at) {
					check(t)
				}
			}
		}
		timer.Stop()
	}
}
