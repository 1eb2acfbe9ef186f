package versioning

import (
	"bufio"
	"bytes"
	"compress/zlib"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// This file reads the pack files git leaves in objects/pack when someone
// runs git gc (or git repack) in the data dir: index version 2 (*.idx),
// pack version 2 or 3 (*.pack), whole objects and both delta kinds
// (OFS_DELTA, REF_DELTA). Reverie itself only writes loose objects.

// packFile is one pack with its index held in memory.
type packFile struct {
	path    string // the .pack file
	fanout  [256]uint32
	ids     []byte // n × 20
	offsets []byte // n × 4
	large   []byte // 8-byte offsets for packs over 2 GiB
}

var packIdxMagic = []byte{0xff, 't', 'O', 'c'}

// openPack reads the index idxPath and checks its pack's header.
func openPack(idxPath string) (*packFile, error) {
	data, err := os.ReadFile(idxPath)
	if err != nil {
		return nil, err
	}
	if len(data) < 8 || !bytes.Equal(data[:4], packIdxMagic) {
		return nil, fmt.Errorf("pack index %s is version 1 or not an index (only version 2 is read)", filepath.Base(idxPath))
	}
	if v := binary.BigEndian.Uint32(data[4:]); v != 2 {
		return nil, fmt.Errorf("pack index %s has version %d (only version 2 is read)", filepath.Base(idxPath), v)
	}
	p := &packFile{path: strings.TrimSuffix(idxPath, ".idx") + ".pack"}
	const fanoutAt = 8
	if len(data) < fanoutAt+256*4 {
		return nil, fmt.Errorf("pack index %s is truncated", filepath.Base(idxPath))
	}
	for i := range p.fanout {
		p.fanout[i] = binary.BigEndian.Uint32(data[fanoutAt+4*i:])
		if i > 0 && p.fanout[i] < p.fanout[i-1] {
			return nil, fmt.Errorf("pack index %s: fan-out table is not sorted", filepath.Base(idxPath))
		}
	}
	n := int(p.fanout[255])
	idsAt := fanoutAt + 256*4
	offsAt := idsAt + n*20 + n*4 // names, then CRCs
	largeAt := offsAt + n*4
	if n > len(data) || len(data) < largeAt+40 {
		return nil, fmt.Errorf("pack index %s is truncated", filepath.Base(idxPath))
	}
	p.ids = data[idsAt : idsAt+n*20]
	p.offsets = data[offsAt:largeAt]
	p.large = data[largeAt : len(data)-40]

	f, err := os.Open(p.path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var hdr [12]byte
	if _, err := io.ReadFull(f, hdr[:]); err != nil {
		return nil, fmt.Errorf("pack %s: %w", filepath.Base(p.path), err)
	}
	if string(hdr[:4]) != "PACK" {
		return nil, fmt.Errorf("pack %s is not a pack file", filepath.Base(p.path))
	}
	if v := binary.BigEndian.Uint32(hdr[4:]); v != 2 && v != 3 {
		return nil, fmt.Errorf("pack %s has version %d (versions 2 and 3 are read)", filepath.Base(p.path), v)
	}
	if c := binary.BigEndian.Uint32(hdr[8:]); int(c) != n {
		return nil, fmt.Errorf("pack %s holds %d objects but its index lists %d", filepath.Base(p.path), c, n)
	}
	return p, nil
}

// find returns the offset of id in the pack.
func (p *packFile) find(id oid) (int64, bool, error) {
	lo := 0
	if id[0] > 0 {
		lo = int(p.fanout[id[0]-1])
	}
	hi := int(p.fanout[id[0]])
	// Binary search over the sorted ids in [lo, hi).
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		switch c := bytes.Compare(p.ids[mid*20:mid*20+20], id[:]); {
		case c == 0:
			return p.offset(mid)
		case c < 0:
			lo = mid + 1
		default:
			hi = mid
		}
	}
	return 0, false, nil
}

func (p *packFile) offset(i int) (int64, bool, error) {
	v := binary.BigEndian.Uint32(p.offsets[i*4:])
	if v&0x80000000 == 0 {
		return int64(v), true, nil
	}
	j := int(v & 0x7fffffff)
	if len(p.large) < (j+1)*8 {
		return 0, false, fmt.Errorf("pack index of %s: bad large offset", filepath.Base(p.path))
	}
	return int64(binary.BigEndian.Uint64(p.large[j*8:])), true, nil
}

// loadPacks opens the packs of objects/pack it has not opened yet and
// forgets the ones that are gone, when the directory changed since the last
// look.
func (s *store) loadPacks() error {
	dir := filepath.Join(s.dir, "pack")
	fi, err := os.Stat(dir)
	if errors.Is(err, os.ErrNotExist) {
		s.packs, s.packDirTime = nil, time.Time{}
		return nil
	}
	if err != nil {
		return err
	}
	if s.scanned && fi.ModTime().Equal(s.packDirTime) {
		return nil
	}
	names, err := filepath.Glob(filepath.Join(dir, "pack-*.idx"))
	if err != nil {
		return err
	}
	var packs []*packFile
	for _, idx := range names {
		pack := strings.TrimSuffix(idx, ".idx") + ".pack"
		if i := slices.IndexFunc(s.packs, func(p *packFile) bool { return p.path == pack }); i >= 0 {
			packs = append(packs, s.packs[i])
			continue
		}
		p, err := openPack(idx)
		if err != nil {
			return err
		}
		packs = append(packs, p)
	}
	s.packs, s.scanned, s.packDirTime = packs, true, fi.ModTime()
	clear(s.bases)
	return nil
}

// findPacked locates id in a pack; errObjectMissing when no pack has it.
func (s *store) findPacked(id oid) (*packFile, int64, error) {
	if err := s.loadPacks(); err != nil {
		return nil, 0, err
	}
	for _, p := range s.packs {
		off, ok, err := p.find(id)
		if err != nil {
			return nil, 0, err
		}
		if ok {
			return p, off, nil
		}
	}
	return nil, 0, errObjectMissing
}

func (s *store) readPacked(id oid) (objType, []byte, error) {
	p, off, err := s.findPacked(id)
	if err != nil {
		return 0, nil, err
	}
	f, err := os.Open(p.path)
	if err != nil {
		return 0, nil, err
	}
	defer f.Close()
	t, data, err := s.unpack(p, f, off, 0)
	if err != nil {
		return 0, nil, fmt.Errorf("pack %s at %d: %w", filepath.Base(p.path), off, err)
	}
	return t, data, nil
}

// maxDeltaChain bounds delta chains (git's default depth is 50, its
// aggressive one 250).
const maxDeltaChain = 1000

// baseCacheBytes bounds the cache of delta bases.
const baseCacheBytes = 16 << 20

type baseKey struct {
	pack string
	off  int64
}

// unpack reads the object at off in p (open as f), resolving deltas.
func (s *store) unpack(p *packFile, f *os.File, off int64, depth int) (objType, []byte, error) {
	// depth counts this chain; s.unpacking also counts chains whose REF
	// delta bases sit in other packs, which a corrupt pair of packs could
	// make circular.
	if depth > maxDeltaChain || s.unpacking > maxDeltaChain {
		return 0, nil, fmt.Errorf("delta chain longer than %d", maxDeltaChain)
	}
	s.unpacking++
	defer func() { s.unpacking-- }()
	key := baseKey{p.path, off}
	if c, ok := s.bases[key]; ok {
		return c.t, c.data, nil
	}
	br := bufio.NewReader(io.NewSectionReader(f, off, 1<<62))
	c, err := br.ReadByte()
	if err != nil {
		return 0, nil, err
	}
	t := objType(c >> 4 & 7)
	size := int64(c & 15)
	for shift := 4; c&0x80 != 0; shift += 7 {
		if shift > 56 {
			return 0, nil, errors.New("object size overflows")
		}
		if c, err = br.ReadByte(); err != nil {
			return 0, nil, err
		}
		size |= int64(c&0x7f) << shift
	}
	var out []byte
	switch t {
	case objCommit, objTree, objBlob, objTag:
		if out, err = inflate(br, size); err != nil {
			return 0, nil, err
		}
	case objOfsDelta:
		c, err := br.ReadByte()
		if err != nil {
			return 0, nil, err
		}
		rel := int64(c & 0x7f)
		for c&0x80 != 0 {
			if rel >= 1<<55 {
				return 0, nil, errors.New("delta base offset overflows")
			}
			if c, err = br.ReadByte(); err != nil {
				return 0, nil, err
			}
			rel = (rel+1)<<7 | int64(c&0x7f)
		}
		base := off - rel
		if rel <= 0 || base < 12 {
			return 0, nil, fmt.Errorf("delta base offset %d is outside the pack", base)
		}
		bt, bdata, err := s.unpack(p, f, base, depth+1)
		if err != nil {
			return 0, nil, err
		}
		if out, err = applyInflatedDelta(br, size, bdata); err != nil {
			return 0, nil, err
		}
		t = bt
	case objRefDelta:
		var baseID oid
		if _, err := io.ReadFull(br, baseID[:]); err != nil {
			return 0, nil, err
		}
		var bt objType
		var bdata []byte
		if bp, boff, err := s.findPacked(baseID); err == nil && bp == p {
			bt, bdata, err = s.unpack(p, f, boff, depth+1)
			if err != nil {
				return 0, nil, err
			}
		} else if bt, bdata, err = s.read(baseID); err != nil {
			return 0, nil, fmt.Errorf("delta base: %w", err)
		}
		if out, err = applyInflatedDelta(br, size, bdata); err != nil {
			return 0, nil, err
		}
		t = bt
	default:
		return 0, nil, fmt.Errorf("unknown pack object type %d", t)
	}
	if depth > 0 && len(out) <= baseCacheBytes/8 {
		s.baseBytes += len(out)
		if s.baseBytes > baseCacheBytes {
			clear(s.bases)
			s.baseBytes = len(out)
		}
		s.bases[key] = cached{t, out}
	}
	return t, out, nil
}

// inflate reads a zlib stream of size bytes.
func inflate(r io.Reader, size int64) ([]byte, error) {
	if size < 0 || size > maxObjectBytes {
		return nil, fmt.Errorf("object of %d bytes is over the %d-byte limit", size, maxObjectBytes)
	}
	zr, err := zlib.NewReader(r)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	out := make([]byte, size)
	if _, err := io.ReadFull(zr, out); err != nil {
		return nil, fmt.Errorf("inflate: %w", err)
	}
	return out, nil
}

func applyInflatedDelta(r io.Reader, size int64, base []byte) ([]byte, error) {
	delta, err := inflate(r, size)
	if err != nil {
		return nil, err
	}
	return applyDelta(base, delta)
}

// applyDelta rebuilds an object from base and a git delta: the two sizes,
// then copy (from base) and insert (literal) instructions.
func applyDelta(base, delta []byte) ([]byte, error) {
	srcSize, delta, err := deltaSize(delta)
	if err != nil {
		return nil, err
	}
	if srcSize != uint64(len(base)) {
		return nil, fmt.Errorf("delta is for a %d-byte base, not %d", srcSize, len(base))
	}
	dstSize, delta, err := deltaSize(delta)
	if err != nil {
		return nil, err
	}
	if dstSize > maxObjectBytes {
		return nil, fmt.Errorf("delta result of %d bytes is over the %d-byte limit", dstSize, maxObjectBytes)
	}
	out := make([]byte, 0, dstSize)
	for len(delta) > 0 {
		op := delta[0]
		delta = delta[1:]
		switch {
		case op&0x80 != 0: // copy
			var off, n uint64
			for i := range 4 {
				if op&(1<<i) != 0 {
					if len(delta) == 0 {
						return nil, errors.New("truncated delta copy")
					}
					off |= uint64(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			for i := range 3 {
				if op&(0x10<<i) != 0 {
					if len(delta) == 0 {
						return nil, errors.New("truncated delta copy")
					}
					n |= uint64(delta[0]) << (8 * i)
					delta = delta[1:]
				}
			}
			if n == 0 {
				n = 0x10000
			}
			if off+n > uint64(len(base)) || uint64(len(out))+n > dstSize {
				return nil, errors.New("delta copy out of range")
			}
			out = append(out, base[off:off+n]...)
		case op != 0: // insert
			n := int(op)
			if n > len(delta) || uint64(len(out)+n) > dstSize {
				return nil, errors.New("delta insert out of range")
			}
			out = append(out, delta[:n]...)
			delta = delta[n:]
		default:
			return nil, errors.New("delta has a reserved instruction")
		}
	}
	if uint64(len(out)) != dstSize {
		return nil, fmt.Errorf("delta gave %d bytes, want %d", len(out), dstSize)
	}
	return out, nil
}

// deltaSize reads a little-endian base-128 size.
func deltaSize(b []byte) (uint64, []byte, error) {
	var v uint64
	for shift := 0; shift < 64; shift += 7 {
		if len(b) == 0 {
			return 0, nil, errors.New("truncated delta header")
		}
		c := b[0]
		b = b[1:]
		v |= uint64(c&0x7f) << shift
		if c&0x80 == 0 {
			return v, b, nil
		}
	}
	return 0, nil, errors.New("delta size overflows")
}
