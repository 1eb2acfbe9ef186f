package openai

import (
	"context"
	"fmt"
	"slices"

	sdk "github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/reverie-ai/reverie/internal/providers"
)

// Embedder turns texts into vectors through POST /embeddings.
type Embedder struct {
	o      Options
	sdk    sdk.EmbeddingService
	policy providers.Policy
}

// NewEmbedder returns an embedder for o (Model names the embedding model;
// Dimensions and BatchSize apply).
func NewEmbedder(o Options) (*Embedder, error) {
	o, err := o.normalize()
	if err != nil {
		return nil, err
	}
	if o.Dimensions < 0 {
		return nil, fmt.Errorf("openai embedder %s: negative dimensions %d", o.Name, o.Dimensions)
	}
	return &Embedder{o: o, sdk: sdk.NewEmbeddingService(o.sdkOptions()...), policy: o.policy()}, nil
}

// Model is the embedding model.
func (e *Embedder) Model() string { return e.o.Model }

// Dimensions is the configured vector size, 0 when left to the model.
func (e *Embedder) Dimensions() int { return e.o.Dimensions }

// Embed returns one vector per text, in input order, sending at most
// BatchSize texts per request. Errors are *providers.Error; a reply with a
// missing, duplicate or out-of-range index is ErrBadResponse.
func (e *Embedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for batch := range slices.Chunk(texts, e.o.BatchSize) {
		vecs, err := e.embedBatch(ctx, batch)
		if err != nil {
			return nil, err
		}
		out = append(out, vecs...)
	}
	return out, nil
}

func (e *Embedder) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	params := sdk.EmbeddingNewParams{
		Model:          sdk.EmbeddingModel(e.o.Model),
		Input:          sdk.EmbeddingNewParamsInputUnion{OfArrayOfStrings: texts},
		EncodingFormat: sdk.EmbeddingNewParamsEncodingFormatFloat,
	}
	if e.o.Dimensions > 0 {
		params.Dimensions = sdk.Int(int64(e.o.Dimensions))
	}
	var vecs [][]float32
	err := e.policy.Run(ctx, e.o.Model, nil, func(ctx context.Context, a *providers.Attempt) error {
		res, err := e.sdk.New(ctx, params, option.WithMiddleware(a.Middleware))
		if err != nil {
			return err
		}
		vecs, err = ordered(res, len(texts))
		return err
	})
	if err != nil {
		return nil, err
	}
	return vecs, nil
}

// ordered places each returned embedding at its index.
func ordered(res *sdk.CreateEmbeddingResponse, n int) ([][]float32, error) {
	if res == nil || len(res.Data) != n {
		got := 0
		if res != nil {
			got = len(res.Data)
		}
		return nil, providers.BadResponse(nil, "asked for %d embeddings, got %d", n, got)
	}
	out := make([][]float32, n)
	for _, d := range res.Data {
		i := int(d.Index)
		if i < 0 || i >= n || out[i] != nil {
			return nil, providers.BadResponse(nil, "embedding index %d is out of range or repeated", d.Index)
		}
		if len(d.Embedding) == 0 {
			return nil, providers.BadResponse(nil, "embedding %d is empty", i)
		}
		v := make([]float32, len(d.Embedding))
		for j, x := range d.Embedding {
			v[j] = float32(x)
		}
		out[i] = v
	}
	return out, nil
}
