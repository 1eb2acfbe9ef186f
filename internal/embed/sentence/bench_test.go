package sentence

import (
	"context"
	"runtime"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/benchtest"
)

// BenchmarkEmbed measures one text a call: a short query and a passage of
// maxPieces pieces; cpu-ms/op is over the thread's CPU time (Linux).
func BenchmarkEmbed(b *testing.B) {
	enc, err := New()
	if err != nil {
		b.Fatal(err)
	}
	passage := strings.Repeat("We went hiking in the mountains last weekend and the weather was lovely. ", 12)
	for _, bc := range []struct{ name, text string }{
		{"query", "What did I say about my sister's birthday party?"},
		{"passage", passage},
	} {
		tok, err := enc.tokenizer()
		if err != nil {
			b.Fatal(err)
		}
		pieces := len(tok.encode(bc.text, maxPieces))
		b.Run(bc.name, func(b *testing.B) {
			ctx := context.Background()
			texts := []string{bc.text}
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			c0 := benchtest.ThreadCPU()
			for b.Loop() {
				if _, err := enc.Embed(ctx, texts); err != nil {
					b.Fatal(err)
				}
			}
			if cpu := benchtest.ThreadCPU() - c0; cpu > 0 {
				// Steadier than ns/op on a shared machine.
				b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/1e6, "cpu-ms/op")
			}
			b.ReportMetric(float64(pieces), "pieces")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
		})
	}
}

// BenchmarkTokenize measures the tokenizer alone on a passage.
func BenchmarkTokenize(b *testing.B) {
	tok := testTokenizer(b)
	passage := strings.Repeat("We went hiking in the mountains last weekend and the weather was lovely. ", 12)
	for b.Loop() {
		tok.encode(passage, maxPieces)
	}
}

// BenchmarkTokenizeLong measures the first maxPieces pieces of a 100 KB
// text: from a prefix (encode), and segmenting the whole text.
func BenchmarkTokenizeLong(b *testing.B) {
	tok := testTokenizer(b)
	long := strings.Repeat("We went hiking in the mountains last weekend and the weather was lovely. ", 1400)
	b.Run("prefix", func(b *testing.B) {
		for b.Loop() {
			tok.encode(long, maxPieces)
		}
	})
	b.Run("whole", func(b *testing.B) {
		for b.Loop() {
			tok.segment(long, maxPieces)
		}
	})
}

// BenchmarkNew measures New: what a start that uses the encoder pays
// (viewing the weights in place; the tokenizer waits for the first Embed).
func BenchmarkNew(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNewTokenizer measures what the first Embed pays once: the
// check of the vocabulary's index.
func BenchmarkNewTokenizer(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := newTokenizer(vocabText, vocabIndex); err != nil {
			b.Fatal(err)
		}
	}
}
