package versioning

import (
	"bytes"
	"crypto/sha1" //nolint:gosec // the index checksum is SHA-1 by definition
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"slices"
	"strings"
)

// This file reads and writes git's index (.git/index, "DIRC"): the list of
// staged files with their blob ids and stat data. Reverie writes version 2,
// reads versions 2 and 3 and ignores extensions (TREE, UNTR, …), which are
// optional caches. Stat data is filled from the file as read, so git status
// trusts it without hashing; an entry without it is checked by content.

// indexEntry is one staged file.
type indexEntry struct {
	name  string
	id    oid
	mode  uint32
	stage int
	stat  statData
}

// statData is the part of a file's stat git compares to notice changes.
type statData struct {
	ctimeSec, ctimeNsec uint32
	mtimeSec, mtimeNsec uint32
	dev, ino, uid, gid  uint32
	size                uint32
}

// statOf fills statData from info (platform parts in stat_*.go).
func statOf(info fs.FileInfo) statData {
	mt := info.ModTime()
	st := statData{
		mtimeSec: uint32(mt.Unix()), mtimeNsec: uint32(mt.Nanosecond()),
		size: uint32(info.Size()),
	}
	sysStat(info, &st)
	return st
}

const (
	indexHeaderLen  = 12
	indexEntryFixed = 62 // stat (40) + id (20) + flags (2)
	flagExtended    = 0x4000
	flagStageShift  = 12
	flagNameMask    = 0xfff
)

// readIndex reads the index at p; a missing index is an empty one.
func readIndex(p string) ([]indexEntry, error) {
	data, err := os.ReadFile(p)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return parseIndex(data)
}

func parseIndex(data []byte) ([]indexEntry, error) {
	if len(data) < indexHeaderLen+sha1.Size {
		return nil, errors.New("index is truncated")
	}
	body, sum := data[:len(data)-sha1.Size], data[len(data)-sha1.Size:]
	if got := sha1.Sum(body); !bytes.Equal(got[:], sum) { //nolint:gosec // index checksum
		return nil, errors.New("index checksum does not match")
	}
	if string(body[:4]) != "DIRC" {
		return nil, errors.New("not an index (no DIRC signature)")
	}
	version := binary.BigEndian.Uint32(body[4:])
	if version != 2 && version != 3 {
		return nil, fmt.Errorf("index version %d is not read (versions 2 and 3 are)", version)
	}
	n := binary.BigEndian.Uint32(body[8:])
	rest := body[indexHeaderLen:]
	if uint64(n)*indexEntryFixed > uint64(len(rest)) {
		return nil, fmt.Errorf("index lists %d entries but is too short for them", n)
	}
	out := make([]indexEntry, 0, n)
	for range n {
		if len(rest) < indexEntryFixed {
			return nil, errors.New("index entry is truncated")
		}
		u := func(i int) uint32 { return binary.BigEndian.Uint32(rest[4*i:]) }
		e := indexEntry{stat: statData{
			ctimeSec: u(0), ctimeNsec: u(1), mtimeSec: u(2), mtimeNsec: u(3),
			dev: u(4), ino: u(5), uid: u(7), gid: u(8), size: u(9),
		}, mode: u(6)}
		copy(e.id[:], rest[40:60])
		flags := binary.BigEndian.Uint16(rest[60:])
		e.stage = int(flags>>flagStageShift) & 3
		fixed := indexEntryFixed
		if flags&flagExtended != 0 {
			if version < 3 {
				return nil, errors.New("index version 2 entry with extended flags")
			}
			fixed += 2
			if len(rest) < fixed {
				return nil, errors.New("index entry is truncated")
			}
		}
		nul := bytes.IndexByte(rest[fixed:], 0)
		if nul < 0 {
			return nil, errors.New("index entry name does not end")
		}
		e.name = string(rest[fixed : fixed+nul])
		if e.name == "" {
			return nil, errors.New("index entry without a name")
		}
		// Entries are padded with 1–8 NULs to a multiple of 8 bytes.
		size := (fixed + nul + 8) &^ 7
		if size > len(rest) {
			return nil, errors.New("index entry is truncated")
		}
		rest = rest[size:]
		out = append(out, e)
	}
	return out, nil
}

// encodeIndex encodes entries (any order) as a version 2 index.
func encodeIndex(entries []indexEntry) []byte {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b indexEntry) int {
		if c := strings.Compare(a.name, b.name); c != 0 {
			return c
		}
		return a.stage - b.stage
	})
	var b bytes.Buffer
	b.WriteString("DIRC")
	b.Write(binary.BigEndian.AppendUint32(nil, 2))
	b.Write(binary.BigEndian.AppendUint32(nil, uint32(len(entries))))
	for _, e := range entries {
		var fixed [indexEntryFixed]byte
		for i, v := range []uint32{
			e.stat.ctimeSec, e.stat.ctimeNsec, e.stat.mtimeSec, e.stat.mtimeNsec,
			e.stat.dev, e.stat.ino, e.mode, e.stat.uid, e.stat.gid, e.stat.size,
		} {
			binary.BigEndian.PutUint32(fixed[4*i:], v)
		}
		copy(fixed[40:], e.id[:])
		binary.BigEndian.PutUint16(fixed[60:], uint16(e.stage&3)<<flagStageShift|uint16(min(len(e.name), flagNameMask)))
		b.Write(fixed[:])
		b.WriteString(e.name)
		pad := (indexEntryFixed+len(e.name)+8)&^7 - (indexEntryFixed + len(e.name))
		b.Write(make([]byte, pad))
	}
	sum := sha1.Sum(b.Bytes()) //nolint:gosec // index checksum
	b.Write(sum[:])
	return b.Bytes()
}
