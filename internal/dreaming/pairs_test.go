package dreaming

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/reverie-ai/reverie/internal/embed"
	"github.com/reverie-ai/reverie/internal/embed/sentence"
)

// fixturePair is one hand-written pair of testdata/pairs.tsv.
type fixturePair struct{ class, a, b string }

func readPairs(t *testing.T) []fixturePair {
	t.Helper()
	f, err := os.Open("testdata/pairs.tsv")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []fixturePair
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		f := strings.Split(l, "\t")
		if len(f) != 3 {
			t.Fatalf("bad fixture line %q", l)
		}
		out = append(out, fixturePair{f[0], f[1], f[2]})
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

type embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// pairCosines embeds every pair and returns the cosines by class.
func pairCosines(t *testing.T, e embedder, ps []fixturePair) map[string][]float32 {
	t.Helper()
	texts := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		texts = append(texts, p.a, p.b)
	}
	vs, err := e.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float32{}
	for i, p := range ps {
		out[p.class] = append(out[p.class], embed.Dot(vs[2*i], vs[2*i+1]))
	}
	return out
}

// TestPairCosineDistribution logs where the hand-written pairs of
// testdata/pairs.tsv fall for the built-in encoder and the hashing embedder
// (go test -run PairCosine -v), and checks on those realistic texts that
// the dedup clusters are tight: every two members at ≥ the threshold, none
// larger than maxClusterSize. With the encoder the classes overlap (updates
// sit higher than paraphrases), so no threshold means "duplicate": the
// model's merge | distinct decision does.
func TestPairCosineDistribution(t *testing.T) {
	ps := readPairs(t)
	enc, err := sentence.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []struct {
		name string
		e    embedder
	}{{"use-lite", enc}, {"hashing", embed.NewOffline(embed.DefaultDimensions)}} {
		byClass := pairCosines(t, e.e, ps)
		for _, class := range []string{"dup", "update", "distinct"} {
			cs := slices.Clone(byClass[class])
			slices.Sort(cs)
			q := func(f float64) float32 { return cs[int(f*float64(len(cs)-1))] }
			n := func(th float32) int {
				return len(cs) - len(slices.DeleteFunc(slices.Clone(cs), func(c float32) bool { return c >= th }))
			}
			t.Logf("%-8s %-8s n=%d min %.3f p10 %.3f p25 %.3f med %.3f p75 %.3f p90 %.3f max %.3f  >=0.85: %d  >=0.90: %d >=0.5: %d",
				e.name, class, len(cs), cs[0], q(0.1), q(0.25), q(0.5), q(0.75), q(0.9), cs[len(cs)-1], n(0.85), n(0.90), n(0.5))
		}
		var texts []string
		for _, p := range ps {
			texts = append(texts, p.a, p.b)
		}
		vs, err := e.e.Embed(t.Context(), texts)
		if err != nil {
			t.Fatal(err)
		}
		items := make([]item, len(vs))
		for i, v := range vs {
			items[i] = item{id: int64(i), vec: v}
		}
		const hi = 0.85
		sim := findSimilar(items, 0.5, hi, 20, nil)
		for _, cl := range sim.clusters {
			if len(cl) > maxClusterSize {
				t.Errorf("%s: cluster of %d", e.name, len(cl))
			}
			for x := range cl {
				for y := x + 1; y < len(cl); y++ {
					if c := embed.Dot(vs[cl[x]], vs[cl[y]]); c < hi {
						t.Errorf("%s: %q and %q in one cluster at %.3f", e.name, texts[cl[x]], texts[cl[y]], c)
					}
				}
			}
		}
		t.Logf("%s: %d texts, %d cluster(s) at >= %.2f", e.name, len(texts), len(sim.clusters), hi)
		if testing.Verbose() && os.Getenv("PAIRS_DUMP") != "" {
			i := map[string]int{}
			for _, p := range ps {
				fmt.Printf("%s\t%s\t%.3f\t%s | %s\n", e.name, p.class, byClass[p.class][i[p.class]], p.a, p.b)
				i[p.class]++
			}
		}
	}
}
