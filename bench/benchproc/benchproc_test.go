package benchproc

import (
	"os"
	"path/filepath"
	"testing"
)

func TestKiB(t *testing.T) {
	file := filepath.Join(t.TempDir(), "status")
	if err := os.WriteFile(file, []byte("Name:\tx\nRssAnon:\t    5632 kB\nRssFile:\t 100 kB\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, key string
		want      int64
		err       bool
	}{
		{"present", "RssAnon:", 5632, false},
		{"another line", "RssFile:", 100, false},
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
	if p, err := FreePort(); err != nil || p <= 0 {
		t.Errorf("FreePort() = %d, %v", p, err)
	}
}
