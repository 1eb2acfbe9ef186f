package versioning

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"

	"github.com/reverie-ai/reverie/internal/datadir"
)

// Restore puts every tracked file back to its content at rev (a full or
// short hash, HEAD~N): files changed since are rewritten, files added since
// are removed, files removed since come back. Edits not yet committed are
// committed first ("uncommitted changes before restore <short>"), then the
// restored state is recorded as a new commit "restore <short>", so the
// restore is itself reversible. Restoring the state the history already
// ends with changes nothing and returns the zero Revision. Only tracked
// files are touched.
func (r *Repo) Restore(ctx context.Context, rev string) (Revision, error) {
	if r.ro {
		return Revision{}, fmt.Errorf("restore: %w", ErrReadOnly)
	}
	r.mu.Lock()
	defer r.unlock()
	target, err := r.resolve(rev)
	if err != nil {
		return Revision{}, err // names the revision
	}
	short := target.id.String()[:shortLen]
	if _, err := r.commitLocked(ctx, "uncommitted changes before restore "+short, Tracked()); err != nil {
		return Revision{}, fmt.Errorf("restore %s: save uncommitted changes first: %w", short, err)
	}
	head, err := r.headCommit()
	if err != nil {
		return Revision{}, fmt.Errorf("restore %s: %w", short, err)
	}
	have, err := treeFiles(head)
	if err != nil {
		return Revision{}, fmt.Errorf("restore %s: %w", short, err)
	}
	want, err := treeFiles(target)
	if err != nil {
		return Revision{}, fmt.Errorf("restore %s: %w", short, err)
	}
	names := make([]string, 0, len(have))
	for name := range have {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if _, keep := want[name]; keep || !IsTracked(name) {
			continue
		}
		if err := r.remove(name); err != nil {
			return Revision{}, fmt.Errorf("restore %s: remove %s: %w", short, name, err)
		}
	}
	names = names[:0]
	for name := range want {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := ctx.Err(); err != nil {
			return Revision{}, fmt.Errorf("restore %s: %w (some files are already restored; the next commit records them)", short, err)
		}
		if !IsTracked(name) {
			continue
		}
		if err := r.restoreFile(name, want[name]); err != nil {
			return Revision{}, fmt.Errorf("restore %s: %s: %w", short, name, err)
		}
	}
	msg := fmt.Sprintf("restore %s\n\nEvery versioned file put back to %s (%s).",
		short, target.id, firstLine(target.message))
	out, err := r.commitLocked(ctx, msg, Tracked())
	if err != nil {
		return Revision{}, fmt.Errorf("restore %s: %w", short, err)
	}
	return out, nil
}

// restoreFile writes the blob f to name unless the file
// already holds it.
func (r *Repo) restoreFile(name string, f treeFile) error {
	data, err := r.git.objects.readAs(f.id, objBlob)
	if err != nil {
		return fmt.Errorf("read stored content: %w", err)
	}
	full := filepath.Join(r.dir, filepath.FromSlash(name))
	if sameContent(full, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(full), 0o700); err != nil {
		return err
	}
	perm := os.FileMode(0o600)
	if f.mode&0o111 != 0 {
		perm = 0o700
	}
	return writeAtomic(full, data, perm)
}

// remove deletes the tracked file name and then its directories that became
// empty, up to (not including) the tracked top-level directory.
func (r *Repo) remove(name string) error {
	full := filepath.Join(r.dir, filepath.FromSlash(name))
	if err := os.Remove(full); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	for d := path.Dir(name); path.Dir(d) != "."; d = path.Dir(d) {
		if os.Remove(filepath.Join(r.dir, filepath.FromSlash(d))) != nil {
			break // not empty (or gone): stop climbing
		}
	}
	return nil
}

// writeAtomic writes data to a temp file beside p, syncs it and renames it
// over p, then syncs the directory.
func writeAtomic(p string, data []byte, perm os.FileMode) error {
	return datadir.WriteFile(p, data, perm)
}

func firstLine(s string) string {
	return (Revision{Message: s}).Subject()
}
