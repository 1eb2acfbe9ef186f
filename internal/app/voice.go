package app

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/modelrouter"
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
			if arg != "" && arg != "default" && !config.ValidReplies(arg) {
				// A refusal is an answer: nothing changed, and how to say it.
				return fmt.Sprintf("Unknown voice mode %q: nothing changed. Use /voice off, /voice when_spoken_to, /voice always or /voice default.", arg), nil
			}
			if arg != "" {
				if err := a.Voice.SetMode(ctx, cc.Thread, arg); err != nil {
					return "", err
				}
			}
			mode, own, err := a.Voice.Mode(ctx, cc.Thread)
			if err != nil {
				return "", err
			}
			status := a.voiceStatus(mode, own)
			if ch, ok := a.Kernel.Channel(cc.Channel); ok {
				if _, plays := ch.(extension.VoiceChannelProvider); !plays {
					// The terminal (reverie chat) and other text-only
					// channels: the setting is kept, nothing is spoken here.
					status = "This channel cannot play audio: replies here are written only, whatever the setting.\n" + status
				}
			}
			return status, nil
		},
	})
}

// voiceStatus describes the voice setup of a conversation for /voice.
func (a *App) voiceStatus(mode string, own bool) string {
	var b strings.Builder
	from := "this conversation's setting"
	if !own {
		from = "the default: voice.replies / voice.channel_replies"
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
// models, saves new ones to config.yaml after one real call each, and
// tests the configured ones when it is sent empty.
const voiceFormID = "voice"

// openAIBaseURL is the default base URL of a speech model.
const openAIBaseURL = "https://api.openai.com/v1"

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
	b.WriteString("Any server speaking OpenAI's audio API works (OpenAI, Groq, a local whisper.cpp, faster-whisper or Kokoro server). " +
		"A model entered here is tested with one real call, then saved to config.yaml (models.roles." + config.RoleSTT +
		" / " + config.RoleTTS + ", a key to secrets/) and Reverie restarts; a role left empty is not changed. " +
		"Sent with every field empty, the form tests the configured models. " +
		"REVERIE_STT_MODEL / REVERIE_TTS_MODEL set them from the environment instead.")
	var fields []api.SetupField
	for _, role := range config.SpeechRoles {
		model, base := s.speechDefaults(role)
		what := map[string]string{config.RoleSTT: "Speech to text", config.RoleTTS: "Text to speech"}[role]
		eg := map[string]string{config.RoleSTT: "whisper-1, whisper-large-v3 (Groq), or your local server's model",
			config.RoleTTS: "gpt-4o-mini-tts, tts-1, kokoro"}[role]
		fields = append(fields,
			api.SetupField{Key: role + "_model", Label: what + " model", Kind: string(extension.FieldText), Default: model,
				Help: "e.g. " + eg + "; empty: leave this role as it is"},
			api.SetupField{Key: role + "_base_url", Label: what + " base URL", Kind: string(extension.FieldURL), Default: base,
				Help: "the API root including /v1 (default " + openAIBaseURL + ")"},
			api.SetupField{Key: role + "_api_key", Label: what + " API key", Kind: string(extension.FieldSecret),
				Help: "empty: none, or the saved key of the same server (the main model's or this role's)"})
	}
	return api.SetupForm{ID: voiceFormID, Title: "Voice", Description: b.String(), Configured: v.CanHear() || v.CanSpeak(),
		Fields: fields}
}

// speechDefaults is the model and base URL role is configured with in
// config.yaml ("" when it is not).
func (s apiSetup) speechDefaults(role string) (model, base string) {
	entries := s.a.Config.Models.Roles[role]
	if len(entries) == 0 {
		return "", ""
	}
	ref, err := config.ParseModelRef(entries[0])
	if err != nil {
		return "", ""
	}
	return ref.Model, s.a.Config.Models.Backends[ref.Backend].BaseURL
}

// applyVoice tests the speech models entered on the voice form with one
// call each and saves them to config.yaml; with nothing entered it tests
// the configured ones.
func (s apiSetup) applyVoice(ctx context.Context, values map[string]string) (string, error) {
	v := func(k string) string { return strings.TrimSpace(values[k]) }
	if !slices.ContainsFunc(slices.Collect(maps.Values(values)), func(x string) bool { return strings.TrimSpace(x) != "" }) {
		return s.testVoice(ctx)
	}
	unchanged := true // the form's defaults sent back: the models in use
	for _, role := range config.SpeechRoles {
		model, base := s.speechDefaults(role)
		if v(role+"_api_key") != "" || v(role+"_model") != model || (v(role+"_base_url") != base && v(role+"_model") != "") {
			unchanged = false
		}
	}
	if unchanged {
		return s.testVoice(ctx)
	}
	cfg, err := s.a.readSetupConfig()
	if err != nil {
		return "", err
	}
	models := maps.Clone(cfg.models)
	test := config.ModelsConfig{Backends: map[string]config.ModelBackend{}, Roles: map[string][]string{}}
	keys := map[string]string{} // role → a new key to store
	var saved []string
	for _, role := range config.SpeechRoles {
		model, base, key := v(role+"_model"), v(role+"_base_url"), v(role+"_api_key")
		if model == "" {
			if base != "" || key != "" {
				return "", fmt.Errorf("%w: the %s model is required with its base URL or key", api.ErrInvalid, role)
			}
			continue
		}
		if !safeValue().MatchString(base) || !safeValue().MatchString(model) || strings.ContainsAny(key, "\r\n") {
			return "", fmt.Errorf("%w: quotes, backslashes and control characters are not allowed", api.ErrInvalid)
		}
		base = cmp.Or(base, openAIBaseURL)
		if u, err := url.Parse(base); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", fmt.Errorf("%w: the %s base URL %q is not an http(s) URL", api.ErrInvalid, role, base)
		}
		m := setupModel{Kind: config.ModelKindOpenAI, BaseURL: base, Model: model}
		if key != "" {
			m.KeyFile = "secrets/" + role + "_api_key"
			keys[role] = key
		} else {
			// The saved key of the same server: this role's, else the
			// main model's.
			for _, other := range []string{role, modelrouter.RoleMain} {
				if o, ok := cfg.models[other]; ok && o.BaseURL == base && o.KeyFile != "" {
					data, err := os.ReadFile(filepath.Join(s.a.opts.DataDir, filepath.FromSlash(o.KeyFile)))
					if err != nil {
						return "", fmt.Errorf("read the saved API key: %w", err)
					}
					m.KeyFile, key = o.KeyFile, strings.TrimSpace(string(data))
					break
				}
			}
		}
		// A secret from now on, whether or not the test passes.
		s.a.Secrets.Add(key)
		name := setupRoleBackends[role]
		var secret config.Secret // none: a local server
		if key != "" {
			secret = config.LiteralSecret(key)
		}
		test.Backends[name] = config.ModelBackend{Kind: config.ModelKindOpenAI, BaseURL: base, APIKey: secret}
		test.Roles[role] = []string{name + "/" + model}
		models[role] = m
		saved = append(saved, fmt.Sprintf("%s model %s", role, model))
	}
	if len(keys) == 0 && maps.Equal(models, cfg.models) {
		return s.testVoice(ctx) // saved since the start: the restart is pending
	}
	probes, err := voice.Check(ctx, voice.Options{Config: s.a.Config.Voice, Models: test, Secrets: s.a.Secrets})
	if err != nil {
		return "", fmt.Errorf("%w: %s", api.ErrTestFailed, s.a.Secrets.Redact(err.Error()))
	}
	var failed []string
	for _, p := range probes {
		if p.Err != nil {
			failed = append(failed, fmt.Sprintf("%s model %s: %v", p.Role, p.Backend, p.Err))
		}
	}
	if len(failed) > 0 {
		return "", fmt.Errorf("%w: %s (nothing was saved)", api.ErrTestFailed, strings.Join(failed, "; "))
	}
	for _, role := range config.SpeechRoles {
		if key, ok := keys[role]; ok {
			if err := s.a.storeKey(models[role].KeyFile, key); err != nil {
				return "", err
			}
		}
	}
	if err := cfg.write(models); err != nil {
		return "", err
	}
	s.a.Logger.Info("voice models configured on the setup screen; restarting", "models", strings.Join(saved, ", "))
	s.a.requestRestart("voice models configured on the setup screen")
	return fmt.Sprintf("Saved: the %s (tested with a real call). Reverie restarts to use them: within seconds when it was "+
		"started with reverie run (or just reverie); an agent started with reverie agent must be restarted by hand.",
		strings.Join(saved, " and the ")), nil
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
