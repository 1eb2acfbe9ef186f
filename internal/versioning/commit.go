package versioning

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"
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
	defer r.unlock()
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

// diskFile is a tracked file found in the data dir. Its content is read
// only when its stat data does not show it unchanged (unchanged).
type diskFile struct {
	full string
	mode uint32
	info fs.FileInfo
}

// unchanged reports whether a file with info still holds what the index
// entry e recorded, from stat data alone, as git decides: the same stat
// data, and not "racily clean" (modified no earlier than the index was
// written, when a change within the timestamps' resolution would not show
// in them). indexTime is the index file's modification time (zero: no
// index).
func unchanged(e indexEntry, mode uint32, info fs.FileInfo, indexTime time.Time) bool {
	return !indexTime.IsZero() && e.stage == 0 && e.mode == mode && e.stat == statOf(info) &&
		info.ModTime().Before(indexTime)
}

// commitLocked is Commit with validated paths, under r.mu.
func (r *Repo) commitLocked(ctx context.Context, message string, rels []string) (Revision, error) {
	if err := ctx.Err(); err != nil {
		return Revision{}, fmt.Errorf("commit data dir: %w", err)
	}
	// Objects are staged until the commit is complete; anything left
	// staged when this returns (an error, nothing to commit) is dropped.
	defer r.git.objects.discard()
	var indexTime time.Time
	if fi, err := os.Stat(r.indexPath()); err == nil {
		indexTime = fi.ModTime()
	}
	idx, err := readIndex(r.indexPath())
	if err != nil {
		return Revision{}, fmt.Errorf("commit data dir: read index: %w", err)
	}
	entries := make(map[string]indexEntry, len(idx))
	for _, e := range idx {
		entries[e.name] = e
	}
	changed := false
	restat := false            // an entry's stat data is refreshed, its content the same
	fresh := map[string]bool{} // the files found on disk just now
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
			e, ok := entries[name]
			if ok && unchanged(e, f.mode, f.info, indexTime) {
				fresh[name] = true
				continue
			}
			data, err := r.readFile(f.full)
			if errors.Is(err, os.ErrNotExist) { // removed since the scan
				if ok {
					delete(entries, name)
					changed = true
				}
				continue
			}
			if err != nil {
				return Revision{}, fmt.Errorf("commit data dir: read %s: %w", name, err)
			}
			fresh[name] = true
			id := hashObject(objBlob, data)
			if ok && e.id == id && e.mode == f.mode && e.stage == 0 {
				if st := statOf(f.info); e.stat != st {
					e.stat = st
					entries[name] = e
					restat = true
				}
				continue
			}
			if _, err := r.git.objects.write(objBlob, data); err != nil {
				return Revision{}, fmt.Errorf("commit data dir: store %s: %w", name, err)
			}
			entries[name] = indexEntry{name: name, id: id, mode: f.mode, stat: statOf(f.info)}
			changed = true
		}
	}
	// A file that became a directory, committed by the path of a file
	// inside it, leaves the old file's entry, which a tree cannot hold
	// beside the directory: the disk wins. (The other way round, the
	// directory's entries are under the path committed and already gone.)
	for name := range fresh {
		for d := path.Dir(name); d != "."; d = path.Dir(d) {
			if _, ok := entries[d]; ok {
				delete(entries, d)
				changed = true
			}
		}
	}
	if !changed {
		if restat {
			// Same content, new stat data (a file touched or rewritten
			// unchanged): recorded, so that the next commit does not read
			// it again. Losing this write costs only that read.
			if err := r.writeIndex(slices.Collect(maps.Values(entries))); err != nil {
				r.log.Debug("could not refresh the data dir history index", "err", err)
			}
		}
		return Revision{}, nil
	}
	head, err := r.headCommit()
	if err != nil {
		return Revision{}, fmt.Errorf("commit data dir: %w", err)
	}
	tree, err := r.writeTree(entries)
	if err != nil {
		return Revision{}, fmt.Errorf("commit data dir: write tree: %w", err)
	}
	var parents []oid
	if head != nil {
		if head.tree == tree {
			return Revision{}, nil // the index differed in nothing that matters
		}
		parents = []oid{head.id}
	}
	now := r.now()
	sig := signature{name: r.author.Name, email: r.author.Email, when: now}
	id, err := r.git.objects.write(objCommit, encodeCommit(tree, parents, sig, sig, message))
	if err != nil {
		return Revision{}, fmt.Errorf("commit data dir: write commit: %w", err)
	}
	if err := r.git.objects.flush(); err != nil {
		return Revision{}, fmt.Errorf("commit data dir: store objects: %w", err)
	}
	if err := r.writeIndex(slices.Collect(maps.Values(entries))); err != nil {
		return Revision{}, fmt.Errorf("commit data dir: write index: %w", err)
	}
	if err := r.git.updateHead(id); err != nil {
		// Put the index back in line with the head commit so the next
		// commit sees these changes again.
		if serr := r.syncIndex(); serr != nil {
			r.log.Warn("could not resynchronise the data dir history index", "err", serr)
		}
		return Revision{}, fmt.Errorf("commit data dir: %w", err)
	}
	c, err := r.git.objects.readCommit(id)
	if err != nil {
		return Revision{}, fmt.Errorf("commit data dir: read back %s: %w", id, err)
	}
	return r.revisionOf(ctx, c)
}

// writeTree stores the trees of the files in entries (subtrees first) and
// returns the root tree's id.
func (r *Repo) writeTree(entries map[string]indexEntry) (oid, error) {
	type dir struct {
		entries []treeEntry
		subdirs map[string]*dir
	}
	root := &dir{subdirs: map[string]*dir{}}
	for name, e := range entries {
		d := root
		parts := strings.Split(name, "/")
		for _, part := range parts[:len(parts)-1] {
			sub := d.subdirs[part]
			if sub == nil {
				sub = &dir{subdirs: map[string]*dir{}}
				d.subdirs[part] = sub
			}
			d = sub
		}
		d.entries = append(d.entries, treeEntry{mode: e.mode, name: parts[len(parts)-1], id: e.id})
	}
	var write func(d *dir) (oid, error)
	write = func(d *dir) (oid, error) {
		for name, sub := range d.subdirs {
			id, err := write(sub)
			if err != nil {
				return id, err
			}
			d.entries = append(d.entries, treeEntry{mode: modeTree, name: name, id: id})
		}
		return r.git.objects.write(objTree, encodeTree(d.entries))
	}
	return write(root)
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
			addFile(out, rel, full, fi)
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
		addFile(out, name, p, info)
		return nil
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

// addFile records the tracked file name, at full, with info.
func addFile(out map[string]diskFile, name, full string, info fs.FileInfo) {
	mode := modeRegular
	if info.Mode()&0o111 != 0 {
		mode = modeExec
	}
	out[name] = diskFile{full: full, mode: mode, info: info}
}

// revisionOf describes c, with the files it changed against its first
// parent.
func (r *Repo) revisionOf(ctx context.Context, c *commit) (Revision, error) {
	changes, err := r.changes(ctx, c)
	if err != nil {
		return Revision{}, err
	}
	files := make([]string, 0, len(changes))
	for _, ch := range changes {
		files = append(files, ch.name)
	}
	hx := c.id.String()
	return Revision{
		Hash:    hx,
		Short:   hx[:shortLen],
		Time:    c.author.when,
		Message: strings.TrimRight(c.message, "\n"),
		Files:   slices.Compact(files),
	}, nil
}

// changes lists the files c changed against its first parent (every file
// for the first commit), sorted.
func (r *Repo) changes(ctx context.Context, c *commit) ([]fileChange, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var from oid
	if len(c.parents) > 0 {
		p, err := r.git.objects.readCommit(c.parents[0])
		if err != nil {
			return nil, fmt.Errorf("read parent of %s: %w", c.id, err)
		}
		from = p.tree
	}
	changes, err := r.git.objects.diffTrees(from, c.tree)
	if err != nil {
		return nil, fmt.Errorf("diff %s: %w", c.id, err)
	}
	return changes, nil
}

// sameContent reports whether the file at full holds data.
func sameContent(full string, data []byte) bool {
	got, err := os.ReadFile(full)
	return err == nil && bytes.Equal(got, data)
}
