package memory

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/chat"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/embed"
)

// A turn's recall leaves the embedding of its query for the turn's
// episodes (ShareQueryVector): the user's message is embedded once, and the
// episode stores the very vector the message's own embedding gives.
func TestSharedQueryVector(t *testing.T) {
	const msg = "What did Anna say about the trip to Lyon?"
	reply := Reply{Speaker: "Reverie", Text: "She said the trip is in May."}
	for _, tc := range []struct {
		name   string
		share  bool
		recall string // the recall's query; "" for none
		texts  int    // embedded by the recall and the episodes together
	}{
		{name: "a turn", share: true, recall: msg, texts: 2},
		{name: "no room in the context", share: false, recall: msg, texts: 3},
		{name: "the recall was of another text", share: true, recall: "Where does Anna live?", texts: 3},
		{name: "no recall", share: true, texts: 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			clk := &clock{t: time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)}
			e := &countingEmbedder{Embedder: embed.NewOffline(0)}
			vs := openStore(t, filepath.Join(t.TempDir(), "m.db"), e, clk)
			seed(t, vs, Memory{Text: "Anna is planning a trip to Lyon."})
			svc, err := NewService(ServiceOptions{Store: vs, DataDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			before := e.count()
			if tc.share {
				ctx = ShareQueryVector(ctx)
			}
			if tc.recall != "" {
				rctx, cancel := context.WithTimeout(ctx, time.Minute) // as the agent gives a context provider
				_, err := (&RecallContext{Service: svc}).PromptContext(rctx, extension.ContextRequest{Thread: "web:1", Query: tc.recall})
				cancel()
				if err != nil {
					t.Fatal(err)
				}
			}
			in := chat.Inbound{Address: chat.Address{Channel: "web", Thread: "web:1"}, Sender: chat.Sender{ID: "web"}, Text: msg, Received: clk.now()}
			ids, err := svc.Ingest(context.WithoutCancel(ctx), time.UTC, in, reply)
			if err != nil || len(ids) != 2 {
				t.Fatalf("Ingest = %v, %v", ids, err)
			}
			if got := e.count() - before; got != tc.texts {
				t.Errorf("%d texts embedded, want %d", got, tc.texts)
			}
			want, err := embed.NewOffline(0).Embed(ctx, []string{msg, reply.Text})
			if err != nil {
				t.Fatal(err)
			}
			for i, id := range ids {
				m, err := vs.Get(ctx, id)
				if err != nil {
					t.Fatal(err)
				}
				// as stored: the text's vector in the compact format
				if stored, _ := decodeFloats(encodeVector(want[i])); !slices.Equal(m.Embedding, stored) {
					t.Errorf("episode %d (%q) stored another vector than its text's", i, m.Text)
				}
			}
			// The vector is taken once: a second write of the same text
			// embeds it.
			before = e.count()
			if _, err := vs.AddBatch(ctx, []Memory{{Text: msg, Kind: KindEpisode, Source: SourceConversation}}); err != nil {
				t.Fatal(err)
			}
			if got := e.count() - before; got != 1 {
				t.Errorf("the second write embedded %d texts, want 1", got)
			}
		})
	}
}

// Only a vector of the model the write embeds with is taken: while recall
// serves a previous model's vectors, the write embeds with its own.
func TestSharedQueryVectorOtherModel(t *testing.T) {
	ctx := ShareQueryVector(context.Background())
	v := []float32{1, 0}
	keepQueryVector(ctx, "previous/2", "hello", v)
	if at, got := takeQueryVector(ctx, "configured/2", []string{"hello"}); at != -1 || got != nil {
		t.Fatalf("took a vector of another model: %d, %v", at, got)
	}
	keepQueryVector(ctx, "configured/2", "bye", []float32{0, 1}) // the room is full: not kept
	if at, got := takeQueryVector(ctx, "previous/2", []string{"bye", "hello"}); at != 1 || !slices.Equal(got, v) {
		t.Fatalf("takeQueryVector = %d, %v; want 1, %v", at, got, v)
	}
	if at, _ := takeQueryVector(ctx, "previous/2", []string{"hello"}); at != -1 {
		t.Fatal("the vector was taken twice")
	}
}
