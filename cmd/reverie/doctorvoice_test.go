package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/llm/llmtest"
)

// doctor calls the stt and tts models once each and reports them; a model
// the server does not know fails the check, saying so.
func TestDoctorVoice(t *testing.T) {
	audio := llmtest.NewAudioServer(t)
	dir := filepath.Join(t.TempDir(), "data")
	env := []string{"HOME=" + t.TempDir(), "REVERIE_STT_MODEL=whisper-1", "REVERIE_STT_BASE_URL=" + audio.BaseURL(),
		"REVERIE_TTS_MODEL=tts-1", "REVERIE_TTS_BASE_URL=" + audio.BaseURL()}
	if code, out, errs := runCLI(t, env, "init", "--data", dir); code != ExitOK {
		t.Fatalf("init: %d %s %s", code, out, errs)
	}
	code, out, _ := runCLI(t, env, "doctor", "--data", dir)
	if code != ExitOK || !strings.Contains(out, "stt model env/whisper-1 answers") || !strings.Contains(out, "tts model env/tts-1 answers") {
		t.Fatalf("doctor: %d\n%s", code, out)
	}
	if n := len(audio.Transcriptions()); n != 1 {
		t.Errorf("%d transcriptions, want 1", n)
	}
	audio.EnqueueSpeechFailure(llmtest.AudioReply{Status: 404, ErrorMessage: "model tts-1 not found"})
	code, out, _ = runCLI(t, env, "doctor", "--data", dir)
	if code == ExitOK || !strings.Contains(out, "tts model env/tts-1") || !strings.Contains(out, "not found") {
		t.Fatalf("doctor with a failing tts model: %d\n%s", code, out)
	}
}
