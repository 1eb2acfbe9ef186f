package versioning

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
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
	defer r.unlock()
	out := []Revision{}
	head, err := r.headCommit()
	if err != nil {
		return nil, fmt.Errorf("history: %w", err)
	}
	if head == nil {
		return out, nil
	}
	err = r.walk(ctx, head, func(c *commit) error {
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

// walk calls fn with every commit reachable from head, each once, newest
// commit time first as git log orders them (for Reverie's linear history:
// head, its parent, …). An error from fn ends the walk and is returned.
func (r *Repo) walk(ctx context.Context, head *commit, fn func(*commit) error) error {
	seen := map[oid]bool{head.id: true}
	queue := []*commit{head}
	for len(queue) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		next := 0
		for i, c := range queue {
			if c.committer.when.After(queue[next].committer.when) {
				next = i
			}
		}
		c := queue[next]
		queue = slices.Delete(queue, next, next+1)
		if err := fn(c); err != nil {
			return err
		}
		for _, p := range c.parents {
			if seen[p] {
				continue
			}
			seen[p] = true
			pc, err := r.git.objects.readCommit(p)
			if err != nil {
				return fmt.Errorf("read parent of %s: %w", c.id, err)
			}
			queue = append(queue, pc)
		}
	}
	return nil
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
	defer r.unlock()
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
	defer r.unlock()
	c, err := r.resolve(rev)
	if err != nil {
		return Diff{}, err // names the revision
	}
	info, err := r.revisionOf(ctx, c)
	if err != nil {
		return Diff{}, fmt.Errorf("show %s: %w", info.Short, err)
	}
	changes, err := r.changes(ctx, c)
	if err != nil {
		return Diff{}, fmt.Errorf("show %s: %w", info.Short, err)
	}
	var patch strings.Builder
	if err := r.git.objects.writePatch(ctx, &patch, changes); err != nil {
		return Diff{}, fmt.Errorf("show %s: %w", info.Short, err)
	}
	return Diff{Revision: info, Patch: patch.String()}, nil
}

// resolve finds the commit rev names: a full hash or a unique prefix of at
// least minShort hex digits of a commit of the history, HEAD (or @), a
// branch or tag name, each optionally followed by git's ~N (N-th first
// parent) and ^N (N-th parent) suffixes, as in HEAD~2 or 1a2b3c4^. Errors
// wrap ErrUnknownRevision or ErrAmbiguousRevision.
func (r *Repo) resolve(rev string) (*commit, error) {
	rev = strings.TrimSpace(rev)
	if rev == "" {
		return nil, &revisionError{"no revision given", ErrUnknownRevision}
	}
	base, suffix := rev, ""
	if i := strings.IndexAny(rev, "~^"); i >= 0 {
		base, suffix = rev[:i], rev[i:]
	}
	var c *commit
	var err error
	switch {
	case isHex(base):
		c, err = r.resolveHash(strings.ToLower(base))
	case base == "HEAD" || base == "@":
		c, err = r.headCommit()
		if err == nil && c == nil {
			err = unknownRevision(rev, " (the history is empty)")
		}
	default:
		c, err = r.resolveRefName(base)
	}
	if err != nil {
		return nil, err
	}
	for suffix != "" {
		op := suffix[0]
		suffix = suffix[1:]
		if op != '~' && op != '^' {
			return nil, unknownRevision(rev, "")
		}
		digits := len(suffix) - len(strings.TrimLeft(suffix, "0123456789"))
		n := 1
		if digits > 0 {
			if n, err = strconv.Atoi(suffix[:digits]); err != nil || n > 1<<20 {
				return nil, unknownRevision(rev, "")
			}
			suffix = suffix[digits:]
		}
		steps, parent := n, 0 // ~N: N first parents
		if op == '^' {
			steps, parent = min(n, 1), n-1 // ^N: the N-th parent (^0: itself)
		}
		for range steps {
			if parent >= len(c.parents) {
				return nil, &revisionError{fmt.Sprintf("revision %q goes past the first commit", rev), ErrUnknownRevision}
			}
			if c, err = r.git.objects.readCommit(c.parents[parent]); err != nil {
				return nil, unknownRevision(rev, fmt.Sprintf(" (%v)", err))
			}
		}
	}
	return c, nil
}

// resolveRefName finds the commit a branch or tag name points to, trying
// the names git tries: NAME, refs/NAME, refs/tags/NAME, refs/heads/NAME.
func (r *Repo) resolveRefName(name string) (*commit, error) {
	for _, ref := range []string{name, "refs/" + name, "refs/tags/" + name, "refs/heads/" + name} {
		if !validRefName(ref) || ref == "HEAD" {
			continue
		}
		id, err := r.git.resolveRef(ref)
		if errors.Is(err, errNoRef) {
			continue
		}
		if err != nil {
			return nil, unknownRevision(name, fmt.Sprintf(" (%v)", err))
		}
		c, err := r.git.objects.readCommit(id)
		if err != nil {
			return nil, unknownRevision(name, fmt.Sprintf(" (%v)", err))
		}
		return c, nil
	}
	return nil, unknownRevision(name, "")
}

// resolveHash finds the commit of the history whose hash starts with
// prefix.
func (r *Repo) resolveHash(prefix string) (*commit, error) {
	if len(prefix) < minShort {
		return nil, &revisionError{fmt.Sprintf("revision %q is too short (give at least %d hex digits)", prefix, minShort), ErrUnknownRevision}
	}
	if len(prefix) > 2*len(oid{}) {
		return nil, unknownRevision(prefix, "")
	}
	head, err := r.headCommit()
	if err != nil {
		return nil, err
	}
	if head == nil {
		return nil, unknownRevision(prefix, " (the history is empty)")
	}
	var found []*commit
	err = r.walk(context.Background(), head, func(c *commit) error {
		if strings.HasPrefix(c.id.String(), prefix) {
			found = append(found, c)
			if len(prefix) == 2*len(oid{}) {
				return errStop
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return nil, err
	}
	switch len(found) {
	case 0:
		return nil, unknownRevision(prefix, "")
	case 1:
		return found[0], nil
	default:
		return nil, &revisionError{fmt.Sprintf("revision %q matches %d commits; give more digits", prefix, len(found)), ErrAmbiguousRevision}
	}
}

// revisionError is resolve's refusal, a sentence that names the revision
// ("revision \"ffff\" not found"); it wraps ErrUnknownRevision or
// ErrAmbiguousRevision.
type revisionError struct {
	msg string
	err error
}

func (e *revisionError) Error() string { return e.msg }
func (e *revisionError) Unwrap() error { return e.err }

// unknownRevision is the ErrUnknownRevision of rev: "revision \"rev\" not
// found" and detail.
func unknownRevision(rev, detail string) error {
	return &revisionError{fmt.Sprintf("revision %q not found%s", rev, detail), ErrUnknownRevision}
}

func isHex(s string) bool {
	for _, c := range s {
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return false
		}
	}
	return s != ""
}
