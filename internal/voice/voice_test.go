package voice_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/internal/voice"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

func TestDuration(t *testing.T) {
	for _, tc := range []struct {
		name     string
		data     []byte
		min, max time.Duration
		ok       bool
	}{
		{"espeak ogg opus", llmtest.SpokenOgg(), 1500 * time.Millisecond, 2500 * time.Millisecond, true},
		{"espeak wav", llmtest.SpokenWAV(), 1500 * time.Millisecond, 2500 * time.Millisecond, true},
		{"generated wav, one second", llmtest.SilentWAV(8000, 8000), time.Second, time.Second, true},
		{"not audio", []byte("hello there, this is text"), 0, 0, false},
		{"truncated ogg", llmtest.SpokenOgg()[:20], 0, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := voice.Duration(tc.data)
			if ok != tc.ok || d < tc.min || d > tc.max {
				t.Errorf("Duration = %v, %v; want %v..%v, %v", d, ok, tc.min, tc.max, tc.ok)
			}
		})
	}
}

func TestParts(t *testing.T) {
	long := strings.Repeat("This is a sentence of the reply. ", 40) // 1320 chars
	for _, tc := range []struct {
		name       string
		text       string
		limit, max int
		want       int
		restInText bool
	}{
		{"short reply is one part", "It is noon.", 1200, 4, 1, false},
		{"long reply in parts", long, 500, 4, 3, false},
		{"too long for max parts", long, 200, 2, 2, true},
		{"empty", "  ", 500, 4, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			parts := voice.Parts(tc.text, tc.limit, tc.max)
			if len(parts) != tc.want {
				t.Fatalf("%d parts, want %d: %q", len(parts), tc.want, parts)
			}
			for i, p := range parts {
				if n := len([]rune(p)); n > tc.limit {
					t.Errorf("part %d has %d chars, limit %d", i, n, tc.limit)
				}
				if i < len(parts)-1 && !strings.HasSuffix(p, ".") {
					t.Errorf("part %d is not cut at a sentence end: %q", i, p)
				}
			}
			if got := len(parts) > 0 && strings.HasSuffix(parts[len(parts)-1], voice.RestInText); got != tc.restInText {
				t.Errorf("last part ends with %q: %v, want %v", voice.RestInText, got, tc.restInText)
			}
			if !tc.restInText && tc.want > 0 {
				if joined := strings.Join(parts, " "); strings.Join(strings.Fields(joined), " ") != strings.Join(strings.Fields(tc.text), " ") {
					t.Errorf("parts do not say the whole text:\n%q\n%q", joined, tc.text)
				}
			}
		})
	}
}

func TestSpeakable(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"markdown marks go", "**Yes**, it is _noon_.\n\n# Title\n- one\n- two", "Yes, it is noon.\n\nTitle\none\ntwo"},
		{"code blocks are not read", "Run this:\n```sh\nrm -rf /tmp/x\n```\nDone.", "Run this:\n\n(code in the written reply)\n\nDone."},
		{"links say their text", "See [the docs](https://example.org/docs) or https://example.org.", "See the docs or a link"},
		{"snake_case stays", "Set `voice.replies` to when_spoken_to.", "Set voice.replies to when_spoken_to."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := voice.Speakable(tc.in); got != tc.want {
				t.Errorf("Speakable = %q, want %q", got, tc.want)
			}
		})
	}
}

type fixture struct {
	svc *voice.Service
	srv *llmtest.AudioServer
	ws  string
}

func newService(t *testing.T, env []string, mutate func(*config.VoiceConfig)) fixture {
	t.Helper()
	ctx := context.Background()
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	srv := llmtest.NewAudioServer(t)
	cfg := config.Default().Voice
	if mutate != nil {
		mutate(&cfg)
	}
	ws := t.TempDir()
	env = append([]string{"OPENAI_BASE_URL=" + srv.BaseURL(), "OPENAI_API_KEY=sk-voice-test-key"}, env...)
	s, err := voice.New(ctx, voice.Options{Config: cfg, Env: env, DB: db, Workspace: ws, Secrets: &redact.Secrets{},
		Now: func() time.Time { return time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC) }})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{svc: s, srv: srv, ws: ws}
}

func (f fixture) put(t *testing.T, rel string, data []byte) chat.Attachment {
	t.Helper()
	p := filepath.Join(f.ws, filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return chat.Attachment{Kind: chat.AttachAudio, Path: rel, MediaType: "audio/ogg"}
}

func TestHearSendsTheRecordingAsMultipart(t *testing.T) {
	f := newService(t, []string{"REVERIE_STT_MODEL=whisper-1"}, nil)
	a := f.put(t, "telegram/42/voice.ogg", llmtest.SpokenOgg())
	text, err := f.svc.Hear(context.Background(), a)
	if err != nil {
		t.Fatal(err)
	}
	if text != llmtest.SpokenText {
		t.Errorf("heard %q, want %q", text, llmtest.SpokenText)
	}
	reqs := f.srv.Transcriptions()
	if len(reqs) != 1 {
		t.Fatalf("%d transcription requests, want 1", len(reqs))
	}
	r := reqs[0]
	if r.Model != "whisper-1" || r.FileName != "voice.ogg" || r.ContentType != "audio/ogg" ||
		string(r.Audio) != string(llmtest.SpokenOgg()) || r.Authorization != "Bearer sk-voice-test-key" {
		t.Errorf("request: model %q, file %q (%s), %d bytes, auth %q", r.Model, r.FileName, r.ContentType, len(r.Audio), r.Authorization)
	}
}

func TestHearRefuses(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    []string
		cfg    func(*config.VoiceConfig)
		data   []byte
		reply  *llmtest.AudioReply
		is     error
		words  string
		served int
	}{
		{name: "no stt model", data: llmtest.SpokenOgg(), is: voice.ErrNoSTT, words: "REVERIE_STT_MODEL"},
		{name: "over max bytes", env: []string{"REVERIE_STT_MODEL=whisper-1"}, cfg: func(c *config.VoiceConfig) { c.MaxBytes = 1024 },
			data: llmtest.SpokenOgg(), is: voice.ErrTooLong, words: "voice.max_bytes"},
		{name: "over max duration", env: []string{"REVERIE_STT_MODEL=whisper-1"}, cfg: func(c *config.VoiceConfig) { c.MaxDuration = time.Second },
			data: llmtest.SpokenOgg(), is: voice.ErrTooLong, words: "voice.max_duration"},
		{name: "server refuses", env: []string{"REVERIE_STT_MODEL=whisper-1"}, data: llmtest.SpokenOgg(),
			reply: &llmtest.AudioReply{Status: 401, ErrorMessage: "Incorrect API key provided: sk-voice-test-key"}, words: "refused the API key", served: 1},
		{name: "not audio", env: []string{"REVERIE_STT_MODEL=whisper-1"}, data: []byte("this is not a recording at all"),
			words: "Invalid file format", served: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newService(t, tc.env, tc.cfg)
			if tc.reply != nil {
				f.srv.Enqueue(*tc.reply)
			}
			a := f.put(t, "web/s/voice.ogg", tc.data)
			_, err := f.svc.Hear(context.Background(), a)
			if err == nil || (tc.is != nil && !errors.Is(err, tc.is)) {
				t.Fatalf("Hear error = %v, want %v", err, tc.is)
			}
			line := f.svc.Unheard(a, err)
			if !strings.Contains(line, tc.words) || !strings.Contains(line, a.Path) || strings.Contains(line, "sk-voice-test-key") {
				t.Errorf("line %q should name %q and the saved file, and no key", line, tc.words)
			}
			if n := len(f.srv.Transcriptions()); n != tc.served {
				t.Errorf("%d requests reached the server, want %d", n, tc.served)
			}
		})
	}
}

func TestSpeakInPartsAsOggOpus(t *testing.T) {
	f := newService(t, []string{"REVERIE_TTS_MODEL=gpt-4o-mini-tts", "REVERIE_TTS_VOICE=nova"}, func(c *config.VoiceConfig) { c.PartChars = 100 })
	reply := "**First** sentence of a long reply, which goes on for a while. Second sentence, which is long as well, still going. Third one."
	parts, err := f.svc.Speak(context.Background(), "telegram:42", reply)
	if err != nil {
		t.Fatal(err)
	}
	if len(parts) != 2 {
		t.Fatalf("%d parts, want 2: %+v", len(parts), parts)
	}
	reqs := f.srv.Speeches()
	for i, p := range parts {
		data, err := os.ReadFile(filepath.Join(f.ws, filepath.FromSlash(p.Path)))
		if err != nil {
			t.Fatal(err)
		}
		if llmtest.AudioFormat(data) != "ogg" || p.MediaType != "audio/ogg" || p.Part != i+1 || p.Parts != 2 || p.Seconds <= 0 {
			t.Errorf("part %d: %+v (%s)", i, p, llmtest.AudioFormat(data))
		}
		if !strings.HasPrefix(p.Path, "voice/telegram/42/") {
			t.Errorf("part %d saved at %s", i, p.Path)
		}
		if reqs[i].ResponseFormat != "opus" || reqs[i].Voice != "nova" || reqs[i].Model != "gpt-4o-mini-tts" || reqs[i].Input != p.Text {
			t.Errorf("request %d: %+v", i, reqs[i])
		}
	}
	if strings.Contains(reqs[0].Input, "**") {
		t.Errorf("markdown was spoken: %q", reqs[0].Input)
	}
}

func TestSpeakFailureIsWords(t *testing.T) {
	f := newService(t, []string{"REVERIE_TTS_MODEL=kokoro"}, nil)
	f.srv.EnqueueSpeechFailure(llmtest.AudioReply{Status: 404, ErrorMessage: "model kokoro not found"})
	parts, err := f.svc.Speak(context.Background(), "web:s", "Hello.")
	if err == nil || len(parts) != 0 {
		t.Fatalf("Speak = %v, %v; want an error", parts, err)
	}
	if !strings.Contains(err.Error(), "not found") {
		t.Errorf("error %q does not say what failed", err)
	}
}

func TestModes(t *testing.T) {
	f := newService(t, []string{"REVERIE_TTS_MODEL=tts-1"}, func(c *config.VoiceConfig) {
		c.ChannelReplies = map[string]string{"web": config.RepliesOff}
	})
	ctx := context.Background()
	for _, tc := range []struct {
		name    string
		thread  chat.ThreadID
		set     string
		spoken  bool
		want    bool
		wantErr bool
	}{
		{name: "default: spoken to", thread: "telegram:1", spoken: true, want: true},
		{name: "default: typed", thread: "telegram:1", want: false},
		{name: "channel off", thread: "web:a", spoken: true, want: false},
		{name: "conversation always", thread: "web:a", set: config.RepliesAlways, want: true},
		{name: "conversation back to default", thread: "web:a", set: "default", spoken: true, want: false},
		{name: "unknown mode", thread: "web:a", set: "loud", wantErr: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.set != "" {
				err := f.svc.SetMode(ctx, tc.thread, tc.set)
				if (err != nil) != tc.wantErr {
					t.Fatalf("SetMode: %v", err)
				}
			}
			if got := f.svc.ShouldSpeak(ctx, tc.thread, tc.spoken); got != tc.want {
				t.Errorf("ShouldSpeak = %v, want %v", got, tc.want)
			}
		})
	}
}
