package router

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
)

// fakeVoice hears every recording as heard (or fails with hearErr) and
// speaks a reply in parts (or fails with speakErr after them).
type fakeVoice struct {
	heard    string
	hearErr  error
	parts    int
	speakErr error
}

func (v fakeVoice) Hear(_ context.Context, a chat.Attachment) (string, error) {
	return v.heard, v.hearErr
}
func (v fakeVoice) Unheard(a chat.Attachment, err error) string {
	return fmt.Sprintf("could not hear %s: %v", a.Path, err)
}
func (v fakeVoice) ShouldSpeak(_ context.Context, _ chat.ThreadID, spokenTo bool) bool {
	return spokenTo
}
func (v fakeVoice) Speak(_ context.Context, _ chat.ThreadID, reply string) ([]chat.Speech, error) {
	var out []chat.Speech
	for i := range v.parts {
		out = append(out, chat.Speech{Path: fmt.Sprintf("voice/web/1/r-%d.ogg", i+1), Text: reply, Part: i + 1, Parts: v.parts})
	}
	return out, v.speakErr
}

var _ Voice = fakeVoice{}

// voiceChannel is a fake channel that plays audio: each part arrives as a
// "voice" delivery naming its file.
type voiceChannel struct{ fakeChannel }

func (c *voiceChannel) SendVoice(_ context.Context, addr chat.Address, sp chat.Speech) error {
	c.out <- sent{"voice", addr.Thread, sp.Path}
	return nil
}

var _ extension.VoiceChannelProvider = (*voiceChannel)(nil)

// A voice message is heard before its turn and answered as typed text;
// the channel sees the transcript, the reply, then the spoken parts. A
// recording that cannot be heard gets the voice service's line; with a
// caption the caption is still answered (the model told of the
// recording), without one no turn runs.
func TestVoiceMessages(t *testing.T) {
	rec := chat.Attachment{Kind: chat.AttachAudio, Path: "web/1/voice.webm", MediaType: "audio/webm"}
	for _, tc := range []struct {
		name    string
		voice   Voice // nil: no voice service
		caption string
		want    []sent
	}{
		{name: "heard and spoken in two parts", voice: fakeVoice{heard: "what time is it", parts: 2}, want: []sent{
			{chat.Transcript, "web:1", "🎤 what time is it"},
			{chat.Reply, "web:1", "reply: what time is it"},
			{"voice", "web:1", "voice/web/1/r-1.ogg"},
			{"voice", "web:1", "voice/web/1/r-2.ogg"},
		}},
		{name: "heard with a caption", voice: fakeVoice{heard: "remind me", parts: 1}, caption: "at six", want: []sent{
			{chat.Transcript, "web:1", "🎤 remind me"},
			{chat.Reply, "web:1", "reply: remind me\nat six"},
			{"voice", "web:1", "voice/web/1/r-1.ogg"},
		}},
		{name: "speech fails after the text", voice: fakeVoice{heard: "hello", speakErr: errors.New("The speech server is down.")}, want: []sent{
			{chat.Transcript, "web:1", "🎤 hello"},
			{chat.Reply, "web:1", "reply: hello"},
			{chat.Error, "web:1", "I could not speak this reply aloud: The speech server is down."},
		}},
		{name: "not heard, no caption: no turn", voice: fakeVoice{hearErr: errors.New("no stt")}, want: []sent{
			{chat.Error, "web:1", "could not hear web/1/voice.webm: no stt"},
		}},
		{name: "not heard, the caption is answered", voice: fakeVoice{hearErr: errors.New("no stt")}, caption: "listen", want: []sent{
			{chat.Error, "web:1", "could not hear web/1/voice.webm: no stt"},
			{chat.Reply, "web:1", "reply: could not hear web/1/voice.webm: no stt\nlisten"},
		}},
		{name: "no voice service", caption: "listen", want: []sent{
			{chat.Reply, "web:1", "reply: [voice message saved in the workspace as web/1/voice.webm; voice is not available in this build]\nlisten"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vc := &voiceChannel{fakeChannel{name: "web", out: make(chan sent, 16)}}
			h := newHarness(t, echo("reply"), nil, func(o *Options) {
				o.Voice = tc.voice
				o.Channels = lookup{"web": vc}
			})
			h.markKnown("web:1")
			h.run()
			done, err := h.router.Submit(context.Background(), chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"},
				Text: tc.caption, Attachments: []chat.Attachment{rec}})
			if err != nil {
				t.Fatal(err)
			}
			if err := recv(t, done); err != nil {
				t.Fatalf("turn: %v", err)
			}
			var got []sent
			for len(vc.out) > 0 {
				got = append(got, <-vc.out)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("delivered\n%s\nwant\n%s", strings.ReplaceAll(fmt.Sprint(got), "} {", "}\n{"), strings.ReplaceAll(fmt.Sprint(tc.want), "} {", "}\n{"))
			}
		})
	}
}
