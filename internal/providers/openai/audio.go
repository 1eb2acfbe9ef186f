package openai

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reverie-ai/reverie/internal/providers"
)

// Transcriber turns speech into text through POST /audio/transcriptions
// (OpenAI, Groq, a whisper.cpp or faster-whisper server): the audio goes
// as a multipart form with the model's name, and the text comes back as
// JSON.
type Transcriber struct {
	o      Options
	sdk    sdk.AudioTranscriptionService
	policy providers.Policy
}

// NewTranscriber returns a transcriber for o (Model names the speech-to-text
// model: whisper-1, gpt-4o-mini-transcribe, whisper-large-v3…).
func NewTranscriber(o Options) (*Transcriber, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	return &Transcriber{o: o, sdk: sdk.NewAudioTranscriptionService(o.sdkOptions()...), policy: o.policy()}, nil
}

// Model is the speech-to-text model.
func (t *Transcriber) Model() string { return t.o.Model }

// Name is the backend's name.
func (t *Transcriber) Name() string { return t.o.Name }

// Transcribe sends audio (a whole file: name's extension and mediaType
// tell the server its format) and returns the text. Errors are
// *providers.Error; an empty transcript is not an error (silence).
func (t *Transcriber) Transcribe(ctx context.Context, audio []byte, name, mediaType string) (string, error) {
	var text string
	err := t.policy.Run(ctx, t.o.Model, nil, func(ctx context.Context, a *providers.Attempt) error {
		// A fresh reader per attempt: a retry sends the whole file again.
		params := sdk.AudioTranscriptionNewParams{
			Model:          sdk.AudioModel(t.o.Model),
			File:           sdk.File(bytes.NewReader(audio), name, mediaType),
			ResponseFormat: sdk.AudioResponseFormatJSON,
		}
		res, err := t.sdk.New(ctx, params, option.WithMiddleware(a.Middleware))
		if err != nil {
			return err
		}
		if res == nil {
			return providers.BadResponse(nil, "the transcription answer is empty")
		}
		text = strings.TrimSpace(res.Text)
		return nil
	})
	return text, err
}

// Speech formats asked of a text-to-speech server.
const (
	SpeechOpus = "opus" // Ogg/Opus: what Telegram plays as a voice note
	SpeechMP3  = "mp3"
	SpeechWAV  = "wav"
)

// Speaker turns text into speech through POST /audio/speech (OpenAI,
// Kokoro-FastAPI, a Piper server behind an OpenAI-compatible front): JSON
// in, the audio file's bytes out.
type Speaker struct {
	o      Options
	sdk    sdk.AudioSpeechService
	policy providers.Policy
}

// NewSpeaker returns a speaker for o (Model names the text-to-speech model:
// gpt-4o-mini-tts, tts-1, kokoro…).
func NewSpeaker(o Options) (*Speaker, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	return &Speaker{o: o, sdk: sdk.NewAudioSpeechService(o.sdkOptions()...), policy: o.policy()}, nil
}

// Model is the text-to-speech model.
func (s *Speaker) Model() string { return s.o.Model }

// Name is the backend's name.
func (s *Speaker) Name() string { return s.o.Name }

// Speak returns text spoken by voice in format (SpeechOpus, SpeechMP3,
// SpeechWAV), at most maxBytes long (a longer answer is ErrBadResponse).
func (s *Speaker) Speak(ctx context.Context, text, voice, format string, maxBytes int64) ([]byte, error) {
	params := sdk.AudioSpeechNewParams{
		Input:          text,
		Model:          sdk.SpeechModel(s.o.Model),
		Voice:          sdk.AudioSpeechNewParamsVoiceUnion{OfString: sdk.String(voice)},
		ResponseFormat: sdk.AudioSpeechNewParamsResponseFormat(format),
	}
	var audio []byte
	err := s.policy.Run(ctx, s.o.Model, nil, func(ctx context.Context, a *providers.Attempt) error {
		res, err := s.sdk.New(ctx, params, option.WithMiddleware(a.Middleware))
		if err != nil {
			return err
		}
		defer res.Body.Close()
		if ct := res.Header.Get("Content-Type"); strings.HasPrefix(ct, "application/json") || strings.HasPrefix(ct, "text/") {
			head, _ := io.ReadAll(io.LimitReader(res.Body, 300))
			return providers.BadResponse(nil, "the speech answer is %s, not audio: %s", ct, strings.TrimSpace(string(head)))
		}
		data, err := io.ReadAll(io.LimitReader(res.Body, maxBytes+1))
		if err != nil {
			return fmt.Errorf("read the speech: %w", err)
		}
		if int64(len(data)) > maxBytes {
			return providers.BadResponse(nil, "the speech is over %d bytes", maxBytes)
		}
		if len(data) == 0 {
			return providers.BadResponse(nil, "the speech answer is empty")
		}
		audio = data
		return nil
	})
	return audio, err
}
