package memory

import (
	"context"
	"sync"
)

// sharedVector is room for one query's embedding that a recall leaves for a
// write in the same context (ShareQueryVector).
type sharedVector struct {
	mu    sync.Mutex
	model string // the embedder's ID
	text  string
	vec   []float32
}

type sharedVectorKey struct{}

// ShareQueryVector returns ctx with room for one embedding: the first
// recall made with it (or with a context derived from it) keeps the vector
// of its query there, and a write made with it that stores that same text
// with the same embedding model takes the vector instead of embedding the
// text again. A turn's recall is of the user's message, and the turn's
// episodes store that message (Ingest), so one embedding a turn is saved;
// with a remote embedding model, one request. The room lives as long as
// ctx: nothing stays once the turn is over.
func ShareQueryVector(ctx context.Context) context.Context {
	return context.WithValue(ctx, sharedVectorKey{}, &sharedVector{})
}

// keepQueryVector leaves v, text's embedding by model, in ctx's room
// (ShareQueryVector) when it is empty.
func keepQueryVector(ctx context.Context, model, text string, v []float32) {
	sv, ok := ctx.Value(sharedVectorKey{}).(*sharedVector)
	if !ok || v == nil {
		return
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.vec == nil {
		sv.model, sv.text, sv.vec = model, text, v
	}
}

// takeQueryVector returns the index in texts of the text whose embedding by
// model ctx's room holds, and that vector, emptying the room; -1 when it
// holds none of them. Vectors are not changed once made, so recall and the
// write may share one.
func takeQueryVector(ctx context.Context, model string, texts []string) (int, []float32) {
	sv, ok := ctx.Value(sharedVectorKey{}).(*sharedVector)
	if !ok {
		return -1, nil
	}
	sv.mu.Lock()
	defer sv.mu.Unlock()
	if sv.vec == nil || sv.model != model {
		return -1, nil
	}
	for i, t := range texts {
		if t == sv.text {
			v := sv.vec
			sv.vec, sv.text = nil, ""
			return i, v
		}
	}
	return -1, nil
}
