package web

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// A recording uploaded from the page (Ogg/Opus, WebM or WAV: recognised
// from its content) is an audio attachment, which the router has
// transcribed; an MP4 video stays a file.
func TestRecordingUploadIsAudio(t *testing.T) {
	f := &fakeAPI{}
	s := startWeb(t, "rate_per_second: 0", f.services())
	auth := "Bearer " + testToken
	webm := append([]byte{0x1a, 0x45, 0xdf, 0xa3}, make([]byte, 60)...)
	for _, tc := range []struct {
		name, file, claimed string
		data                []byte
		kind, media         string
	}{
		{"microphone webm", "voice.webm", "audio/webm;codecs=opus", webm, api.AttachmentAudio, "audio/webm"},
		{"ogg voice note", "voice.ogg", "", llmtest.SpokenOgg(), api.AttachmentAudio, "audio/ogg"},
		{"wav", "note.wav", "audio/wav", llmtest.SpokenWAV()[:2048], api.AttachmentAudio, "audio/wav"},
		{"m4a", "memo.m4a", "audio/mp4", append([]byte("\x00\x00\x00\x20ftypM4A "), make([]byte, 40)...), api.AttachmentAudio, "audio/mp4"},
		{"a video is a file", "clip.mp4", "video/mp4", append([]byte("\x00\x00\x00\x20ftypisom"), make([]byte, 40)...), api.AttachmentFile, "video/mp4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, body := s.do(t, "POST", "/api/v1/threads/web:s1/attachments", uploadBody(tc.file, tc.claimed, tc.data), auth)
			var info api.AttachmentInfo
			if code != http.StatusCreated || json.Unmarshal([]byte(body), &info) != nil {
				t.Fatalf("upload: %d %s", code, body)
			}
			if info.Kind != tc.kind || info.MediaType != tc.media {
				t.Fatalf("upload = %+v, want %s %s", info, tc.kind, tc.media)
			}
			if code, _, out := s.do(t, "POST", "/api/v1/threads/web:s1/messages", `{"attachments":[{"path":"`+info.Path+`"}]}`, auth); code != http.StatusOK {
				t.Fatalf("send: %d %s", code, out)
			}
			f.mu.Lock()
			in := f.turns[len(f.turns)-1]
			f.mu.Unlock()
			wantAudio := tc.kind == api.AttachmentAudio
			if gotAudio := len(in.Attachments) == 1 && in.Attachments[0].Kind == chat.AttachAudio && in.Attachments[0].Path == info.Path; gotAudio != wantAudio {
				t.Errorf("attachments %+v, text %q; audio attachment wanted: %v", in.Attachments, in.Text, wantAudio)
			}
		})
	}
}

// SendVoice tells the thread's page where the spoken reply is; GET
// …/speech/{file} serves it as audio, only from the thread's own speech
// directory.
func TestSpokenReply(t *testing.T) {
	f := &fakeAPI{}
	s := startWeb(t, "rate_per_second: 0", f.services())
	dir := filepath.Join(s.host.DataDir(), workspaceDir, "voice", "web", "s1")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "r-1.ogg"), llmtest.SpeechOgg(), 0o600); err != nil {
		t.Fatal(err)
	}
	addr := chat.Address{Channel: ChannelName, Thread: "web:s1"}
	if err := s.w.SendVoice(context.Background(), addr, chat.Speech{Path: "voice/web/s2/r-1.ogg"}); err == nil {
		t.Error("SendVoice took a file of another conversation")
	}
	if err := s.w.SendVoice(context.Background(), addr, chat.Speech{Path: "voice/web/s1/r-1.ogg", MediaType: "audio/ogg", Text: "It is noon.", Part: 1, Parts: 1}); err != nil {
		t.Fatal(err)
	}
	auth := "Bearer " + testToken
	code, h, body := s.do(t, "GET", "/api/v1/threads/web:s1/speech/r-1.ogg", "", auth)
	if code != http.StatusOK || h.Get("Content-Type") != "audio/ogg" || body != string(llmtest.SpeechOgg()) {
		t.Fatalf("GET speech: %d %s (%d bytes)", code, h.Get("Content-Type"), len(body))
	}
	for _, bad := range []string{"web:s2/speech/r-1.ogg", "web:s1/speech/nope.ogg", "web:s1/speech/..%2Fs2%2Fr-1.ogg", "web:s1/speech/r-1.txt", "telegram:1/speech/r-1.ogg"} {
		if code, _, body := s.do(t, "GET", "/api/v1/threads/"+bad, "", auth); code == http.StatusOK || !strings.Contains(body, "error") {
			t.Errorf("GET %s: %d %s", bad, code, body)
		}
	}
}
