package extension

import "strings"

// SafeName makes s usable as one file or directory name, for the files a
// channel saves (attachments, a thread's folder): every run of characters
// other than ASCII letters, digits, '.', '_' and '-' becomes one '_', and
// leading and trailing '.' and '_' are dropped, so the result has no path
// separator and is never "." or "..". It may be empty.
func SafeName(s string) string {
	var b strings.Builder
	b.Grow(len(s))
	run := false
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-' {
			b.WriteByte(c)
			run = false
			continue
		}
		if !run {
			b.WriteByte('_')
			run = true
		}
	}
	return strings.Trim(b.String(), "._")
}
