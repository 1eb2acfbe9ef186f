package dreaming

import (
	"cmp"
	"container/heap"
	"math/rand/v2"
	"slices"

	"github.com/reverie-ai/reverie/internal/embed"
)

// ExactLimit is the number of memories up to which the similarity pass
// compares every pair; above it, candidate pairs come from locality-
// sensitive hashing (random hyperplanes), which bounds the work.
const ExactLimit = 4000

// LSH parameters: lshTables tables of lshBits sign bits. A pair at cosine
// 0.85 shares one table's bucket with probability about 0.21 and at least
// one of 16 buckets with probability about 0.98; buckets larger than
// lshMaxBucket are compared in windows of that size, so the work per table
// is at most N·lshMaxBucket comparisons.
const (
	lshTables    = 16
	lshBits      = 8
	lshMaxBucket = 256
)

type item struct {
	id  int64
	vec []float32
}

type pair struct {
	a, b int // indexes into the items
	cos  float32
}

// maxClusterSize caps a dedup cluster: one model call merges at most this
// many memories (or skills).
const maxClusterSize = 6

// maxLinks is how many of its most similar partners at cosine ≥ hi an item
// remembers for clustering. A pair dropped from both its items' lists counts
// as not linked, which only makes clusters smaller (never looser), and
// memory stays O(N·maxLinks) whatever the data.
const maxLinks = 16

// similarity is the result of one pass: dedup clusters (complete linkage:
// every two members of a cluster are at cos ≥ hi, at most maxClusterSize
// members) and the most similar "suspicious" pairs with lo ≤ cos < hi, at
// most maxPairs, most similar first. Memory use is O(N·maxLinks +
// maxPairs): no matrix is built.
type similarity struct {
	clusters [][]int // each with ≥ 2 item indexes, sorted
	pairs    []pair
	compared int // pairs whose cosine was computed
}

// verdict is what an earlier dream's model said of a pair.
type verdict uint8

const (
	unjudged verdict = iota
	// notSame: not one fact (a dedup cluster answered "distinct"); the pair
	// is not linked for clustering but may still be a suspicious pair,
	// judged on its own.
	notSame
	// apart: two facts to keep (a contradiction check answered
	// "keep_both"); the pair is neither linked nor suspicious.
	apart
)

// findSimilar compares the items' vectors. judged, when not nil, says what
// an earlier dream's model decided about a pair (item indexes, i < j).
//
// Clusters are tight on purpose: single linkage (connected components)
// chains "my sister lives in Porto" ~ "my brother lives in Porto" ~ "my
// brother lives in Lisbon" into one cluster although the first and last are
// far apart. Here pairs at cos ≥ hi are taken most similar first, and two
// clusters join only when every pair across them is linked and the union
// stays within maxClusterSize (greedy complete linkage).
func findSimilar(items []item, lo, hi float32, maxPairs int, judged func(i, j int) verdict) similarity {
	links := make([][]pair, len(items)) // per item, its best partners at ≥ hi
	link := func(i, j int, c float32) {
		l := links[i]
		if len(l) < maxLinks {
			links[i] = append(l, pair{i, j, c})
			return
		}
		w := 0
		for k := range l {
			if l[k].cos < l[w].cos {
				w = k
			}
		}
		if c > l[w].cos {
			l[w] = pair{i, j, c}
		}
	}
	h := &pairHeap{}
	var s similarity
	consider := func(i, j int) {
		s.compared++
		c := embed.Dot(items[i].vec, items[j].vec)
		if c < lo && c < hi {
			return
		}
		v := unjudged
		if judged != nil {
			v = judged(i, j)
		}
		switch {
		case v == apart:
			return
		case c >= hi && v != notSame:
			if linked(links, i, j) {
				return // seen through another hash table
			}
			link(i, j, c)
			link(j, i, c)
		case c >= lo && maxPairs > 0:
			if h.has(i, j) {
				return // seen through another hash table
			}
			if h.Len() < maxPairs {
				heap.Push(h, pair{i, j, c})
			} else if c > (*h)[0].cos {
				(*h)[0] = pair{i, j, c}
				heap.Fix(h, 0)
			}
		}
	}
	if len(items) <= ExactLimit {
		for i := range items {
			for j := i + 1; j < len(items); j++ {
				consider(i, j)
			}
		}
	} else {
		// A pair sharing buckets in several tables is compared again rather
		// than remembered: a set of seen pairs would grow with N·bucket.
		for _, bucket := range lshBuckets(items) {
			for start := 0; start < len(bucket); start += lshMaxBucket {
				w := bucket[start:min(start+lshMaxBucket, len(bucket))]
				for x := range w {
					for y := x + 1; y < len(w); y++ {
						i, j := w[x], w[y]
						if i > j {
							i, j = j, i
						}
						consider(i, j)
					}
				}
			}
		}
	}
	s.clusters = completeLinkage(links)
	s.pairs = *h
	slices.SortFunc(s.pairs, func(a, b pair) int {
		if c := cmp.Compare(b.cos, a.cos); c != 0 {
			return c
		}
		return cmp.Compare(a.a, b.a)
	})
	return s
}

// linked reports whether i and j are linked (at cos ≥ hi and remembered by
// either).
func linked(links [][]pair, i, j int) bool {
	return slices.ContainsFunc(links[i], func(p pair) bool { return p.b == j }) ||
		slices.ContainsFunc(links[j], func(p pair) bool { return p.b == i })
}

// completeLinkage groups linked items: links most similar first, two groups
// joined only when every pair across them is linked and the union has at
// most maxClusterSize members. It returns the groups of two or more, each
// sorted, ordered by their first member.
func completeLinkage(links [][]pair) [][]int {
	var edges []pair
	for i, l := range links {
		for _, p := range l {
			// Each link once: from its smaller index, or from the other
			// side when the smaller one dropped it.
			if i < p.b || !slices.ContainsFunc(links[p.b], func(q pair) bool { return q.b == i }) {
				edges = append(edges, pair{min(i, p.b), max(i, p.b), p.cos})
			}
		}
	}
	if len(edges) == 0 {
		return nil
	}
	slices.SortFunc(edges, func(a, b pair) int {
		if c := cmp.Compare(b.cos, a.cos); c != 0 {
			return c
		}
		if c := cmp.Compare(a.a, b.a); c != 0 {
			return c
		}
		return cmp.Compare(a.b, b.b)
	})
	group := make([]int, len(links)) // item → group id (its first item)
	members := map[int][]int{}
	for i := range group {
		group[i] = i
	}
	for _, e := range edges {
		ga, gb := group[e.a], group[e.b]
		if ga == gb {
			continue
		}
		ma, mb := members[ga], members[gb]
		if ma == nil {
			ma = []int{ga}
		}
		if mb == nil {
			mb = []int{gb}
		}
		if len(ma)+len(mb) > maxClusterSize {
			continue
		}
		tight := true
		for _, x := range ma {
			for _, y := range mb {
				if !linked(links, x, y) {
					tight = false
					break
				}
			}
			if !tight {
				break
			}
		}
		if !tight {
			continue
		}
		for _, y := range mb {
			group[y] = ga
		}
		members[ga] = append(ma, mb...)
		delete(members, gb)
	}
	var out [][]int
	for _, g := range members {
		slices.Sort(g)
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	return out
}

// lshBuckets hashes every item into lshTables tables of 2^lshBits buckets
// by the signs of random projections (fixed seed: deterministic).
func lshBuckets(items []item) [][]int {
	dims := len(items[0].vec)
	rng := rand.New(rand.NewPCG(0x5eed, 0xd2ea))
	var out [][]int
	planes := make([][]float32, lshBits)
	for range lshTables {
		for b := range planes {
			p := make([]float32, dims)
			for d := range p {
				p[d] = float32(rng.NormFloat64())
			}
			planes[b] = p
		}
		buckets := make(map[uint16][]int)
		for i, it := range items {
			var sig uint16
			for b, p := range planes {
				if embed.Dot(p, it.vec) >= 0 {
					sig |= 1 << b
				}
			}
			buckets[sig] = append(buckets[sig], i)
		}
		keys := make([]uint16, 0, len(buckets))
		for k := range buckets {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if len(buckets[k]) > 1 {
				out = append(out, buckets[k])
			}
		}
	}
	return out
}

// pairHeap is a min-heap by cosine (the weakest kept pair on top).
type pairHeap []pair

// has reports whether the pair is kept already (the heap holds at most
// MaxContradictions pairs, so a scan is cheap).
func (h pairHeap) has(a, b int) bool {
	for _, p := range h {
		if p.a == a && p.b == b {
			return true
		}
	}
	return false
}

func (h pairHeap) Len() int           { return len(h) }
func (h pairHeap) Less(i, j int) bool { return h[i].cos < h[j].cos }
func (h pairHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *pairHeap) Push(x any)        { *h = append(*h, x.(pair)) }
func (h *pairHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
