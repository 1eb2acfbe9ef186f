package apptest

import (
	"encoding/base64"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// pngPixel is a 1×1 PNG, base64.
const pngPixel = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="

// seen records what the fake model was sent: the text and image URLs of
// each request's user messages.
type seen struct {
	mu      sync.Mutex
	texts   []string
	images  [][]string
	changed chan struct{} // closed and replaced on every request
}

// wait returns find(sub) once a request contains sub (at most 3 minutes:
// a loaded machine runs the page and the app slowly).
func (s *seen) wait(t *testing.T, sub string) (string, []string) {
	t.Helper()
	timeout := time.After(3 * time.Minute)
	for {
		s.mu.Lock()
		if s.changed == nil {
			s.changed = make(chan struct{})
		}
		ch := s.changed
		s.mu.Unlock()
		if text, images := s.find(sub); text != "" {
			return text, images
		}
		select {
		case <-ch:
		case <-timeout:
			t.Fatalf("the model was never asked about %q", sub)
		}
	}
}

func (s *seen) handle(req llmtest.ChatRequest) llmtest.ServerReply {
	var texts, images []string
	for _, m := range req.Messages {
		if m.Role == "user" {
			texts = append(texts, m.Text())
			images = append(images, m.Images()...)
		}
	}
	s.mu.Lock()
	s.texts = append(s.texts, strings.Join(texts, "\n"))
	s.images = append(s.images, images)
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
	s.mu.Unlock()
	return llmtest.ServerReply{Text: "I see it."}
}

// find returns the newest request whose user message contains sub (the
// conversation seed's greeting may be asked before or after it).
func (s *seen) find(sub string) (string, []string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i := len(s.texts) - 1; i >= 0; i-- {
		if strings.Contains(s.texts[i], sub) {
			return s.texts[i], s.images[i]
		}
	}
	return "", nil
}

// Attachments through the real app: an uploaded image reaches a model that
// accepts images as an image part (REVERIE_MODEL_VISION), a document as a
// line naming its workspace path; the stored message lists both as
// attachments (its text without the line), and the file is in the
// workspace where the model's tools find it.
func TestWebAttachmentsReachTheModel(t *testing.T) {
	app := startWebApp(t, "127.0.0.1:0", WithEnv("REVERIE_MODEL_VISION=true"))
	var s seen
	app.Model.Handle(s.handle)
	png, _ := base64.StdEncoding.DecodeString(pngPixel)
	var img, doc api.AttachmentInfo
	app.JSON(t, http.MethodPost, "/threads/web:att/attachments", api.AttachmentUpload{Name: "pixel.png", Data: png}, http.StatusCreated, &img)
	app.JSON(t, http.MethodPost, "/threads/web:att/attachments", api.AttachmentUpload{Name: "plan.txt", MediaType: "text/plain", Data: []byte("day 1: Lyon")}, http.StatusCreated, &doc)
	if data, err := os.ReadFile(filepath.Join(app.DataDir, "workspace", filepath.FromSlash(doc.Path))); err != nil || string(data) != "day 1: Lyon" {
		t.Fatalf("the document is not in the workspace: %v", err)
	}
	var reply api.Reply
	app.JSON(t, http.MethodPost, "/threads/web:att/messages", api.SendRequest{Text: "what are these?",
		Attachments: []api.AttachmentRef{{Path: img.Path}, {Path: doc.Path}}}, http.StatusOK, &reply)
	text, images := s.wait(t, "what are these?")
	if len(images) != 1 || !strings.HasPrefix(images[0], "data:image/png;base64,") {
		t.Errorf("the model got images %v", images)
	}
	if !strings.Contains(text, "[file plan.txt (text/plain, 11 bytes) saved in the workspace as "+doc.Path+"]") || !strings.Contains(text, "what are these?") {
		t.Errorf("the model got the text %q", text)
	}
	var msgs api.MessageList
	app.JSON(t, http.MethodGet, "/threads/web:att/messages", nil, http.StatusOK, &msgs)
	var user *api.Message
	for i := range msgs.Messages {
		if msgs.Messages[i].Role == "user" && !msgs.Messages[i].SystemEvent {
			user = &msgs.Messages[i]
		}
	}
	if user == nil || user.Text != "what are these?" || len(user.Attachments) != 2 ||
		user.Attachments[0] != (api.MessageAttachment{Kind: api.AttachmentImage, Path: img.Path, Name: "pixel.png", MediaType: "image/png"}) ||
		user.Attachments[1] != (api.MessageAttachment{Kind: api.AttachmentFile, Path: doc.Path, Name: "plan.txt", MediaType: "text/plain"}) {
		t.Fatalf("stored message = %+v", user)
	}
}

// dropPlan drops plan.txt ("day 1: Lyon") on the conversation.
const dropPlan = `(() => {
		const dt = new DataTransfer();
		dt.items.add(new File(['day 1: Lyon'], 'plan.txt', { type: 'text/plain' }));
		const conv = document.querySelector('.conversation');
		conv.dispatchEvent(new DragEvent('dragover', { dataTransfer: dt, bubbles: true, cancelable: true }));
		return conv.dispatchEvent(new DragEvent('drop', { dataTransfer: dt, bubbles: true, cancelable: true }));
	})()`

// TestBrowserAttachments: an image pasted into the box and a file dropped
// on the conversation upload at once and show as chips; the page says
// that the default model cannot see images; after sending, the message
// shows both chips, also after a reload; the model got the file's line
// and the image as a note.
func TestBrowserAttachments(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	var s seen
	app.Model.Handle(s.handle)
	p := newBrowser(t, browserPath, "attachments", 1280, 900)
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("online", `document.getElementById('conn').dataset.state === 'online' && !!document.getElementById('attach') && document.getElementById('model-select')?.options.length > 0 && location.hash.startsWith('#chat/web')`)

	eval[bool](p, `(() => {
		const bytes = Uint8Array.from(atob(`+js(pngPixel)+`), c => c.charCodeAt(0));
		const dt = new DataTransfer();
		dt.items.add(new File([bytes], 'pixel.png', { type: 'image/png' }));
		return document.getElementById('input').dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true, cancelable: true }));
	})()`)
	eval[bool](p, dropPlan)
	p.waitFor("two uploaded chips", `[...document.querySelectorAll('#attach-tray .att-chip')].filter(c => c.dataset.state === 'ready').length === 2 || [...document.querySelectorAll('#attach-tray .att-chip')].some(c => c.dataset.state === 'failed')`)
	if states := eval[string](p, `[...document.querySelectorAll('#attach-tray .att-chip')].map(c => c.dataset.state + ' ' + c.title).join('; ')`); strings.Count(states, "ready") != 2 {
		t.Fatalf("the uploads: %s", states)
	}
	if !eval[bool](p, `document.querySelector('#attach-tray .att-chip[data-kind="image"] .att-name').textContent === 'pixel.png' && document.querySelector('#attach-tray .att-chip[data-kind="file"] .att-name').textContent === 'plan.txt'`) {
		t.Error("the chips do not name the files")
	}
	p.waitFor("the note that the model cannot see images", `document.getElementById('attach-note')?.textContent.includes('cannot see images')`)
	p.snapshot("attachments-tray")

	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "what are these?"), chromedp.Click(chromedp.ID("send")))
	p.waitFor("the reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('I see it.'))`)
	msg := `[...document.querySelectorAll('.msg.user')].find(m => m.textContent.includes('what are these?'))`
	if n := eval[int](p, msg+`.querySelectorAll('.msg-atts .att-chip').length`); n != 2 {
		t.Errorf("the sent message shows %d chips", n)
	}
	if !eval[bool](p, `document.getElementById('attach-tray').hidden`) {
		t.Error("the tray was not emptied")
	}
	text, images := s.wait(t, "what are these?")
	if len(images) != 0 || !strings.Contains(text, "[image saved at workspace/web/") || !strings.Contains(text, "this model cannot see images") ||
		!strings.Contains(text, "[file plan.txt (text/plain, 11 bytes) saved in the workspace as web/") {
		t.Errorf("the model got %q and images %v", text, images)
	}
	p.do("reload", chromedp.Reload())
	p.waitFor("the chips after the reload", msg+`?.querySelectorAll('.msg-atts .att-chip').length === 2`)
	if got := eval[string](p, msg+`.querySelector('.md').textContent.trim()`); got != "what are these?" {
		t.Errorf("the message text after the reload: %q", got)
	}
	p.snapshot("attachments-sent")
	p.checkProblems()
}

// TestBrowserFilesBeforeAConversation: a page opened on an archived
// conversation (read-only, so no conversation is shown to attach to) keeps
// a file dropped on it, waiting; once a conversation is shown, the file
// uploads into it and goes with its first message, and the model gets it.
// (The page used to drop such files without a word.)
func TestBrowserFilesBeforeAConversation(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	app := startWebApp(t, "127.0.0.1:0")
	var s seen
	app.Model.Handle(s.handle)
	for _, text := range []string{"a train to Lyon on Friday", "/new"} {
		in := chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:trip"}, Sender: chat.Sender{ID: "web"}, Text: text}
		if _, err := app.App.Router.Handle(t.Context(), in); err != nil {
			t.Fatalf("%s on web:trip: %v", text, err)
		}
	}
	var segs api.SegmentList
	app.JSON(t, http.MethodGet, "/segments?thread=web:trip", nil, http.StatusOK, &segs)
	if len(segs.Segments) != 1 {
		t.Fatalf("segments of web:trip: %+v", segs.Segments)
	}

	p := newBrowser(t, browserPath, "files-before-a-conversation", 1280, 900)
	p.do("load the archived conversation", chromedp.Navigate(app.Base+"/#archive/"+itoa(segs.Segments[0].ID)+"&token="+WebToken))
	p.waitFor("the archived conversation, read-only", `document.getElementById('conn').dataset.state === 'online' && !!document.getElementById('segment-bar') && document.getElementById('input').disabled && [...document.querySelectorAll('#messages .msg.user')].some(m => m.textContent.includes('train to Lyon'))`)
	eval[bool](p, dropPlan)
	p.waitFor("the file waiting in the tray", `document.querySelector('#attach-tray .att-chip')?.dataset.state === 'waiting' && !document.getElementById('attach-tray').hidden`)

	p.click("back to the conversation", `#segment-bar a`)
	p.waitFor("the file uploaded into it", `location.hash === '#chat/web%3Atrip' && document.querySelector('#attach-tray .att-chip')?.dataset.state === 'ready'`)
	p.do("send", chromedp.SendKeys(chromedp.ID("input"), "the plan"), chromedp.Click(chromedp.ID("send")))
	p.waitFor("the reply", `(() => {
		const ms = [...document.querySelectorAll('#messages .msg')];
		const last = ms[ms.length - 1];
		return ms.some(m => m.classList.contains('user') && m.textContent.includes('the plan')) && last.classList.contains('assistant') && !last.classList.contains('streaming') && last.textContent.includes('I see it.');
	})()`)
	if n := eval[int](p, `[...document.querySelectorAll('.msg.user')].find(m => m.textContent.includes('the plan')).querySelectorAll('.msg-atts .att-chip').length`); n != 1 {
		t.Errorf("the sent message shows %d chips, want 1", n)
	}
	if text, _ := s.wait(t, "the plan"); !strings.Contains(text, "[file plan.txt (text/plain, 11 bytes) saved in the workspace as web/trip/") {
		t.Errorf("the model got %q", text)
	}
	var msgs api.MessageList
	app.JSON(t, http.MethodGet, "/threads/web:trip/messages", nil, http.StatusOK, &msgs)
	var found bool
	for _, m := range msgs.Messages {
		if m.Role == "user" && m.Text == "the plan" && len(m.Attachments) == 1 && m.Attachments[0].Name == "plan.txt" {
			found = true
		}
	}
	if !found {
		t.Errorf("web:trip's messages: %+v", msgs.Messages)
	}
	p.checkProblems()
}
