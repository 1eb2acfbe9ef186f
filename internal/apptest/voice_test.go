package apptest

import (
	"context"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extensions/telegram/telegramtest"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// sendRecording saves a recording in the workspace and hands it to the
// router as a channel does with a voice note, with an optional caption.
func sendRecording(t *testing.T, h *Harness, thread, caption string) string {
	t.Helper()
	rel := "testchan/" + thread + "/voice.ogg"
	p := filepath.Join(h.DataDir, "workspace", filepath.FromSlash(rel))
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, llmtest.SpokenOgg(), 0o600); err != nil {
		t.Fatal(err)
	}
	id := chat.NewThreadID(ChannelName, thread)
	if err := h.Channel.host.Receive(context.Background(), chat.Inbound{
		Address: chat.Address{Channel: ChannelName, Thread: id}, Sender: chat.Sender{ID: "tester"}, Text: caption,
		Attachments: []chat.Attachment{{Kind: chat.AttachAudio, Path: rel, MediaType: "audio/ogg"}},
	}); err != nil {
		t.Fatalf("receive: %v", err)
	}
	return rel
}

// Without an stt model a voice message gets one line saying how to enable
// it and where the recording is; no turn runs, and the file stays.
func TestVoiceMessageWithoutSTT(t *testing.T) {
	h := Start(t)
	rel := sendRecording(t, h, "v1", "")
	got := h.Channel.WaitFor(t, "v1", 1)
	if got[0].Kind != chat.Error || !strings.Contains(got[0].Text, "REVERIE_STT_MODEL") || !strings.Contains(got[0].Text, rel) {
		t.Fatalf("delivered %+v", got)
	}
	if n := len(h.Model.ChatRequests()); n != 0 {
		t.Errorf("%d model calls for a voice message nobody could hear", n)
	}
	if _, err := os.Stat(filepath.Join(h.DataDir, "workspace", filepath.FromSlash(rel))); err != nil {
		t.Errorf("the recording is gone: %v", err)
	}
}

// With an stt model the voice message is transcribed and answered as typed
// text; the channel is shown the transcript first. A channel that cannot
// play audio gets no speech, and no speech is made for it. A server that
// fails gets one line naming the recording, and a caption is still
// answered with the model told of the recording.
func TestVoiceMessageTranscribed(t *testing.T) {
	audio := llmtest.NewAudioServer(t)
	h := Start(t, voiceEnv(audio), WithEnv("REVERIE_VOICE__REPLIES=always"))
	h.Model.Handle(answerSpoken)
	sendRecording(t, h, "v2", "")
	got := h.Channel.WaitFor(t, "v2", 2)
	if got[0].Kind != chat.Transcript || got[0].Text != "🎤 "+llmtest.SpokenText {
		t.Errorf("first delivered %+v, want the transcript", got[0])
	}
	if got[1].Kind != chat.Reply || !strings.Contains(got[1].Text, "It is noon in Lisbon.") {
		t.Errorf("then %+v, want the reply", got[1])
	}
	var asked string
	for _, req := range h.Model.ChatRequests() {
		for _, m := range req.Messages {
			if m.Role == "user" && strings.Contains(m.Text(), llmtest.SpokenText) {
				asked = m.Text()
			}
		}
	}
	if !strings.HasSuffix(strings.TrimSpace(asked), llmtest.SpokenText) || strings.Contains(asked, "voice.ogg") {
		t.Errorf("the model was asked %q, want the words as typed", asked)
	}
	if n := len(audio.Speeches()); n != 0 {
		t.Errorf("%d speech requests for a channel that cannot play audio", n)
	}

	audio.Enqueue(llmtest.AudioReply{Status: 500, ErrorMessage: "the GPU is on fire"}, llmtest.AudioReply{Status: 500, ErrorMessage: "the GPU is on fire"})
	rel := sendRecording(t, h, "v3", "what did I say?")
	got = h.Channel.WaitFor(t, "v3", 2)
	if got[0].Kind != chat.Error || !strings.Contains(got[0].Text, "GPU is on fire") || !strings.Contains(got[0].Text, rel) {
		t.Errorf("failure line %+v", got[0])
	}
	if got[1].Kind != chat.Reply {
		t.Errorf("the caption was not answered: %+v", got[1])
	}
}

// A Telegram voice note (espeak-ng's Ogg/Opus recording, downloaded through
// the fake Bot API) is transcribed and answered on the same chat as typed
// text: the chat is shown what was heard, gets the written reply and, as it
// answers a voice note, the reply as a voice note (sendVoice with the
// Ogg/Opus the speech server made for it). A typed message is answered in
// writing only; /voice always makes it spoken too.
func TestTelegramVoiceNote(t *testing.T) {
	srv := telegramtest.New(t, tgToken)
	audio := llmtest.NewAudioServer(t)
	h, _ := startTelegram(t, srv, voiceEnv(audio))
	h.Model.Handle(answerSpoken)
	srv.AddFile("vn1", llmtest.SpokenOgg())
	// A stranger's voice note, first: it is neither downloaded nor
	// transcribed (no speech-to-text spent on it); the stranger gets only
	// a pairing code.
	srv.Send(telegramtest.Incoming{From: mallory, Chat: telegramtest.Private(mallory), VoiceID: "vn1"})
	srv.WaitMessages(t, mallory.ID, 1, func(ms []telegramtest.Message) bool { return len(ms) > 0 })
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), VoiceID: "vn1"})
	ms := srv.WaitMessages(t, alice.ID, 3, func(ms []telegramtest.Message) bool {
		return slices.ContainsFunc(ms, func(m telegramtest.Message) bool { return m.Kind == "voice" })
	})
	var kinds []string
	for _, m := range ms {
		kinds = append(kinds, m.Kind+": "+m.Plain)
	}
	heard := slices.IndexFunc(ms, func(m telegramtest.Message) bool { return m.Plain == "🎤 "+llmtest.SpokenText })
	reply := slices.IndexFunc(ms, func(m telegramtest.Message) bool { return strings.Contains(m.Plain, "It is noon in Lisbon.") })
	voice := slices.IndexFunc(ms, func(m telegramtest.Message) bool { return m.Kind == "voice" })
	if heard < 0 || reply < 0 || voice < 0 || !(heard < reply && reply < voice) {
		t.Fatalf("messages %q: want the transcript, the written reply, then the voice note", kinds)
	}
	if string(ms[voice].File) != string(llmtest.SpeechOgg()) {
		t.Errorf("the voice note is %d bytes, not the speech server's Ogg/Opus", len(ms[voice].File))
	}
	trans := audio.Transcriptions()
	if len(trans) != 1 || string(trans[0].Audio) != string(llmtest.SpokenOgg()) || !strings.HasSuffix(trans[0].FileName, "voice.ogg") {
		t.Fatalf("transcriptions: %+v", trans)
	}
	if sp := audio.Speeches(); len(sp) != 1 || sp[0].ResponseFormat != "opus" || sp[0].Input != "It is noon in Lisbon." {
		t.Errorf("speech requests %+v", sp)
	}
	files, _ := filepath.Glob(filepath.Join(h.DataDir, "workspace", "telegram", "1001", "*-voice.ogg"))
	if len(files) != 1 {
		t.Errorf("the voice note is not kept in the workspace: %v", files)
	}
	if _, err := os.Stat(filepath.Join(h.DataDir, "workspace", "telegram", "6666")); !os.IsNotExist(err) {
		t.Errorf("the stranger's voice note was downloaded (stat: %v)", err)
	}

	// Typed: written only. After /voice always: spoken too.
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "and tomorrow?"})
	srv.WaitMessages(t, alice.ID, len(ms)+1, func(ms []telegramtest.Message) bool { return hasPlain(ms, "OK.") })
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "/voice always"})
	srv.WaitMessages(t, alice.ID, len(ms)+2, func(ms []telegramtest.Message) bool { return hasPlain(ms, "every reply is spoken too") })
	if n := len(audio.Speeches()); n != 1 {
		t.Errorf("a typed message was answered aloud under when_spoken_to (%d speech requests)", n)
	}
	srv.Send(telegramtest.Incoming{From: alice, Chat: telegramtest.Private(alice), Text: "thanks"})
	srv.WaitMessages(t, alice.ID, len(ms)+4, func(ms []telegramtest.Message) bool {
		n := 0
		for _, m := range ms {
			if m.Kind == "voice" {
				n++
			}
		}
		return n == 2
	})
}

// The setup screen shows the voice models and tests them with one call
// each; a failing one is a failed test naming it. Without them the form
// says how to enable voice.
func TestSetupVoiceForm(t *testing.T) {
	audio := llmtest.NewAudioServer(t)
	app := StartWeb(t, voiceEnv(audio))
	var st api.SetupStatus
	app.JSON(t, http.MethodGet, "/setup", nil, http.StatusOK, &st)
	i := slices.IndexFunc(st.Forms, func(f api.SetupForm) bool { return f.ID == "voice" })
	if i < 0 || !st.Forms[i].Configured || !strings.Contains(st.Forms[i].Description, "env/whisper-1") || !strings.Contains(st.Forms[i].Description, "env/tts-1") {
		t.Fatalf("setup forms: %+v", st.Forms)
	}
	var res api.SetupResult
	app.JSON(t, http.MethodPost, "/setup/voice", api.SetupRequest{Values: map[string]string{}}, http.StatusOK, &res)
	if !strings.Contains(res.Message, "stt model env/whisper-1 answers") || !strings.Contains(res.Message, "tts model env/tts-1 answers") {
		t.Errorf("test result %q", res.Message)
	}
	audio.Enqueue(llmtest.AudioReply{Status: 401, ErrorMessage: "bad key"})
	code, body := app.Do(t, http.MethodPost, "/setup/voice", api.SetupRequest{Values: map[string]string{}})
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "stt model env/whisper-1") {
		t.Errorf("failing test: %d %s", code, body)
	}

	plain := StartWeb(t)
	plain.JSON(t, http.MethodGet, "/setup", nil, http.StatusOK, &st)
	i = slices.IndexFunc(st.Forms, func(f api.SetupForm) bool { return f.ID == "voice" })
	if i < 0 || st.Forms[i].Configured || !strings.Contains(st.Forms[i].Description, "REVERIE_STT_MODEL") {
		t.Fatalf("setup forms without voice: %+v", st.Forms)
	}
}

// The voice form saves the stt and tts models it was given, after one real
// call each, to config.yaml's models section beside the main model, the
// keys to secrets/; a failing call saves nothing. After the restart the
// form shows them, and the models form still saves the main model.
func TestSetupVoiceFormSaves(t *testing.T) {
	audio := llmtest.NewAudioServer(t)
	w := StartWeb(t)
	var st api.SetupStatus
	w.JSON(t, http.MethodGet, "/setup", nil, http.StatusOK, &st)
	i := slices.IndexFunc(st.Forms, func(f api.SetupForm) bool { return f.ID == "voice" })
	if i < 0 || st.Forms[i].Configured || len(st.Forms[i].Fields) != 6 {
		t.Fatalf("voice form: %+v", st.Forms)
	}
	cfgPath := filepath.Join(w.DataDir, "config.yaml")
	before, _ := os.ReadFile(cfgPath)
	values := map[string]string{"stt_model": "whisper-1", "stt_base_url": audio.BaseURL(), "stt_api_key": "sk-stt-saved-1",
		"tts_model": "tts-1", "tts_base_url": audio.BaseURL()}

	audio.Enqueue(llmtest.AudioReply{Status: 401, ErrorMessage: "bad key"})
	code, body := w.Do(t, http.MethodPost, "/setup/voice", api.SetupRequest{Values: values})
	if code != http.StatusUnprocessableEntity || !strings.Contains(string(body), "bad key") || strings.Contains(string(body), "sk-stt-saved") {
		t.Fatalf("failing stt model: %d %s", code, body)
	}
	if after, _ := os.ReadFile(cfgPath); string(after) != string(before) {
		t.Fatalf("config.yaml changed after a failed test:\n%s", after)
	}
	for name, bad := range map[string]map[string]string{
		"base URL without a model": {"tts_base_url": audio.BaseURL()},
		"not http":                 {"stt_model": "whisper-1", "stt_base_url": "ftp://x"},
		"quote in model":           {"tts_model": `tts"`},
	} {
		if code, body := w.Do(t, http.MethodPost, "/setup/voice", api.SetupRequest{Values: bad}); code != http.StatusBadRequest {
			t.Errorf("%s: %d %s", name, code, body)
		}
	}

	var res api.SetupResult
	w.JSON(t, http.MethodPost, "/setup/voice", api.SetupRequest{Values: values}, http.StatusOK, &res)
	if !res.OK || !strings.Contains(res.Message, "stt model whisper-1") || !strings.Contains(res.Message, "tts model tts-1") {
		t.Fatalf("result %+v", res)
	}
	trans := audio.Transcriptions()
	// Two test calls each: the failed test's and this one's.
	if len(trans) != 2 || trans[1].Authorization != "Bearer sk-stt-saved-1" || len(audio.Speeches()) != 2 {
		t.Fatalf("test calls: %d transcriptions, %d speeches", len(trans), len(audio.Speeches()))
	}
	cfg, _ := os.ReadFile(cfgPath)
	for _, want := range []string{`stt: ["setup_stt/whisper-1"]`, `tts: ["setup_tts/tts-1"]`, "api_key: {file: secrets/stt_api_key}"} {
		if !strings.Contains(string(cfg), want) {
			t.Errorf("config.yaml lacks %s:\n%s", want, cfg)
		}
	}
	if strings.Contains(string(cfg), "sk-stt-saved") {
		t.Errorf("the key is in config.yaml:\n%s", cfg)
	}
	if fi, err := os.Stat(filepath.Join(w.DataDir, "secrets", "stt_api_key")); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file: %v %v", fi, err)
	}
	if _, err := os.Stat(filepath.Join(w.DataDir, "restart.request")); err != nil {
		t.Fatalf("no restart requested: %v", err)
	}

	// After the restart: both roles in use and shown, the chat model still
	// from the environment.
	if err := w.Stop(); err != nil {
		t.Fatal(err)
	}
	w2 := StartWeb(t, WithDataDir(w.DataDir))
	w2.JSON(t, http.MethodGet, "/setup", nil, http.StatusOK, &st)
	i = slices.IndexFunc(st.Forms, func(f api.SetupForm) bool { return f.ID == "voice" })
	if !st.Configured || i < 0 || !st.Forms[i].Configured || !strings.Contains(st.Forms[i].Description, "setup_stt/whisper-1") ||
		!strings.Contains(st.Forms[i].Description, "setup_tts/tts-1") {
		t.Fatalf("after the restart: %+v", st)
	}
	shown := map[string]string{}
	for _, f := range st.Forms[i].Fields {
		shown[f.Key] = f.Default
	}
	if shown["stt_model"] != "whisper-1" || shown["tts_base_url"] != audio.BaseURL() || shown["stt_api_key"] != "" {
		t.Errorf("the voice form shows %v", shown)
	}
	w2.JSON(t, http.MethodPost, "/setup/voice", api.SetupRequest{Values: map[string]string{}}, http.StatusOK, &res)
	if !strings.Contains(res.Message, "stt model setup_stt/whisper-1 answers") || audio.Transcriptions()[2].Authorization != "Bearer sk-stt-saved-1" {
		t.Errorf("testing the saved models: %q", res.Message)
	}

	// The page sends the shown values back: a test, not a save.
	w2.JSON(t, http.MethodPost, "/setup/voice", api.SetupRequest{Values: shown}, http.StatusOK, &res)
	if !strings.Contains(res.Message, "tts model setup_tts/tts-1 answers") || strings.Contains(res.Message, "Saved") {
		t.Errorf("sending the shown values back: %q", res.Message)
	}

	// The models form adds the main model to the same section.
	w2.JSON(t, http.MethodPost, "/setup/models", api.SetupRequest{Values: map[string]string{
		"provider": "openai", "base_url": w2.Model.BaseURL(), "model": "gpt-setup"}}, http.StatusOK, &res)
	loaded, err := config.Load(cfgPath, nil, []string{"web"})
	if err == nil {
		loaded.SetDataDir(w.DataDir)
		err = loaded.Validate()
	}
	if err != nil {
		cfg, _ = os.ReadFile(cfgPath)
		t.Fatalf("config.yaml does not load: %v\n%s", err, cfg)
	}
	if r := loaded.Models.Roles; len(r["main"]) != 1 || r["main"][0] != "setup/gpt-setup" || r["stt"][0] != "setup_stt/whisper-1" || r["tts"][0] != "setup_tts/tts-1" {
		t.Errorf("roles after saving the main model: %v", r)
	}
}

// A regenerated or edited reply is spoken like the reply to a typed
// message: under voice.replies always a voice frame follows its text on
// the page's WebSocket; under when_spoken_to (the click is not speech) it
// is not spoken.
func TestRedoneReplyIsSpoken(t *testing.T) {
	audio := llmtest.NewAudioServer(t)
	w := StartWeb(t, voiceEnv(audio), WithEnv("REVERIE_VOICE__REPLIES=always"))
	w.Model.Handle(func(req llmtest.ChatRequest) llmtest.ServerReply {
		return llmtest.ServerReply{Text: "Answer to " + strings.TrimSpace(lastUser(req)) + "."}
	})
	c := dialWS(t, w, "?thread=web:redo")
	// untilVoice reads frames until a spoken reply's; an error frame fails.
	untilVoice := func(what string) api.ServerFrame {
		t.Helper()
		for {
			f := readFrame(t, c)
			switch f.Type {
			case api.FrameVoice:
				return f
			case api.FrameError:
				t.Fatalf("%s: error frame %+v", what, f)
			}
		}
	}
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:redo", Text: "hello"})
	untilVoice("the message")
	writeFrame(t, c, api.ClientFrame{Type: api.FrameRegenerate, Thread: "web:redo"})
	if f := untilVoice("the regeneration"); f.Audio == "" || f.Thread != "web:redo" {
		t.Fatalf("voice frame %+v", f)
	}
	var list api.MessageList
	w.JSON(t, http.MethodGet, "/threads/web:redo/messages", nil, http.StatusOK, &list)
	q := slices.IndexFunc(list.Messages, func(m api.Message) bool { return m.Role == "user" && m.Text == "hello" })
	if q < 0 {
		t.Fatalf("messages %+v", list.Messages)
	}
	writeFrame(t, c, api.ClientFrame{Type: api.FrameEdit, Thread: "web:redo", Message: list.Messages[q].ID, Text: "good morning"})
	untilVoice("the edit")
	sp := audio.Speeches()
	if len(sp) != 3 || sp[1].Input != "Answer to hello." || sp[2].Input != "Answer to good morning." {
		t.Fatalf("speech requests %+v", sp)
	}

	// when_spoken_to: the regeneration is written only. The command after
	// it runs on the same queue, so any speech of the regeneration is made
	// before its answer arrives.
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:redo", Text: "/voice when_spoken_to"})
	readReply(t, c)
	writeFrame(t, c, api.ClientFrame{Type: api.FrameRegenerate, Thread: "web:redo"})
	readReply(t, c)
	writeFrame(t, c, api.ClientFrame{Type: api.FrameMessage, Thread: "web:redo", Text: "/voice"})
	for f := readFrame(t, c); !strings.Contains(f.Text, "Voice replies: when_spoken_to"); f = readFrame(t, c) {
		if f.Type == api.FrameVoice {
			t.Fatalf("a regeneration was spoken under when_spoken_to: %+v", f)
		}
	}
	if n := len(audio.Speeches()); n != 3 {
		t.Errorf("%d speech requests, want 3", n)
	}
}
