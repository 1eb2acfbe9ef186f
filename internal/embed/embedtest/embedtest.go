// Package embedtest chooses the embedder that benchmarks measure with.
package embedtest

import (
	"os"
	"testing"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/sentence"
)

// EnvModel names the environment variable that chooses the embedder:
// builtin/hashing (or empty, or offline) for the offline hashing embedder,
// builtin/use-lite for the sentence encoder built into the binary.
const EnvModel = "REVERIE_BENCH_EMBEDDING"

// FromEnv returns the embedder EnvModel names, the offline hashing
// embedder when it is unset; another value fails tb.
func FromEnv(tb testing.TB) embed.Embedder {
	tb.Helper()
	switch m := os.Getenv(EnvModel); m {
	case "", "offline", "builtin/hashing":
		return embed.NewOffline(embed.DefaultDimensions)
	case "builtin/use-lite":
		e, err := sentence.New()
		if err != nil {
			tb.Fatal(err)
		}
		return e
	default:
		tb.Fatalf("%s=%q: want builtin/hashing (offline) or builtin/use-lite", EnvModel, m)
		return nil
	}
}
