package memory

import (
	"context"
	"encoding/binary"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/embed"
)

// stems returns the stems of each group of words, as indexText groups a
// text's terms by sentence.
func stems(groups ...string) [][]string {
	var out [][]string
	for _, g := range groups {
		var s []string
		for _, w := range strings.Fields(g) {
			s = append(s, embed.Stem(w))
		}
		out = append(out, s)
	}
	return out
}

// splitAt splits terms into sentences at cuts.
func splitAt(terms []string, cuts []int) [][]string {
	if len(terms) == 0 {
		return nil
	}
	var out [][]string
	from := 0
	for _, c := range append(cuts, len(terms)) {
		out = append(out, terms[from:c])
		from = c
	}
	return out
}

// sentenceTerms decodes document d's sentences in t (docSentences) into
// its terms.
func sentenceTerms(t *textIndex, d uint32) [][]string {
	words := make(map[uint32]string, len(t.terms))
	for w, tid := range t.terms {
		words[tid] = w
	}
	doc := t.docTerms(d)
	b := t.docSentences(d)
	if len(b) == 0 {
		if len(doc) == 0 {
			return nil
		}
		var one []string
		for _, tid := range doc {
			one = append(one, words[tid])
		}
		return [][]string{one}
	}
	var out [][]string
	var cur []string
	for len(b) > 0 {
		v, n := binary.Uvarint(b)
		if n <= 0 || v > uint64(len(doc)) {
			return append(out, []string{"<corrupt>"})
		}
		b = b[n:]
		if v == 0 {
			out, cur = append(out, cur), nil
			continue
		}
		cur = append(cur, words[doc[v-1]])
	}
	return append(out, cur)
}

func TestIndexTextSentences(t *testing.T) {
	long := strings.Repeat("walked along the river with the dog and ", 40) + "came home"
	cases := []struct {
		name string
		text string
		want [][]string
	}{
		{"empty", "", nil},
		{"stop words only", "Oh, I was there. And you?", nil},
		{"no punctuation", "went to the lake with my sister and we swam", stems("went lake sister swam")},
		{"two sentences", "I bought a bike. It is red.", stems("bought bike", "red")},
		{"question and exclamation", "Guess what? We adopted a puppy!", stems("guess", "adopted puppy")},
		{"a sentence of stop words starts none", "Oh yes. I love jazz.", stems("love jazz")},
		{"abbreviation", "I saw Dr. Smith today. He was late.", stems("saw dr smith today", "late")},
		{"initial", "J. R. R. Tolkien wrote it. Then he slept.", stems("j r r tolkien wrote", "slept")},
		{"decimal and lower case", "I paid 3.5 dollars. fine then", stems("paid 3 5 dollars fine")},
		{"heading", "# Trip plan\nBook the train. Pack the tent.", stems("trip plan", "book train", "pack tent")},
		{"list", "Shopping:\n- milk\n- eggs\n- flour", stems("shopping", "milk", "eggs", "flour")},
		{"code lines", "```go\nx := compute(y)\nreturn x\n```", stems("x compute y", "return x")},
		{"blank lines", "first line\n\n\nsecond line", stems("first line", "second line")},
		{"full-width stops", "我很好。你呢？", [][]string{{"我很好"}, {"你呢"}}},
		{"one very long sentence", long, [][]string{func() []string {
			terms, _, _ := indexText(long)
			return terms
		}()}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			terms, cuts, length := indexText(c.text)
			if got := splitAt(terms, cuts); !slices.EqualFunc(got, c.want, slices.Equal) {
				t.Errorf("sentences %q, want %q", got, c.want)
			}
			if length != len(embed.Words(c.text)) {
				t.Errorf("length %d, want %d", length, len(embed.Words(c.text)))
			}
		})
	}
}

func TestAppendSentences(t *testing.T) {
	cases := []struct {
		name string
		text string
		want []byte
	}{
		{"no terms", "and so it was", nil},
		{"one sentence, distinct terms: nothing stored", "coffee table walnut", nil},
		{"one sentence, a repeat", "coffee table coffee", []byte{1, 2, 1}},
		{"two sentences", "Coffee table. Walnut coffee.", []byte{1, 2, 0, 3, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ti := newTextIndex()
			ti.put(1, c.text)
			if got := ti.docSentences(0); !slices.Equal(got, c.want) {
				t.Errorf("sentences % x, want % x", got, c.want)
			}
		})
	}
}

// FuzzSentences checks that the sentences the index keeps for any text
// decode to the terms indexText finds in it, grouped as it groups them.
func FuzzSentences(f *testing.F) {
	for _, s := range []string{"", "coffee table", "I bought a bike. It is red.", "# a\n- b\n- b c b", "x. y. x y. z",
		strings.Repeat("word", 200) + strings.Repeat(" w", 300)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		ti := newTextIndex()
		ti.put(7, "filler before")
		ti.put(8, text)
		ti.put(9, "filler behind. Two sentences")
		terms, cuts, _ := indexText(text)
		want := splitAt(terms, cuts)
		for _, s := range want {
			if len(s) == 0 {
				t.Fatalf("an empty sentence in %q", want)
			}
		}
		if got := sentenceTerms(ti, 1); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("decoded %q, want %q", got, want)
		}
		if got := sentenceTerms(ti, 2); !slices.EqualFunc(got, stems("filler behind", "two sentences"), slices.Equal) {
			t.Fatalf("the next document's sentences %q", got)
		}
	})
}

// TestPassageScore checks the sentence scorer against sums written out by
// hand: idf·tf·(k1+1)/(tf+k1) per query term in the best window of
// sentences, a group's best term only.
func TestPassageScore(t *testing.T) {
	ti := newTextIndex()
	// filler documents so that the query words' idf is positive and known
	fill := []string{"plain words here", "other plain words", "more filler text", "nothing relevant at all",
		"weather today", "lunch menu", "the bus ride", "a quiet evening"}
	docs := map[string]string{
		"one sentence":  "We bought a coffee table in walnut.",
		"best sentence": "We bought a coffee table. It is walnut.",
		"scattered":     "The coffee was cold. The table wobbled. Walnut is dear.",
		"twice":         "Coffee and more coffee at the table.",
		"repeated":      "Coffee first. Then coffee at the table.",
		"kinds":         "A guitar and a violin. On the table.",
		"none":          "Nothing of the query here. Nor here.",
	}
	var id int64
	for _, f := range fill {
		id++
		ti.put(id, f)
	}
	ids := map[string]int64{}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range docs {
			if !yield(k) {
				return
			}
		}
	}) {
		id++
		ti.put(id, docs[name])
		ids[name] = id
	}
	N := float64(ti.live)
	tid := func(w string) uint32 { return ti.terms[embed.Stem(w)] }
	idf := func(w string) float64 {
		df := float64(ti.df[tid(w)])
		return math.Log((N - df + 0.5) / (df + 0.5))
	}
	const k1 = 1.2
	sat := func(tf float64) float64 { return tf * (k1 + 1) / (tf + k1) }
	c, tb, wn := idf("coffee"), idf("table"), idf("walnut")
	q := []qterm{{tid: tid("coffee"), w: 1}, {tid: tid("table"), w: 1}, {tid: tid("walnut"), w: 1}}
	kinds := []qterm{{tid: tid("table"), w: 1}, {tid: tid("guitar"), w: 0.5, group: 1}, {tid: tid("violin"), w: 0.25, group: 1}}
	cases := []struct {
		name  string
		doc   string
		q     []qterm
		width int
		want  float64
	}{
		{"one sentence holds every term", "one sentence", q, 1, c + tb + wn},
		{"the best sentence wins", "best sentence", q, 1, max(c+tb, wn)},
		{"a window of two sentences", "best sentence", q, 2, c + tb + wn},
		{"a sentence holds one term at a time", "scattered", q, 1, max(c, tb, wn)},
		{"the best window of two", "scattered", q, 2, max(c+tb, tb+wn)},
		{"a window wider than the text", "scattered", q, 9, c + tb + wn},
		{"term frequency saturates", "twice", q, 1, c*sat(2) + tb},
		{"a term counts within its sentence", "repeated", q, 1, c + tb},
		{"and within the window", "repeated", q, 2, c*sat(2) + tb},
		{"a group counts its best term once", "kinds", kinds, 2, tb + 0.5*idf("guitar")},
		{"a group in another sentence", "kinds", kinds, 1, max(tb, 0.5*idf("guitar"))},
		{"no query term scores 0", "none", q, 1, 0},
		{"no query scores 0", "one sentence", nil, 1, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pq := ti.newPassageQuery(tc.q, k1, tc.width)
			d, ok := ti.docOf(ids[tc.doc])
			if !ok {
				t.Fatal("document not indexed")
			}
			if got := ti.passageScore(pq, d); math.Abs(got-tc.want) > 1e-9 {
				t.Errorf("passageScore = %.6f, want %.6f", got, tc.want)
			}
		})
	}
}

// TestPassageScoreAfterCompact checks that the sentences move with their
// documents when removed documents are compacted away.
func TestPassageScoreAfterCompact(t *testing.T) {
	ti := newTextIndex()
	for i := range 3000 {
		ti.put(int64(i+1), "filler words. number "+strings.Repeat("x", i%7+1))
	}
	ti.put(5000, "Walnut chairs. A coffee table.")
	for i := range 2500 {
		ti.remove(int64(i + 1)) // compacts on the way
	}
	d, ok := ti.docOf(5000)
	if !ok {
		t.Fatal("document lost")
	}
	if d >= 3000 {
		t.Fatalf("not compacted: the document is still number %d", d)
	}
	if got, want := sentenceTerms(ti, d), stems("walnut chairs", "coffee table"); !slices.EqualFunc(got, want, slices.Equal) {
		t.Fatalf("sentences after compaction %q, want %q", got, want)
	}
	pq := ti.newPassageQuery(ti.queryTerms("coffee table", nil), 1.2, 1)
	if got := ti.passageScore(pq, d); got <= 0 {
		t.Fatalf("passageScore after compaction = %v, want > 0", got)
	}
}

// checkStoreSentences checks that the store's text index holds, for each
// memory it recalls, the sentences of its stored text, and none for ids
// it must not.
func checkStoreSentences(t *testing.T, s *VectorStore, live []int64, gone []int64) {
	t.Helper()
	ctx := context.Background()
	stored := map[int64]string{}
	for _, id := range live {
		m, err := s.Get(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		stored[id] = m.Text
	}
	s.rlock() // loads the index from the database when not yet loaded
	defer s.mu.RUnlock()
	for _, id := range live {
		d, ok := s.text.docOf(id)
		if !ok {
			t.Fatalf("memory %d not in the text index", id)
		}
		terms, cuts, _ := indexText(stored[id])
		if got, want := sentenceTerms(s.text, d), splitAt(terms, cuts); !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("memory %d: sentences %q, want %q", id, got, want)
		}
	}
	for _, id := range gone {
		if _, ok := s.text.docOf(id); ok {
			t.Fatalf("memory %d still in the text index", id)
		}
	}
}

// TestSentencesFollowTheStore checks the sentences through a store's
// life: added, updated (a changed text is a new memory that supersedes
// the old, which stays closed), deleted, and rebuilt from the database when it is opened
// again.
func TestSentencesFollowTheStore(t *testing.T) {
	ctx := context.Background()
	s, clk, path := newStore(t)
	var ids []int64
	for _, text := range []string{
		"We bought a coffee table. It is walnut.",
		"The bike is red.\n- new tyres\n- a bell",
		"Anna moved to Lyon in May. She likes it there!",
		"plain words without a stop",
	} {
		id, err := s.Add(ctx, Memory{Text: text, Kind: KindFact})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	checkStoreSentences(t, s, ids, nil)

	up, err := s.Update(ctx, Memory{ID: ids[1], Text: "The bike is blue now. It got new tyres."})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, ids[2]); err != nil {
		t.Fatal(err)
	}
	// the superseded memory stays, closed, with its text
	live := []int64{ids[0], ids[1], up, ids[3]}
	checkStoreSentences(t, s, live, []int64{ids[2]})

	again := openStore(t, path, embed.NewOffline(0), clk)
	checkStoreSentences(t, again, live, []int64{ids[2]})
}

// A long memory with one sentence that holds the query's words outranks a
// memory of the same words and length that scatters them over sentences,
// which whole-text BM25 scores the same.
func TestRecallPrefersBestSentence(t *testing.T) {
	ctx := context.Background()
	s, _, _ := newStore(t)
	tune := DefaultTuning
	tune.VectorWeight, tune.Spread, tune.AnswerSpread, tune.ExchangeSpread = 0, 0, 0, 0
	tune.PassageWeight, tune.PassageWidth = 1.5, 1
	s.SetTuning(tune)
	// the same words, as many
	scattered := "Walnut was old. Sofa by rug. Coffee was cold. Pillows on lamp. Table stood there."
	dense := "Sofa was old. Rug by lamp. Walnut coffee table pillows. Was cold on. Stood there."
	var ids []int64
	for _, text := range []string{scattered, dense, "the weather was fine", "lunch at noon", "a walk in the park"} {
		id, err := s.Add(ctx, Memory{Text: text, Kind: KindFact})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	const q = "which walnut coffee table pillows?"
	got, err := s.Recall(ctx, Query{Text: q, Peek: true, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].ID != ids[1] {
		t.Fatalf("Recall = %q, want the memory with the sentence first", texts(got))
	}
	tune.PassageWeight = 0
	s.SetTuning(tune)
	got, err = s.Recall(ctx, Query{Text: q, Peek: true, Limit: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) == 0 || got[0].ID != ids[0] {
		t.Fatalf("without the passage ranking, Recall = %q: want the scattered memory first (ties by id)", texts(got))
	}
}
