package versioning

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/format/index"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// Commit records the current content of paths — data-dir-relative (or
// absolute inside the data dir) files or directories, each tracked or inside
// a tracked directory; no paths means every tracked path — as one commit with
// message. Files that disappeared are recorded as deleted. When nothing
// differs from the last commit it returns the zero Revision and no error.
// A path outside the versioned files is an error (ErrNotTracked) and nothing
// is committed.
func (r *Repo) Commit(ctx context.Context, message string, paths ...string) (Revision, error) {
	if strings.TrimSpace(message) == "" {
		return Revision{}, errors.New("commit data dir: empty message")
	}
	if r.ro {
		return Revision{}, fmt.Errorf("commit data dir: %w", ErrReadOnly)
	}
	rels, err := r.relPaths(paths)
	if err != nil {
		return Revision{}, fmt.Errorf("commit data dir: %w", err)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.commitLocked(ctx, message, rels)
}

// CommitAll records every tracked path (Commit with no paths). The agent
// calls it at start-up, so edits made while it was stopped get their own
// commit.
func (r *Repo) CommitAll(ctx context.Context, message string) (Revision, error) {
	return r.Commit(ctx, message)
}

// relPaths validates and normalises Commit's paths.
func (r *Repo) relPaths(paths []string) ([]string, error) {
	if len(paths) == 0 {
		return Tracked(), nil
	}
	out := make([]string, 0, len(paths))
	for _, p := range paths {
		rel, err := r.relPath(p)
		if err != nil {
			return nil, err
		}
		if !slices.Contains(out, rel) {
			out = append(out, rel)
		}
	}
	return out, nil
}

// relPath turns p (slash- or OS-separated, relative to the data dir or
// absolute inside it) into a clean slash path a caller may commit.
func (r *Repo) relPath(p string) (string, error) {
	orig := p
	if filepath.IsAbs(p) {
		rel, err := filepath.Rel(r.dir, filepath.Clean(p))
		if err != nil {
			return "", fmt.Errorf("%w: %s", ErrNotTracked, orig)
		}
		p = rel
	}
	rel, ok := cleanRel(filepath.ToSlash(p))
	if !ok || !trackedPath(rel) {
		return "", fmt.Errorf("%w: %q (versioned: %s)", ErrNotTracked, orig, strings.Join(Tracked(), ", "))
	}
	return rel, nil
}

// MaxFileBytes is the largest file versioned; a bigger one (something
// dropped into skills/ by mistake) is left out with a warning.
const MaxFileBytes = 8 << 20

// diskFile is a tracked file read from the data dir.
type diskFile struct {
	data []byte
	mode filemode.FileMode
	info fs.FileInfo
}

// commitLocked is Commit with validated paths, under r.mu.
func (r *Repo) commitLocked(ctx context.Context, message string, rels []string) (Revision, error) {
	if err := ctx.Err(); err != nil {
		return Revision{}, fmt.Errorf("commit data dir: %w", err)
	}
	idx, err := r.repo.Storer.Index()
	if err != nil {
		return Revision{}, fmt.Errorf("commit data dir: read index: %w", err)
	}
	entries := make(map[string]*index.Entry, len(idx.Entries))
	for _, e := range idx.Entries {
		entries[e.Name] = e
	}
	changed := false
	for _, p := range rels {
		if err := ctx.Err(); err != nil {
			return Revision{}, fmt.Errorf("commit data dir: %w", err)
		}
		files, err := r.scan(p)
		if err != nil {
			return Revision{}, fmt.Errorf("commit data dir: %w", err)
		}
		for name := range entries {
			if _, ok := files[name]; !ok && under(name, p) {
				delete(entries, name)
				changed = true
			}
		}
		for name, f := range files {
			h := plumbing.ComputeHash(plumbing.BlobObject, f.data)
			if e := entries[name]; e != nil && e.Hash == h && e.Mode == f.mode {
				continue
			}
			if err := r.writeBlob(h, f.data); err != nil {
				return Revision{}, fmt.Errorf("commit data dir: store %s: %w", name, err)
			}
			entries[name] = &index.Entry{
				Name: name, Hash: h, Mode: f.mode,
				Size: uint32(len(f.data)), ModifiedAt: f.info.ModTime(),
			}
			changed = true
		}
	}
	if !changed {
		return Revision{}, nil
	}
	if err := r.repo.Storer.SetIndex(newIndex(entries)); err != nil {
		return Revision{}, fmt.Errorf("commit data dir: write index: %w", err)
	}
	now := r.now()
	hash, err := r.wt.Commit(message, &git.CommitOptions{
		Author: &object.Signature{Name: r.author.Name, Email: r.author.Email, When: now},
	})
	if errors.Is(err, git.ErrEmptyCommit) {
		return Revision{}, nil
	}
	if err != nil {
		// Put the index back in line with the head commit so the next
		// commit sees these changes again.
		if serr := r.syncIndex(); serr != nil {
			r.log.Warn("could not resynchronise the data dir history index", "err", serr)
		}
		return Revision{}, fmt.Errorf("commit data dir: %w", err)
	}
	c, err := r.repo.CommitObject(hash)
	if err != nil {
		return Revision{}, fmt.Errorf("commit data dir: read back %s: %w", hash, err)
	}
	return r.revisionOf(ctx, c)
}

// scan reads the tracked files at rel (a file or a directory); a missing
// path gives none. Symbolic links are followed; anything that is not a
// regular file is skipped.
func (r *Repo) scan(rel string) (map[string]diskFile, error) {
	out := map[string]diskFile{}
	full := filepath.Join(r.dir, filepath.FromSlash(rel))
	fi, err := os.Stat(full)
	if errors.Is(err, os.ErrNotExist) {
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		if IsTracked(rel) && fi.Mode().IsRegular() && r.sizeOK(rel, fi) {
			if err := addFile(out, rel, full, fi); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	root, err := filepath.EvalSymlinks(full)
	if err != nil {
		return nil, err
	}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil // removed while we walked
			}
			return err
		}
		sub, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		name := rel
		if sub != "." {
			name = rel + "/" + filepath.ToSlash(sub)
		}
		if d.IsDir() {
			if sub != "." && strings.HasPrefix(d.Name(), ".") {
				return filepath.SkipDir
			}
			return nil
		}
		if !IsTracked(name) {
			return nil
		}
		info, err := os.Stat(p) // follows a link to a file
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if err != nil {
			return err
		}
		if !info.Mode().IsRegular() || !r.sizeOK(name, info) {
			return nil
		}
		return addFile(out, name, p, info)
	})
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", rel, err)
	}
	return out, nil
}

// sizeOK reports whether a file is small enough to version, warning when
// it is not.
func (r *Repo) sizeOK(name string, info fs.FileInfo) bool {
	if info.Size() <= MaxFileBytes {
		return true
	}
	r.log.Warn("file too big to keep in the data dir history; left out", "path", name,
		"bytes", info.Size(), "max_bytes", MaxFileBytes)
	return false
}

func addFile(out map[string]diskFile, name, full string, info fs.FileInfo) error {
	data, err := os.ReadFile(full)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	mode := filemode.Regular
	if info.Mode()&0o111 != 0 {
		mode = filemode.Executable
	}
	out[name] = diskFile{data: data, mode: mode, info: info}
	return nil
}

// writeBlob stores data as the blob h unless the repository has it.
func (r *Repo) writeBlob(h plumbing.Hash, data []byte) error {
	if r.repo.Storer.HasEncodedObject(h) == nil {
		return nil
	}
	obj := r.repo.Storer.NewEncodedObject()
	obj.SetType(plumbing.BlobObject)
	obj.SetSize(int64(len(data)))
	w, err := obj.Writer()
	if err != nil {
		return err
	}
	if _, err := w.Write(data); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	got, err := r.repo.Storer.SetEncodedObject(obj)
	if err != nil {
		return err
	}
	if got != h {
		return fmt.Errorf("stored blob hash %s, want %s", got, h)
	}
	return nil
}

// revisionOf describes c, with the files it changed against its first
// parent.
func (r *Repo) revisionOf(ctx context.Context, c *object.Commit) (Revision, error) {
	files, err := changedFiles(ctx, c)
	if err != nil {
		return Revision{}, err
	}
	return Revision{
		Hash:    c.Hash.String(),
		Short:   c.Hash.String()[:shortLen],
		Time:    c.Author.When,
		Message: strings.TrimRight(c.Message, "\n"),
		Files:   files,
	}, nil
}

// changedFiles lists the paths c changed against its first parent (every
// file for the first commit), sorted.
func changedFiles(ctx context.Context, c *object.Commit) ([]string, error) {
	to, from, err := trees(c)
	if err != nil {
		return nil, err
	}
	changes, err := object.DiffTreeWithOptions(ctx, from, to, nil)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", c.Hash, err)
	}
	files := make([]string, 0, len(changes))
	for _, ch := range changes {
		name := ch.To.Name
		if name == "" {
			name = ch.From.Name
		}
		files = append(files, name)
	}
	slices.Sort(files)
	return slices.Compact(files), nil
}

// trees returns c's tree and its first parent's (nil for the first commit).
func trees(c *object.Commit) (to, from *object.Tree, err error) {
	to, err = c.Tree()
	if err != nil {
		return nil, nil, fmt.Errorf("read tree of %s: %w", c.Hash, err)
	}
	if c.NumParents() > 0 {
		p, err := c.Parent(0)
		if err != nil {
			return nil, nil, fmt.Errorf("read parent of %s: %w", c.Hash, err)
		}
		if from, err = p.Tree(); err != nil {
			return nil, nil, fmt.Errorf("read tree of %s: %w", p.Hash, err)
		}
	}
	return to, from, nil
}

// sameContent reports whether the file at full holds data.
func sameContent(full string, data []byte) bool {
	got, err := os.ReadFile(full)
	return err == nil && bytes.Equal(got, data)
}
