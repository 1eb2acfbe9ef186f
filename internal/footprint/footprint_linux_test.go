//go:build linux

package footprint

import "testing"

func TestParseStatus(t *testing.T) {
	status := []byte("Name:\treverie\nVmRSS:\t   20480 kB\nRssAnon:\t    6144 kB\nRssFile:\t   14336 kB\n")
	tests := []struct {
		name    string
		status  []byte
		key     string
		want    int64
		wantErr bool
	}{
		{name: "anon", status: status, key: "RssAnon:", want: 6144 << 10},
		{name: "rss", status: status, key: "VmRSS:", want: 20480 << 10},
		{name: "missing", status: status, key: "RssShmem:", wantErr: true},
		{name: "garbage", status: []byte("RssAnon:\tlots kB\n"), key: "RssAnon:", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStatus(tc.status, tc.key)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("parseStatus(%q) = %d, %v; want %d (error %v)", tc.key, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

// The process's own figure is readable and plausible.
func TestResidentAnon(t *testing.T) {
	n, err := ResidentAnon()
	if err != nil {
		t.Fatal(err)
	}
	if n <= 0 {
		t.Fatalf("RssAnon = %d", n)
	}
}
