package rowpass

import "fmt"

// Bounded-error accumulation for sums that are released with noise.
//
// A plain running sum over n rows rounds every partial sum, so a term
// added early passes through up to n−1 roundings and the computed sums of
// two neighbouring data sets can differ by far more than the sensitivity
// the noise was calibrated for (Casacuberta et al., arXiv 2207.10635).
// Pairwise bounds the number of roundings on every term's path by a
// constant that does not depend on the data, so the rounding error of
// every accumulated entry is at most Gamma(h)·Σ|terms| with a public h,
// which a mechanism can charge as extra sensitivity.
//
// The reduction order: rows are cut into fixed blocks of BlockRows rows,
// block k holding rows [k·BlockRows, min((k+1)·BlockRows, n)); each block is
// summed directly by the caller into a zeroed accumulator; the block sums
// are combined by the binary tree whose node at level ℓ is the sum
// left + right of the aligned dyadic block ranges [j·2^ℓ, (j+1)·2^ℓ) (the
// state of a binary counter), and the at most ⌊log2 nb⌋+1 remaining nodes
// of the nb blocks are added smallest first. A term therefore passes
// through at most ⌈log2 nb⌉ ≤ TreeDepth additions after its block sum
// (with levels j₁ < … < j_r left, a term in node j_i sees j_i merges
// inside it and at most r−i+1 in the final collapse, and j_i + r − i ≤ j_r).
//
// Workers take contiguous, block-aligned ranges; each builds the aligned
// nodes inside its range, and the calling goroutine feeds them in row
// order through the same counter. Every node is computed as left + right
// of the same two children whoever builds it, so the result is bit
// identical for every worker count, not only for a fixed one.

// BlockRows is the number of consecutive rows a block holds. The caller
// sums a block directly, so a term passes through at most BlockRows−1
// additions inside its block.
const BlockRows = 256

// MaxRows is the largest row count Pairwise accepts; the error bounds are
// stated for n ≤ MaxRows, so a mechanism can charge them without knowing
// the private n. Larger data sets are refused by the data registry; a
// larger n reaching Pairwise is a programming error and panics.
const MaxRows = 1 << 30

// TreeDepth is the largest number of additions a block sum passes through
// on its way to the result: ⌈log2(MaxRows/BlockRows)⌉ = 22.
const TreeDepth = 22

// unitRoundoff is u = 2^-53, the unit roundoff of float64 round-to-nearest.
const unitRoundoff = 0x1p-53

// Gamma returns γ_h = h·u/(1 − h·u) with u = 2^-53, rounded up: if a
// computed quantity is a product of at most h factors (1 + δ), |δ| ≤ u,
// times its exact value, the product differs from 1 by at most γ_h
// (Higham, Accuracy and Stability of Numerical Algorithms, Lemma 3.1).
// It panics unless 0 ≤ h and h·u < 1/2.
func Gamma(h int) float64 {
	if h < 0 || h >= 1<<52 {
		panic(fmt.Sprintf("rowpass: Gamma(%d): h must be in [0, 2^52)", h))
	}
	hu := float64(h) * unitRoundoff // exact: h < 2^53
	// Three correctly rounded operations (1−hu, the division, and this
	// product) each lose at most a relative u; 2^-50 covers them.
	return hu / (1 - hu) * (1 + 0x1p-50)
}

// Depth returns the largest number of additions a block sum passes through
// in Pairwise over n rows: ⌈log2 nb⌉ for nb = ⌈n/BlockRows⌉ blocks (0 for
// one block or none). Depth(n) ≤ TreeDepth for n ≤ MaxRows.
func Depth(n int) int {
	nb := (n + BlockRows - 1) / BlockRows
	h := 0
	for 1<<h < nb {
		h++
	}
	return h
}

// node is a partial sum over the aligned block range
// [start, start+2^level).
type node[A any] struct {
	start, level int
	acc          A
}

// Counter is the binary tree of Pairwise, the one kernel that combines
// block sums for Pairwise, PairwiseScan and a stream of terms summed one
// at a time (mechanisms/internal/linalg.Stream): block sums are pushed in
// block order, siblings are merged as they complete (the state of a binary
// counter), and Sum adds the remaining nodes smallest first. Whoever
// feeds it, every node is left + right of the same two children, so the
// result depends only on the block sums.
type Counter[A any] struct {
	nodes []node[A]
	free  []A
	merge func(into, from A)
	clear func(A)
}

// NewCounter returns an empty Counter; merge and clear are as for
// Pairwise.
func NewCounter[A any](merge func(into, from A), clear func(A)) *Counter[A] {
	return &Counter[A]{merge: merge, clear: clear}
}

// Push adds the sum of block number block, which must follow the last
// block pushed.
func (c *Counter[A]) Push(block int, acc A) {
	c.push(node[A]{start: block, level: 0, acc: acc})
}

// push appends a node that starts where the last one ends and merges
// siblings: two nodes of the same level whose left one is aligned to twice
// that level are children of one parent.
func (c *Counter[A]) push(nd node[A]) {
	c.nodes = append(c.nodes, nd)
	for len(c.nodes) >= 2 {
		r := c.nodes[len(c.nodes)-1]
		l := &c.nodes[len(c.nodes)-2]
		if l.level != r.level || l.start%(2<<l.level) != 0 {
			return
		}
		c.merge(l.acc, r.acc)
		c.clear(r.acc)
		c.free = append(c.free, r.acc)
		l.level++
		c.nodes = c.nodes[:len(c.nodes)-1]
	}
}

// Spare returns a zero accumulator that a merge freed, if there is one.
func (c *Counter[A]) Spare() (A, bool) {
	k := len(c.free)
	if k == 0 {
		var zero A
		return zero, false
	}
	acc := c.free[k-1]
	c.free = c.free[:k-1]
	return acc, true
}

// Sum returns the sum of the blocks pushed: the remaining nodes, whose
// levels decrease from the bottom, added smallest first. It reports false
// if no block was pushed. The Counter must not be used after Sum.
func (c *Counter[A]) Sum() (A, bool) {
	if len(c.nodes) == 0 {
		var zero A
		return zero, false
	}
	top := c.nodes[len(c.nodes)-1].acc
	for i := len(c.nodes) - 2; i >= 0; i-- {
		c.merge(c.nodes[i].acc, top)
		top = c.nodes[i].acc
	}
	return top, true
}

// Pairwise returns the sum over the rows [0, n) with the reduction order
// described above, using every core that opt allows (opt.MinRows is
// rounded up to whole blocks).
//
// newAcc returns a zero accumulator. block(acc, lo, hi) receives a zero
// accumulator and must leave in it the sum of the rows [lo, hi), at most
// BlockRows of them, each entry summed directly (any order: a term then
// passes through at most hi−lo−1 additions). merge(into, from) must add
// from into into entry by entry, one rounding per entry (adding to an
// entry known to be zero may copy instead). clear(acc) must reset acc to
// zero; accumulators are reused. For n <= 0 Pairwise returns newAcc().
//
// Bound: if every term of an entry is computed with at most k roundings
// relative to a reference value t_i, the computed entry differs from
// Σ_i t_i by at most Gamma(k + BlockRows − 1 + Depth(n))·Σ_i |t_i|.
//
// It panics if n > MaxRows.
func Pairwise[A any](n int, opt Options, newAcc func() A, block func(acc A, lo, hi int), merge func(into, from A), clear func(A)) A {
	if n > MaxRows {
		panic(fmt.Sprintf("rowpass: Pairwise over more than MaxRows = 2^30 rows (got %d): the data registry must refuse such data sets", n))
	}
	if n <= 0 {
		return newAcc()
	}
	nb := (n + BlockRows - 1) / BlockRows
	minRows := opt.MinRows
	if minRows <= 0 {
		minRows = DefaultMinRows
	}
	blockOpt := Options{Workers: opt.Workers, MinRows: (minRows + BlockRows - 1) / BlockRows}
	shards := Split(nb, blockOpt)
	per := make([]Counter[A], len(shards))
	For(nb, blockOpt, func(shard, b0, b1 int) {
		c := &per[shard]
		c.merge, c.clear = merge, clear
		for b := b0; b < b1; b++ {
			acc, ok := c.Spare()
			if !ok {
				acc = newAcc()
			}
			block(acc, b*BlockRows, min((b+1)*BlockRows, n))
			c.Push(b, acc)
		}
	})
	all := NewCounter(merge, clear)
	for i := range per {
		for _, nd := range per[i].nodes {
			all.push(nd)
		}
	}
	top, _ := all.Sum() // nb ≥ 1 blocks
	return top
}

// SumVec is Pairwise for a float64 vector of length m: block(dst, lo, hi)
// receives dst zeroed and must add the rows [lo, hi) into it directly.
func SumVec(n, m int, opt Options, block func(dst []float64, lo, hi int)) []float64 {
	return Pairwise(n, opt,
		func() []float64 { return make([]float64, m) },
		block,
		func(into, from []float64) {
			for i, v := range from {
				into[i] += v
			}
		},
		func(a []float64) { clear(a) })
}
