package extension

import (
	"regexp"
	"strings"
	"testing"
)

func TestSafeName(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{"plain", "report-2026.pdf", "report-2026.pdf"},
		{"spaces", "my holiday photo.jpg", "my_holiday_photo.jpg"},
		{"run of others", "a  //\\\\ b", "a_b"},
		{"path", "../../etc/passwd", "etc_passwd"},
		{"dots only", "..", ""},
		{"leading and trailing", "._x_.", "x"},
		{"unicode", "résumé – final.txt", "r_sum_final.txt"},
		{"matrix room", "!abc:example.org", "abc_example.org"},
		{"empty", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := SafeName(tt.in); got != tt.want {
				t.Errorf("SafeName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// FuzzSafeName checks SafeName against the regular expression the channels
// used before it.
func FuzzSafeName(f *testing.F) {
	ref := regexp.MustCompile(`[^A-Za-z0-9._-]+`)
	for _, s := range []string{"a b", "../x", "é/ü", "\x00\xff", "..."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := strings.Trim(ref.ReplaceAllString(s, "_"), "._")
		if got := SafeName(s); got != want {
			t.Fatalf("SafeName(%q) = %q, the expression gives %q", s, got, want)
		}
	})
}
