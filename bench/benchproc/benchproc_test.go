package benchproc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKiB(t *testing.T) {
	file := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(file, []byte("Name:\tx\nRssAnon:\t    5632 kB\nRssFile:\t 100 kB\nThreads:\t9\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, key string
		want      int64
		err       bool
	}{
		{"present", "RssAnon:", 5632, false},
		{"another line", "RssFile:", 100, false},
		{"a count", "Threads:", 9, false},
		{"absent", "Pss:", 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := KiB(file, tc.key)
			if (err != nil) != tc.err || got != tc.want {
				t.Errorf("KiB(%q) = %d, %v; want %d (error %v)", tc.key, got, err, tc.want, tc.err)
			}
		})
	}
	if n, err := RssAnon(os.Getpid()); err != nil || n <= 0 {
		t.Errorf("RssAnon(self) = %d, %v", n, err)
	}
	if n, err := Threads(os.Getpid()); err != nil || n <= 0 {
		t.Errorf("Threads(self) = %d, %v", n, err)
	}
	if p, err := FreePort(); err != nil || p <= 0 {
		t.Errorf("FreePort() = %d, %v", p, err)
	}
}

func TestMappedPss(t *testing.T) {
	file := filepath.Join(t.TempDir(), "smaps")
	smaps := `00400000-00452000 r-xp 00000000 08:02 173521 /usr/bin/reverie
Rss:                 100 kB
Pss:                  60 kB
7f0000000000-7f0000100000 rw-s 00000000 08:02 99 /data/.memory-vectors-123 (deleted)
Rss:                  40 kB
Pss:                  40 kB
Pss_Dirty:            40 kB
7f0000200000-7f0000300000 rw-s 00000000 08:02 98 /data/.memory-vectors-456 (deleted)
Pss:                   8 kB
7f0000400000-7f0000500000 rw-p 00000000 00:00 0
Pss:                 500 kB
`
	if err := os.WriteFile(file, []byte(smaps), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, match string
		want        int64
	}{
		{"two unlinked files", ".memory-vectors-", 48},
		{"the executable", "/usr/bin/reverie", 60},
		{"no such mapping", "nothing", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := mappedPss(file, tc.match)
			if err != nil || got != tc.want {
				t.Errorf("mappedPss(%q) = %d, %v; want %d", tc.match, got, err, tc.want)
			}
		})
	}
	if _, err := MappedPss(os.Getpid(), "nothing"); err != nil {
		t.Errorf("MappedPss(self) = %v", err)
	}
}
