package termtext

import "testing"

func TestEscape(t *testing.T) {
	for _, tc := range []struct {
		name, in, line, text, strip string
	}{
		{"plain", "Alice Smith", "Alice Smith", "Alice Smith", "Alice Smith"},
		{"unicode", "Zoë 日本 🙂", "Zoë 日本 🙂", "Zoë 日本 🙂", "Zoë 日本 🙂"},
		{"escape sequence", "Bob\x1b[2K\x1b[1A(user 1) approved", `Bob\x1b[2K\x1b[1A(user 1) approved`, `Bob\x1b[2K\x1b[1A(user 1) approved`, "Bob[2K[1A(user 1) approved"},
		{"window title", "\x1b]0;pwned\x07", `\x1b]0;pwned\a`, `\x1b]0;pwned\a`, "]0;pwned"},
		{"forged line", "eve\nmallory (user 1): asked", `eve\nmallory (user 1): asked`, "eve\nmallory (user 1): asked", "eve\nmallory (user 1): asked"},
		{"carriage return", "a\rb\r\nc", `a\rb\r\nc`, "a\\rb\nc", "ab\nc"},
		{"tab", "a\tb", `a\tb`, "a\tb", "a\tb"},
		{"C1 CSI", "x\u009b2Jy", `x\u009b2Jy`, `x\u009b2Jy`, "x2Jy"},
		{"DEL", "x\x7fy", `x\x7fy`, `x\x7fy`, "xy"},
		{"bidi override", "file\u202egnp.exe", `file\u202egnp.exe`, `file\u202egnp.exe`, "filegnp.exe"},
		{"line separator", "a\u2028b", `a\u2028b`, `a\u2028b`, "ab"},
		{"invalid UTF-8", "a\xffb\xc3", `a\xffb\xc3`, `a\xffb\xc3`, "a\uFFFDb\uFFFD"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Line(tc.in); got != tc.line {
				t.Errorf("Line(%q) = %q, want %q", tc.in, got, tc.line)
			}
			if got := Text(tc.in); got != tc.text {
				t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.text)
			}
			if got := Strip(tc.in); got != tc.strip {
				t.Errorf("Strip(%q) = %q, want %q", tc.in, got, tc.strip)
			}
		})
	}
}
