package memory

import (
	"fmt"
	"strings"
	"testing"
)

// Pseudo-relevance feedback takes its terms from the best matches in
// proportion to how well each matches: a term of the one close match
// outweighs a term shared by two long texts that mention the query's word
// once among many others (a term's count of documents alone would pick
// the latter).
func TestFeedbackWeighsDocumentsByScore(t *testing.T) {
	x := newTextIndex()
	long := func(prefix string) string {
		var b strings.Builder
		for i := range 30 {
			fmt.Fprintf(&b, " %s%c%c", prefix, 'a'+i%26, 'a'+i/26)
		}
		return b.String()
	}
	docs := []string{
		"kayak harbour",
		"kayak lantern" + long("bram"),
		"kayak lantern" + long("crel"),
		"harbour quiet", "harbour misty",
		"lantern bright",
	}
	for i := range 14 {
		docs = append(docs, fmt.Sprintf("filler%c note", 'a'+i))
	}
	for i, d := range docs {
		x.put(int64(i+1), d)
	}
	all := func(int64) bool { return true }
	top := x.search("kayak", nil, defaultBM25, 3, all, nil)
	if len(top) != 3 || top[0].id != 1 {
		t.Fatalf("matches %v, want the short text first of 3", top)
	}
	q := x.expand("kayak", nil, top, 1)
	if len(q) != 2 {
		t.Fatalf("expanded query %v, want the word and one feedback term", q)
	}
	if got, want := q[1].tid, x.terms["harbour"]; got != want {
		t.Errorf("feedback term %d, want harbour (%d); lantern is %d", got, want, x.terms["lantern"])
	}
}
