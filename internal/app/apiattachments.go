package app

import (
	"path"
	"regexp"
	"strings"
	"sync"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/llm"
)

// uploadPrefix is the time and random part the web channel puts before an
// uploaded file's name (extensions/web, saveUpload).
var uploadPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{8}-\d{6}-[0-9a-f]{4}-`) })

// fileNote matches the line the web channel puts before a message's text
// for each attached file that is not an image (extensions/web, fileNote).
var fileNote = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^\[file (\S+) \(([^,()]*), [^()]*\) saved in the workspace as (web/\S+)\]$`)
})

// imageAttachment is the chip of an image part.
func imageAttachment(img llm.Image) api.MessageAttachment {
	return api.MessageAttachment{Kind: api.AttachmentImage, Path: img.Path, Name: uploadPrefix().ReplaceAllString(path.Base(img.Path), ""),
		MediaType: img.MediaType}
}

// fileAttachments takes the file lines off the start of a user message's
// text and returns them as chips after atts.
func fileAttachments(text string, atts []api.MessageAttachment) (string, []api.MessageAttachment) {
	for strings.HasPrefix(text, "[file ") {
		line, rest, _ := strings.Cut(text, "\n")
		m := fileNote().FindStringSubmatch(line)
		if m == nil {
			break
		}
		atts = append(atts, api.MessageAttachment{Kind: api.AttachmentFile, Name: m[1], MediaType: m[2], Path: m[3]})
		text = rest
	}
	return text, atts
}
