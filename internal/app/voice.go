package app

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/router"
	"github.com/reverie-ai/reverie/internal/voice"
)

// buildVoice creates the voice service from the stt and tts roles (or
// REVERIE_STT_MODEL / REVERIE_TTS_MODEL).
func (a *App) buildVoice(ctx context.Context, workspace string) error {
	v, err := voice.New(ctx, voice.Options{
		Config: a.Config.Voice, Models: a.Config.Models, Env: a.opts.Env, DB: a.DB, Workspace: workspace,
		Secrets: a.Secrets, Logger: a.Logger.With("component", "voice"), Now: a.opts.Now, Migrations: a.migrations,
	})
	if err != nil {
		return fmt.Errorf("set up voice: %w", err)
	}
	a.Voice = v
	for _, role := range config.SpeechRoles {
		if d := v.Describe(role); d != "" {
			a.Logger.Info("voice model", "role", role, "models", d)
		}
	}
	return nil
}

// registerVoiceCommand adds /voice: show or set the conversation's voice
// reply mode.
func (a *App) registerVoiceCommand(rt *router.Router) error {
	return rt.Register(router.Command{
		Name: "voice",
		Help: "spoken replies in this conversation: /voice off | when_spoken_to | always | default",
		Run: func(ctx context.Context, cc router.CommandContext) (string, error) {
			arg := strings.ToLower(strings.TrimSpace(cc.Args))
			if arg != "" {
				if err := a.Voice.SetMode(ctx, cc.Thread, arg); err != nil {
					return "", err
				}
			}
			mode, own, err := a.Voice.Mode(ctx, cc.Thread)
			if err != nil {
				return "", err
			}
			return a.voiceStatus(mode, own), nil
		},
	})
}

// voiceStatus describes the voice setup of a conversation for /voice.
func (a *App) voiceStatus(mode string, own bool) string {
	var b strings.Builder
	from := "this conversation's setting"
	if !own {
		from = "the default (voice.replies / voice.channel_replies)"
	}
	words := map[string]string{
		config.RepliesOff:          "replies are written only",
		config.RepliesWhenSpokenTo: "a reply to a voice message is spoken too",
		config.RepliesAlways:       "every reply is spoken too",
	}[mode]
	fmt.Fprintf(&b, "Voice replies: %s — %s (%s).", mode, words, from)
	if d := a.Voice.Describe(config.RoleSTT); d != "" {
		fmt.Fprintf(&b, "\nListening with %s.", d)
	} else {
		b.WriteString("\nVoice messages cannot be heard: no speech-to-text model (set REVERIE_STT_MODEL or models.roles.stt).")
	}
	if d := a.Voice.Describe(config.RoleTTS); d != "" {
		fmt.Fprintf(&b, "\nSpeaking with %s.", d)
	} else {
		b.WriteString("\nReplies cannot be spoken: no text-to-speech model (set REVERIE_TTS_MODEL or models.roles.tts).")
	}
	b.WriteString("\nChange it with /voice off, /voice when_spoken_to, /voice always or /voice default.")
	return b.String()
}

// voiceFormID is the setup screen's voice form: it shows the stt and tts
// models (configured in config.yaml or the environment, not on the form) and
// tests them with one call each.
const voiceFormID = "voice"

func (s apiSetup) voiceForm() api.SetupForm {
	v := s.a.Voice
	var b strings.Builder
	stt, tts := v.Describe(config.RoleSTT), v.Describe(config.RoleTTS)
	if stt != "" {
		fmt.Fprintf(&b, "Voice messages are transcribed by %s. ", stt)
	} else {
		b.WriteString("Voice messages cannot be heard: no speech-to-text (stt) model. ")
	}
	if tts != "" {
		fmt.Fprintf(&b, "Replies are spoken by %s (voice.replies: %s). ", tts, s.a.Config.Voice.Replies)
	} else {
		b.WriteString("Replies are written only: no text-to-speech (tts) model. ")
	}
	b.WriteString("Set them with REVERIE_STT_MODEL / REVERIE_TTS_MODEL (and _BASE_URL, _API_KEY for a local server) " +
		"or the stt and tts roles of models.roles in config.yaml, then restart.")
	if stt != "" || tts != "" {
		b.WriteString(" Test calls each model once.")
	}
	return api.SetupForm{ID: voiceFormID, Title: "Voice", Description: b.String(), Configured: v.CanHear() || v.CanSpeak(),
		Fields: []api.SetupField{}}
}

// testVoice calls each stt and tts model once (voice.Check).
func (s apiSetup) testVoice(ctx context.Context) (string, error) {
	probes, err := voice.Check(ctx, voice.Options{Config: s.a.Config.Voice, Models: s.a.Config.Models, Env: s.a.opts.Env, Secrets: s.a.Secrets})
	if err != nil {
		return "", fmt.Errorf("%w: %s", api.ErrTestFailed, s.a.Secrets.Redact(err.Error()))
	}
	if len(probes) == 0 {
		return "", fmt.Errorf("%w: no stt or tts model is configured", api.ErrInvalid)
	}
	var ok, failed []string
	for _, p := range probes {
		if p.Err != nil {
			failed = append(failed, fmt.Sprintf("%s model %s: %v", p.Role, p.Backend, p.Err))
			continue
		}
		ok = append(ok, fmt.Sprintf("%s model %s answers (%s)", p.Role, p.Backend, p.Elapsed.Round(10*time.Millisecond)))
	}
	if len(failed) > 0 {
		return "", fmt.Errorf("%w: %s", api.ErrTestFailed, strings.Join(append(failed, ok...), "; "))
	}
	return strings.Join(ok, "; ") + ".", nil
}
