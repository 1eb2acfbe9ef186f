package sentence

import (
	"context"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/benchtest"
)

// BenchmarkEmbed measures one text a call: a short query, and texts of
// maxPieces pieces (one window), ~300 (a LongMemEval user message: 3
// windows) and ~1,000 (a long reply: maxWindows windows, its first
// maxTextPieces pieces read); cpu-ms/op is over the thread's CPU time
// (Linux).
func BenchmarkEmbed(b *testing.B) {
	enc, tok := newTestEncoder(b)
	for _, bc := range []struct{ name, text string }{
		{"query", "What did I say about my sister's birthday party?"},
		{"pieces=128", passage(tok, maxPieces)},
		{"pieces=300", passage(tok, 300)},
		{"pieces=1000", passage(tok, 1000)},
	} {
		ids := tok.encode(bc.text, maxTextPieces)
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
			nw := 1
			if len(ids) > maxPieces {
				nw = len(windows(len(ids)))
			}
			b.ReportMetric(float64(len(ids)), "pieces-read")
			b.ReportMetric(float64(nw), "windows")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "texts/s")
		})
	}
}

// passage returns a text of distinct sentences, as many as fit in n
// pieces.
func passage(tok *tokenizer, n int) string {
	var b strings.Builder
	for i := 0; ; i++ {
		next := fmt.Sprintf("On day %d we went hiking by the %s and the weather was %s. ", i,
			[]string{"river", "lake", "mountains", "coast"}[i%4], []string{"lovely", "wet", "windy"}[i%3])
		if len(tok.encode(b.String()+next, 0)) > n {
			return b.String()
		}
		b.WriteString(next)
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
