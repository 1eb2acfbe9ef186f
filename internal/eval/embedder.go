package eval

import (
	"context"
	"fmt"
	"io"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/sentence"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// DefaultEmbedder returns the embedding model the evaluations use when none
// is given: the product's default, the sentence encoder built into the
// binary (builtin/use-lite), asked for each text once. Its vectors are kept
// by text in an embed.Cached over the SQLite database at cachePath (""
// means ":memory:", this run's memory; a file keeps them across runs), so
// that a cross-validation, which asks every question again for each weight
// it tries, and the haystack sessions questions share are embedded once.
// The caller closes the returned Closer after the run.
func DefaultEmbedder(ctx context.Context, cachePath string) (embed.Embedder, io.Closer, error) {
	enc, err := sentence.New()
	if err != nil {
		return nil, nil, fmt.Errorf("load the built-in sentence encoder: %w", err)
	}
	return CacheVectors(ctx, enc, cachePath)
}

// CacheVectors wraps e so that each text is embedded once: its vectors are
// kept by model and text in an embed.Cached over the SQLite database at
// cachePath ("" means ":memory:", this run's memory; a file keeps them
// across runs). The caller closes the returned Closer after the run.
func CacheVectors(ctx context.Context, e embed.Embedder, cachePath string) (embed.Embedder, io.Closer, error) {
	if cachePath == "" {
		cachePath = ":memory:"
	}
	db, err := sqlite.Open(ctx, cachePath)
	if err != nil {
		return nil, nil, fmt.Errorf("vector cache %s: %w", cachePath, err)
	}
	c, err := embed.NewCached(ctx, e, db, nil)
	if err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("vector cache %s: %w", cachePath, err)
	}
	return c, db, nil
}

// orDefault returns e, or when it is nil DefaultEmbedder's in-memory one;
// done releases what it opened. The entry points (Run, CrossValidate,
// FitAll, RunLongMemEval, CrossValidateLongMemEval) resolve it once per
// run, so that every conversation and question shares one cache.
func orDefault(ctx context.Context, e embed.Embedder) (_ embed.Embedder, done func(), _ error) {
	if e != nil {
		return e, func() {}, nil
	}
	d, c, err := DefaultEmbedder(ctx, "")
	if err != nil {
		return nil, nil, err
	}
	return d, func() { c.Close() }, nil
}
