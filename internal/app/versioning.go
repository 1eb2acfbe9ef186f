package app

import (
	"context"
	"errors"
	"time"

	"github.com/reverie-ai/reverie/internal/versioning"
)

// commitTimeout bounds one commit of the data dir's history.
const commitTimeout = 30 * time.Second

// ErrNoHistory is returned by RestoreData when the data dir's history could
// not be opened at start.
var ErrNoHistory = errors.New("the data dir's history is not available (see the start-up log)")

// openVersions opens the history of the data dir's editable files (the data
// dir lock must be held) and records, as one commit, the edits made while
// no agent was running. A failure is logged and leaves versioning off
// (Versions nil): it never keeps the assistant from starting.
func (a *App) openVersions(ctx context.Context) error {
	log := a.Logger.With("component", "versioning")
	v, err := versioning.Open(a.opts.DataDir, versioning.Options{Now: a.opts.Now, Logger: log})
	if err != nil {
		log.Error("data dir history unavailable; changes to MEMORIES.txt, skills, prompts and the world state are not versioned", "err", err)
		return nil
	}
	msg := "external edits"
	if v.Created() {
		msg = "initial state of the data dir"
	}
	cctx, cancel := context.WithTimeout(ctx, commitTimeout)
	defer cancel()
	if rev, err := v.CommitAll(cctx, msg); err != nil {
		log.Warn("could not record the data dir's current state", "err", err)
	} else if !rev.IsZero() {
		log.Info("recorded data dir changes", "rev", rev.Short, "message", msg, "files", len(rev.Files))
	}
	a.Versions = v
	a.onDataChange = a.dataChanged
	a.commitFiles = a.commitData
	return nil
}

// commitData is dataChanged for callers that report the revision (dreaming
// names it in its journal): the short hash, "" when nothing changed.
func (a *App) commitData(ctx context.Context, message string, paths ...string) (string, error) {
	if a.Versions == nil {
		return "", nil
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	rev, err := a.Versions.Commit(cctx, message, paths...)
	return rev.Short, err
}

// dataChanged records a change to the data dir's versioned files (paths
// relative to the data dir, or absolute inside it) as one commit with
// message. It is the hook components call after they write such a file
// (memory.ServiceOptions.Changed, world.StoreOptions.Changed, …). It never
// fails its caller: errors are logged. The commit runs even when ctx is
// cancelled right after the write (the file changed either way).
func (a *App) dataChanged(ctx context.Context, message string, paths ...string) {
	if a.Versions == nil {
		return
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), commitTimeout)
	defer cancel()
	rev, err := a.Versions.Commit(cctx, message, paths...)
	if err != nil {
		a.Logger.Warn("could not record a data dir change in its history", "message", message, "paths", paths, "err", err)
		return
	}
	if !rev.IsZero() {
		a.Logger.Debug("data dir change recorded", "rev", rev.Short, "message", message, "files", rev.Files)
	}
}

// RestoreData puts every versioned file back to its content at rev and
// records that as a new commit (versioning.Repo.Restore), then makes the
// running components reread what they cache (reloadRestored: world state,
// skills, MEMORIES.txt and the memory store). It is what the web page's
// history panel and `reverie memory restore` beside a running agent call
// (apiHistory); without an agent the command does the same in its own
// process. Like the tools' commits it is serialised with
// every other commit by the history's lock and is not stopped half way
// when ctx is cancelled (a client going away).
func (a *App) RestoreData(ctx context.Context, rev string) (versioning.Revision, error) {
	if a.Versions == nil {
		return versioning.Revision{}, ErrNoHistory
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), restoreTimeout)
	defer cancel()
	out, err := a.Versions.Restore(rctx, rev)
	a.reloadRestored(rctx)
	return out, err
}
