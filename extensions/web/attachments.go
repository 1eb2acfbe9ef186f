package web

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// Attachments: the page uploads each file it is given (dropped, pasted or
// chosen) with POST /api/v1/threads/{thread}/attachments, a JSON body with
// the file base64-encoded — the API's JSON-only rule holds, so an upload
// passes the same access rules as every write (no multipart exception).
// The file is saved in the workspace under web/<session>/; a message then
// names it by path. Images (recognised from their content) reach the model
// as image parts, every other file as a line naming it.

// workspaceDir is the agent's workspace under the data dir (what the file
// tools see).
const workspaceDir = "workspace"

// imageTypes are the image types models accept.
var imageTypes = map[string]bool{"image/jpeg": true, "image/png": true, "image/gif": true, "image/webp": true}

// uploadsOf is the workspace directory of a web thread's uploads.
func uploadsOf(t chat.ThreadID) string {
	return path.Join("web", strings.TrimPrefix(string(t), ChannelName+":"))
}

// uploadBodyLimit is the body limit of an upload: base64 of
// MaxUploadBytes and room for the JSON around it.
func (w *Web) uploadBodyLimit() int64 { return w.cfg.MaxUploadBytes/3*4 + 8<<10 }

// isUpload reports whether r is an attachment upload (its body limit is
// uploadBodyLimit, not MaxBodyBytes).
func isUpload(r *http.Request) bool {
	return r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, api.Prefix+"/threads/") &&
		strings.HasSuffix(r.URL.Path, "/attachments")
}

// uploadAttachment is POST /api/v1/threads/{thread}/attachments.
func (w *Web) uploadAttachment(rw http.ResponseWriter, r *http.Request) {
	t, err := webThread(r.PathValue("thread"))
	if err != nil {
		w.serviceError(rw, r, fmt.Errorf("%w: %v", api.ErrInvalid, err))
		return
	}
	if w.cfg.MaxUploadBytes == 0 {
		writeError(rw, http.StatusForbidden, "uploads are off (web.max_upload_bytes: 0)")
		return
	}
	var up api.AttachmentUpload
	if err := decodeBody(r, &up); err != nil {
		w.serviceError(rw, r, err)
		return
	}
	if int64(len(up.Data)) > w.cfg.MaxUploadBytes {
		writeError(rw, http.StatusRequestEntityTooLarge,
			fmt.Sprintf("the file is %d bytes; the limit is %d (web.max_upload_bytes)", len(up.Data), w.cfg.MaxUploadBytes))
		return
	}
	if len(up.Data) == 0 {
		w.serviceError(rw, r, fmt.Errorf("%w: the file is empty", api.ErrInvalid))
		return
	}
	name := extension.SafeName(path.Base(strings.ReplaceAll(up.Name, "\\", "/")))
	if name == "" {
		name = "file"
	}
	if len(name) > 80 {
		name = name[len(name)-80:]
	}
	var rnd [2]byte
	_, _ = rand.Read(rnd[:])
	rel := path.Join(uploadsOf(t), w.now().UTC().Format("20060102-150405")+"-"+hex.EncodeToString(rnd[:])+"-"+name)
	if err := w.saveUpload(rel, up.Data); err != nil {
		w.serviceError(rw, r, fmt.Errorf("save the upload: %w", err))
		return
	}
	kind, media := classify(up.Data, up.MediaType)
	writeJSON(rw, http.StatusCreated, api.AttachmentInfo{Path: rel, Name: name, Kind: kind, MediaType: media, Size: int64(len(up.Data))})
}

// saveUpload writes data at rel inside the workspace (os.Root: nothing
// outside it, also through a symbolic link).
func (w *Web) saveUpload(rel string, data []byte) error {
	ws := filepath.Join(w.host.DataDir(), workspaceDir)
	if err := os.MkdirAll(ws, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(ws)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(path.Dir(rel), 0o700); err != nil {
		return err
	}
	return root.WriteFile(rel, data, 0o600)
}

// classify says whether data is an image models accept (by its content)
// and its media type; other files keep the browser's type when it is a
// plain MIME type.
func classify(data []byte, claimed string) (kind, media string) {
	sniffed := http.DetectContentType(data)
	if imageTypes[sniffed] {
		return api.AttachmentImage, sniffed
	}
	if media, ok := audioType(data, claimed); ok {
		return api.AttachmentAudio, media
	}
	if claimed != "" && len(claimed) < 128 && !strings.ContainsAny(claimed, " \t\r\n;\"") && strings.Count(claimed, "/") == 1 {
		return api.AttachmentFile, claimed
	}
	if i := strings.IndexByte(sniffed, ';'); i > 0 {
		sniffed = sniffed[:i]
	}
	return api.AttachmentFile, sniffed
}

// audioType recognises a recording from its container (the page's
// microphone records WebM/Opus or Ogg/Opus; uploads may be WAV, MP3, FLAC
// or M4A). An MP4 container counts as audio only when claimed says so (an
// .m4a name); a WebM video's sound is transcribed like a recording.
func audioType(data []byte, claimed string) (string, bool) {
	switch {
	case bytes.HasPrefix(data, []byte("OggS")):
		return "audio/ogg", true
	case len(data) >= 12 && bytes.HasPrefix(data, []byte("RIFF")) && string(data[8:12]) == "WAVE":
		return "audio/wav", true
	case bytes.HasPrefix(data, []byte("fLaC")):
		return "audio/flac", true
	case bytes.HasPrefix(data, []byte("ID3")):
		return "audio/mpeg", true
	case bytes.HasPrefix(data, []byte{0x1a, 0x45, 0xdf, 0xa3}):
		return "audio/webm", true
	case len(data) >= 12 && string(data[4:8]) == "ftyp" && strings.HasPrefix(claimed, "audio/"):
		return "audio/mp4", true
	}
	return "", false
}

// errAttachment is a message's attachment that cannot be used.
var errAttachment = errors.New("attachment")

// inbound turns a message's attachment references into the image
// attachments the model sees, the recordings the router has transcribed
// (audio attachments) and the lines that name the other files (put before
// text). Each must be a file uploaded to thread t.
func (w *Web) inbound(t chat.ThreadID, refs []api.AttachmentRef) (notes []string, images []chat.Attachment, err error) {
	if len(refs) > chat.MaxAttachments {
		return nil, nil, fmt.Errorf("%w: %d attachments, the limit is %d", errAttachment, len(refs), chat.MaxAttachments)
	}
	dir := uploadsOf(t) + "/"
	ws := filepath.Join(w.host.DataDir(), workspaceDir)
	root, err := os.OpenRoot(ws)
	if err != nil && len(refs) > 0 {
		return nil, nil, fmt.Errorf("%w: no upload was saved for this conversation", errAttachment)
	}
	if root != nil {
		defer root.Close()
	}
	for _, ref := range refs {
		p := ref.Path
		if !strings.HasPrefix(p, dir) || strings.Contains(p[len(dir):], "/") {
			return nil, nil, fmt.Errorf("%w %q: not a file uploaded to this conversation", errAttachment, p)
		}
		if err := (chat.Attachment{Kind: chat.AttachImage, Path: p}).Validate(); err != nil {
			return nil, nil, fmt.Errorf("%w: %w", errAttachment, err)
		}
		head, size, err := readHead(root, p)
		if err != nil {
			return nil, nil, fmt.Errorf("%w %q: %w", errAttachment, p, err)
		}
		name := uploadName(p)
		kind, media := classify(head, mimeByExt(path.Ext(name)))
		switch kind {
		case api.AttachmentImage:
			images = append(images, chat.Attachment{Kind: chat.AttachImage, Path: p, MediaType: media})
			continue
		case api.AttachmentAudio:
			images = append(images, chat.Attachment{Kind: chat.AttachAudio, Path: p, MediaType: media})
			continue
		}
		if ext := path.Ext(name); ext != "" {
			if m := mimeByExt(ext); m != "" {
				media = m
			}
		}
		notes = append(notes, fileNote(name, media, size, p))
	}
	return notes, images, nil
}

// readHead returns the first 512 bytes of the regular file p and its size.
func readHead(root *os.Root, p string) ([]byte, int64, error) {
	fi, err := root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, errors.New("no such upload")
	}
	if err != nil {
		return nil, 0, err
	}
	if !fi.Mode().IsRegular() {
		return nil, 0, errors.New("not a regular file")
	}
	f, err := root.Open(p)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	head := make([]byte, 512)
	n, err := io.ReadFull(f, head)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, 0, err
	}
	return head[:n], fi.Size(), nil
}

// uploadPrefix is the time and random part saveUpload puts before a name.
var uploadPrefix = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\d{8}-\d{6}-[0-9a-f]{4}-`) })

// uploadName is the original (cleaned) name of an upload's path.
func uploadName(p string) string { return uploadPrefix().ReplaceAllString(path.Base(p), "") }

// fileNote is the line that tells the model about a file (and from which
// GET …/messages shows it as a chip: see FileNotePattern in
// internal/app).
func fileNote(name, media string, size int64, p string) string {
	return fmt.Sprintf("[file %s (%s, %s) saved in the workspace as %s]", name, media, humanSize(size), p)
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

// mimeByExt is a small table of common document types (the standard
// library's table depends on the system's files).
func mimeByExt(ext string) string {
	return map[string]string{
		".pdf": "application/pdf", ".txt": "text/plain", ".md": "text/markdown", ".csv": "text/csv",
		".json": "application/json", ".html": "text/html", ".zip": "application/zip",
		".doc": "application/msword", ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
		".xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", ".mp3": "audio/mpeg", ".ogg": "audio/ogg",
		".m4a": "audio/mp4", ".wav": "audio/wav", ".webm": "audio/webm", ".flac": "audio/flac",
	}[strings.ToLower(ext)]
}

// withNotes puts the file lines before the message's text.
func withNotes(notes []string, text string) string {
	if len(notes) == 0 {
		return text
	}
	return strings.TrimSpace(strings.Join(notes, "\n") + "\n" + text)
}
