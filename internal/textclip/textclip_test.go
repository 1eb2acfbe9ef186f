package textclip

import "testing"

func TestRunes(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abcde", 5, "abcde"},
		{"cut", "abcdef", 5, "abcde…"},
		{"multibyte kept whole", "ééééé", 3, "ééé…"},
		{"multibyte fits by runes, not bytes", "éé", 2, "éé"},
		{"emoji", "🙂🙂🙂", 1, "🙂…"},
		{"zero", "abc", 0, "…"},
		{"negative", "abc", -1, "…"},
		{"empty", "", 3, ""},
		{"invalid utf8 counts a rune per bad byte", "a\xffb", 2, "a\xff…"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Runes(tt.in, tt.n); got != tt.want {
				t.Errorf("Runes(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.want)
			}
		})
	}
}

func TestOneLineAndLine(t *testing.T) {
	tests := []struct {
		name string
		in   string
		n    int
		one  string
		line string
	}{
		{"plain", "hello world", 20, "hello world", "hello world"},
		{"newlines and tabs", "  a\n\tb\r\n c  ", 20, "a b c", "a b c"},
		{"cut after collapsing", "one\n\ntwo three", 7, "one two three", "one two…"},
		{"only space", " \n\t ", 5, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := OneLine(tt.in); got != tt.one {
				t.Errorf("OneLine(%q) = %q, want %q", tt.in, got, tt.one)
			}
			if got := Line(tt.in, tt.n); got != tt.line {
				t.Errorf("Line(%q, %d) = %q, want %q", tt.in, tt.n, got, tt.line)
			}
		})
	}
}
