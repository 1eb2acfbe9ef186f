package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// MaxAttachBytes bounds a file given with /attach (the web page's default
// upload limit).
const MaxAttachBytes = 10 << 20

// Attached is a file given with /attach: saved where the assistant's tools
// see it (the workspace) and sent with the next message — an image as a
// picture for a model that accepts images, any other file as a line naming
// it.
type Attached struct {
	// Name is the file's (cleaned) name.
	Name string
	// Path is where it was saved, relative to the workspace.
	Path string
	// Image says it goes to the model as a picture.
	Image bool
	// MediaType is its MIME type.
	MediaType string
	// Size is its size in bytes.
	Size int64
}

// Describe is how the chat shows it: "photo.png (image, 12 KB)".
func (a Attached) Describe() string {
	kind := a.MediaType
	if a.Image {
		kind = "image"
	}
	return fmt.Sprintf("%s (%s, %s)", a.Name, kind, humanSize(a.Size))
}

// note is the line that tells the model about a file that is not an image
// (the web channel's wording).
func (a Attached) note() string {
	return fmt.Sprintf("[file %s (%s, %s) saved in the workspace as %s]", a.Name, a.MediaType, humanSize(a.Size), a.Path)
}

// imageTypes are the picture types models accept.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// readAttachment reads a local file for /attach: a regular file of at most
// MaxAttachBytes. It returns its cleaned name, content, and media type
// (images recognised by their content).
func readAttachment(p string) (name string, data []byte, media string, image bool, err error) {
	p = strings.Trim(strings.TrimSpace(p), `"'`)
	if p == "" {
		return "", nil, "", false, errors.New("give the file's path: /attach PATH")
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		if home, herr := os.UserHomeDir(); herr == nil {
			p = filepath.Join(home, rest)
		}
	}
	f, err := os.Open(p)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return "", nil, "", false, fmt.Errorf("there is no file %s", p)
		}
		return "", nil, "", false, fmt.Errorf("cannot read %s: %w", p, err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", nil, "", false, fmt.Errorf("cannot read %s: %w", p, err)
	}
	if !fi.Mode().IsRegular() {
		return "", nil, "", false, fmt.Errorf("%s is not a file", p)
	}
	if fi.Size() > MaxAttachBytes {
		return "", nil, "", false, fmt.Errorf("%s is %s; files up to %s can be attached", p, humanSize(fi.Size()), humanSize(MaxAttachBytes))
	}
	data, err = io.ReadAll(io.LimitReader(f, MaxAttachBytes+1))
	if err != nil {
		return "", nil, "", false, fmt.Errorf("cannot read %s: %w", p, err)
	}
	if len(data) == 0 {
		return "", nil, "", false, fmt.Errorf("%s is empty", p)
	}
	name = extension.SafeName(filepath.Base(p))
	if name == "" {
		name = "file"
	}
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	media = http.DetectContentType(data)
	if imageTypes[media] {
		return name, data, media, true, nil
	}
	if i := strings.IndexByte(media, ';'); i > 0 {
		media = media[:i]
	}
	return name, data, media, false, nil
}

// saveInWorkspace writes data as dir/<time>-<random>-name inside the
// workspace under dataDir (os.Root: nothing lands outside it) and returns
// the workspace path.
func saveInWorkspace(dataDir, dir, name string, data []byte, now time.Time) (string, error) {
	ws := filepath.Join(dataDir, "workspace")
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return "", err
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return "", err
	}
	defer root.Close()
	var rnd [2]byte
	_, _ = rand.Read(rnd[:])
	rel := path.Join(dir, now.UTC().Format("20060102-150405")+"-"+hex.EncodeToString(rnd[:])+"-"+name)
	if err := root.MkdirAll(path.Dir(rel), 0o700); err != nil {
		return "", err
	}
	if err := root.WriteFile(rel, data, 0o600); err != nil {
		return "", err
	}
	return rel, nil
}

// inboundParts splits staged files into the image attachments of a
// message and the text with a line for each other file before it.
func inboundParts(staged []Attached, text string) (string, []chat.Attachment) {
	var notes []string
	var images []chat.Attachment
	for _, a := range staged {
		if a.Image {
			images = append(images, chat.Attachment{Kind: chat.AttachImage, Path: a.Path, MediaType: a.MediaType})
			continue
		}
		notes = append(notes, a.note())
	}
	if len(notes) > 0 {
		text = strings.TrimSpace(strings.Join(notes, "\n") + "\n" + text)
	}
	return text, images
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}
