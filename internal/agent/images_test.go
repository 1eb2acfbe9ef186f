package agent

import (
	"context"
	"reflect"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/internal/modelrouter"
	"github.com/reverie-ai/reverie/llm"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

// A photo attachment is stored as a reference and reaches a vision model as
// an image part with the file's bytes; a model without vision gets the
// reference (the model router makes it a note); a file that is gone, too
// large or of another type becomes a note naming the file.
func TestImageAttachments(t *testing.T) {
	jpeg := "\xff\xd8\xff\xe0 jpeg bytes"
	tests := []struct {
		name    string
		vision  bool
		files   map[string]string // workspace-relative path → content
		atts    []chat.Attachment
		text    string
		want    []llm.Part // parts of the request's user message
		wantErr bool
	}{
		{name: "vision model sees the photo", vision: true, files: map[string]string{"telegram/1/p.jpg": jpeg},
			atts: []chat.Attachment{{Kind: chat.AttachImage, Path: "telegram/1/p.jpg", MediaType: "image/jpeg"}}, text: "what is this?",
			want: []llm.Part{llm.Image{MediaType: "image/jpeg", Path: "telegram/1/p.jpg", Data: []byte(jpeg)}, llm.Text{Text: "what is this?"}}},
		{name: "photo without caption", vision: true, files: map[string]string{"p.png": "png"},
			atts: []chat.Attachment{{Kind: chat.AttachImage, Path: "p.png", MediaType: "image/png"}},
			want: []llm.Part{llm.Image{MediaType: "image/png", Path: "p.png", Data: []byte("png")}}},
		{name: "model without vision gets the reference", files: map[string]string{"telegram/1/p.jpg": jpeg},
			atts: []chat.Attachment{{Kind: chat.AttachImage, Path: "telegram/1/p.jpg", MediaType: "image/jpeg"}}, text: "what is this?",
			want: []llm.Part{llm.Image{MediaType: "image/jpeg", Path: "telegram/1/p.jpg"}, llm.Text{Text: "what is this?"}}},
		{name: "file gone", vision: true,
			atts: []chat.Attachment{{Kind: chat.AttachImage, Path: "gone.jpg", MediaType: "image/jpeg"}}, text: "and this?",
			want: []llm.Part{llm.Text{Text: "[image saved at workspace/gone.jpg; the file is gone]"}, llm.Text{Text: "and this?"}}},
		{name: "file too large", vision: true, files: map[string]string{"big.jpg": strings.Repeat("x", MaxImageBytes+1)},
			atts: []chat.Attachment{{Kind: chat.AttachImage, Path: "big.jpg", MediaType: "image/jpeg"}}, text: "big",
			want: []llm.Part{llm.Text{Text: "[image saved at workspace/big.jpg; the file is larger than 5 MiB]"}, llm.Text{Text: "big"}}},
		{name: "type models do not take", vision: true, files: map[string]string{"s.tiff": "tiff"},
			atts: []chat.Attachment{{Kind: chat.AttachImage, Path: "s.tiff", MediaType: "image/tiff"}}, text: "scan",
			want: []llm.Part{llm.Text{Text: `[image saved at workspace/s.tiff; "image/tiff" is not an image type models accept]`}, llm.Text{Text: "scan"}}},
		{name: "no text and no attachment", text: " ", wantErr: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := llmtest.NewScripted(t, llmtest.Reply("ok"))
			e := newEnv(t, m, nil)
			e.models.limits[modelrouter.RoleMain] = modelrouter.Limits{ContextSize: 32768, MaxTokens: 1024, Vision: tc.vision}
			for p, c := range tc.files {
				writeFile(t, e.dir, "workspace/"+p, c)
			}
			_, err := e.agent.Turn(context.Background(), Input{Thread: "telegram:1", Text: tc.text, Attachments: tc.atts})
			if tc.wantErr {
				if err == nil {
					t.Fatal("turn without text or attachments accepted")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			reqs := m.Requests()
			if len(reqs) != 1 {
				t.Fatalf("%d model calls", len(reqs))
			}
			msgs := reqs[0].Messages
			if got := msgs[len(msgs)-1].Parts; !reflect.DeepEqual(got, tc.want) {
				t.Errorf("request parts =\n%#v\nwant\n%#v", got, tc.want)
			}
			// The history holds the reference only, never the bytes.
			h := e.history("telegram:1")
			for _, p := range h[0].Message.Parts {
				if img, ok := p.(llm.Image); ok && (img.Data != nil || img.Path == "") {
					t.Errorf("stored image part %#v", img)
				}
			}
		})
	}
}

// A vision request carries the newest MaxImagesPerRequest images; older ones
// are notes.
func TestImagesPerRequestCapped(t *testing.T) {
	m := llmtest.NewScripted(t, llmtest.Reply("ok"), llmtest.Reply("ok"))
	e := newEnv(t, m, nil)
	e.models.limits[modelrouter.RoleMain] = modelrouter.Limits{ContextSize: 100000, MaxTokens: 1024, Vision: true}
	var first, second []chat.Attachment
	for i := range MaxImagesPerRequest + 1 {
		p := "img" + string(rune('a'+i)) + ".png"
		writeFile(t, e.dir, "workspace/"+p, "png")
		a := chat.Attachment{Kind: chat.AttachImage, Path: p, MediaType: "image/png"}
		if i == 0 {
			first = append(first, a)
		} else {
			second = append(second, a)
		}
	}
	for _, atts := range [][]chat.Attachment{first, second} {
		if _, err := e.agent.Turn(context.Background(), Input{Thread: "telegram:1", Text: "look", Attachments: atts}); err != nil {
			t.Fatal(err)
		}
	}
	var loaded, noted int
	for _, msg := range m.Requests()[1].Messages {
		for _, p := range msg.Parts {
			switch p := p.(type) {
			case llm.Image:
				if len(p.Data) > 0 {
					loaded++
				}
			case llm.Text:
				if p.Text == "[image saved at workspace/imga.png; an earlier image, not sent again]" {
					noted++
				}
			}
		}
	}
	if loaded != MaxImagesPerRequest || noted != 1 {
		t.Errorf("loaded %d, noted %d; want %d and 1", loaded, noted, MaxImagesPerRequest)
	}
}
