package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/agent"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/world"
)

// reconcileTimeout bounds the start-up re-sync of the memory store with
// MEMORIES.txt (it embeds the lines the store lacks).
const reconcileTimeout = time.Minute

// buildMemory opens the long-term memory store and its service, tools and
// context provider.
func (a *App) buildMemory(ctx context.Context, count func(string) int) error {
	cfg := a.Config.Memory
	log := a.Logger.With("component", "memory")
	// With memory.backend: mcp, facts go to the MCP memory server and the
	// episodes stay in Reverie's own store (local_vector): the transcript
	// never leaves the machine.
	backend := memory.Backend(cfg.Backend)
	if cfg.Backend == config.MemoryBackendMCP {
		backend = memory.BackendLocalVector
	}
	var emb embed.Embedder
	var prev memory.Previous
	if backend != memory.BackendFlat {
		es := embedders{a: a, log: log}
		e, fallback, err := es.forStore(ctx, cfg.Embedding)
		if err != nil {
			return err
		}
		emb, prev, a.embedFallback = e, es.previous(ctx), fallback
	}
	store, err := memory.Open(ctx, memory.Options{
		Migrations: a.migrations,
		Backend:    backend, DB: a.DB, DataDir: a.opts.DataDir, Embedder: emb, Previous: prev,
		Now: a.opts.Now, Logger: log, Commits: a.commits,
	})
	if err != nil {
		return fmt.Errorf("open memory store: %w", err)
	}
	if l, ok := store.(interface {
		LoadIndex()
		Loaded() <-chan struct{}
		TrimIndex()
	}); ok {
		// A one-shot process's turn recalls soon: load beside the
		// rest of the start. An agent loads once ready (Run).
		a.loadMemoryIndex, a.memoryIndexLoaded, a.trimMemoryIndex = l.LoadIndex, l.Loaded(), l.TrimIndex
		if a.opts.OneShot {
			l.LoadIndex()
		}
	}
	if cfg.Backend == config.MemoryBackendMCP {
		store = memory.NewSplit(memory.NewRemote(mcpMemory{a: a, cfg: cfg.MCP}, a.opts.Now, log), store)
	}
	a.onClose("memory store", func() error {
		sctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		return store.Shutdown(sctx)
	})
	svc, err := memory.NewService(memory.ServiceOptions{
		Store: store, DataDir: a.opts.DataDir, Now: a.opts.Now, Logger: log,
		Changed: a.dataChangeHook,
	})
	if err != nil {
		return err
	}
	a.Memory = svc
	a.reconcileMemory(ctx)
	if cfg.ContextBudget > 0 {
		a.memoryContext = &memory.RecallContext{Service: svc, Budget: cfg.ContextBudget, Count: count, OnRecall: a.publishRecall}
	}
	return nil
}

// reconcileMemory re-applies MEMORIES.txt to the memory store at start, so
// that lines written while no agent ran (by hand, by a restore, by git) are
// memories (memory.Service.Reconcile). It runs for every process that opens
// the data dir, the CLI's memory commands included. A failure is logged and
// never stops the start; the next start tries again.
func (a *App) reconcileMemory(ctx context.Context) {
	rctx, cancel := context.WithTimeout(ctx, reconcileTimeout)
	defer cancel()
	// The service logs what it changed.
	if _, err := a.Memory.Reconcile(rctx); err != nil {
		a.Logger.Warn("could not re-sync the memory store with MEMORIES.txt; it is retried at the next start",
			"component", "memory", "err", err)
	}
}

// dataChangeHook forwards data-dir changes to the data dir's history when
// versioning is wired (see versioning.go).
func (a *App) dataChangeHook(ctx context.Context, message string, paths ...string) {
	if a.onDataChange != nil {
		a.onDataChange(ctx, message, paths...)
	}
}

// reembed re-embeds, in the background, the memories that have no vector
// of the configured embedding model (after memory.embedding.model changed,
// or after writes while the model did not answer), logging progress and
// publishing memory.reembed.progress / .done / .failed; recall keeps using
// the vectors it has meanwhile. A failed run is retried with backoff
// (from a minute doubling to half an hour, jittered) while memories remain; an
// interrupted one resumes at the next start.
func (a *App) reembed(ctx context.Context) error {
	vs, ok := a.Memory.LocalVectors()
	if !ok || a.embedFallback {
		return nil // with the fallback model nothing is re-embedded (the vectors would be thrown away later)
	}
	log := a.Logger.With("component", "memory")
	backoff := extension.Backoff{Base: time.Minute, Max: 30 * time.Minute}
	for retry := 0; ; retry++ {
		n, err := vs.StaleEmbeddings(ctx)
		if err != nil || n == 0 {
			return nil
		}
		st, _ := vs.Embedding(ctx)
		log.Info("re-embedding memories in the background", "memories", n, "model", st.Model, "recall_uses", st.Serving)
		a.publishReembed(ctx, "memory.reembed.started", st)
		var last time.Time
		err = vs.Reembed(ctx, func(done, total int) {
			if now := time.Now(); done == total || now.Sub(last) > 5*time.Second {
				last = now
				log.Info("re-embedding memories", "done", done, "total", total)
				st, _ := vs.Embedding(ctx)
				a.publishReembed(ctx, "memory.reembed.progress", st)
			}
		})
		if ctx.Err() != nil {
			return nil
		}
		st, _ = vs.Embedding(ctx)
		if err == nil {
			a.publishReembed(ctx, "memory.reembed.done", st)
			return nil
		}
		wait := backoff.Delay(retry)
		log.Error("re-embedding stopped; retrying later (recall keeps the vectors it has)", "err", err, "retry_in", wait)
		a.publishReembed(ctx, "memory.reembed.failed", st)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil
		case <-t.C:
		}
	}
}

// memoryStatus is the /status line of the memory store: the embedding model
// recall uses and, while memories are re-embedded, the progress.
func (a *App) memoryStatus(ctx context.Context) string {
	if a.Memory == nil {
		return ""
	}
	vs, ok := a.Memory.LocalVectors()
	if !ok {
		return ""
	}
	st, err := vs.Embedding(ctx)
	if err != nil {
		return "embedding status unknown (" + err.Error() + ")"
	}
	s := "embedding model " + st.Serving
	switch {
	case st.Running:
		s += fmt.Sprintf("; re-embedding with %s: %d of %d", st.Model, st.Done, st.Total)
	case st.Pending > 0 && st.Model != st.Serving:
		s += fmt.Sprintf("; %d memories to re-embed with %s", st.Pending, st.Model)
	case st.Pending > 0:
		s += fmt.Sprintf("; %d memories without a vector yet", st.Pending)
	}
	if st.Error != "" {
		s += "; last failure: " + a.Secrets.Redact(st.Error)
	}
	if a.memoryContext != nil {
		if l, ok := a.memoryContext.Last(); ok {
			s += fmt.Sprintf("; last turn's recall: %d lines, %d tokens", l.Lines, l.Tokens)
		}
	}
	return s
}

// publishRecall publishes memory.recalled: what a turn's recall added to
// its prompt ({"thread","lines","memory_tokens"}; the page's event list
// shows it). The turn does not wait for it (Bus.PublishDeferred): its next
// write commits it, before the turn's own later events.
func (a *App) publishRecall(ctx context.Context, thread chat.ThreadID, st memory.RecallStats) {
	if a.Bus == nil {
		return
	}
	p := struct {
		Thread chat.ThreadID `json:"thread"`
		memory.RecallStats
	}{thread, st}
	if err := a.Bus.PublishDeferred(ctx, "memory.recalled", p); err != nil && ctx.Err() == nil {
		a.Logger.Warn("could not publish a recall event", "err", err)
	}
}

// publishReembed publishes a re-embedding event (its payload is the
// store's memory.EmbeddingStatus).
func (a *App) publishReembed(ctx context.Context, topic string, st memory.EmbeddingStatus) {
	if a.Bus == nil {
		return
	}
	st.Error = a.Secrets.Redact(st.Error)
	if err := a.Bus.Publish(ctx, topic, st); err != nil && ctx.Err() == nil {
		a.Logger.Warn("could not publish a re-embedding event", "topic", topic, "err", err)
	}
}

// contextProviders are the built-in context providers of every turn.
func (a *App) contextProviders() []extension.ContextProvider {
	var out []extension.ContextProvider
	if a.World != nil {
		out = append(out, worldContext{a.World})
	}
	if a.memoryContext != nil {
		out = append(out, a.memoryContext)
	}
	return out
}

// episodes is the episode writer of the agent (answered turns) and the
// router (overheard group-room messages); ok is false when memory.episodes
// is off.
func (a *App) episodes(loc *time.Location) (w episodeWriter, ok bool) {
	if !a.Config.Memory.Episodes || a.Memory == nil || a.Memory.Flat() {
		return episodeWriter{}, false
	}
	return episodeWriter{mem: a.Memory, world: a.World, loc: loc}, true
}

// episodeWriter stores conversations as episodes through memory.Ingest,
// the one ingest path: the message with its sender's display name, the
// reply under the assistant's name from the world state.
type episodeWriter struct {
	mem   *memory.Service
	world *world.Store // nil: the default name
	loc   *time.Location
}

// assistantName is the speaker of the assistant's replies.
func (w episodeWriter) assistantName() string {
	if w.world != nil {
		if n := strings.TrimSpace(w.world.Get().Identity.AgentName); n != "" {
			return n
		}
	}
	return world.DefaultAgentName
}

// RecordEpisodes stores an answered turn (agent.Episodes), after removing
// the episodes of the turns it redoes.
func (w episodeWriter) RecordEpisodes(ctx context.Context, msg chat.Inbound, reply, replaces string) error {
	if replaces != "" {
		if _, err := w.mem.ForgetEpisodesFrom(ctx, string(msg.Address.Thread), replaces); err != nil {
			return err
		}
	}
	_, err := w.mem.Ingest(ctx, w.loc, msg, memory.Reply{Speaker: w.assistantName(), Text: reply})
	return err
}

// Overheard stores a group-room message the assistant only listened to
// (router.Listener).
func (w episodeWriter) Overheard(ctx context.Context, msg chat.Inbound) error {
	_, err := w.mem.Ingest(ctx, w.loc, msg, memory.Reply{})
	return err
}

// sharedQueryVector runs each turn of the router's agent with room for the
// embedding of its recall's query (memory.ShareQueryVector): the turn's
// episode of the user's message takes it instead of embedding the message
// a second time. Its method has a pointer receiver: through the interface,
// a value's would add a generated frame to every turn's deep stack.
type sharedQueryVector struct{ router.Agent }

func (s *sharedQueryVector) Turn(ctx context.Context, in agent.Input) (agent.Result, error) {
	return s.Agent.Turn(memory.ShareQueryVector(ctx), in)
}

var (
	_ agent.Episodes  = episodeWriter{}
	_ router.Listener = episodeWriter{}
	_ router.Agent    = (*sharedQueryVector)(nil)
)
