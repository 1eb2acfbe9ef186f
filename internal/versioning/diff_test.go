package versioning

import (
	"flag"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/")

func lines(s string) []string { return splitLines([]byte(s)) }

// TestFilePatchGolden compares one file's patch with testdata/diff/<name>.patch
// (go test -run TestFilePatchGolden -update rewrites them; the git interop
// tests check the same format against git itself).
func TestFilePatchGolden(t *testing.T) {
	id := func(s string) oid { return hashObject(objBlob, []byte(s)) }
	numbered := func(from, to int, change map[int]string) string {
		var b strings.Builder
		for i := from; i <= to; i++ {
			if s, ok := change[i]; ok {
				b.WriteString(s)
				continue
			}
			b.WriteString("line " + strconv.Itoa(i) + "\n")
		}
		return b.String()
	}
	tests := []struct {
		name          string
		before, after string
		fromOK, toOK  bool
		fromMode      uint32
		toMode        uint32
		file          string
	}{
		{"new file", "", "one\ntwo\n", false, true, 0, modeRegular, "MEMORIES.txt"},
		{"deleted file", "one\ntwo\n", "", true, false, modeRegular, 0, "MEMORIES.txt"},
		{"new empty file", "", "", false, true, 0, modeRegular, "skills/empty.md"},
		{"one line changed", "likes tea\n", "likes coffee\n", true, true, modeRegular, modeRegular, "MEMORIES.txt"},
		{"change in the middle", numbered(1, 20, nil), numbered(1, 20, map[int]string{10: "ten\n"}), true, true, modeRegular, modeRegular, "MEMORIES.txt"},
		{"distant changes make two hunks", numbered(1, 30, nil), numbered(1, 30, map[int]string{3: "", 25: "x\ny\n"}), true, true, modeRegular, modeRegular, "MEMORIES.txt"},
		{"close changes share a hunk", numbered(1, 30, nil), numbered(1, 30, map[int]string{10: "", 16: "sixteen\n"}), true, true, modeRegular, modeRegular, "MEMORIES.txt"},
		{"insert at the start", "b\nc\n", "a\nb\nc\n", true, true, modeRegular, modeRegular, "MEMORIES.txt"},
		{"delete at the end", "a\nb\nc\n", "a\nb\n", true, true, modeRegular, modeRegular, "MEMORIES.txt"},
		{"final newline added", "a\nb", "a\nb\n", true, true, modeRegular, modeRegular, "MEMORIES.txt"},
		{"final newline removed", "a\nb\n", "a\nb", true, true, modeRegular, modeRegular, "MEMORIES.txt"},
		{"no final newline either side", "a\nb", "a\nc", true, true, modeRegular, modeRegular, "MEMORIES.txt"},
		{"emptied", "a\nb\n", "", true, true, modeRegular, modeRegular, "world_state.json"},
		{"mode only", "#!/bin/sh\n", "#!/bin/sh\n", true, true, modeRegular, modeExec, "skills/run.sh"},
		{"mode and content", "#!/bin/sh\n", "#!/bin/sh\necho\n", true, true, modeExec, modeRegular, "skills/run.sh"},
		{"binary", "a\x00b", "a\x00c", true, true, modeRegular, modeRegular, "skills/x.bin"},
		{"quoted name", "", "x\n", false, true, 0, modeRegular, "skills/thé \"q\".md"},
		{"name with a space", "a\n", "b\n", true, true, modeRegular, modeRegular, "skills/with space.md"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ch := fileChange{name: tc.file, fromOK: tc.fromOK, ok: tc.toOK,
				from: treeFile{id(tc.before), tc.fromMode}, to: treeFile{id(tc.after), tc.toMode}}
			var b strings.Builder
			writeFilePatch(&b, ch, []byte(tc.before), []byte(tc.after))
			golden := filepath.Join("testdata", "diff", strings.ReplaceAll(tc.name, " ", "_")+".patch")
			if *update {
				if err := os.MkdirAll(filepath.Dir(golden), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if b.String() != string(want) {
				t.Errorf("patch:\n%s\nwant (%s):\n%s", b.String(), golden, want)
			}
			if tc.fromOK && tc.toOK && !isBinary([]byte(tc.before+tc.after)) {
				if got := applyHunks(t, lines(tc.before), b.String()); got != tc.after {
					t.Errorf("applying the patch gives %q, want %q", got, tc.after)
				}
			}
		})
	}
}

// applyHunks applies the hunks of a one-file unified diff to a, checking
// every context and removed line.
func applyHunks(t *testing.T, a []string, patch string) string {
	t.Helper()
	pl := strings.SplitAfter(patch, "\n")
	var out []string
	ai := 0
	for i := 0; i < len(pl); {
		l := pl[i]
		i++
		if !strings.HasPrefix(l, "@@ -") {
			continue
		}
		rng, _, _ := strings.Cut(strings.TrimPrefix(l, "@@ -"), " ")
		s, count, found := strings.Cut(rng, ",")
		start, _ := strconv.Atoi(s)
		start-- // 1-based
		if found && count == "0" {
			start++ // "-k,0" names the line before
		}
		out = append(out, a[ai:start]...)
		ai = start
		for i < len(pl) && pl[i] != "" && !strings.HasPrefix(pl[i], "@@") {
			l := pl[i]
			i++
			body := l[1:]
			if i < len(pl) && strings.HasPrefix(pl[i], "\\ No newline") {
				body = strings.TrimSuffix(body, "\n")
				i++
			}
			switch l[0] {
			case ' ', '-':
				if ai >= len(a) || a[ai] != body {
					t.Fatalf("patch line %q does not match line %d of %q", l, ai, a)
				}
				if l[0] == ' ' {
					out = append(out, body)
				}
				ai++
			case '+':
				out = append(out, body)
			}
		}
	}
	return strings.Join(append(out, a[ai:]...), "")
}

// lcs is the length of the longest common subsequence (dynamic
// programming: the reference for minimality).
func lcs(a, b []string) int {
	prev, cur := make([]int, len(b)+1), make([]int, len(b)+1)
	for i := range a {
		for j := range b {
			if a[i] == b[j] {
				cur[j+1] = prev[j] + 1
			} else {
				cur[j+1] = max(cur[j], prev[j+1])
			}
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// apply rebuilds b from a and the changes, checking that unchanged lines
// match.
func apply(t *testing.T, a, b []string, changes []change) []string {
	t.Helper()
	var out []string
	ai := 0
	for _, c := range changes {
		out = append(out, a[ai:c.a0]...)
		out = append(out, b[c.b0:c.b1]...)
		if len(out) != c.b1 {
			t.Fatalf("change %+v is not aligned", c)
		}
		ai = c.a1
	}
	return append(out, a[ai:]...)
}

// TestDiffLinesMinimalAndCorrect checks on random inputs that the changes
// rebuild b from a and remove and add as few lines as possible.
func TestDiffLinesMinimalAndCorrect(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	gen := func(n, alphabet int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = string(rune('a'+rng.IntN(alphabet))) + "\n"
		}
		return out
	}
	for i := range 3000 {
		a, b := gen(rng.IntN(14), 1+rng.IntN(4)), gen(rng.IntN(14), 1+rng.IntN(4))
		changes := diffLines(a, b)
		if got := apply(t, a, b, changes); strings.Join(got, "") != strings.Join(b, "") {
			t.Fatalf("case %d: %q → %q rebuilt as %q", i, a, b, got)
		}
		edits := 0
		for _, c := range changes {
			edits += c.a1 - c.a0 + c.b1 - c.b0
		}
		if want := len(a) + len(b) - 2*lcs(a, b); edits != want {
			t.Fatalf("case %d: %q → %q: %d lines changed, minimum %d", i, a, b, edits, want)
		}
	}
}

// TestDiffLinesCostBound checks that diffs past the cost bound stay correct
// (a midpoint split instead of the best one) and finish.
func TestDiffLinesCostBound(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	gen := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = strconv.Itoa(rng.IntN(50)) + "\n"
		}
		return out
	}
	for i := range 200 {
		a, b := gen(rng.IntN(300)), gen(rng.IntN(300))
		changes := diffLinesCost(a, b, 1+rng.IntN(8))
		if got := apply(t, a, b, changes); strings.Join(got, "") != strings.Join(b, "") {
			t.Fatalf("case %d: not rebuilt", i)
		}
	}
	// Two large files with nothing in common, and one with repeated lines.
	a, b := make([]string, 50000), make([]string, 50000)
	for i := range a {
		a[i], b[i] = "a"+strconv.Itoa(i)+"\n", "b"+strconv.Itoa(i)+"\n"
	}
	if got := apply(t, a, b, diffLines(a, b)); len(got) != len(b) || got[0] != b[0] {
		t.Fatal("disjoint files not rebuilt")
	}
	a2 := gen(40000)
	b2 := append(gen(20000), a2[:20000]...)
	if got := apply(t, a2, b2, diffLines(a2, b2)); strings.Join(got, "") != strings.Join(b2, "") {
		t.Fatal("repetitive files not rebuilt")
	}
}

func BenchmarkDiffLines(b *testing.B) {
	rng := rand.New(rand.NewPCG(5, 6))
	a := make([]string, 2000)
	for i := range a {
		a[i] = "memory line " + strconv.Itoa(rng.IntN(1000)) + "\n"
	}
	bb := append([]string(nil), a...)
	for range 40 {
		bb[rng.IntN(len(bb))] = "edited\n"
	}
	b.ReportAllocs()
	for b.Loop() {
		diffLines(a, bb)
	}
}
