// Package workspace confines file access to one directory tree: the agent's
// workspace. Paths given by the model are resolved against it; ".." escapes,
// absolute paths outside it and symbolic links pointing out of it are refused
// with ErrOutsideWorkspace before any access, and every access then goes
// through an os.Root so that a symbolic link swapped in between the check and
// the use still cannot leave the tree.
//
// A Workspace is safe for concurrent use. It holds no open file descriptors:
// each operation opens the root, so the directory may be recreated while the
// process runs.
package workspace

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// ErrOutsideWorkspace is returned (wrapped) when a path resolves outside the
// workspace, lexically or through a symbolic link.
var ErrOutsideWorkspace = errors.New("path is outside the workspace")

// Workspace is a confined directory tree.
type Workspace struct {
	dir     string // absolute, symbolic links resolved
	given   string // absolute, as configured (may contain symbolic links)
	dirMode fs.FileMode
}

// Open creates dir (and its parents) when missing and returns the workspace
// rooted there.
func Open(dir string) (*Workspace, error) {
	if strings.TrimSpace(dir) == "" {
		return nil, errors.New("open workspace: directory is empty")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace %q: %w", dir, err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("create workspace %q: %w", abs, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return nil, fmt.Errorf("resolve workspace %q: %w", abs, err)
	}
	info, err := os.Stat(real)
	if err != nil {
		return nil, fmt.Errorf("stat workspace %q: %w", real, err)
	}
	if !info.IsDir() {
		return nil, fmt.Errorf("open workspace %q: not a directory", real)
	}
	return &Workspace{dir: real, given: abs, dirMode: 0o755}, nil
}

// Dir is the absolute, symlink-free path of the workspace.
func (w *Workspace) Dir() string { return w.dir }

// Rel validates p (relative to the workspace, or absolute inside it) and
// returns the cleaned path relative to the workspace root, with forward
// slashes; "." is the root itself. It returns an error wrapping
// ErrOutsideWorkspace when p leaves the workspace lexically or through a
// symbolic link.
func (w *Workspace) Rel(p string) (string, error) {
	if strings.TrimSpace(p) == "" {
		return "", errors.New("path is empty")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("path contains a NUL byte")
	}
	var rel string
	if filepath.IsAbs(p) {
		clean := filepath.Clean(p)
		r, ok := within(w.dir, clean)
		if !ok {
			r, ok = within(w.given, clean)
		}
		if !ok {
			return "", fmt.Errorf("%q: %w (%s)", p, ErrOutsideWorkspace, w.dir)
		}
		rel = r
	} else {
		rel = filepath.Clean(p)
		if rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
			return "", fmt.Errorf("%q: %w (it climbs above the workspace with \"..\")", p, ErrOutsideWorkspace)
		}
	}
	if err := w.checkSymlinks(rel); err != nil {
		return "", fmt.Errorf("%q: %w", p, err)
	}
	return filepath.ToSlash(rel), nil
}

// within reports whether target is base or beneath it, and the relative path.
func within(base, target string) (string, bool) {
	r, err := filepath.Rel(base, target)
	if err != nil {
		return "", false
	}
	if r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) || filepath.IsAbs(r) {
		return "", false
	}
	return r, true
}

// checkSymlinks resolves the deepest existing ancestor of rel (rel itself
// when it exists) and verifies it stays inside the workspace.
func (w *Workspace) checkSymlinks(rel string) error {
	candidate := filepath.Join(w.dir, rel)
	for {
		if _, err := os.Lstat(candidate); err == nil {
			break
		}
		parent := filepath.Dir(candidate)
		if parent == candidate || len(parent) < len(w.dir) {
			return nil
		}
		candidate = parent
	}
	resolved, err := filepath.EvalSymlinks(candidate)
	if err != nil {
		// A dangling symbolic link: resolve its target by hand.
		target, lerr := os.Readlink(candidate)
		if lerr != nil {
			return fmt.Errorf("resolve symbolic links: %w", err)
		}
		if !filepath.IsAbs(target) {
			target = filepath.Join(filepath.Dir(candidate), target)
		}
		resolved = filepath.Clean(target)
	}
	if _, ok := within(w.dir, resolved); !ok {
		return fmt.Errorf("%w (a symbolic link points to %s)", ErrOutsideWorkspace, resolved)
	}
	return nil
}

// Abs is the absolute path of a path returned by Rel.
func (w *Workspace) Abs(rel string) string {
	return filepath.Join(w.dir, filepath.FromSlash(rel))
}

// root opens the workspace as an os.Root; the caller closes it.
func (w *Workspace) root() (*os.Root, error) {
	r, err := os.OpenRoot(w.dir)
	if err != nil {
		return nil, fmt.Errorf("open workspace root: %w", err)
	}
	return r, nil
}

// Stat returns information about rel, following symbolic links inside the
// workspace.
func (w *Workspace) Stat(rel string) (fs.FileInfo, error) {
	r, err := w.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Stat(rel)
}

// Open opens rel for reading.
func (w *Workspace) Open(rel string) (*os.File, error) {
	r, err := w.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.Open(rel)
}

// ReadFile reads the whole of rel.
func (w *Workspace) ReadFile(rel string) ([]byte, error) {
	r, err := w.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return r.ReadFile(rel)
}

// ReadDir lists the directory rel, sorted by name.
func (w *Workspace) ReadDir(rel string) ([]fs.DirEntry, error) {
	r, err := w.root()
	if err != nil {
		return nil, err
	}
	defer r.Close()
	return fs.ReadDir(r.FS(), rel)
}

// Remove deletes the file rel.
func (w *Workspace) Remove(rel string) error {
	r, err := w.root()
	if err != nil {
		return err
	}
	defer r.Close()
	return r.Remove(rel)
}

// WriteFileAtomic replaces (or creates) rel with data: it creates the parent
// directories, writes a temporary file next to the target, syncs it and
// renames it over the target, so readers see either the old or the new
// content. An existing file keeps its permission bits; a new one gets perm.
func (w *Workspace) WriteFileAtomic(rel string, data []byte, perm fs.FileMode) error {
	if rel == "." {
		return errors.New("cannot write to the workspace directory itself")
	}
	r, err := w.root()
	if err != nil {
		return err
	}
	defer r.Close()
	dir, base := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	if dir != "" {
		if err := r.MkdirAll(dir, w.dirMode); err != nil {
			return fmt.Errorf("create parent directories: %w", err)
		}
	}
	if info, err := r.Stat(rel); err == nil {
		if info.IsDir() {
			return fmt.Errorf("%s is a directory", rel)
		}
		perm = info.Mode().Perm()
	}
	var suffix [6]byte
	if _, err := rand.Read(suffix[:]); err != nil {
		return fmt.Errorf("temporary name: %w", err)
	}
	tmp := path.Join(dir, "."+base+".tmp-"+hex.EncodeToString(suffix[:]))
	f, err := r.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return fmt.Errorf("create temporary file: %w", err)
	}
	committed := false
	defer func() {
		if !committed {
			_ = r.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write temporary file: %w", err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return fmt.Errorf("sync temporary file: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close temporary file: %w", err)
	}
	if err := r.Rename(tmp, rel); err != nil {
		return fmt.Errorf("replace %s: %w", rel, err)
	}
	committed = true
	return nil
}
