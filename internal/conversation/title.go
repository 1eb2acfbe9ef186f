package conversation

import (
	"regexp"
	"strings"
	"sync"
)

// fileNote matches the line a channel puts before a message's text for
// each attached file ("[file notes.txt (text/plain, 17 bytes) saved in the
// workspace as web/a1b2/….txt]": extensions/web and extensions/cli).
var fileNote = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\[file (.+?) \([^()]*\) saved in the workspace as \S+\]$`)
})

// UserWords is what the user wrote in a message's text: the lines naming
// attached files are left out.
func UserWords(text string) string {
	lines := strings.Split(text, "\n")
	kept := lines[:0]
	for _, l := range lines {
		if !fileNote().MatchString(strings.TrimSpace(l)) {
			kept = append(kept, l)
		}
	}
	return strings.TrimSpace(strings.Join(kept, "\n"))
}

// titleOf is the title a message's text gives a thread or a branch: its
// first line of the user's words, else (only files were sent) the first
// file's name.
func titleOf(text string) string {
	if words := UserWords(text); words != "" {
		return cleanTitle(firstLine(words))
	}
	for _, l := range strings.Split(text, "\n") {
		if m := fileNote().FindStringSubmatch(strings.TrimSpace(l)); m != nil {
			return cleanTitle(m[1])
		}
	}
	return ""
}
