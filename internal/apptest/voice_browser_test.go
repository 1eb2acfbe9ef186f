package apptest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/reverie-ai/reverie/extensions/web/chromiumtest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// voiceEnv points the stt and tts roles at a fake audio server.
func voiceEnv(audio *llmtest.AudioServer) Option {
	return WithEnv("REVERIE_STT_MODEL=whisper-1", "REVERIE_STT_BASE_URL="+audio.BaseURL(), "REVERIE_STT_API_KEY=sk-stt-test",
		"REVERIE_TTS_MODEL=tts-1", "REVERIE_TTS_BASE_URL="+audio.BaseURL(), "REVERIE_TTS_API_KEY=sk-tts-test")
}

// answerSpoken makes the model answer the spoken question, and anything
// else with "OK.".
func answerSpoken(req llmtest.ChatRequest) llmtest.ServerReply {
	if strings.Contains(lastUser(req), llmtest.SpokenText) {
		return llmtest.ServerReply{Text: "It is noon in Lisbon."}
	}
	return llmtest.ServerReply{Text: "OK."}
}

// TestBrowserVoiceMessage: Chromium's fake microphone plays espeak-ng's
// recording; the microphone button records it (MediaRecorder), uploads it
// and sends it; the server has it transcribed (the real multipart request
// carries the browser's WebM/Opus recording) and the model answers the
// words as typed text; the bubble shows what was heard; the reply is
// written and, as it answers a voice message, spoken (Ogg/Opus asked of
// the speech server) with a play button that plays it. After a reload the
// message shows its transcript.
func TestBrowserVoiceMessage(t *testing.T) {
	browserPath := chromiumtest.Path(t)
	audio := llmtest.NewAudioServer(t)
	app := startWebApp(t, "127.0.0.1:0", voiceEnv(audio))
	app.Model.Handle(answerSpoken)
	wav := filepath.Join(t.TempDir(), "spoken.wav")
	if err := os.WriteFile(wav, llmtest.SpokenWAV(), 0o600); err != nil {
		t.Fatal(err)
	}
	p := newBrowser(t, browserPath, "voice", 1280, 900,
		chromedp.Flag("use-fake-device-for-media-stream", true),
		chromedp.Flag("use-fake-ui-for-media-stream", true),
		chromedp.Flag("use-file-for-fake-audio-capture", wav),
		chromedp.Flag("autoplay-policy", "no-user-gesture-required"))
	p.do("load the page", chromedp.Navigate(app.Base+"/#token="+WebToken))
	p.waitFor("online with a microphone", `document.getElementById('conn').dataset.state === 'online' && !!document.getElementById('mic') && location.hash.startsWith('#chat/web')`)

	p.do("start recording", chromedp.Click(chromedp.ID("mic")))
	p.waitFor("sound recorded", `document.getElementById('mic').getAttribute('aria-pressed') === 'true' && Number(document.getElementById('mic').dataset.bytes || 0) > 2000`)
	p.do("stop and send", chromedp.Click(chromedp.ID("mic")))

	heard := `[...document.querySelectorAll('.msg.user .heard')].find(m => m.textContent.includes(` + js(llmtest.SpokenText) + `))`
	p.waitFor("the transcript in the message", "!!"+heard)
	p.waitFor("the written reply", `[...document.querySelectorAll('.msg.assistant')].some(m => m.textContent.includes('It is noon in Lisbon.'))`)
	play := `[...document.querySelectorAll('.msg.assistant')].find(m => m.textContent.includes('It is noon in Lisbon.'))?.querySelector('button[data-act="play"]')`
	p.waitFor("the play button", "!!"+play)
	p.snapshot("voice-reply")
	p.do("play", chromedp.Click(`.msg.assistant button[data-act="play"]`))
	p.waitFor("the spoken reply plays", play+`.dataset.state === 'playing' || `+play+`.dataset.state === 'played' || `+play+`.dataset.state === 'failed'`)
	if state := eval[string](p, play+`.dataset.state`); state == "failed" {
		t.Errorf("the spoken reply did not play")
	}

	trans := audio.Transcriptions()
	if len(trans) != 1 {
		t.Fatalf("%d transcription requests, want 1", len(trans))
	}
	if f := llmtest.AudioFormat(trans[0].Audio); (f != "webm" && f != "ogg") || trans[0].Model != "whisper-1" || trans[0].Authorization != "Bearer sk-stt-test" {
		t.Errorf("transcription request: %s audio of %d bytes (%s), model %q", f, len(trans[0].Audio), trans[0].FileName, trans[0].Model)
	}
	speech := audio.Speeches()
	if len(speech) != 1 || speech[0].ResponseFormat != "opus" || speech[0].Input != "It is noon in Lisbon." || speech[0].Authorization != "Bearer sk-tts-test" {
		t.Errorf("speech requests: %+v", speech)
	}
	p.do("reload", chromedp.Reload())
	p.waitFor("the transcript after the reload", `[...document.querySelectorAll('.msg.user')].some(m => m.textContent.includes(`+js(llmtest.SpokenText)+`))`)
	p.checkProblems()
}
