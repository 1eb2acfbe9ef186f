package web

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
)

// onePixelPNG is a 1×1 PNG.
var onePixelPNG, _ = base64.StdEncoding.DecodeString("iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==")

func uploadBody(name, media string, data []byte) string {
	b, _ := json.Marshal(api.AttachmentUpload{Name: name, MediaType: media, Data: data})
	return string(b)
}

// POST …/attachments saves the file in the workspace under web/<session>/
// (name cleaned), recognises images by their content (not by what the
// browser says), refuses what is too large, empty, or for a thread that
// is not the web's; a message then attaches it: an image as an image
// attachment, another file as a line before the text; a path of another
// conversation, or outside the uploads, is refused and nothing reaches the
// router.
func TestAttachments(t *testing.T) {
	f := &fakeAPI{}
	s := startWeb(t, "rate_per_second: 0\nmax_upload_bytes: 4096", f.services())
	auth := "Bearer " + testToken
	ws := filepath.Join(s.host.DataDir(), workspaceDir)

	upload := func(thread, name, media string, data []byte, want int) api.AttachmentInfo {
		t.Helper()
		code, _, body := s.do(t, "POST", "/api/v1/threads/"+thread+"/attachments", uploadBody(name, media, data), auth)
		if code != want {
			t.Fatalf("upload %s: %d %s, want %d", name, code, body, want)
		}
		var info api.AttachmentInfo
		if code == http.StatusCreated {
			if err := json.Unmarshal([]byte(body), &info); err != nil {
				t.Fatal(err)
			}
		}
		return info
	}
	img := upload("web:s1", "../../evil name.png", "application/octet-stream", onePixelPNG, http.StatusCreated)
	if img.Kind != api.AttachmentImage || img.MediaType != "image/png" || img.Name != "evil_name.png" ||
		!strings.HasPrefix(img.Path, "web/s1/") || !strings.HasSuffix(img.Path, "-evil_name.png") || img.Size != int64(len(onePixelPNG)) {
		t.Fatalf("image upload = %+v", img)
	}
	if got, err := os.ReadFile(filepath.Join(ws, filepath.FromSlash(img.Path))); err != nil || string(got) != string(onePixelPNG) {
		t.Fatalf("saved file: %v", err)
	}
	doc := upload("web:s1", "notes.pdf", "application/pdf", []byte("%PDF-1.4 tiny"), http.StatusCreated)
	if doc.Kind != api.AttachmentFile || doc.MediaType != "application/pdf" {
		t.Fatalf("document upload = %+v", doc)
	}
	fake := upload("web:s1", "fake.png", "image/png", []byte("not a picture at all"), http.StatusCreated)
	if fake.Kind != api.AttachmentFile {
		t.Errorf("a text file called .png counts as an image: %+v", fake)
	}
	upload("web:s1", "big.bin", "", make([]byte, 4097), http.StatusRequestEntityTooLarge)
	upload("web:s1", "empty.txt", "", nil, http.StatusBadRequest)
	upload("telegram:1", "x.png", "", onePixelPNG, http.StatusBadRequest)
	other := upload("web:s2", "other.png", "", onePixelPNG, http.StatusCreated)
	// The body limit of an upload is the base64 of max_upload_bytes, not max_body_bytes.
	if code, _, _ := s.do(t, "POST", "/api/v1/threads/web:s1/attachments", uploadBody("huge", "", make([]byte, 64<<10)), auth); code != http.StatusRequestEntityTooLarge {
		t.Errorf("a body over the upload limit: %d", code)
	}

	send := func(body string) (int, string) {
		t.Helper()
		code, _, out := s.do(t, "POST", "/api/v1/threads/web:s1/messages", body, auth)
		return code, out
	}
	code, out := send(`{"text":"what is this?","attachments":[{"path":"` + img.Path + `"},{"path":"` + doc.Path + `"}]}`)
	if code != http.StatusOK {
		t.Fatalf("send with attachments: %d %s", code, out)
	}
	f.mu.Lock()
	in := f.turns[len(f.turns)-1]
	f.mu.Unlock()
	if len(in.Attachments) != 1 || in.Attachments[0] != (chat.Attachment{Kind: chat.AttachImage, Path: img.Path, MediaType: "image/png"}) {
		t.Errorf("image attachments = %+v", in.Attachments)
	}
	wantText := "[file notes.pdf (application/pdf, 13 bytes) saved in the workspace as " + doc.Path + "]\nwhat is this?"
	if in.Text != wantText {
		t.Errorf("text = %q, want %q", in.Text, wantText)
	}
	// Only attachments, no text.
	if code, out := send(`{"text":"","attachments":[{"path":"` + img.Path + `"}]}`); code != http.StatusOK {
		t.Errorf("an image alone: %d %s", code, out)
	}
	turns := len(f.turns)
	for _, bad := range []string{other.Path, "web/s1/../s2/" + filepath.Base(other.Path), "web/s1/nope.png", "../secrets/web_token", "web/s1"} {
		if code, out := send(`{"text":"x","attachments":[{"path":"` + bad + `"}]}`); code != http.StatusBadRequest {
			t.Errorf("attachment %q: %d %s, want 400", bad, code, out)
		}
	}
	if len(f.turns) != turns {
		t.Error("a refused attachment reached the router")
	}
}

// With web.max_upload_bytes: 0 uploads are refused.
func TestUploadsOff(t *testing.T) {
	s := startWeb(t, "max_upload_bytes: 0", (&fakeAPI{}).services())
	if code, _, body := s.do(t, "POST", "/api/v1/threads/web:s1/attachments", uploadBody("a.png", "", onePixelPNG), "Bearer "+testToken); code != http.StatusForbidden || !strings.Contains(body, "max_upload_bytes") {
		t.Errorf("upload with uploads off: %d %s", code, body)
	}
}
