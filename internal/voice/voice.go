// Package voice hears voice messages and speaks replies: it turns an
// inbound audio attachment into text through the stt model role (any
// server speaking OpenAI's POST /audio/transcriptions) and a reply into
// audio files through the tts role (POST /audio/speech), and keeps each
// conversation's voice reply mode (/voice).
//
// The router calls it: a message with audio is transcribed on its thread's
// worker before its turn and then handled exactly as typed text; after the
// text reply, Speak makes the spoken parts a channel that plays audio
// sends. Recordings and spoken replies stay in the workspace.
//
// A Service is safe for concurrent use; it starts no goroutines.
package voice

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path"
	"strings"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/config"
	"github.com/reverie-ai/reverie/internal/providers"
	"github.com/reverie-ai/reverie/internal/providers/openai"
	"github.com/reverie-ai/reverie/internal/redact"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// Component is the name under which the voice schema is versioned.
const Component = "voice"

//go:embed migrations/*.sql
var migrations embed.FS

// NoSTTMessage is the line a voice message gets while no speech-to-text
// model is configured.
const NoSTTMessage = "I got your voice message but cannot listen to it: no speech-to-text model is configured. " +
	"Set REVERIE_STT_MODEL (e.g. whisper-1; REVERIE_STT_BASE_URL for a local whisper.cpp or faster-whisper server), " +
	"or add an stt role to models.roles in config.yaml, then restart Reverie. The recording is saved in the workspace as %s."

// Errors of Hear.
var (
	// ErrNoSTT: no stt role is configured.
	ErrNoSTT = errors.New("no speech-to-text model is configured")
	// ErrTooLong: the recording is over voice.max_bytes or
	// voice.max_duration.
	ErrTooLong = errors.New("voice message too long")
)

// Transcriber is a speech-to-text backend (*openai.Transcriber).
type Transcriber interface {
	Transcribe(ctx context.Context, audio []byte, name, mediaType string) (string, error)
	Name() string
	Model() string
}

// Speaker is a text-to-speech backend (*openai.Speaker).
type Speaker interface {
	Speak(ctx context.Context, text, voice, format string, maxBytes int64) ([]byte, error)
	Name() string
	Model() string
}

var (
	_ Transcriber = (*openai.Transcriber)(nil)
	_ Speaker     = (*openai.Speaker)(nil)
)

// Options configure a Service.
type Options struct {
	Config config.VoiceConfig
	// Models names the stt and tts roles and their backends.
	Models config.ModelsConfig
	// Env supplies REVERIE_STT_MODEL and friends (see FromEnv) when
	// Models has no stt or tts role.
	Env []string
	// DB keeps the per-conversation modes (required).
	DB *sql.DB
	// Workspace is the agent's workspace directory (absolute).
	Workspace string
	// Secrets receives the API keys resolved (nil: not registered).
	Secrets *redact.Secrets
	Logger  *slog.Logger
	Now     func() time.Time
	// HTTPClient replaces the backends' clients (tests); nil: built from
	// the timeout.
	HTTPClient *http.Client
	Migrations *sqlite.Migrations
}

// Service hears and speaks. Build it with New.
type Service struct {
	o    Options
	log  *slog.Logger
	stt  []Transcriber
	tts  []Speaker
	desc map[string]string
}

// New migrates the mode table and builds the stt and tts backends.
func New(ctx context.Context, o Options) (*Service, error) {
	if o.DB == nil {
		return nil, errors.New("voice: no database")
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if err := o.Migrations.Migrate(ctx, o.DB, Component, migrations, "migrations"); err != nil {
		return nil, fmt.Errorf("voice: %w", err)
	}
	s := &Service{o: o, log: o.Logger}
	var err error
	if s.stt, s.tts, s.desc, err = buildBackends(o); err != nil {
		return nil, err
	}
	return s, nil
}

// buildBackends builds the stt and tts backends of o.
func buildBackends(o Options) (stt []Transcriber, tts []Speaker, desc map[string]string, err error) {
	specs, err := roleSpecs(o.Models, o.Env)
	if err != nil {
		return nil, nil, nil, err
	}
	desc = map[string]string{}
	t := providers.Timeouts{Total: o.Config.Timeout, FirstByte: o.Config.Timeout}
	for _, sp := range specs {
		o.Secrets.Add(sp.key)
		opts := openai.Options{Name: sp.name, BaseURL: sp.base, APIKey: sp.key, Model: sp.model, Timeouts: t,
			HTTPClient: o.HTTPClient, MaxRetries: 1}
		switch sp.role {
		case config.RoleSTT:
			c, err := openai.NewTranscriber(opts)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("models.roles.stt: %w", err)
			}
			stt = append(stt, c)
		case config.RoleTTS:
			c, err := openai.NewSpeaker(opts)
			if err != nil {
				return nil, nil, nil, fmt.Errorf("models.roles.tts: %w", err)
			}
			tts = append(tts, c)
		}
		if desc[sp.role] == "" {
			desc[sp.role] = sp.name
		} else {
			desc[sp.role] += ", " + sp.name
		}
	}
	return stt, tts, desc, nil
}

// Probe is one speech backend's answer to Check.
type Probe struct {
	Role    string // stt or tts
	Backend string // "backend/model"
	Err     error
	Elapsed time.Duration
}

// Check calls every stt and tts backend once, for `reverie doctor`: a
// half-second silent WAV is transcribed, "OK." is spoken. It returns
// nothing when no speech role is configured; errors are secrets-free words.
func Check(ctx context.Context, o Options) ([]Probe, error) {
	if o.Config.Timeout <= 0 {
		o.Config.Timeout = 30 * time.Second
	}
	if o.Config.MaxBytes <= 0 {
		o.Config.MaxBytes = 25 << 20
	}
	if o.Secrets == nil {
		o.Secrets = &redact.Secrets{}
	}
	stt, tts, _, err := buildBackends(o)
	if err != nil {
		return nil, err
	}
	var out []Probe
	run := func(role, name string, fn func(ctx context.Context) error) {
		ctx, cancel := context.WithTimeout(ctx, o.Config.Timeout)
		defer cancel()
		start := time.Now()
		err := fn(ctx)
		if err != nil {
			err = errors.New(o.Secrets.Redact(Explain(err)))
		}
		out = append(out, Probe{Role: role, Backend: name, Err: err, Elapsed: time.Since(start)})
	}
	for _, t := range stt {
		run(config.RoleSTT, t.Name(), func(ctx context.Context) error {
			_, err := t.Transcribe(ctx, silentWAV(8000, 4000), "check.wav", "audio/wav")
			return err
		})
	}
	for _, sp := range tts {
		run(config.RoleTTS, sp.Name(), func(ctx context.Context) error {
			_, err := sp.Speak(ctx, "OK.", firstOf(envValue(o.Env, "REVERIE_TTS_VOICE"), o.Config.Voice, "alloy"), speechFormat, o.Config.MaxBytes)
			return err
		})
	}
	return out, nil
}

// CanHear reports whether an stt model is configured.
func (s *Service) CanHear() bool { return s != nil && len(s.stt) > 0 }

// CanSpeak reports whether a tts model is configured.
func (s *Service) CanSpeak() bool { return s != nil && len(s.tts) > 0 }

// Describe names role's models ("whisper/whisper-1"), "" when none.
func (s *Service) Describe(role string) string {
	if s == nil {
		return ""
	}
	return s.desc[role]
}

// Backends lists role's backends in order ("backend/model").
func (s *Service) Backends(role string) []string {
	if s == nil || s.desc[role] == "" {
		return nil
	}
	return strings.Split(s.desc[role], ", ")
}

// Hear transcribes the audio attachment a (a file in the workspace). Its
// size and, for Ogg and WAV files, its duration are checked first. A
// backend that is unavailable passes the file to the role's next one.
// Errors say what failed in words fit for the user.
func (s *Service) Hear(ctx context.Context, a chat.Attachment) (string, error) {
	if !s.CanHear() {
		return "", ErrNoSTT
	}
	data, err := s.read(a.Path)
	if err != nil {
		return "", err
	}
	if d, ok := Duration(data); ok && d > s.o.Config.MaxDuration {
		return "", fmt.Errorf("%w: it lasts %s, the limit is %s (voice.max_duration)", ErrTooLong, d.Round(time.Second), s.o.Config.MaxDuration)
	}
	ctx, cancel := context.WithTimeout(ctx, s.o.Config.Timeout)
	defer cancel()
	name := path.Base(a.Path)
	var last error
	for _, t := range s.stt {
		text, err := t.Transcribe(ctx, data, name, a.MediaType)
		if err == nil {
			return text, nil
		}
		last = err
		if !errors.Is(err, providers.ErrUnavailable) || ctx.Err() != nil {
			break
		}
		s.log.Warn("speech-to-text backend unavailable; trying the next", "backend", t.Name(), "err", err)
	}
	return "", fmt.Errorf("transcribe %s: %w", a.Path, last)
}

// read loads a workspace file within the size limit (os.Root: never
// outside the workspace, also through a symbolic link).
func (s *Service) read(rel string) ([]byte, error) {
	root, err := os.OpenRoot(s.o.Workspace)
	if err != nil {
		return nil, fmt.Errorf("open the workspace: %w", err)
	}
	defer root.Close()
	fi, err := root.Stat(rel)
	if err != nil {
		return nil, fmt.Errorf("read the recording %s: %w", rel, err)
	}
	if fi.Size() > s.o.Config.MaxBytes {
		return nil, fmt.Errorf("%w: %d bytes, the limit is %d (voice.max_bytes)", ErrTooLong, fi.Size(), s.o.Config.MaxBytes)
	}
	if fi.Size() == 0 {
		return nil, fmt.Errorf("the recording %s is empty", rel)
	}
	data, err := root.ReadFile(rel)
	if err != nil {
		return nil, fmt.Errorf("read the recording %s: %w", rel, err)
	}
	return data, nil
}

// Mode is the voice reply mode of thread: its /voice setting, else its
// channel's (voice.channel_replies), else voice.replies.
func (s *Service) Mode(ctx context.Context, thread chat.ThreadID) (mode string, own bool, err error) {
	err = s.o.DB.QueryRowContext(ctx, `SELECT mode FROM voice_replies WHERE thread = ?`, string(thread)).Scan(&mode)
	switch {
	case err == nil && config.ValidReplies(mode):
		return mode, true, nil
	case err != nil && !errors.Is(err, sql.ErrNoRows):
		return "", false, fmt.Errorf("read the voice mode of %s: %w", thread, err)
	}
	return s.channelMode(thread.Channel()), false, nil
}

func (s *Service) channelMode(channel string) string {
	if m, ok := s.o.Config.ChannelReplies[channel]; ok {
		return m
	}
	return s.o.Config.Replies
}

// SetMode sets thread's mode; "" (or "default") removes its own setting.
func (s *Service) SetMode(ctx context.Context, thread chat.ThreadID, mode string) error {
	if mode == "" || mode == "default" {
		if _, err := s.o.DB.ExecContext(ctx, `DELETE FROM voice_replies WHERE thread = ?`, string(thread)); err != nil {
			return fmt.Errorf("reset the voice mode of %s: %w", thread, err)
		}
		return nil
	}
	if !config.ValidReplies(mode) {
		return fmt.Errorf("unknown voice mode %q (want off, when_spoken_to, always or default)", mode)
	}
	_, err := s.o.DB.ExecContext(ctx, `INSERT INTO voice_replies (thread, mode, updated_at) VALUES (?,?,?)
		ON CONFLICT (thread) DO UPDATE SET mode = excluded.mode, updated_at = excluded.updated_at`,
		string(thread), mode, s.o.Now().UnixNano())
	if err != nil {
		return fmt.Errorf("set the voice mode of %s: %w", thread, err)
	}
	return nil
}

// ShouldSpeak reports whether a reply on thread is spoken: a tts model is
// configured and the thread's mode is always, or when_spoken_to and the
// message answered was a voice message.
func (s *Service) ShouldSpeak(ctx context.Context, thread chat.ThreadID, spokenTo bool) bool {
	if !s.CanSpeak() {
		return false
	}
	mode, _, err := s.Mode(ctx, thread)
	if err != nil {
		s.log.Warn("could not read the voice mode; the reply is not spoken", "thread", thread, "err", err)
		return false
	}
	return mode == config.RepliesAlways || (mode == config.RepliesWhenSpokenTo && spokenTo)
}

// speechFormat is what the tts server is asked for: Ogg/Opus, which
// Telegram plays as a voice note, Matrix clients and browsers play too.
const (
	speechFormat = openai.SpeechOpus
	speechMedia  = "audio/ogg"
)

// Speak speaks reply (Markdown) for thread, in parts (see Parts), saving
// each as an Ogg/Opus file in the workspace under voice/<channel>/<target>/.
// Parts made before a failure are returned with the error.
func (s *Service) Speak(ctx context.Context, thread chat.ThreadID, reply string) ([]chat.Speech, error) {
	if !s.CanSpeak() {
		return nil, errors.New("no text-to-speech model is configured")
	}
	parts := Parts(Speakable(reply), s.o.Config.PartChars, s.o.Config.MaxParts)
	voiceName := s.o.Config.Voice
	if v := envValue(s.o.Env, "REVERIE_TTS_VOICE"); v != "" {
		voiceName = v
	}
	dir := path.Join("voice", extension.SafeName(thread.Channel()), extension.SafeName(thread.Target()))
	stamp := s.o.Now().UTC().Format("20060102-150405.000")
	var out []chat.Speech
	for i, text := range parts {
		audio, err := s.speakPart(ctx, text, voiceName)
		if err != nil {
			return out, &spokenError{words: s.o.Secrets.Redact(sentence(Explain(err))), err: fmt.Errorf("speak part %d of %d: %w", i+1, len(parts), err)}
		}
		rel := path.Join(dir, fmt.Sprintf("%s-%d.ogg", strings.ReplaceAll(stamp, ".", "-"), i+1))
		if err := s.save(rel, audio); err != nil {
			return out, fmt.Errorf("save the spoken reply: %w", err)
		}
		sec := 0.0
		if d, ok := Duration(audio); ok {
			sec = d.Seconds()
		}
		out = append(out, chat.Speech{Path: rel, MediaType: speechMedia, Text: text, Part: i + 1, Parts: len(parts), Seconds: sec})
	}
	return out, nil
}

func (s *Service) speakPart(ctx context.Context, text, voiceName string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, s.o.Config.Timeout)
	defer cancel()
	var last error
	for _, sp := range s.tts {
		audio, err := sp.Speak(ctx, text, voiceName, speechFormat, s.o.Config.MaxBytes)
		if err == nil {
			return audio, nil
		}
		last = err
		if !errors.Is(err, providers.ErrUnavailable) || ctx.Err() != nil {
			break
		}
		s.log.Warn("text-to-speech backend unavailable; trying the next", "backend", sp.Name(), "err", err)
	}
	return nil, last
}

func (s *Service) save(rel string, data []byte) error {
	if err := os.MkdirAll(s.o.Workspace, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(s.o.Workspace)
	if err != nil {
		return err
	}
	defer root.Close()
	if err := root.MkdirAll(path.Dir(rel), 0o700); err != nil {
		return err
	}
	return root.WriteFile(rel, data, 0o600)
}

// Unheard is the line telling the user why recording a was not heard, and
// where it is kept.
func (s *Service) Unheard(a chat.Attachment, err error) string {
	if errors.Is(err, ErrNoSTT) {
		return fmt.Sprintf(NoSTTMessage, a.Path)
	}
	return fmt.Sprintf("I could not listen to your voice message: %s The recording is saved in the workspace as %s.",
		s.o.Secrets.Redact(sentence(Explain(err))), a.Path)
}

// sentence ends s with a full stop.
func sentence(s string) string {
	s = strings.TrimSpace(s)
	if s != "" && !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// spokenError is a failure of Speak, its message said for the user.
type spokenError struct {
	words string
	err   error
}

func (e *spokenError) Error() string { return e.words }
func (e *spokenError) Unwrap() error { return e.err }

// Explain says in words why Hear or Speak failed, for the user.
func Explain(err error) string {
	switch {
	case errors.Is(err, ErrNoSTT):
		return "no speech-to-text model is configured"
	case errors.Is(err, ErrTooLong):
		return err.Error()
	}
	if words, ok := providers.Explain(err); ok {
		return words
	}
	return err.Error()
}
