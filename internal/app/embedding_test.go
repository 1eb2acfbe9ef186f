package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/api"
	"github.com/reverie-ai/reverie/extension"
	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/sentence"
	"github.com/reverie-ai/reverie/internal/memory"
	"github.com/reverie-ai/reverie/internal/sqlite"
	"github.com/reverie-ai/reverie/llm/llmtest"
)

func newEmbedApp(t *testing.T, dir string) *App {
	t.Helper()
	a, err := New(context.Background(), Options{DataDir: dir, Env: []string{"REVERIE_LOG__FILE=false", "HOME=" + t.TempDir(), "OLLAMA_KEY=unused"},
		Console: io.Discard, Registry: []extension.Info{}})
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func embedConfig(t *testing.T, dir, ollamaURL, model string) {
	t.Helper()
	cfg := fmt.Sprintf("models:\n  backends:\n    local:\n      kind: ollama\n      base_url: %s\n      api_key: {env: OLLAMA_KEY}\n  roles:\n    main: [local/llama3]\n", ollamaURL)
	if model != "" {
		cfg += "memory:\n  embedding:\n    model: " + model + "\n"
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
}

func info(t *testing.T, a *App) api.EmbeddingInfo {
	t.Helper()
	in, err := a.API.Info.Info(context.Background())
	if err != nil || in.Embedding == nil {
		t.Fatalf("info: %+v, %v", in, err)
	}
	return *in.Embedding
}

// waitEvent waits for an event of topic on ch (a bus watch).
func waitEvent(t *testing.T, ch <-chan extension.Event, topic string) {
	t.Helper()
	deadline := time.After(time.Minute) // a guard against a hang, not a wait for timing
	for {
		select {
		case ev := <-ch:
			if ev.Topic == topic {
				return
			}
		case <-deadline:
			t.Fatalf("no %s event", topic)
		}
	}
}

// runUntilReembedded runs a until its background re-embedding reports
// done; a is stopped (Run waited for) and closed when the test ends.
func runUntilReembedded(ctx context.Context, t *testing.T, a *App) {
	t.Helper()
	events := a.Bus.Watch(ctx, "memory.reembed.", 64)
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(rctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
		a.Close()
	})
	waitEvent(t, events, "memory.reembed.done")
}

// Changing memory.embedding.model re-embeds in the background: the start
// probes the new model for its size, recall keeps answering from the
// default model's vectors (the built-in sentence encoder's; queries are not
// sent to the new model) while the re-embedding waits on the server,
// /api/v1/info and memory.reembed.* events show the progress, and when it
// is done recall uses the new model. Switching to a model that does not
// answer keeps the old vectors with a warning and re-embeds nothing.
func TestEmbeddingModelChangeReembeds(t *testing.T) {
	ctx := context.Background()
	ol := llmtest.NewOllamaServer(t)
	ol.AddModel("nomic-embed-text", 24)
	dir := filepath.Join(t.TempDir(), "data")

	a := newEmbedApp(t, dir)
	var ms []memory.Memory
	for i := range 100 {
		ms = append(ms, memory.Memory{Text: fmt.Sprintf("fact number %d about the garden shed %d", i, i%9), Kind: memory.KindFact})
	}
	if _, err := a.Memory.Store().AddBatch(ctx, ms); err != nil {
		t.Fatal(err)
	}
	def := sentence.ID // no memory.embedding.model: the built-in encoder
	if got := info(t, a); got.Model != def || got.Serving != def || got.Pending != 0 {
		t.Fatalf("info with the default embedder = %+v", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// A model that is not there: the default model's vectors stay in use.
	embedConfig(t, dir, ol.URL(), "local/missing-model")
	a = newEmbedApp(t, dir)
	if got := info(t, a); got.Model != def || got.Serving != def || got.Pending != 0 {
		t.Fatalf("info with a missing model = %+v", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	embedConfig(t, dir, ol.URL(), "local/nomic-embed-text")
	a = newEmbedApp(t, dir)
	model := "local/nomic-embed-text@24/24"
	if got := info(t, a); got.Model != model || got.Serving != def || got.Dimensions != sentence.Dimensions || got.Pending != 100 {
		t.Fatalf("info after the change = %+v", got)
	}
	events := a.Bus.Watch(ctx, "memory.reembed.", 64)
	release := ol.Hold()
	defer release()
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- a.Run(rctx) }()
	stop := func() {
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
	stopped := false
	defer func() {
		if !stopped {
			stop()
		}
	}()
	ol.WaitHeld() // the first batch is at the server
	waitEvent(t, events, "memory.reembed.started")
	if got := info(t, a); !got.Reembedding || got.Serving != def || got.Pending != 100 {
		t.Fatalf("info during the re-embedding = %+v", got)
	}
	if got, want := a.memoryStatus(ctx), "embedding model "+def+"; re-embedding with "+model+": 0 of 100"; got != want {
		t.Errorf("/status memory line %q, want %q", got, want)
	}
	before := len(ol.Requests())
	got, err := a.Memory.Search(ctx, memory.Query{Text: "fact number 42 about the garden shed", Peek: true})
	if err != nil || len(got) == 0 || got[0].VecRank == 0 {
		t.Fatalf("recall during the re-embedding: %+v, %v", got, err)
	}
	if n := len(ol.Requests()); n != before {
		t.Errorf("the query went to the new model (%d requests)", n-before)
	}
	release()
	waitEvent(t, events, "memory.reembed.done")
	if got := info(t, a); got.Reembedding || got.Serving != model || got.Dimensions != 24 || got.Pending != 0 || got.Done != 100 {
		t.Fatalf("info after the re-embedding = %+v", got)
	}
	before = len(ol.Requests())
	got, err = a.Memory.Search(ctx, memory.Query{Text: "fact number 42 about the garden shed", Peek: true})
	if err != nil || len(got) == 0 || got[0].VecRank == 0 {
		t.Fatalf("recall after the re-embedding: %+v, %v", got, err)
	}
	if n := len(ol.Requests()); n != before+1 {
		t.Errorf("%d requests for the query, want 1 to the new model", n-before)
	}
	stopped = true
	stop()

	// Now a model that is not there: the stored vectors' model stays in
	// use (not the default one), and nothing is re-embedded.
	embedConfig(t, dir, ol.URL(), "local/missing-model")
	a = newEmbedApp(t, dir)
	defer a.Close()
	if got := info(t, a); got.Model != model || got.Serving != model || got.Pending != 0 {
		t.Fatalf("info with a missing model after the switch = %+v", got)
	}
	if !a.embedFallback {
		t.Error("the fallback is not marked: it would be re-embedded")
	}
}

// An OpenAI-compatible embedding model refuses a text longer than its
// context with HTTP 400. One such memory (a pasted document) must not keep
// the others from their vectors, nor stop a change of model from finishing:
// the batch is split, and the long text is embedded in pieces whose vectors
// are averaged. A query as long gets a vector the same way.
func TestEmbeddingModelRefusingLongText(t *testing.T) {
	ctx := context.Background()
	srv := llmtest.NewOpenAIServer(t)
	srv.SetEmbeddingDimensions(16)
	srv.SetEmbeddingInputLimit(40)
	dir := filepath.Join(t.TempDir(), "data")
	a := newEmbedApp(t, dir)
	long := strings.TrimSpace(strings.Repeat("the quarterly report on the garden shed renovation lists every plank and nail we bought ", 20))
	ms := []memory.Memory{{Text: "the user's sister is called Anna", Kind: memory.KindFact}, {Text: long, Kind: memory.KindFact}}
	for i := range 30 {
		ms = append(ms, memory.Memory{Text: fmt.Sprintf("fact number %d about the allotment %d", i, i%7), Kind: memory.KindFact})
	}
	ids, err := a.Memory.Store().AddBatch(ctx, ms)
	if err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	cfg := fmt.Sprintf("models:\n  backends:\n    remote:\n      kind: openai\n      base_url: %s\n      api_key: {env: OLLAMA_KEY}\n  roles:\n    main: [remote/gpt-test]\nmemory:\n  embedding:\n    model: remote/text-embed\n", srv.BaseURL())
	if err := os.WriteFile(filepath.Join(dir, "config.yaml"), []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	a = newEmbedApp(t, dir)
	if got := info(t, a); got.Pending != len(ms) {
		t.Fatalf("info after the change = %+v", got)
	}
	runUntilReembedded(ctx, t, a)
	if got := info(t, a); got.Pending != 0 || got.Done != len(ms) || got.Error != "" || got.Dimensions != 16 {
		t.Fatalf("info after the re-embedding = %+v", got)
	}
	m, err := a.Memory.Store().Get(ctx, ids[1])
	if err != nil || len(m.Embedding) != 16 {
		t.Fatalf("the long memory: %d dimensions, %v", len(m.Embedding), err)
	}
	got, err := a.Memory.Search(ctx, memory.Query{Text: long, Peek: true})
	if err != nil || len(got) == 0 || got[0].ID != ids[1] || got[0].VecRank == 0 {
		t.Fatalf("recall by the long text: %+v, %v", got, err)
	}
}

// memory.embedding.model: builtin/use-lite needs no backend and no network:
// memories get the built-in sentence encoder's vectors as they are stored,
// /api/v1/info names it, and recall finds a memory by its meaning when no
// word is shared (which the offline hashing embedder cannot).
func TestEmbeddingBuiltinSentenceEncoder(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	embedConfig(t, dir, "http://127.0.0.1:1", "builtin/use-lite")
	a := newEmbedApp(t, dir)
	defer a.Close()
	model := sentence.ID
	if got := info(t, a); got.Model != model || got.Serving != model || got.Dimensions != 512 || got.Pending != 0 {
		t.Fatalf("info with the built-in encoder = %+v", got)
	}
	texts := []string{
		"We bought a car last week, a blue hatchback.",
		"My sister lives in Lisbon and teaches piano.",
		"The garden shed needs a new coat of paint.",
		"I am allergic to peanuts.",
		"Our team meeting moved to Thursday mornings.",
	}
	var ms []memory.Memory
	for _, s := range texts {
		ms = append(ms, memory.Memory{Text: s, Kind: memory.KindFact})
	}
	if _, err := a.Memory.Store().AddBatch(ctx, ms); err != nil {
		t.Fatal(err)
	}
	got, err := a.Memory.Search(ctx, memory.Query{Text: "Did I purchase an automobile recently?", Peek: true})
	if err != nil || len(got) == 0 {
		t.Fatalf("recall: %+v, %v", got, err)
	}
	if got[0].Text != texts[0] || got[0].VecRank != 1 {
		t.Errorf("recall by meaning: first %q (vector rank %d), want %q at vector rank 1", got[0].Text, got[0].VecRank, texts[0])
	}
}

// A store whose vectors are the offline hashing embedder's (the default
// before the sentence encoder) keeps them with memory.embedding.model:
// builtin/hashing, and is re-embedded with the built-in encoder in the
// background at the first start with no model configured (the new
// default); recall answers from the old vectors until it is done.
func TestEmbeddingDefaultReembedsHashingStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	embedConfig(t, dir, "http://127.0.0.1:1", "builtin/hashing")
	a := newEmbedApp(t, dir)
	var ms []memory.Memory
	for i := range 40 {
		ms = append(ms, memory.Memory{Text: fmt.Sprintf("note %d: the allotment by the river needs %d new stakes", i, i%7), Kind: memory.KindFact})
	}
	ids, err := a.Memory.Store().AddBatch(ctx, ms)
	if err != nil {
		t.Fatal(err)
	}
	hashing := embed.NewOffline(embed.DefaultDimensions).ID()
	if got := info(t, a); got.Model != hashing || got.Serving != hashing || got.Dimensions != embed.DefaultDimensions || got.Pending != 0 {
		t.Fatalf("info with builtin/hashing = %+v", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// builtin/hashing again: the vectors are kept as they are.
	a = newEmbedApp(t, dir)
	if got := info(t, a); got.Model != hashing || got.Serving != hashing || got.Pending != 0 {
		t.Fatalf("info at the second start with builtin/hashing = %+v", got)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// No model configured: the encoder is the model, the hashing vectors
	// serve recall until the background re-embedding has replaced them.
	embedConfig(t, dir, "http://127.0.0.1:1", "")
	a = newEmbedApp(t, dir)
	if got := info(t, a); got.Model != sentence.ID || got.Serving != hashing || got.Pending != len(ms) {
		t.Fatalf("info at the first start with the default = %+v", got)
	}
	got, err := a.Memory.Search(ctx, memory.Query{Text: "how many stakes for the allotment", Peek: true})
	if err != nil || len(got) == 0 || got[0].VecRank == 0 {
		t.Fatalf("recall before the re-embedding: %+v, %v", got, err)
	}
	runUntilReembedded(ctx, t, a)
	if got := info(t, a); got.Reembedding || got.Model != sentence.ID || got.Serving != sentence.ID ||
		got.Dimensions != sentence.Dimensions || got.Pending != 0 || got.Done != len(ms) || got.Error != "" {
		t.Fatalf("info after the re-embedding = %+v", got)
	}
	m, err := a.Memory.Store().Get(ctx, ids[3])
	if err != nil || len(m.Embedding) != sentence.Dimensions {
		t.Fatalf("a memory after the re-embedding: %d dimensions, %v", len(m.Embedding), err)
	}
	if a.embedFallback {
		t.Error("the default encoder is marked as a fallback")
	}
}

// A store whose vectors are the built-in encoder's before it read past a
// text's first 128 pieces (sentence.ClippedID, stop 46) is re-embedded in
// the background at the first start with the windowed encoder
// (sentence.ID), as a store of hashing vectors is: the IDs differ, so the
// two encoders' vectors are never compared; recall answers from the old
// vectors (queries embedded by the clipped encoder) until it is done.
func TestEmbeddingDefaultReembedsClippedEncoderStore(t *testing.T) {
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "data")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	const clipped = sentence.ClippedID // what stop 46's build stored
	if sentence.ID == clipped {
		t.Fatalf("the windowed encoder's ID is the clipped one's")
	}
	a := newEmbedApp(t, dir)
	var ms []memory.Memory
	for i := range 30 {
		ms = append(ms, memory.Memory{Text: fmt.Sprintf("note %d: the orchard by the lake needs %d new ladders", i, i%5), Kind: memory.KindFact})
	}
	if _, err := a.Memory.Store().AddBatch(ctx, ms); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	// What stop 46's build left: the same vectors under the old ID.
	db, err := sqlite.Open(ctx, filepath.Join(dir, "reverie.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE memories SET embed_model = ? WHERE embedding IS NOT NULL`, clipped); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	a = newEmbedApp(t, dir)
	if got := info(t, a); got.Model != sentence.ID || got.Serving != clipped || got.Pending != len(ms) {
		t.Fatalf("info at the first start with the windowed encoder = %+v", got)
	}
	got, err := a.Memory.Search(ctx, memory.Query{Text: "how many ladders for the orchard", Peek: true})
	if err != nil || len(got) == 0 || got[0].VecRank == 0 {
		t.Fatalf("recall from the clipped encoder's vectors before the re-embedding: %+v, %v", got, err)
	}
	runUntilReembedded(ctx, t, a)
	if got := info(t, a); got.Reembedding || got.Model != sentence.ID || got.Serving != sentence.ID || got.Pending != 0 || got.Done != len(ms) || got.Error != "" {
		t.Fatalf("info after the re-embedding = %+v", got)
	}
}
