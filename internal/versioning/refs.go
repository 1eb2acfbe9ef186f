package versioning

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/reverie-ai/reverie/internal/datadir"
)

// This file reads and writes references: HEAD (a symbolic ref to the
// branch, or a detached commit id), loose refs under refs/ and the
// packed-refs file git gc writes. Refs are written atomically (temp file,
// fsync, rename); a loose ref overrides a packed one, as in git.

// errNoRef: the ref does not exist (a branch without commits yet).
var errNoRef = errors.New("no such ref")

// gitRepo is the repository in DATA/.git: its refs and objects.
type gitRepo struct {
	dir     string // .git
	objects *store
}

func newGitRepo(gitDir string) *gitRepo {
	return &gitRepo{dir: gitDir, objects: newStore(filepath.Join(gitDir, "objects"))}
}

// validRefName accepts the names git would write: HEAD or refs/… without
// empty, dot-leading or ".lock" components, "..", control characters or
// the characters git forbids. It keeps a crafted HEAD from naming a file
// outside the repository.
func validRefName(name string) bool {
	if name == "HEAD" {
		return true
	}
	if !strings.HasPrefix(name, "refs/") || strings.Contains(name, "..") || strings.Contains(name, "@{") {
		return false
	}
	for _, part := range strings.Split(name, "/") {
		if part == "" || strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
			return false
		}
	}
	for _, r := range name {
		if r < 0x20 || r == 0x7f || strings.ContainsRune(" ~^:?*[\\", r) {
			return false
		}
	}
	return true
}

// readHead returns the ref HEAD points to ("" when it is detached) and the
// commit it resolves to; ok is false when the branch has no commit yet.
func (g *gitRepo) readHead() (ref string, id oid, ok bool, err error) {
	data, err := os.ReadFile(filepath.Join(g.dir, "HEAD"))
	if err != nil {
		return "", id, false, fmt.Errorf("read HEAD: %w", err)
	}
	line := strings.TrimRight(string(data), "\n")
	if target, sym := strings.CutPrefix(line, "ref: "); sym {
		target = strings.TrimSpace(target)
		if !validRefName(target) || target == "HEAD" {
			return "", id, false, fmt.Errorf("HEAD names %q, which is not a ref", target)
		}
		id, err := g.resolveRef(target)
		if errors.Is(err, errNoRef) {
			return target, id, false, nil
		}
		if err != nil {
			return "", id, false, err
		}
		return target, id, true, nil
	}
	id, err = parseOID(strings.TrimSpace(line))
	if err != nil {
		return "", id, false, fmt.Errorf("HEAD is neither a ref nor a commit id: %w", err)
	}
	return "", id, true, nil
}

// resolveRef reads the object id the ref name (refs/…) points to,
// following symbolic refs; errNoRef when it does not exist.
func (g *gitRepo) resolveRef(name string) (oid, error) {
	for range 5 {
		if !validRefName(name) {
			return oid{}, fmt.Errorf("%q is not a ref name", name)
		}
		data, err := os.ReadFile(filepath.Join(g.dir, filepath.FromSlash(name)))
		if errors.Is(err, os.ErrNotExist) || isDirErr(err) {
			return g.packedRef(name)
		}
		if err != nil {
			return oid{}, fmt.Errorf("read ref %s: %w", name, err)
		}
		line := strings.TrimSpace(string(data))
		if target, sym := strings.CutPrefix(line, "ref: "); sym {
			name = strings.TrimSpace(target)
			continue
		}
		id, err := parseOID(line)
		if err != nil {
			return oid{}, fmt.Errorf("ref %s: %w", name, err)
		}
		return id, nil
	}
	return oid{}, fmt.Errorf("ref %s: symbolic refs nest too deep", name)
}

// isDirErr reports whether err comes from reading a directory as a file
// (refs/heads/x when x is a directory of refs).
func isDirErr(err error) bool {
	var pe *os.PathError
	if errors.As(err, &pe) {
		if fi, serr := os.Stat(pe.Path); serr == nil && fi.IsDir() {
			return true
		}
	}
	return false
}

// packedRef looks name up in packed-refs.
func (g *gitRepo) packedRef(name string) (oid, error) {
	f, err := os.Open(filepath.Join(g.dir, "packed-refs"))
	if errors.Is(err, os.ErrNotExist) {
		return oid{}, fmt.Errorf("%w: %s", errNoRef, name)
	}
	if err != nil {
		return oid{}, fmt.Errorf("read packed-refs: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 4096), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] == '#' || line[0] == '^' {
			continue
		}
		hx, ref, ok := bytes.Cut(line, []byte(" "))
		if !ok || string(ref) != name {
			continue
		}
		id, err := parseOID(string(hx))
		if err != nil {
			return oid{}, fmt.Errorf("packed-refs: %s: %w", name, err)
		}
		return id, nil
	}
	if err := sc.Err(); err != nil {
		return oid{}, fmt.Errorf("read packed-refs: %w", err)
	}
	return oid{}, fmt.Errorf("%w: %s", errNoRef, name)
}

// updateHead points the branch HEAD names (or a detached HEAD itself) at id.
func (g *gitRepo) updateHead(id oid) error {
	ref, _, _, err := g.readHead()
	if err != nil {
		return err
	}
	if ref == "" {
		ref = "HEAD"
	}
	return g.writeRef(ref, id)
}

// writeRef writes the loose ref name atomically.
func (g *gitRepo) writeRef(name string, id oid) error {
	if !validRefName(name) {
		return fmt.Errorf("write ref: %q is not a ref name", name)
	}
	p := filepath.Join(g.dir, filepath.FromSlash(name))
	if err := datadir.WriteFile(p, []byte(id.String()+"\n"), 0o600); err != nil {
		return fmt.Errorf("write ref %s: %w", name, err)
	}
	return nil
}
