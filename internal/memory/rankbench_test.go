package memory

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/sqlite"
)

// convWords are common English words that conversation-shaped texts are
// made of (as internal/apptest's BenchmarkHTTPTurns makes its messages):
// with ~150 words, every content word is in most long replies, so every
// query term's postings cover most of the store, the worst case for a
// ranking that reads them all.
var convWords = strings.Fields(`the a to and of in is it you that for on with this can be have I my
what about we do not are at how if so should but or your could there from would just some more like time
day week plan garden trip train book call meeting budget project report draft idea list note work home
family friend morning evening weekend today tomorrow next last good better best new old small large early
late price ticket hotel city river music piano lesson run walk dinner lunch recipe market store bank
letter email message question answer reason problem solution option choice change move start finish`)

// convText returns n words of convWords in sentences of twelve.
func convText(r *rand.Rand, n int) string {
	var sb strings.Builder
	for i := range n {
		if i > 0 {
			sb.WriteByte(' ')
		}
		sb.WriteString(convWords[r.IntN(len(convWords))])
		if i%12 == 11 {
			sb.WriteByte('.')
		}
	}
	return sb.String()
}

// convExchange returns a user's message (30–60 words) and the reply to
// it (120–240), the sizes of BenchmarkHTTPTurns's turns.
func convExchange(r *rand.Rand) (string, string) {
	return convText(r, 30+r.IntN(31)) + "?", convText(r, 120+r.IntN(121))
}

// BenchmarkRankConversation is the ranking a turn's recall does
// (RecallContext: RecallContextLimit memories, the user's message as the
// query) in a store of one long conversation's episodes, as many as after
// 10, 1,000 and 5,000 turns (two episodes a turn, shaped as convExchange
// says): how recall's time grows with the conversation. It reports the
// time per ranking; the memories are not read from the database (Rank).
// Compare builds with -count 6 and benchstat.
func BenchmarkRankConversation(b *testing.B) {
	for _, n := range []int{20, 2000, 10000} {
		b.Run("episodes="+strconv.Itoa(n), func(b *testing.B) {
			s := openConversation(b, n)
			ctx := context.Background()
			r := rand.New(rand.NewPCG(9, 10))
			qs := make([]string, 64)
			for i := range qs {
				qs[i], _ = convExchange(r)
			}
			// the lexicon loads at the first ranking that needs it
			if _, err := s.Rank(ctx, Query{Text: qs[0], Limit: RecallContextLimit, Peek: true}); err != nil {
				b.Fatal(err)
			}
			timeEach(b, func(i int) {
				if _, err := s.Rank(ctx, Query{Text: qs[i%len(qs)], Limit: RecallContextLimit, Peek: true}); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
}

// BenchmarkScoreTermsConversation is the full-text half of that ranking
// alone: BM25 over a query's terms in an index of conversation turns.
func BenchmarkScoreTermsConversation(b *testing.B) {
	for _, n := range []int{2000, 10000} {
		b.Run("docs="+strconv.Itoa(n), func(b *testing.B) {
			r := rand.New(rand.NewPCG(1, 2))
			ti := newTextIndex()
			for i := 0; i < n; i += 2 {
				u, a := convExchange(r)
				ti.put(int64(i+1), u)
				ti.put(int64(i+2), a)
			}
			qs := make([][]qterm, 64)
			for i := range qs {
				u, _ := convExchange(r)
				qs[i] = ti.queryTerms(u, nil)
			}
			all := func(int64) bool { return true }
			timeEach(b, func(i int) { ti.scoreTerms(qs[i%len(qs)], defaultBM25, DefaultTuning.Candidates, all) })
		})
	}
}

// timeEach runs op(i) for each iteration i of b and reports, besides the
// mean, the percentiles of its times and the process's CPU time per op
// (what a shared, busy machine inflates least, with the median).
func timeEach(b *testing.B, op func(i int)) {
	durs := make([]time.Duration, 0, b.N)
	cpu0 := processCPU()
	done := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		t0 := time.Now()
		op(i)
		durs = append(durs, time.Since(t0))
		done++
	}
	reportPercentiles(b, durs)
	b.ReportMetric(float64((processCPU()-cpu0).Microseconds())/1000/float64(max(done, 1)), "cpu-ms/op")
}

// openConversation opens a store holding n episodes of one conversation
// (thread web:long, one session, a turn a minute), built once per size
// and process.
func openConversation(b *testing.B, n int) *VectorStore {
	b.Helper()
	ctx := context.Background()
	path := filepath.Join(b.TempDir(), "conv.db")
	db, err := sqlite.Open(ctx, path)
	if err != nil {
		b.Fatal(err)
	}
	s, err := OpenVector(ctx, db, embed.NewOffline(0), nil, nil, DefaultTuning)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { s.Shutdown(ctx); db.Close() })
	r := rand.New(rand.NewPCG(1, 2))
	at := time.Date(2026, 1, 1, 8, 0, 0, 0, time.UTC)
	for i := 0; i < n; i += 500 {
		var ms []Memory
		for j := i; j < min(n, i+500); j += 2 {
			u, a := convExchange(r)
			when := at.Add(time.Duration(j/2) * time.Minute)
			ep := Memory{Kind: KindEpisode, Source: SourceConversation, Thread: "web:long", Session: SessionOf(at, nil), EventTime: &when}
			mu, ma := ep, ep
			mu.Text, mu.Role = u, RoleUser
			ma.Text, ma.Role, ma.Speaker = a, RoleAssistant, "Reverie"
			ms = append(ms, mu, ma)
		}
		if _, err := s.AddBatch(ctx, ms); err != nil {
			b.Fatal(err)
		}
	}
	return s
}

// BenchmarkTextIndexPut is what indexing a text costs the full-text index
// (its terms, postings and sentences), for conversation turns shaped as
// convExchange makes them, into an index that already holds 2,000: the
// share of an episode's ingest that is the index's.
func BenchmarkTextIndexPut(b *testing.B) {
	r := rand.New(rand.NewPCG(5, 6))
	texts := make([]string, 512)
	for i := 0; i < len(texts); i += 2 {
		texts[i], texts[i+1] = convExchange(r)
	}
	ti := newTextIndex()
	for i := range 2000 {
		ti.put(int64(i+1), texts[i%len(texts)])
	}
	id := int64(2000)
	for b.Loop() {
		id++
		ti.put(id, texts[id%int64(len(texts))])
	}
}
