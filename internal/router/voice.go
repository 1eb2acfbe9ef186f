package router

import (
	"context"
	"fmt"
	"strings"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// Voice hears voice messages and speaks replies (*voice.Service).
type Voice interface {
	// Hear transcribes an audio attachment.
	Hear(ctx context.Context, a chat.Attachment) (string, error)
	// Unheard is the line telling the user why a recording was not heard
	// (no speech-to-text model, too long, the server failed) and where it
	// is kept.
	Unheard(a chat.Attachment, err error) string
	// ShouldSpeak reports whether a reply on thread is spoken, spokenTo
	// saying whether it answers a voice message.
	ShouldSpeak(ctx context.Context, thread chat.ThreadID, spokenTo bool) bool
	// Speak speaks a reply into audio files in the workspace, in parts.
	Speak(ctx context.Context, thread chat.ThreadID, reply string) ([]chat.Speech, error)
}

// TranscriptPrefix starts the line that shows the user what was heard.
const TranscriptPrefix = "🎤 "

// hear turns j's audio attachments into text before its turn, so that the
// turn handles a voice message exactly as typed text: the transcripts go
// before the message's own text (a caption), the audio attachments leave
// the job (the files stay in the workspace), and the inbox row is
// rewritten to match, so that a restart does not transcribe again. What was
// heard is shown to the user (chat.Transcript); a recording that could not
// be heard gets one line saying why. It reports false, with the reply, when
// nothing is left to answer.
func (r *Router) hear(ctx context.Context, j *job, deliver bool) (string, bool) {
	var heard, unheard, notes []string
	var rest []chat.Attachment
	for _, a := range j.attachments {
		if a.Kind != chat.AttachAudio {
			rest = append(rest, a)
			continue
		}
		if r.o.Voice == nil {
			// No voice service (a router built without one): the model
			// is told of the file, as of any other.
			notes = append(notes, fmt.Sprintf("[voice message saved in the workspace as %s; voice is not available in this build]", a.Path))
			continue
		}
		text, err := r.o.Voice.Hear(ctx, a)
		switch {
		case err != nil:
			r.log.Warn("could not transcribe a voice message", "thread", j.thread, "path", a.Path, "err", err)
			unheard = append(unheard, r.o.Voice.Unheard(a, err))
		case strings.TrimSpace(text) == "":
			unheard = append(unheard, fmt.Sprintf("I could not make out any words in your voice message (saved in the workspace as %s).", a.Path))
		default:
			heard = append(heard, strings.TrimSpace(text))
		}
	}
	addr := chat.Address{Channel: j.channel, Thread: j.thread}
	if deliver {
		for _, line := range unheard {
			r.send(ctx, j.channel, chat.Outbound{Address: addr, Kind: chat.Error, Text: line})
		}
		if len(heard) > 0 {
			r.send(ctx, j.channel, chat.Outbound{Address: addr, Kind: chat.Transcript, Text: TranscriptPrefix + strings.Join(heard, "\n")})
		}
	}
	j.spoken = len(heard) > 0
	if len(heard) == 0 && len(notes) == 0 && strings.TrimSpace(j.text) == "" && len(rest) == 0 {
		r.forget(ctx, j)
		return strings.Join(unheard, "\n"), false
	}
	parts := append(heard, notes...)
	if len(heard) == 0 {
		parts = append(unheard, notes...) // the model learns of the recording it did not hear
	}
	j.text = strings.TrimSpace(strings.Join(parts, "\n") + "\n" + j.text)
	j.attachments = rest
	if _, err := r.o.DB.ExecContext(ctx, `UPDATE router_inbox SET text = ?, attachments = ? WHERE id = ?`,
		j.text, encodeAttachments(j.attachments), j.id); err != nil {
		// The turn goes on; a restart before it ends transcribes again.
		r.log.Warn("could not store a voice message's transcript in the inbox", "thread", j.thread, "err", err)
	}
	return "", true
}

// hasAudio reports whether atts hold a recording.
func hasAudio(atts []chat.Attachment) bool {
	for _, a := range atts {
		if a.Kind == chat.AttachAudio {
			return true
		}
	}
	return false
}

// speak sends reply spoken, after its text, when the conversation's voice
// mode asks for it and the channel plays audio. A failure is told to the
// user in one line (the text reply is already there).
func (r *Router) speak(ctx context.Context, j *job, reply string) {
	if r.o.Voice == nil || strings.TrimSpace(reply) == "" {
		return
	}
	vc, ok := r.channel(j.channel).(extension.VoiceChannelProvider)
	if !ok || !r.o.Voice.ShouldSpeak(ctx, j.thread, j.spoken) {
		return
	}
	addr := chat.Address{Channel: j.channel, Thread: j.thread}
	parts, err := r.o.Voice.Speak(ctx, j.thread, reply)
	for _, p := range parts {
		if serr := vc.SendVoice(ctx, addr, p); serr != nil {
			r.log.Error("channel could not deliver a spoken reply", "channel", j.channel, "thread", j.thread, "path", p.Path, "err", serr)
			return
		}
	}
	if err != nil {
		r.log.Warn("could not speak a reply", "thread", j.thread, "err", err)
		r.send(ctx, j.channel, chat.Outbound{Address: addr, Kind: chat.Error, Text: "I could not speak this reply aloud: " + err.Error()})
	}
}
