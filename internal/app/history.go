package app

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/versioning"
)

// restoreTimeout bounds one restore of the data dir's history (every
// versioned file rewritten and synced, two commits, the reloads).
const restoreTimeout = time.Minute

// publishTimeout bounds publishing the restore's event.
const publishTimeout = 10 * time.Second

// apiHistory serves the data dir's history (api.History) from App.Versions;
// it is offered only when the history could be opened at start.
type apiHistory struct{ a *App }

var _ api.History = apiHistory{}

// historyError maps versioning's errors to the API's.
func historyError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, versioning.ErrUnknownRevision):
		return fmt.Errorf("%w: %w", api.ErrNotFound, err)
	case errors.Is(err, versioning.ErrAmbiguousRevision), errors.Is(err, versioning.ErrNotTracked):
		return fmt.Errorf("%w: %w", api.ErrInvalid, err)
	}
	return err
}

func revisionOf(r versioning.Revision) api.Revision {
	files := r.Files
	if files == nil {
		files = []string{}
	}
	return api.Revision{Hash: r.Hash, Short: r.Short, Time: r.Time, Message: r.Message, Files: files}
}

func (h apiHistory) List(ctx context.Context, q api.HistoryQuery) ([]api.Revision, error) {
	revs, err := h.a.Versions.History(ctx, q.Path, max(q.Limit, 0))
	if err != nil {
		return nil, historyError(err)
	}
	out := make([]api.Revision, len(revs))
	for i, r := range revs {
		out[i] = revisionOf(r)
	}
	return out, nil
}

func (h apiHistory) Get(ctx context.Context, rev string) (api.RevisionDiff, error) {
	d, err := h.a.Versions.Show(ctx, rev)
	if err != nil {
		return api.RevisionDiff{}, historyError(err)
	}
	patch, cut := truncatePatch(d.Patch, api.MaxPatchBytes)
	return api.RevisionDiff{Revision: revisionOf(d.Revision), Patch: patch, Truncated: cut}, nil
}

// truncatePatch cuts p to at most n bytes, at the end of a line.
func truncatePatch(p string, n int) (string, bool) {
	if len(p) <= n {
		return p, false
	}
	p = p[:n]
	if i := strings.LastIndexByte(p, '\n'); i >= 0 {
		p = p[:i+1]
	}
	return p, true
}

// Restore resolves rev to its full hash first (so that a commit landing
// meanwhile cannot move HEAD~1 under it), restores it with RestoreData and
// publishes api.TopicHistoryRestored.
func (h apiHistory) Restore(ctx context.Context, rev string) (api.RestoreResult, error) {
	target, err := h.a.Versions.Show(ctx, rev)
	if err != nil {
		return api.RestoreResult{}, historyError(err)
	}
	res := api.RestoreResult{Target: revisionOf(target.Revision)}
	out, err := h.a.RestoreData(ctx, target.Hash)
	if !out.IsZero() {
		r := revisionOf(out)
		res.Revision = &r
	}
	if err != nil {
		return res, historyError(err)
	}
	pctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), publishTimeout)
	defer cancel()
	if err := h.a.Bus.Publish(pctx, api.TopicHistoryRestored, res); err != nil {
		h.a.Logger.Warn("could not publish a restore of the data dir's history", "target", target.Short, "err", err)
	}
	return res, nil
}

// reloadRestored makes the running components reread the versioned files a
// restore rewrote, so that the next turn sees the restored state and no
// stale copy in memory overwrites it:
//
//   - the world state store rereads world_state.json now (it would notice
//     the change by size and modification time anyway, but a restore can
//     write within the file system's time resolution);
//   - the skills cache is dropped (same reason; it re-lists skills/);
//   - the memory service rereads MEMORIES.txt and reconciles the long-term
//     store with it: restored lines are current memories again.
//
// BASE_PROMPT.txt and prompts/ are read from disk at every turn. Errors are
// logged: the files are restored either way.
func (a *App) reloadRestored(ctx context.Context) {
	if a.World != nil {
		a.World.Reload()
	}
	if a.Skills != nil {
		a.Skills.Reload()
	}
	if a.Memory != nil {
		r, err := a.Memory.Reconcile(ctx)
		switch {
		case err != nil:
			a.Logger.Warn("could not re-sync the memory store with the restored MEMORIES.txt; it is retried at the next start", "err", err)
		case r.Changed():
			a.Logger.Info("memory store re-synced with the restored MEMORIES.txt", "reopened", r.Reopened, "imported", r.Imported)
		}
	}
}
