//go:build linux

package footprint

import (
	"strconv"
	"strings"
	"testing"
)

func TestReadOnlyMappings(t *testing.T) {
	smaps := `00400000-017bb000 r-xp 00000000 fe:00 10232937                           /usr/bin/reverie
Size:              20204 kB
Rss:               13100 kB
Anonymous:             0 kB
017bb000-0372f000 r--p 013bb000 fe:00 10232937                           /usr/bin/reverie
Size:              32208 kB
Anonymous:             0 kB
0372f000-038db000 rw-p 0332f000 fe:00 10232937                           /usr/bin/reverie
Anonymous:           748 kB
038db000-05b4c000 rw-p 00000000 00:00 0
Anonymous:           180 kB
05c00000-05c10000 r--p 05800000 fe:00 10232937                           /usr/bin/reverie.race
Anonymous:            64 kB
7f0000000000-7f0000001000 r--s 00000000 fe:00 42                         /data/reverie.db-shm
Anonymous:             0 kB
7f0000002000-7f0000003000 r--p 00000000 fe:00 43                         /opt/my dir/lib.so
Anonymous:             0 kB
7f0000004000-7f0000005000 r--p 00000000 fe:00 44                         /lib/no-anonymous-line.so
7ffd00000000-7ffd00021000 rw-p 00000000 00:00 0                          [stack]
Anonymous:            20 kB
7ffd00030000-7ffd00032000 r-xp 00000000 00:00 0                          [vdso]
Anonymous:             0 kB
garbage line
`
	got := readOnlyMappings([]byte(smaps))
	want := []mapping{
		{0x400000, 0x17bb000, "/usr/bin/reverie"},
		{0x17bb000, 0x372f000, "/usr/bin/reverie"},
		{0x7f0000002000, 0x7f0000003000, "/opt/my dir/lib.so"},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d mappings %+v, want %+v", len(got), got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("mapping %d = %+v, want %+v", i, got[i], want[i])
		}
	}
}

// Trim drops the test binary's code and constants from the resident set,
// and the process keeps running the code it dropped.
func TestTrimReleasesExecutablePages(t *testing.T) {
	before := rssFile(t)
	res, err := Trim()
	if err != nil {
		t.Fatal(err)
	}
	if res.Segments < 2 || res.Bytes <= 0 {
		t.Fatalf("released %+v, want at least the code and the read-only data segment", res)
	}
	after := rssFile(t)
	if after >= before {
		t.Errorf("file-backed resident memory %d bytes before, %d after", before, after)
	}
	// Code and constants are mapped again on use.
	if s := strconv.Itoa(12345) + strings.ToUpper("ok"); s != "12345OK" {
		t.Fatal(s)
	}
	if _, err := Trim(); err != nil {
		t.Fatal("second trim:", err)
	}
}

func rssFile(t *testing.T) int64 {
	t.Helper()
	n, err := ResidentFile()
	if err != nil {
		t.Skip(err)
	}
	return n
}
