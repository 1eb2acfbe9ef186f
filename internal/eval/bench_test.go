package eval

import (
	"context"
	"testing"
)

// BenchmarkScoreConversation measures one conversation's questions (the unit
// the cross-validation repeats).
func BenchmarkScoreConversation(b *testing.B) {
	f := openDevSplit(b)
	convs, err := ParseLoCoMo(f)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	g, err := ingest(ctx, convs[0], Options{Embedder: defaultEmbedder(b)})
	if err != nil {
		b.Fatal(err)
	}
	defer g.close(ctx)
	b.ResetTimer()
	for b.Loop() {
		if _, err := objective(ctx, []*ingested{g}, NeutralTuning()); err != nil {
			b.Fatal(err)
		}
	}
}
