package config

import (
	"sort"
	"time"
)

// The speech roles of models.roles: they name OpenAI-compatible audio
// models, not chat models, and never fall back to main.
const (
	// RoleSTT turns voice messages into text (POST /audio/transcriptions).
	RoleSTT = "stt"
	// RoleTTS speaks replies (POST /audio/speech).
	RoleTTS = "tts"
)

// SpeechRoles are the roles that name audio models.
var SpeechRoles = []string{RoleSTT, RoleTTS}

// Voice reply modes (voice.replies, voice.channel_replies and the /voice
// command).
const (
	// RepliesOff: replies are text only.
	RepliesOff = "off"
	// RepliesWhenSpokenTo: a reply to a voice message is spoken too.
	RepliesWhenSpokenTo = "when_spoken_to"
	// RepliesAlways: every reply is spoken too.
	RepliesAlways = "always"
)

// VoiceConfig is the `voice:` section: how voice messages are heard and
// replies spoken. The models are the stt and tts roles of models.roles (or
// REVERIE_STT_MODEL / REVERIE_TTS_MODEL); without them voice is off.
type VoiceConfig struct {
	// Replies is when replies are spoken as well as written, on every
	// channel that can play audio: off, when_spoken_to (the default: a
	// reply to a voice message) or always. The text reply is always sent.
	Replies string `yaml:"replies"`
	// ChannelReplies overrides Replies per channel ({telegram: always,
	// web: off}); /voice overrides both per conversation.
	ChannelReplies map[string]string `yaml:"channel_replies"`
	// Voice is the speaking voice the tts model is asked for (OpenAI:
	// alloy, nova, …; Kokoro: af_heart, …). REVERIE_TTS_VOICE overrides it.
	Voice string `yaml:"voice"`
	// Language is an ISO-639-1 hint for transcription ("en"); empty lets
	// the model detect it.
	Language string `yaml:"language"`
	// MaxBytes bounds a voice message sent for transcription and a spoken
	// reply (default 25 MB, OpenAI's limit).
	MaxBytes int64 `yaml:"max_bytes"`
	// MaxDuration bounds a voice message's length (default 10 minutes).
	MaxDuration time.Duration `yaml:"max_duration"`
	// Timeout bounds one transcription or one spoken part (default 2
	// minutes).
	Timeout time.Duration `yaml:"timeout"`
	// PartChars is the longest piece of a reply spoken as one audio file;
	// a longer reply is spoken in parts cut at sentence ends (default 1200).
	PartChars int `yaml:"part_chars"`
	// MaxParts bounds the parts of one spoken reply (default 4); what is
	// left is only in the text reply, and the last part says so.
	MaxParts int `yaml:"max_parts"`
}

func defaultVoice() VoiceConfig {
	return VoiceConfig{Replies: RepliesWhenSpokenTo, ChannelReplies: map[string]string{}, Voice: "alloy",
		MaxBytes: 25 << 20, MaxDuration: 10 * time.Minute, Timeout: 2 * time.Minute, PartChars: 1200, MaxParts: 4}
}

// ValidReplies reports whether mode is a voice reply mode.
func ValidReplies(mode string) bool {
	return mode == RepliesOff || mode == RepliesWhenSpokenTo || mode == RepliesAlways
}

func (c *Config) validateVoice() error {
	v := c.Voice
	if !ValidReplies(v.Replies) {
		return c.invalid("voice.replies", "unknown mode %q (want off, when_spoken_to or always)", v.Replies)
	}
	chans := make([]string, 0, len(v.ChannelReplies))
	for ch := range v.ChannelReplies {
		chans = append(chans, ch)
	}
	sort.Strings(chans)
	for _, ch := range chans {
		if !ValidReplies(v.ChannelReplies[ch]) {
			return c.invalid("voice.channel_replies."+ch, "unknown mode %q (want off, when_spoken_to or always)", v.ChannelReplies[ch])
		}
	}
	switch {
	case v.MaxBytes < 1024:
		return c.invalid("voice.max_bytes", "must be at least 1024")
	case v.MaxDuration < time.Second:
		return c.invalid("voice.max_duration", "must be at least 1s")
	case v.Timeout < time.Second:
		return c.invalid("voice.timeout", "must be at least 1s")
	case v.PartChars < 100 || v.PartChars > 4096:
		return c.invalid("voice.part_chars", "must be between 100 and 4096 (OpenAI's speech input limit)")
	case v.MaxParts < 1 || v.MaxParts > 20:
		return c.invalid("voice.max_parts", "must be between 1 and 20")
	}
	for _, role := range SpeechRoles {
		for _, entry := range c.Models.Roles[role] {
			ref, err := ParseModelRef(entry)
			if err != nil {
				continue // validateModels reports it
			}
			if b, ok := c.Models.Backends[ref.Backend]; ok && b.Kind != ModelKindOpenAI {
				return c.invalid("models.roles."+role, "%q is on backend %q of kind %s, which has no audio API (use an openai backend: OpenAI, Groq, a whisper.cpp, faster-whisper or Kokoro server)",
					entry, ref.Backend, b.Kind)
			}
		}
	}
	return nil
}
