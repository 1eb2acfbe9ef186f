package apptest

import (
	"context"
	"strings"
	"testing"

	"maunium.net/go/mautrix/crypto/attachment"
	"maunium.net/go/mautrix/event"
	"maunium.net/go/mautrix/id"

	"github.com/reverie-ai/reverie/extensions/matrix/matrixtest"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// A Matrix audio message in an encrypted room (espeak-ng's Ogg/Opus
// recording, uploaded encrypted to a real Dendrite) is transcribed and
// answered as typed text; the room is shown what was heard, gets the
// written reply, then the reply spoken as an encrypted m.audio voice
// message that decrypts to the speech server's Ogg/Opus.
func TestMatrixAudioMessage(t *testing.T) {
	w := newMatrixWorld(t)
	audio := llmtest.NewAudioServer(t)
	h := startMatrix(t, w, voiceEnv(audio))
	h.Model.Handle(answerSpoken)
	alice := w.srv.Login(t, "alice", mxAlicePass)
	room := alice.CreateRoom(t, true, w.bot)
	alice.Wait(t, "the bot to join", joined(room, w.bot))

	ogg := llmtest.SpokenOgg()
	ef := attachment.NewEncryptedFile()
	up, err := alice.Client.UploadBytes(context.Background(), ef.Encrypt(ogg), "application/octet-stream")
	if err != nil {
		t.Fatal(err)
	}
	alice.SendContent(t, room, &event.MessageEventContent{MsgType: event.MsgAudio, Body: "Voice message", FileName: "voice.ogg",
		Info:         &event.FileInfo{MimeType: "audio/ogg", Size: len(ogg), Duration: 1800},
		File:         &event.EncryptedFileInfo{EncryptedFile: *ef, URL: up.ContentURI.CUString()},
		MSC3245Voice: &event.MSC3245Voice{}})
	evs := alice.Wait(t, "the spoken reply", func(evs []*event.Event) bool {
		for _, e := range matrixtest.Messages(evs, room, id.UserID(w.bot)) {
			if e.Content.AsMessage().MsgType == event.MsgAudio {
				return true
			}
		}
		return false
	})
	var order []string
	for _, e := range matrixtest.Messages(evs, room, id.UserID(w.bot)) {
		c := e.Content.AsMessage()
		switch {
		case c.Body == "🎤 "+llmtest.SpokenText:
			order = append(order, "transcript")
		case strings.Contains(c.Body, "It is noon in Lisbon."):
			order = append(order, "reply")
		case c.MsgType == event.MsgAudio:
			order = append(order, "voice")
			if c.File == nil || c.URL != "" || c.MSC3245Voice == nil || c.Info == nil || c.Info.MimeType != "audio/ogg" {
				t.Fatalf("voice message not encrypted or not marked as voice: %+v", c)
			}
			mxc, err := c.File.URL.Parse()
			if err != nil {
				t.Fatal(err)
			}
			data, err := alice.Client.DownloadBytes(context.Background(), mxc)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.File.DecryptInPlace(data); err != nil || string(data) != string(llmtest.SpeechOgg()) {
				t.Fatalf("decrypted voice message: %d bytes, %v", len(data), err)
			}
		}
	}
	if strings.Join(order, ",") != "transcript,reply,voice" {
		t.Errorf("the bot sent %v, want the transcript, the reply, then the voice message", order)
	}
	if tr := audio.Transcriptions(); len(tr) != 1 || string(tr[0].Audio) != string(ogg) {
		t.Errorf("%d transcriptions, or not of the decrypted recording", len(tr))
	}
}
