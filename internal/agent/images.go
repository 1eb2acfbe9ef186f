package agent

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/datadir"
	"github.com/reverie-ai/reverie/llm"
)

// Image limits: what one request carries at most.
const (
	// MaxImageBytes caps one image file sent to a model (5 MiB, the
	// Anthropic API's limit per image).
	MaxImageBytes = 5 << 20
	// MaxImagesPerRequest is how many of the newest images a request
	// carries; older ones reach the model as notes naming their files.
	MaxImagesPerRequest = 4
)

// imageTypes are the media types the providers accept as images.
var imageTypes = []string{"image/jpeg", "image/png", "image/gif", "image/webp"}

// userMessage is the stored form of a user's message: an image part per
// image attachment (its workspace path; the bytes stay in the file), then
// the text.
func userMessage(text string, atts []chat.Attachment) llm.Message {
	m := llm.Message{Role: llm.RoleUser}
	for _, a := range atts {
		if a.Kind == chat.AttachImage {
			m.Parts = append(m.Parts, llm.Image{MediaType: a.MediaType, Path: a.Path})
		}
	}
	if strings.TrimSpace(text) != "" || len(m.Parts) == 0 {
		m.Parts = append(m.Parts, llm.Text{Text: text})
	}
	return m
}

// loadImages returns msgs with the image parts ready for the main model.
// For a model that accepts images the newest MaxImagesPerRequest are read
// from the workspace into Data; an image that is gone, too large or of a
// type models do not take, and every older one, becomes a note naming the
// file. For a model without vision the parts stay references (the model
// router turns them into notes). msgs itself is not changed.
func (a *Agent) loadImages(msgs []llm.Message, vision bool) []llm.Message {
	if !vision {
		return msgs
	}
	out := msgs
	copied := false
	loaded := 0
	ws := filepath.Join(a.o.DataDir, datadir.WorkspaceDir)
	for i := len(msgs) - 1; i >= 0; i-- {
		m := msgs[i]
		var parts []llm.Part
		for j, p := range m.Parts {
			img, ok := p.(llm.Image)
			if !ok || len(img.Data) > 0 {
				continue
			}
			if parts == nil {
				parts = slices.Clone(m.Parts)
			}
			if loaded >= MaxImagesPerRequest {
				parts[j] = img.Note("an earlier image, not sent again")
				continue
			}
			data, err := readImage(ws, img)
			if err != nil {
				a.log.Warn("image not sent to the model", "path", img.Path, "err", err)
				parts[j] = img.Note(err.Error())
				continue
			}
			img.Data = data
			parts[j] = img
			loaded++
		}
		if parts == nil {
			continue
		}
		if !copied {
			out, copied = slices.Clone(msgs), true
		}
		out[i] = llm.Message{Role: m.Role, Parts: parts}
	}
	return out
}

// readImage reads an image part's file from the workspace (never outside
// it); the error is a short reason for the model.
func readImage(ws string, img llm.Image) ([]byte, error) {
	if !slices.Contains(imageTypes, img.MediaType) {
		return nil, fmt.Errorf("%q is not an image type models accept", img.MediaType)
	}
	root, err := os.OpenRoot(ws)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, errors.New("the file is gone")
	}
	if err != nil {
		return nil, errors.New("the workspace cannot be opened")
	}
	defer root.Close()
	f, err := root.Open(filepath.FromSlash(img.Path))
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("the file is gone")
		}
		return nil, errors.New("the file cannot be opened")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxImageBytes+1))
	switch {
	case err != nil:
		return nil, errors.New("the file cannot be read")
	case len(data) > MaxImageBytes:
		return nil, fmt.Errorf("the file is larger than %d MiB", MaxImageBytes>>20)
	case len(data) == 0:
		return nil, errors.New("the file is empty")
	}
	return data, nil
}
