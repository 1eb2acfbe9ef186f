package versioning

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// This file compares trees (which files a commit added, changed or
// removed) and writes the unified diff git shows for them: Myers' O(ND)
// algorithm in linear space, three lines of context, git's headers
// ("diff --git", "new file mode", "index", "--- a/x", "+++ b/x", /dev/null
// for a missing side), binary files named rather than shown.

// fileChange is one file a commit added, changed or removed. A side that
// does not exist has ok false.
type fileChange struct {
	name       string
	from, to   treeFile
	fromOK, ok bool
}

// diffTrees lists the file changes from tree a to tree b (a zero id is an
// empty tree), sorted by path. Identical subtrees are skipped unread.
func (s *store) diffTrees(a, b oid) ([]fileChange, error) {
	var out []fileChange
	if err := s.diffTreesUnder(a, b, "", &out); err != nil {
		return nil, err
	}
	slices.SortFunc(out, func(x, y fileChange) int { return strings.Compare(x.name, y.name) })
	return out, nil
}

func (s *store) diffTreesUnder(a, b oid, prefix string, out *[]fileChange) error {
	if a == b {
		return nil
	}
	read := func(id oid) (map[string]treeEntry, error) {
		m := map[string]treeEntry{}
		if id == zeroID {
			return m, nil
		}
		entries, err := s.readTree(id)
		for _, e := range entries {
			m[e.name] = e
		}
		return m, err
	}
	ea, err := read(a)
	if err != nil {
		return err
	}
	eb, err := read(b)
	if err != nil {
		return err
	}
	names := make([]string, 0, len(ea)+len(eb))
	for n := range ea {
		names = append(names, n)
	}
	for n := range eb {
		if _, dup := ea[n]; !dup {
			names = append(names, n)
		}
	}
	for _, n := range names {
		x, xok := ea[n]
		y, yok := eb[n]
		if xok && yok && x == y {
			continue
		}
		name := n
		if prefix != "" {
			name = prefix + "/" + n
		}
		xTree, yTree := xok && x.mode == modeTree, yok && y.mode == modeTree
		xFile, yFile := xok && isFileMode(x.mode), yok && isFileMode(y.mode)
		switch {
		case xTree && yTree:
			if err := s.diffTreesUnder(x.id, y.id, name, out); err != nil {
				return err
			}
			continue
		case xFile && yFile:
			*out = append(*out, fileChange{name: name, from: treeFile{x.id, x.mode}, fromOK: true,
				to: treeFile{y.id, y.mode}, ok: true})
			continue
		}
		// A file became a directory or the other way round, or one side
		// is missing: removals and additions.
		if xTree {
			if err := s.diffTreesUnder(x.id, zeroID, name, out); err != nil {
				return err
			}
		} else if xFile {
			*out = append(*out, fileChange{name: name, from: treeFile{x.id, x.mode}, fromOK: true})
		}
		if yTree {
			if err := s.diffTreesUnder(zeroID, y.id, name, out); err != nil {
				return err
			}
		} else if yFile {
			*out = append(*out, fileChange{name: name, to: treeFile{y.id, y.mode}, ok: true})
		}
	}
	return nil
}

// contextLines is the context of each hunk, as git's default.
const contextLines = 3

// binaryProbe is how much of a file is looked at for a NUL byte, as git.
const binaryProbe = 8000

func isBinary(data []byte) bool {
	return bytes.IndexByte(data[:min(len(data), binaryProbe)], 0) >= 0
}

// writePatch writes the git-style patch of changes to b, reading the blobs
// from s.
func (s *store) writePatch(ctx context.Context, b *strings.Builder, changes []fileChange) error {
	for _, ch := range changes {
		if err := ctx.Err(); err != nil {
			return err
		}
		var before, after []byte
		var err error
		if ch.fromOK {
			if before, err = s.readAs(ch.from.id, objBlob); err != nil {
				return fmt.Errorf("%s: %w", ch.name, err)
			}
		}
		if ch.ok {
			if after, err = s.readAs(ch.to.id, objBlob); err != nil {
				return fmt.Errorf("%s: %w", ch.name, err)
			}
		}
		writeFilePatch(b, ch, before, after)
	}
	return nil
}

// writeFilePatch writes one file's part of a patch, as git diff does.
func writeFilePatch(b *strings.Builder, ch fileChange, before, after []byte) {
	aName, bName := quotePath("a/"+ch.name), quotePath("b/"+ch.name)
	fmt.Fprintf(b, "diff --git %s %s\n", aName, bName)
	short := func(id oid) string { return id.String()[:shortLen] }
	switch {
	case !ch.fromOK:
		fmt.Fprintf(b, "new file mode %06o\nindex %s..%s\n", ch.to.mode, short(zeroID), short(ch.to.id))
		aName = "/dev/null"
	case !ch.ok:
		fmt.Fprintf(b, "deleted file mode %06o\nindex %s..%s\n", ch.from.mode, short(ch.from.id), short(zeroID))
		bName = "/dev/null"
	case ch.from.mode != ch.to.mode:
		fmt.Fprintf(b, "old mode %06o\nnew mode %06o\n", ch.from.mode, ch.to.mode)
		if ch.from.id != ch.to.id {
			fmt.Fprintf(b, "index %s..%s\n", short(ch.from.id), short(ch.to.id))
		}
	default:
		fmt.Fprintf(b, "index %s..%s %06o\n", short(ch.from.id), short(ch.to.id), ch.to.mode)
	}
	if ch.fromOK && ch.ok && ch.from.id == ch.to.id {
		return // mode change only
	}
	if isBinary(before) || isBinary(after) {
		fmt.Fprintf(b, "Binary files %s and %s differ\n", aName, bName)
		return
	}
	hunks := unifiedHunks(splitLines(before), splitLines(after))
	if hunks == "" {
		return // an empty file added or removed
	}
	fmt.Fprintf(b, "--- %s%s\n+++ %s%s\n", aName, nameTab(aName), bName, nameTab(bName))
	b.WriteString(hunks)
}

// nameTab is git's tab after a ---/+++ name with a space in it.
func nameTab(name string) string {
	if strings.Contains(name, " ") {
		return "\t"
	}
	return ""
}

// quotePath quotes a path as git does (core.quotePath): in double quotes
// with C escapes when it holds a quote, a backslash, a control character
// or a non-ASCII byte.
func quotePath(p string) string {
	need := false
	for i := 0; i < len(p); i++ {
		if c := p[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' {
			need = true
			break
		}
	}
	if !need {
		return p
	}
	var b strings.Builder
	b.WriteByte('"')
	for i := 0; i < len(p); i++ {
		switch c := p[i]; c {
		case '"', '\\':
			b.WriteByte('\\')
			b.WriteByte(c)
		case '\a':
			b.WriteString(`\a`)
		case '\b':
			b.WriteString(`\b`)
		case '\t':
			b.WriteString(`\t`)
		case '\n':
			b.WriteString(`\n`)
		case '\v':
			b.WriteString(`\v`)
		case '\f':
			b.WriteString(`\f`)
		case '\r':
			b.WriteString(`\r`)
		default:
			if c < 0x20 || c >= 0x7f {
				fmt.Fprintf(&b, `\%03o`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// splitLines splits data into lines that keep their "\n" (the last may
// have none).
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	s := string(data)
	out := make([]string, 0, strings.Count(s, "\n")+1)
	for s != "" {
		i := strings.IndexByte(s, '\n')
		if i < 0 {
			out = append(out, s)
			break
		}
		out = append(out, s[:i+1])
		s = s[i+1:]
	}
	return out
}

// change is a run of lines removed from a ([a0, a1)) and added from b
// ([b0, b1)) at the same place.
type change struct{ a0, a1, b0, b1 int }

// diffLines returns the changes that turn a into b, in order.
func diffLines(a, b []string) []change {
	return diffLinesCost(a, b, max(256, isqrt(len(a)+len(b))))
}

// diffLinesCost is diffLines with the bound on the edit distance one
// bisection explores (see differ.maxCost).
func diffLinesCost(a, b []string, maxCost int) []change {
	ids := map[string]int{}
	intern := func(lines []string) []int {
		out := make([]int, len(lines))
		for i, l := range lines {
			id, ok := ids[l]
			if !ok {
				id = len(ids)
				ids[l] = id
			}
			out[i] = id
		}
		return out
	}
	d := &differ{a: intern(a), b: intern(b), delA: make([]bool, len(a)), insB: make([]bool, len(b))}
	d.maxCost = maxCost
	d.compare(0, len(a), 0, len(b))

	var out []change
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		if (i < len(a) && d.delA[i]) || (j < len(b) && d.insB[j]) {
			c := change{a0: i, b0: j}
			for i < len(a) && d.delA[i] {
				i++
			}
			for j < len(b) && d.insB[j] {
				j++
			}
			c.a1, c.b1 = i, j
			out = append(out, c)
			continue
		}
		i++
		j++
	}
	return out
}

func isqrt(n int) int {
	r := 0
	for (r+1)*(r+1) <= n {
		r++
	}
	return r
}

// differ marks which lines of a are removed and which of b are added.
type differ struct {
	a, b       []int
	delA, insB []bool
	// maxCost bounds the edit distance one bisection explores; past it
	// the middle of the region is taken as the split (a correct, maybe
	// longer diff in time linear in the size, for pathological inputs).
	maxCost int
	v1, v2  []int
}

// compare marks the differences between a[a0:a1] and b[b0:b1].
func (d *differ) compare(a0, a1, b0, b1 int) {
	for a0 < a1 && b0 < b1 && d.a[a0] == d.b[b0] {
		a0++
		b0++
	}
	for a0 < a1 && b0 < b1 && d.a[a1-1] == d.b[b1-1] {
		a1--
		b1--
	}
	if a0 == a1 || b0 == b1 {
		d.markAll(a0, a1, b0, b1)
		return
	}
	x, y, ok := d.bisect(a0, a1, b0, b1)
	if !ok || (x == a0 && y == b0) || (x == a1 && y == b1) {
		d.markAll(a0, a1, b0, b1)
		return
	}
	d.compare(a0, x, b0, y)
	d.compare(x, a1, y, b1)
}

func (d *differ) markAll(a0, a1, b0, b1 int) {
	for i := a0; i < a1; i++ {
		d.delA[i] = true
	}
	for j := b0; j < b1; j++ {
		d.insB[j] = true
	}
}

// bisect finds the middle snake of the shortest edit script between
// a[a0:a1] and b[b0:b1] (Myers 1986, §4b), searching forward and backward
// at once; ok is false when the two regions have nothing in common.
func (d *differ) bisect(a0, a1, b0, b1 int) (x, y int, ok bool) {
	A, B := d.a[a0:a1], d.b[b0:b1]
	n, m := len(A), len(B)
	maxD := (n + m + 1) / 2
	limit := min(maxD, d.maxCost)
	off := limit + 1
	vLen := 2*off + 1
	if cap(d.v1) < vLen {
		d.v1, d.v2 = make([]int, vLen), make([]int, vLen)
	}
	v1, v2 := d.v1[:vLen], d.v2[:vLen]
	for i := range v1 {
		v1[i], v2[i] = -1, -1
	}
	v1[off+1], v2[off+1] = 0, 0
	delta := n - m
	front := delta%2 != 0
	k1start, k1end, k2start, k2end := 0, 0, 0, 0
	for dd := 0; dd < limit; dd++ {
		for k1 := -dd + k1start; k1 <= dd-k1end; k1 += 2 {
			k1o := off + k1
			var x1 int
			if k1 == -dd || (k1 != dd && v1[k1o-1] < v1[k1o+1]) {
				x1 = v1[k1o+1]
			} else {
				x1 = v1[k1o-1] + 1
			}
			y1 := x1 - k1
			for x1 < n && y1 < m && A[x1] == B[y1] {
				x1++
				y1++
			}
			v1[k1o] = x1
			switch {
			case x1 > n:
				k1end += 2
			case y1 > m:
				k1start += 2
			case front:
				k2o := off + delta - k1
				if k2o >= 0 && k2o < vLen && v2[k2o] != -1 && x1 >= n-v2[k2o] {
					return a0 + x1, b0 + y1, true
				}
			}
		}
		for k2 := -dd + k2start; k2 <= dd-k2end; k2 += 2 {
			k2o := off + k2
			var x2 int
			if k2 == -dd || (k2 != dd && v2[k2o-1] < v2[k2o+1]) {
				x2 = v2[k2o+1]
			} else {
				x2 = v2[k2o-1] + 1
			}
			y2 := x2 - k2
			for x2 < n && y2 < m && A[n-x2-1] == B[m-y2-1] {
				x2++
				y2++
			}
			v2[k2o] = x2
			switch {
			case x2 > n:
				k2end += 2
			case y2 > m:
				k2start += 2
			case !front:
				k1o := off + delta - k2
				if k1o >= 0 && k1o < vLen && v1[k1o] != -1 {
					x1 := v1[k1o]
					y1 := off + x1 - k1o
					if x1 >= n-x2 {
						return a0 + x1, b0 + y1, true
					}
				}
			}
		}
	}
	if limit < maxD {
		// Too costly to finish: split in the middle.
		return a0 + n/2, b0 + m/2, true
	}
	return 0, 0, false
}

// unifiedHunks formats the differences between a and b as unified diff
// hunks with contextLines of context; "" when they are equal.
func unifiedHunks(a, b []string) string {
	changes := diffLines(a, b)
	if len(changes) == 0 {
		return ""
	}
	var out strings.Builder
	for i := 0; i < len(changes); {
		// Changes closer than twice the context share a hunk.
		j := i
		for j+1 < len(changes) && changes[j+1].a0-changes[j].a1 <= 2*contextLines {
			j++
		}
		first, last := changes[i], changes[j]
		aStart := max(0, first.a0-contextLines)
		bStart := first.b0 - (first.a0 - aStart)
		aEnd := min(len(a), last.a1+contextLines)
		bEnd := last.b1 + (aEnd - last.a1)
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", hunkRange(aStart, aEnd-aStart), hunkRange(bStart, bEnd-bStart))
		ai := aStart
		for _, c := range changes[i : j+1] {
			for ; ai < c.a0; ai++ {
				writeLine(&out, ' ', a[ai])
			}
			for k := c.a0; k < c.a1; k++ {
				writeLine(&out, '-', a[k])
			}
			for k := c.b0; k < c.b1; k++ {
				writeLine(&out, '+', b[k])
			}
			ai = c.a1
		}
		for ; ai < aEnd; ai++ {
			writeLine(&out, ' ', a[ai])
		}
		i = j + 1
	}
	return out.String()
}

// hunkRange is "start,count" as unified diffs write it: 1-based, the count
// left out when it is 1, the line before when it is 0.
func hunkRange(start, count int) string {
	switch count {
	case 0:
		return strconv.Itoa(start) + ",0"
	case 1:
		return strconv.Itoa(start + 1)
	}
	return strconv.Itoa(start+1) + "," + strconv.Itoa(count)
}

func writeLine(b *strings.Builder, prefix byte, line string) {
	b.WriteByte(prefix)
	b.WriteString(line)
	if !strings.HasSuffix(line, "\n") {
		b.WriteString("\n\\ No newline at end of file\n")
	}
}
