package world

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"time"
)

// ChangeFunc is told, after a save, what changed (a one-line message such
// as "world: add_topic, set_project") and which data-dir files (relative
// paths). The app records it in the data dir's history.
type ChangeFunc func(ctx context.Context, message string, paths ...string)

// StoreOptions configure OpenStore.
type StoreOptions struct {
	// Now is the clock for updated_at (nil: time.Now).
	Now func() time.Time
	// Logger receives repairs and reloads (nil: discarded).
	Logger *slog.Logger
	// Changed is called after every save (nil: nobody is told). It runs
	// without the store's lock held.
	Changed ChangeFunc
}

// Store is the world state of a running agent: loaded once, changed by
// Apply and Replace, saved atomically after each change. It is safe for
// concurrent use; every state it returns is a copy.
//
// A file edited on disk while the agent runs (by hand, or by a restore of
// the data dir's history) is noticed by its modification time and size and
// reloaded before the next read or change, so such an edit is not
// overwritten by a stale copy; an unusable edit is moved aside like at load
// and the last good state written back.
type Store struct {
	dir     string
	path    string
	now     func() time.Time
	log     *slog.Logger
	changed ChangeFunc

	mu    sync.Mutex
	state *State
	stamp fileStamp
}

// fileStamp identifies a version of the file on disk.
type fileStamp struct {
	mod  time.Time
	size int64
	ok   bool
}

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{mod: fi.ModTime(), size: fi.Size(), ok: true}
}

// OpenStore loads dir's world state (see load: created, migrated or
// repaired as needed; a file of a newer version is an error).
func OpenStore(dir string, opts StoreOptions) (*Store, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &Store{dir: dir, path: filepath.Join(dir, FileName), now: opts.Now, log: opts.Logger, changed: opts.Changed}
	st, err := load(dir, opts.Logger, opts.Now)
	if err != nil {
		return nil, err
	}
	s.state, s.stamp = st, stampOf(s.path)
	return s, nil
}

// Get returns a copy of the current state.
func (s *Store) Get() *State {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refreshLocked()
	return s.state.Clone()
}

// Apply applies ops all or nothing (see ApplyOps), stamps updated_at, saves
// and tells Changed. Ops that change nothing (adding a topic that is there)
// save nothing. It returns a copy of the resulting state.
func (s *Store) Apply(ctx context.Context, ops []Op) (*State, error) {
	st, _, err := s.applyOps(ctx, ops)
	return st, err
}

// applyOps is Apply that also reports whether the state changed.
func (s *Store) applyOps(ctx context.Context, ops []Op) (*State, bool, error) {
	names := make([]string, 0, len(ops))
	for _, op := range ops {
		if op != nil {
			names = append(names, string(op.Name()))
		}
	}
	return s.update(ctx, "world: "+summarizeNames(names), func(cur *State) (*State, error) {
		return ApplyOps(cur, ops)
	})
}

// Replace checks next against the ops' bounds (Bounded) and makes it the
// state (the web page's editor):
// version and updated_at are set by the store. message (default "world:
// edit") says who changed it.
func (s *Store) Replace(ctx context.Context, next *State, message string) (*State, error) {
	if next == nil {
		return nil, errors.New("replace world state: no state given")
	}
	if strings.TrimSpace(message) == "" {
		message = "world: edit"
	}
	st, _, err := s.update(ctx, message, func(*State) (*State, error) {
		// The same bounds as the model's ops (an 800 KB document would go
		// whole into every prompt).
		c, err := Bounded(next)
		if err != nil {
			return nil, err
		}
		c.Version = Version
		return c, nil
	})
	return st, err
}

// Reload rereads the file now (after a restore of the data dir's history).
func (s *Store) Reload() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.stamp = fileStamp{}
	s.refreshLocked()
}

// update runs change on the current state and saves the result if it
// differs, reporting whether it did.
func (s *Store) update(ctx context.Context, message string, change func(cur *State) (*State, error)) (*State, bool, error) {
	if err := ctx.Err(); err != nil {
		return nil, false, err
	}
	s.mu.Lock()
	s.refreshLocked()
	next, err := change(s.state)
	if err != nil {
		s.mu.Unlock()
		return nil, false, err
	}
	if sameContent(next, s.state) {
		out := s.state.Clone()
		s.mu.Unlock()
		return out, false, nil
	}
	next.UpdatedAt = s.now().UTC().Truncate(time.Second)
	if err := Save(s.dir, next); err != nil {
		s.mu.Unlock()
		return nil, false, err
	}
	s.state, s.stamp = next, stampOf(s.path)
	out := next.Clone()
	s.mu.Unlock()
	if s.changed != nil {
		s.changed(ctx, message, FileName)
	}
	return out, true, nil
}

// sameContent compares states ignoring updated_at.
func sameContent(a, b *State) bool {
	x, y := a.Clone(), b.Clone()
	x.UpdatedAt, y.UpdatedAt = time.Time{}, time.Time{}
	return reflect.DeepEqual(x, y)
}

// refreshLocked reloads the file when it changed on disk since the store
// last read or wrote it.
func (s *Store) refreshLocked() {
	cur := stampOf(s.path)
	if cur == s.stamp {
		return
	}
	if !cur.ok {
		// Deleted: write the state back so the file exists again.
		s.writeBackLocked("world state file was removed; wrote the current state back")
		return
	}
	data, err := os.ReadFile(s.path)
	if err != nil {
		s.log.Warn("could not reread the world state file; keeping the state in memory", "err", err)
		return
	}
	st, from, derr := decode(data)
	switch {
	case derr == nil:
		s.state, s.stamp = st, cur
		s.log.Info("world state changed on disk; reloaded", "path", s.path, "from_version", from)
		if from < Version {
			if err := keepOldVersion(s.path, from, data); err == nil {
				s.writeBackLocked("migrated world state")
			}
		}
	case errors.Is(derr, ErrFutureVersion):
		// Not ours to rewrite: keep using the state in memory and leave the
		// file alone until it changes again.
		s.stamp = cur
		s.log.Warn("world state file on disk is from a newer Reverie; ignoring it", "err", derr)
	default:
		aside, err := moveAside(s.path, s.now())
		if err != nil {
			s.stamp = cur
			s.log.Warn("world state file on disk is unusable and could not be moved aside; keeping the state in memory",
				"err", derr, "move_err", err)
			return
		}
		s.log.Warn("world state file on disk was unusable; kept it aside and wrote the last good state back",
			"err", derr, "kept", aside)
		s.writeBackLocked("")
	}
}

func (s *Store) writeBackLocked(msg string) {
	if err := Save(s.dir, s.state); err != nil {
		s.log.Warn("could not write the world state back", "err", err)
		s.stamp = stampOf(s.path)
		return
	}
	s.stamp = stampOf(s.path)
	if msg != "" {
		s.log.Info(msg, "path", s.path)
	}
}

// summarizeNames joins op names, collapsing repeats: "add_topic ×2,
// set_project".
func summarizeNames(names []string) string {
	if len(names) == 0 {
		return "edit"
	}
	var parts []string
	counts := map[string]int{}
	for _, n := range names {
		if counts[n] == 0 {
			parts = append(parts, n)
		}
		counts[n]++
	}
	for i, p := range parts {
		if c := counts[p]; c > 1 {
			parts[i] = fmt.Sprintf("%s ×%d", p, c)
		}
	}
	return strings.Join(parts, ", ")
}
