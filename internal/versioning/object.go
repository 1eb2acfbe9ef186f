package versioning

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"crypto/sha1" //nolint:gosec // git object ids are SHA-1 by definition
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// This file is the object database: git's loose objects (zlib-compressed
// "<type> <size>\x00<content>" under objects/xx/yyyy…), read and written,
// with the pack files git gc leaves behind read through pack.go. Objects
// are content-addressed by the SHA-1 of that encoding, exactly as git does,
// so the git CLI reads what we write and we read what it writes.

// oid is a git object id (SHA-1).
type oid [20]byte

// zeroID is the null id git prints for a missing side of a diff.
var zeroID oid

func (h oid) String() string { return hex.EncodeToString(h[:]) }

// parseOID parses 40 hex digits.
func parseOID(s string) (oid, error) {
	var h oid
	if len(s) != 2*len(h) {
		return h, fmt.Errorf("object id %q: want %d hex digits", s, 2*len(h))
	}
	if _, err := hex.Decode(h[:], []byte(s)); err != nil {
		return h, fmt.Errorf("object id %q: %w", s, err)
	}
	return h, nil
}

// objType is a git object type, numbered as in pack files.
type objType uint8

const (
	objCommit   objType = 1
	objTree     objType = 2
	objBlob     objType = 3
	objTag      objType = 4
	objOfsDelta objType = 6
	objRefDelta objType = 7
)

func (t objType) String() string {
	switch t {
	case objCommit:
		return "commit"
	case objTree:
		return "tree"
	case objBlob:
		return "blob"
	case objTag:
		return "tag"
	}
	return "type" + strconv.Itoa(int(t))
}

func typeNamed(s string) (objType, bool) {
	switch s {
	case "commit":
		return objCommit, true
	case "tree":
		return objTree, true
	case "blob":
		return objBlob, true
	case "tag":
		return objTag, true
	}
	return 0, false
}

// hashObject is the id git gives content of type t.
func hashObject(t objType, data []byte) oid {
	h := sha1.New() //nolint:gosec // git object ids
	h.Write(objectHeader(t, len(data)))
	h.Write(data)
	var id oid
	h.Sum(id[:0])
	return id
}

func objectHeader(t objType, n int) []byte {
	return fmt.Appendf(nil, "%s %d\x00", t, n)
}

// errObjectMissing: the object is neither loose nor in a pack.
var errObjectMissing = errors.New("object not found")

// maxObjectBytes bounds what one object may inflate to, so a corrupt or
// hostile header cannot make us allocate without limit. Reverie versions
// files up to MaxFileBytes; git users may have committed bigger ones.
const maxObjectBytes = 256 << 20

// cacheEntries bounds the cache of trees and commits.
const cacheEntries = 4096

type cached struct {
	t    objType
	data []byte
}

// store is the object database of one repository. It is not safe for
// concurrent use (the Repo's mutex serialises every call).
type store struct {
	dir   string // .git/objects
	packs []*packFile
	// scanned reports whether objects/pack was listed; packDirTime is its
	// modification time then (a change means git repacked).
	scanned     bool
	packDirTime time.Time
	// bases keeps recently resolved delta bases, baseBytes their size.
	bases     map[baseKey]cached
	baseBytes int
	// unpacking is how many pack objects are being resolved, nested.
	unpacking int
	// cache keeps recently read trees and commits (immutable by id).
	cache map[oid]cached
	// pending are the objects staged since the last flush.
	pending map[oid]pendingObject
	// zr and zbr decompress loose objects, reused from one to the next
	// within an operation (a fresh zlib reader allocates its 32 KB window:
	// opening the data dir's history read a dozen objects); release drops
	// them between operations.
	zr  io.ReadCloser
	zbr *bufio.Reader
	// zw and buf compress the objects of one commit (a zlib writer is
	// costly to allocate; discard drops it).
	zw  *zlib.Writer
	buf bytes.Buffer
}

func newStore(objectsDir string) *store {
	return &store{dir: objectsDir, cache: map[oid]cached{}, bases: map[baseKey]cached{},
		pending: map[oid]pendingObject{}}
}

func (s *store) loosePath(id oid) string {
	hx := id.String()
	return filepath.Join(s.dir, hx[:2], hx[2:])
}

// read returns the type and content of the object id.
func (s *store) read(id oid) (objType, []byte, error) {
	if c, ok := s.cache[id]; ok {
		return c.t, c.data, nil
	}
	t, data, err := s.readLoose(id)
	if errors.Is(err, fs.ErrNotExist) {
		t, data, err = s.readPacked(id)
	}
	if err != nil {
		return 0, nil, fmt.Errorf("read object %s: %w", id, err)
	}
	if t == objTree || t == objCommit {
		if len(s.cache) >= cacheEntries {
			clear(s.cache)
		}
		s.cache[id] = cached{t, data}
	}
	return t, data, nil
}

// readAs reads id and checks its type.
func (s *store) readAs(id oid, want objType) ([]byte, error) {
	t, data, err := s.read(id)
	if err != nil {
		return nil, err
	}
	if t != want {
		return nil, fmt.Errorf("object %s is a %s, not a %s", id, t, want)
	}
	return data, nil
}

func (s *store) readLoose(id oid) (objType, []byte, error) {
	compressed, err := os.ReadFile(s.loosePath(id))
	if err != nil {
		return 0, nil, err
	}
	src := bytes.NewReader(compressed)
	if s.zr == nil {
		s.zr, err = zlib.NewReader(src)
	} else {
		err = s.zr.(zlib.Resetter).Reset(src, nil)
	}
	if err != nil {
		s.zr = nil
		return 0, nil, fmt.Errorf("loose object: %w", err)
	}
	if s.zbr == nil {
		s.zbr = bufio.NewReaderSize(s.zr, 512)
	} else {
		s.zbr.Reset(s.zr)
	}
	br := s.zbr
	hdr, err := br.ReadString(0)
	if err != nil {
		return 0, nil, fmt.Errorf("loose object header: %w", err)
	}
	name, size, ok := strings.Cut(strings.TrimSuffix(hdr, "\x00"), " ")
	t, known := typeNamed(name)
	n, err := strconv.ParseInt(size, 10, 64)
	if !ok || !known || err != nil || n < 0 {
		return 0, nil, fmt.Errorf("loose object header %q is not git's", hdr)
	}
	if n > maxObjectBytes {
		return 0, nil, fmt.Errorf("loose object of %d bytes is over the %d-byte limit", n, maxObjectBytes)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(br, data); err != nil {
		return 0, nil, fmt.Errorf("loose object content: %w", err)
	}
	return t, data, nil
}

// release drops the zlib reader reused within an operation, so that an
// idle repository does not keep its ~40 KB.
func (s *store) release() { s.zr, s.zbr = nil, nil }

// has reports whether the object id is stored.
func (s *store) has(id oid) (bool, error) {
	if _, ok := s.cache[id]; ok {
		return true, nil
	}
	if _, err := os.Lstat(s.loosePath(id)); err == nil {
		return true, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return false, err
	}
	_, _, err := s.findPacked(id)
	if errors.Is(err, errObjectMissing) {
		return false, nil
	}
	return err == nil, err
}

// pendingObject is a loose object written to a temp file but not yet
// synced and renamed into place (see flush).
type pendingObject struct {
	tmp, final string
}

// write stages data as a loose object of type t unless the repository has
// it, and returns its id. Staged objects are invisible to git and to reads
// until flush publishes them; call flush before a ref names them, discard
// to drop them.
func (s *store) write(t objType, data []byte) (oid, error) {
	id := hashObject(t, data)
	if _, staged := s.pending[id]; staged {
		return id, nil
	}
	if ok, err := s.has(id); err != nil {
		return id, err
	} else if ok {
		return id, nil
	}
	p := s.loosePath(id)
	dir := filepath.Dir(p)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return id, err
	}
	s.buf.Reset()
	if s.zw == nil {
		s.zw = zlib.NewWriter(&s.buf)
	} else {
		s.zw.Reset(&s.buf)
	}
	s.zw.Write(objectHeader(t, len(data)))
	s.zw.Write(data)
	if err := s.zw.Close(); err != nil {
		return id, err
	}
	// git's own temp name, so git gc cleans up after a crash.
	tmp, err := os.CreateTemp(dir, "tmp_obj_*")
	if err != nil {
		return id, err
	}
	_, werr := tmp.Write(s.buf.Bytes())
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(tmp.Name())
		return id, werr
	}
	s.pending[id] = pendingObject{tmp: tmp.Name(), final: p}
	return id, nil
}

// flush publishes the staged objects: every temp file is synced first (one
// journal commit on most file systems, the later syncs finding nothing left
// to write), then renamed to its id. An object therefore never appears
// under its name before its content is durable (has trusts a name, as git
// does). The directories are not synced one by one: the ref written next
// is, and on journaling file systems that commits the renames before it.
func (s *store) flush() error {
	defer s.discard()
	for _, p := range s.pending {
		f, err := os.OpenFile(p.tmp, os.O_RDWR, 0)
		if err != nil {
			return err
		}
		err = f.Sync()
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return err
		}
	}
	for id, p := range s.pending {
		if err := os.Chmod(p.tmp, 0o444); err != nil {
			return err
		}
		if err := os.Rename(p.tmp, p.final); err != nil {
			return err
		}
		delete(s.pending, id)
	}
	return nil
}

// discard drops the objects staged and not flushed.
func (s *store) discard() {
	for _, p := range s.pending {
		os.Remove(p.tmp)
	}
	clear(s.pending)
	// The compressor serves the objects of one commit: kept between
	// commits, its ~800 KB would stay in the heap of an idle agent.
	s.zw, s.buf = nil, bytes.Buffer{}
}

// File modes of tree entries.
const (
	modeTree    uint32 = 0o40000
	modeRegular uint32 = 0o100644
	modeExec    uint32 = 0o100755
	modeSymlink uint32 = 0o120000
	modeGitlink uint32 = 0o160000
)

// isFileMode reports whether a tree entry of mode m is a blob we can read
// back as a file (regular, executable or a symbolic link's target).
func isFileMode(m uint32) bool {
	return m&0o170000 == 0o100000 || m == modeSymlink
}

// treeEntry is one entry of a tree object.
type treeEntry struct {
	mode uint32
	name string
	id   oid
}

// parseTree decodes a tree object: entries "<octal mode> <name>\x00<20-byte id>".
func parseTree(data []byte) ([]treeEntry, error) {
	var out []treeEntry
	for len(data) > 0 {
		sp := bytes.IndexByte(data, ' ')
		if sp <= 0 {
			return nil, errors.New("tree entry without a mode")
		}
		m, err := strconv.ParseUint(string(data[:sp]), 8, 32)
		if err != nil {
			return nil, fmt.Errorf("tree entry mode %q: %w", data[:sp], err)
		}
		data = data[sp+1:]
		nul := bytes.IndexByte(data, 0)
		if nul <= 0 || len(data) < nul+1+len(oid{}) {
			return nil, errors.New("truncated tree entry")
		}
		e := treeEntry{mode: uint32(m), name: string(data[:nul])}
		if e.name == "." || e.name == ".." || strings.Contains(e.name, "/") {
			return nil, fmt.Errorf("tree entry with an unsafe name %q", e.name)
		}
		copy(e.id[:], data[nul+1:])
		data = data[nul+1+len(e.id):]
		out = append(out, e)
	}
	return out, nil
}

// treeOrder is git's tree entry order: names compared bytewise, a
// directory's name as if it ended in "/".
func treeOrder(a, b treeEntry) int {
	an, bn := a.name, b.name
	if a.mode == modeTree {
		an += "/"
	}
	if b.mode == modeTree {
		bn += "/"
	}
	return strings.Compare(an, bn)
}

// encodeTree encodes entries in git's order.
func encodeTree(entries []treeEntry) []byte {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, treeOrder)
	var b bytes.Buffer
	for _, e := range entries {
		b.WriteString(strconv.FormatUint(uint64(e.mode), 8))
		b.WriteByte(' ')
		b.WriteString(e.name)
		b.WriteByte(0)
		b.Write(e.id[:])
	}
	return b.Bytes()
}

// readTree reads and decodes the tree id.
func (s *store) readTree(id oid) ([]treeEntry, error) {
	data, err := s.readAs(id, objTree)
	if err != nil {
		return nil, err
	}
	entries, err := parseTree(data)
	if err != nil {
		return nil, fmt.Errorf("tree %s: %w", id, err)
	}
	return entries, nil
}

// treeFile is a file of a commit's tree.
type treeFile struct {
	id   oid
	mode uint32
}

// walkTree lists every file below tree id (paths under prefix), skipping
// submodules. When checkBlobs is set, it also checks each blob is stored.
func (s *store) walkTree(id oid, prefix string, out map[string]treeFile, checkBlobs bool) error {
	entries, err := s.readTree(id)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.name
		if prefix != "" {
			name = prefix + "/" + e.name
		}
		switch {
		case e.mode == modeTree:
			if err := s.walkTree(e.id, name, out, checkBlobs); err != nil {
				return err
			}
		case isFileMode(e.mode):
			if checkBlobs {
				if ok, err := s.has(e.id); err != nil {
					return err
				} else if !ok {
					return fmt.Errorf("blob %s of %s: %w", e.id, name, errObjectMissing)
				}
			}
			out[name] = treeFile{id: e.id, mode: e.mode}
		}
	}
	return nil
}

// signature is a commit's author or committer.
type signature struct {
	name  string
	email string
	when  time.Time
}

// encode is git's "Name <email> <unix seconds> <+hhmm>".
func (s signature) encode() string {
	_, off := s.when.Zone()
	sign := byte('+')
	if off < 0 {
		sign, off = '-', -off
	}
	return fmt.Sprintf("%s <%s> %d %c%02d%02d", sanitizeIdent(s.name), sanitizeIdent(s.email),
		s.when.Unix(), sign, off/3600, off%3600/60)
}

// sanitizeIdent drops what git does not allow in a name or an email.
func sanitizeIdent(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '<' || r == '>' || r == '\n' || r == 0 {
			return -1
		}
		return r
	}, s)
	return strings.TrimSpace(s)
}

// parseSignature decodes a signature; a malformed time gives the zero time
// (git itself writes no such thing, and a history entry is still worth
// showing).
func parseSignature(s string) signature {
	var sig signature
	lt, gt := strings.IndexByte(s, '<'), strings.LastIndexByte(s, '>')
	if lt < 0 || gt < lt {
		sig.name = strings.TrimSpace(s)
		return sig
	}
	sig.name = strings.TrimSpace(s[:lt])
	sig.email = s[lt+1 : gt]
	fields := strings.Fields(s[gt+1:])
	if len(fields) == 0 {
		return sig
	}
	sec, err := strconv.ParseInt(fields[0], 10, 64)
	if err != nil {
		return sig
	}
	loc := time.UTC
	if len(fields) > 1 && len(fields[1]) == 5 && (fields[1][0] == '+' || fields[1][0] == '-') {
		hh, herr := strconv.Atoi(fields[1][1:3])
		mm, merr := strconv.Atoi(fields[1][3:5])
		if herr == nil && merr == nil {
			off := hh*3600 + mm*60
			if fields[1][0] == '-' {
				off = -off
			}
			loc = time.FixedZone("", off)
		}
	}
	sig.when = time.Unix(sec, 0).In(loc)
	return sig
}

// commit is a decoded commit object.
type commit struct {
	s         *store
	id        oid
	tree      oid
	parents   []oid
	author    signature
	committer signature
	message   string
}

// encodeCommit is git's canonical commit encoding; message gets a final
// newline as git gives it.
func encodeCommit(tree oid, parents []oid, author, committer signature, message string) []byte {
	var b strings.Builder
	fmt.Fprintf(&b, "tree %s\n", tree)
	for _, p := range parents {
		fmt.Fprintf(&b, "parent %s\n", p)
	}
	fmt.Fprintf(&b, "author %s\ncommitter %s\n\n", author.encode(), committer.encode())
	b.WriteString(message)
	if !strings.HasSuffix(message, "\n") {
		b.WriteByte('\n')
	}
	return []byte(b.String())
}

// parseCommit decodes a commit object; unknown headers (gpgsig, encoding,
// mergetag with their continuation lines) are skipped.
func parseCommit(s *store, id oid, data []byte) (*commit, error) {
	c := &commit{s: s, id: id}
	text := string(data)
	haveTree := false
	for {
		line, rest, found := strings.Cut(text, "\n")
		if !found {
			return nil, fmt.Errorf("commit %s: headers do not end", id)
		}
		text = rest
		if line == "" {
			break
		}
		key, val, _ := strings.Cut(line, " ")
		var err error
		switch key {
		case "tree":
			c.tree, err = parseOID(val)
			haveTree = true
		case "parent":
			var p oid
			p, err = parseOID(val)
			c.parents = append(c.parents, p)
		case "author":
			c.author = parseSignature(val)
		case "committer":
			c.committer = parseSignature(val)
		}
		if err != nil {
			return nil, fmt.Errorf("commit %s: %s: %w", id, key, err)
		}
	}
	if !haveTree {
		return nil, fmt.Errorf("commit %s has no tree", id)
	}
	c.message = text
	return c, nil
}

// readCommit reads the commit id, peeling annotated tags.
func (s *store) readCommit(id oid) (*commit, error) {
	for range 10 {
		t, data, err := s.read(id)
		if err != nil {
			return nil, err
		}
		switch t {
		case objCommit:
			return parseCommit(s, id, data)
		case objTag:
			hdr, _, _ := strings.Cut(string(data), "\n")
			target, ok := strings.CutPrefix(hdr, "object ")
			if !ok {
				return nil, fmt.Errorf("tag %s names no object", id)
			}
			if id, err = parseOID(target); err != nil {
				return nil, fmt.Errorf("tag %s: %w", id, err)
			}
		default:
			return nil, fmt.Errorf("object %s is a %s, not a commit", id, t)
		}
	}
	return nil, fmt.Errorf("tag chain at %s is too long", id)
}

// files lists the files of c's tree (none for a nil commit).
func (c *commit) files() (map[string]treeFile, error) {
	out := map[string]treeFile{}
	if c == nil {
		return out, nil
	}
	if err := c.s.walkTree(c.tree, "", out, false); err != nil {
		return nil, fmt.Errorf("read tree of %s: %w", c.id, err)
	}
	return out, nil
}

// treeFiles lists the files of c's tree (none for a nil commit).
func treeFiles(c *commit) (map[string]treeFile, error) { return c.files() }
