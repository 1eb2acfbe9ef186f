package versioning

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// errStop ends a commit iteration early.
var errStop = errors.New("stop")

// History lists commits, newest first: all of them when path is "", else
// those that changed path (a tracked file or directory, as for Commit). A
// limit above zero keeps that many. An empty history is an empty slice.
func (r *Repo) History(ctx context.Context, path string, limit int) ([]Revision, error) {
	filter := ""
	if path != "" {
		rel, err := r.relPath(path)
		if err != nil {
			return nil, fmt.Errorf("history: %w", err)
		}
		filter = rel
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	out := []Revision{}
	head, err := r.headCommit()
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if head == nil {
		return out, nil
	}
	iter, err := r.repo.Log(&git.LogOptions{From: head.Hash})
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	defer iter.Close()
	err = iter.ForEach(func(c *object.Commit) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		rev, err := r.revisionOf(ctx, c)
		if err != nil {
			return err
		}
		if filter != "" && !touches(rev.Files, filter) {
			return nil
		}
		out = append(out, rev)
		if limit > 0 && len(out) >= limit {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, fmt.Errorf("history: %w", err)
	}
	return out, nil
}

func touches(files []string, p string) bool {
	for _, f := range files {
		if under(f, p) {
			return true
		}
	}
	return false
}

// Head describes the last commit; the zero Revision when there is none.
func (r *Repo) Head(ctx context.Context) (Revision, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.headCommit()
	if err != nil {
		return Revision{}, fmt.Errorf("head: %w", err)
	}
	if c == nil {
		return Revision{}, nil
	}
	return r.revisionOf(ctx, c)
}

// Show returns the commit rev (a full or short hash, or HEAD, HEAD~N) with
// its patch against its parent.
func (r *Repo) Show(ctx context.Context, rev string) (Diff, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.resolve(rev)
	if err != nil {
		return Diff{}, fmt.Errorf("show: %w", err)
	}
	info, err := r.revisionOf(ctx, c)
	if err != nil {
		return Diff{}, fmt.Errorf("show %s: %w", info.Short, err)
	}
	to, from, err := trees(c)
	if err != nil {
		return Diff{}, fmt.Errorf("show: %w", err)
	}
	changes, err := object.DiffTreeWithOptions(ctx, from, to, nil)
	if err != nil {
		return Diff{}, fmt.Errorf("show %s: %w", info.Short, err)
	}
	patch, err := changes.PatchContext(ctx)
	if err != nil {
		return Diff{}, fmt.Errorf("show %s: %w", info.Short, err)
	}
	return Diff{Revision: info, Patch: patch.String()}, nil
}

// resolve finds the commit rev names: a full hash, a unique prefix of at
// least minShort hex digits, or a revision expression go-git understands
// (HEAD, HEAD~2). Errors wrap ErrUnknownRevision or ErrAmbiguousRevision.
func (r *Repo) resolve(rev string) (*object.Commit, error) {
	rev = strings.TrimSpace(rev)
	if rev == "" {
		return nil, fmt.Errorf("%w: empty revision", ErrUnknownRevision)
	}
	if isHex(rev) {
		return r.resolveHash(strings.ToLower(rev))
	}
	h, err := r.repo.ResolveRevision(plumbing.Revision(rev))
	if err != nil || h == nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownRevision, rev)
	}
	c, err := r.repo.CommitObject(*h)
	if err != nil {
		return nil, fmt.Errorf("%w: %q", ErrUnknownRevision, rev)
	}
	return c, nil
}

// resolveHash finds the commit of the history whose hash starts with
// prefix.
func (r *Repo) resolveHash(prefix string) (*object.Commit, error) {
	if len(prefix) < minShort {
		return nil, fmt.Errorf("%w: %q is too short (give at least %d hex digits)", ErrUnknownRevision, prefix, minShort)
	}
	if len(prefix) > len(plumbing.ZeroHash.String()) {
		return nil, fmt.Errorf("%w: %q", ErrUnknownRevision, prefix)
	}
	head, err := r.headCommit()
	if err != nil {
		return nil, err
	}
	if head == nil {
		return nil, fmt.Errorf("%w: %q (the history is empty)", ErrUnknownRevision, prefix)
	}
	iter, err := r.repo.Log(&git.LogOptions{From: head.Hash})
	if err != nil {
		return nil, err
	}
	defer iter.Close()
	var found []*object.Commit
	err = iter.ForEach(func(c *object.Commit) error {
		if strings.HasPrefix(c.Hash.String(), prefix) {
			found = append(found, c)
			if len(prefix) == len(plumbing.ZeroHash.String()) {
				return errStop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, fmt.Errorf("%w: %q", ErrUnknownRevision, prefix)
	case 1:
		return found[0], nil
	default:
		return nil, fmt.Errorf("%w: %q matches %d commits; give more digits", ErrAmbiguousRevision, prefix, len(found))
	}
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}
