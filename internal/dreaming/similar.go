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

// similarity is the result of one pass: dedup clusters (connected
// components of pairs with cos ≥ hi, via union-find) and the most similar
// "suspicious" pairs with lo ≤ cos < hi, at most maxPairs, most similar
// first. Memory use is O(N + maxPairs): no matrix is built.
type similarity struct {
	clusters [][]int // each with ≥ 2 item indexes, sorted
	pairs    []pair
	compared int // pairs whose cosine was computed
}

func findSimilar(items []item, lo, hi float32, maxPairs int) similarity {
	uf := newUnionFind(len(items))
	h := &pairHeap{}
	var s similarity
	consider := func(i, j int) {
		s.compared++
		c := embed.Dot(items[i].vec, items[j].vec)
		switch {
		case c >= hi:
			uf.union(i, j)
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
	groups := map[int][]int{}
	for i := range items {
		r := uf.find(i)
		groups[r] = append(groups[r], i)
	}
	for _, g := range groups {
		if len(g) > 1 {
			slices.Sort(g)
			s.clusters = append(s.clusters, g)
		}
	}
	slices.SortFunc(s.clusters, func(a, b []int) int { return cmp.Compare(a[0], b[0]) })
	s.pairs = *h
	slices.SortFunc(s.pairs, func(a, b pair) int {
		if c := cmp.Compare(b.cos, a.cos); c != 0 {
			return c
		}
		return cmp.Compare(a.a, b.a)
	})
	return s
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

type unionFind struct{ parent, rank []int }

func newUnionFind(n int) *unionFind {
	u := &unionFind{parent: make([]int, n), rank: make([]int, n)}
	for i := range u.parent {
		u.parent[i] = i
	}
	return u
}

func (u *unionFind) find(x int) int {
	for u.parent[x] != x {
		u.parent[x] = u.parent[u.parent[x]]
		x = u.parent[x]
	}
	return x
}

func (u *unionFind) union(a, b int) {
	ra, rb := u.find(a), u.find(b)
	if ra == rb {
		return
	}
	if u.rank[ra] < u.rank[rb] {
		ra, rb = rb, ra
	}
	u.parent[rb] = ra
	if u.rank[ra] == u.rank[rb] {
		u.rank[ra]++
	}
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
