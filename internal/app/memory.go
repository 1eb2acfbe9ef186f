package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/providers/openai"
)

// embedProbeTimeout bounds the one call that asks an embedding model for
// its vector size at start.
const embedProbeTimeout = 15 * time.Second

// reconcileTimeout bounds the start-up re-sync of the memory store with
// MEMORIES.txt (it embeds the lines the store lacks).
const reconcileTimeout = time.Minute

// buildMemory opens the long-term memory store and its service, tools and
// context provider.
func (a *App) buildMemory(ctx context.Context, count func(string) int) error {
	cfg := a.Config.Memory
	log := a.Logger.With("component", "memory")
	var store memory.Store
	if cfg.Backend == config.MemoryBackendMCP {
		store = memory.NewRemote(mcpMemory{a: a, cfg: cfg.MCP}, a.opts.Now, log)
	} else {
		var emb embed.Embedder
		if cfg.Backend != string(memory.BackendFlat) {
			e, err := a.embedder(ctx, cfg.Embedding)
			if err != nil {
				return err
			}
			emb = e
		}
		s, err := memory.Open(ctx, memory.Options{
			Backend: memory.Backend(cfg.Backend), DB: a.DB, DataDir: a.opts.DataDir, Embedder: emb,
			Now: a.opts.Now, Logger: log,
		})
		if err != nil {
			return fmt.Errorf("open memory store: %w", err)
		}
		store = s
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
		a.memoryContext = &memory.RecallContext{Service: svc, Budget: cfg.ContextBudget, Count: count}
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

// embedder returns the configured embedding model, cached by content hash in
// the database, or the offline embedder.
func (a *App) embedder(ctx context.Context, ec config.EmbeddingConfig) (embed.Embedder, error) {
	if ec.Model == "" {
		return embed.NewOffline(embed.DefaultDimensions), nil
	}
	backend, model, _ := strings.Cut(ec.Model, "/") // validated by config
	bc := a.Config.Models.Backends[backend]
	key, err := bc.APIKey.Resolve()
	if err != nil {
		return nil, fmt.Errorf("models.backends.%s.api_key: %w", backend, err)
	}
	base := bc.BaseURL
	if bc.Kind == config.ModelKindOllama {
		base = modelrouter.OllamaV1(base)
	}
	p, err := openai.NewEmbedder(openai.Options{
		Name: ec.Model, BaseURL: base, APIKey: key, Model: model, Dimensions: ec.Dimensions, BatchSize: ec.BatchSize,
		Timeouts: providers.Timeouts{Total: 2 * time.Minute},
	})
	if err != nil {
		return nil, fmt.Errorf("memory.embedding.model: %w", err)
	}
	dims := ec.Dimensions
	if dims == 0 {
		pctx, cancel := context.WithTimeout(ctx, embedProbeTimeout)
		vecs, err := p.Embed(pctx, []string{"dimension probe"})
		cancel()
		if err != nil || len(vecs) != 1 || len(vecs[0]) == 0 {
			a.Logger.Error("the embedding model did not answer; using the offline embedder until it does (set memory.embedding.dimensions to skip this probe)",
				"model", ec.Model, "err", err)
			return embed.NewOffline(embed.DefaultDimensions), nil
		}
		dims = len(vecs[0])
	}
	cached, err := embed.NewCached(ctx, embed.Wrap(p, dims, ec.Model+fmt.Sprintf("@%d", dims)), a.DB)
	if err != nil {
		return nil, fmt.Errorf("open embedding cache: %w", err)
	}
	return cached, nil
}

// reembed re-embeds, in the background, memories whose vectors were made by
// another embedding model (after memory.embedding.model changed), logging
// progress. It returns when done or when ctx ends; an interrupted run
// resumes at the next start.
func (a *App) reembed(ctx context.Context) error {
	vs, ok := a.Memory.Vectors()
	if !ok {
		return nil
	}
	n, err := vs.StaleEmbeddings(ctx)
	if err != nil || n == 0 {
		return nil
	}
	log := a.Logger.With("component", "memory")
	log.Info("embedding model changed: re-embedding memories in the background", "memories", n)
	last := time.Time{}
	err = vs.Reembed(ctx, func(done, total int) {
		if now := time.Now(); done == total || now.Sub(last) > 5*time.Second {
			last = now
			log.Info("re-embedding memories", "done", done, "total", total)
		}
	})
	if err != nil && ctx.Err() == nil {
		log.Error("re-embedding stopped; it resumes at the next start", "err", err)
	}
	return nil
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
