package tabular

// The exact sampler of the quantile's exponential mechanism: weights are
// dyadic rationals m·2^e with 64-bit mantissas, computed with integer
// arithmetic and rounded in a fixed direction, and the draw is a uniform
// integer from fair random bits. No floating-point value enters a
// probability.

import (
	"math"
	"math/big"
	"math/bits"
)

// dyadic is the positive number m·2^e with m normalised to [2^63, 2^64).
type dyadic struct {
	m uint64
	e int64
}

var dyadicOne = dyadic{m: 1 << 63, e: -63}

// dyadicDown returns the largest dyadic with a 64-bit mantissa at or below
// the positive finite x.
func dyadicDown(x *big.Float) dyadic {
	r := new(big.Float).SetPrec(64).SetMode(big.ToZero).Set(x)
	mant := new(big.Float)
	exp := r.MantExp(mant) // r = mant·2^exp, mant ∈ [0.5, 1)
	mant.SetMantExp(mant, 64)
	m, _ := mant.Uint64() // exact: 64 significant bits
	return dyadic{m: m, e: int64(exp) - 64}
}

// divUp returns x/r rounded up to a 64-bit mantissa.
func (x dyadic) divUp(r dyadic) dyadic {
	var q, rem uint64
	var e int64
	if x.m >= r.m {
		// (x.m·2^63)/r.m ∈ [2^63, 2^64): x.m>>1 < 2^63 ≤ r.m
		q, rem = bits.Div64(x.m>>1, x.m<<63, r.m)
		e = x.e - r.e - 63
	} else {
		// (x.m·2^64)/r.m ∈ (2^63, 2^64): x.m < r.m
		q, rem = bits.Div64(x.m, 0, r.m)
		e = x.e - r.e - 64
	}
	if rem != 0 {
		if q == math.MaxUint64 {
			return dyadic{m: 1 << 63, e: e + 1}
		}
		q++
	}
	return dyadic{m: q, e: e}
}

// lessThanPow2 reports whether x < 2^k.
func (x dyadic) lessThanPow2(k int64) bool { return x.e+64 <= k }

// ratioFor returns R, a dyadic at or below e^(ε/2): the partial sum of
// the exponential series of x = ε/2 to x^expTerms/expTerms!, every
// operation on the exact x rounded towards zero (all terms are positive),
// then rounded down to 64 bits. R ≥ 1.
func ratioFor(eps float64) dyadic {
	const prec = 128
	x := new(big.Float).SetPrec(prec).SetMode(big.ToZero).SetFloat64(eps)
	x.SetMantExp(x, -1) // ε/2, exactly
	term := new(big.Float).SetPrec(prec).SetMode(big.ToZero).SetInt64(1)
	sum := new(big.Float).SetPrec(prec).SetMode(big.ToZero).SetInt64(1)
	for j := int64(1); j <= expTerms; j++ {
		term.Mul(term, x)
		term.Quo(term, new(big.Float).SetInt64(j))
		sum.Add(sum, term)
	}
	return dyadicDown(sum)
}

// expTerms is the last power of the series. For ε/2 ≤ 1 the partial sum
// falls short of e^(ε/2) by less than a relative 2^-65 (x^21/21! bounds
// the rest) and the rounding to 64 bits by less than 2^-63, so the
// mechanism spends all of ε but a negligible part; for
// larger ε it is smaller than e^(ε/2), which only lowers the effective ε
// of a mechanism that then already concentrates on the best ranks.
const expTerms = 20

// weights is the sequence f(0) = 1, f(d+1) = f(d)/R rounded up to 64 bits:
// non-increasing, with f(d)/f(d+1) ≤ R for every d.
type weights struct {
	r   dyadic
	d   int
	cur dyadic
}

func newWeights(r dyadic) *weights { return &weights{r: r, cur: dyadicOne} }

// at returns f(d). A d below the last one starts the walk over from
// f(0) (a new pass over the levels).
func (w *weights) at(d int) dyadic {
	if d < w.d {
		w.d, w.cur = 0, dyadicOne
	}
	for w.d < d {
		w.cur = w.cur.divUp(w.r)
		w.d++
	}
	return w.cur
}

// randomBits is a source of independent fair bits.
type randomBits func() bool

// uniformBelow returns an integer uniform on [0, n), n > 0, drawn from
// fair bits by rejection: BitLen(n) bits at a time, kept when below n
// (probability above 1/2).
func uniformBelow(n *big.Int, bit randomBits) *big.Int {
	k := n.BitLen()
	v := new(big.Int)
	for {
		v.SetInt64(0)
		for i := k - 1; i >= 0; i-- {
			if bit() {
				v.SetBit(v, i, 1)
			}
		}
		if v.Cmp(n) < 0 {
			return v
		}
	}
}

// bernoulliDyadic returns true with probability m/2^k (m < 2^k, k ≥ 64):
// it compares the bits of a uniform U, drawn lazily, with the binary
// expansion of m/2^k, whose first k − 64 bits are 0.
func bernoulliDyadic(m uint64, k int64, bit randomBits) bool {
	for i := int64(0); i < k-64; i++ {
		if bit() {
			return false // U ≥ 2^-(i+1) > m/2^k
		}
	}
	for i := 63; i >= 0; i-- {
		b, p := bit(), m>>uint(i)&1 == 1
		if b != p {
			return p // U's bit is 0 where p's is 1: U < p
		}
	}
	return false // U ≥ m/2^k
}

// level is one loss level of an exponential mechanism: count candidates
// of integer loss d. Levels are given in non-decreasing d.
type level struct {
	d     int
	count int64
}

// sampleLevels draws a candidate with probability proportional to the
// weight f(d) of its level (weights of ratio), exactly, from fair bits:
// it returns the level's index and the candidate's offset within it. It
// serves both callers of the exponential mechanism: the quantile (levels
// are ranks, candidates grid points) and Select (one candidate a level).
//
// Proposal: with cut = exponent of the best weight − envBits, a level
// whose weight is at least 2^cut is proposed with its weight, one below
// with 2^cut, each weight scaled by 2^(64−cut) to an exact integer; a
// uniform integer below the total picks the level and the candidate. A
// candidate of the second kind is kept with probability weight/2^cut,
// else the draw starts over. Each candidate is thus returned with
// probability proportional to its weight; any envBits ≥ 1 gives the same
// distribution (tests use small ones to exercise the rejection step).
//
// weight(i) is f(lv[i].d): walkWeights walks the sequence as the levels
// need it, tableWeights reads weights computed beforehand.
func sampleLevels(weight func(i int) dyadic, lv []level, bit randomBits, envBits int64) (int, int64) {
	var cut int64
	found := false
	head := new(big.Int)
	var tail int64
	heads := 0 // levels [0, heads) are in the head; weights fall with d
	term := new(big.Int)
	for i, l := range lv {
		if l.count == 0 {
			continue
		}
		f := weight(i)
		if !found {
			found, cut = true, f.e+64-envBits
		}
		if f.lessThanPow2(cut) {
			for _, t := range lv[i:] {
				tail += t.count
			}
			break
		}
		head.Add(head, scaled(term, f, cut, l.count))
		heads = i + 1
	}
	total := new(big.Int).Lsh(new(big.Int).SetInt64(tail), 64)
	total.Add(total, head)
	for {
		v := uniformBelow(total, bit)
		if v.Cmp(head) < 0 {
			return locateHead(weight, lv[:heads], cut, v)
		}
		if i, off, ok := locateTail(weight, lv, heads, cut, v.Sub(v, head).Rsh(v, 64).Int64(), bit); ok {
			return i, off
		}
	}
}

// scaled sets z to c·f·2^(64−cut), an integer for f ≥ 2^cut.
func scaled(z *big.Int, f dyadic, cut int64, c int64) *big.Int {
	z.SetUint64(f.m)
	z.Lsh(z, uint(f.e+64-cut))
	return z.Mul(z, big.NewInt(c))
}

// locateHead returns the level and offset of the candidate at offset v of
// the head levels.
func locateHead(weight func(i int) dyadic, lv []level, cut int64, v *big.Int) (int, int64) {
	seg, unit := new(big.Int), new(big.Int)
	for i, l := range lv {
		if l.count == 0 {
			continue
		}
		scaled(unit, weight(i), cut, 1)
		seg.Mul(unit, big.NewInt(l.count))
		if v.Cmp(seg) < 0 {
			return i, new(big.Int).Quo(v, unit).Int64()
		}
		v.Sub(v, seg)
	}
	panic("tabular: offset beyond the head") // v < head by construction
}

// locateTail finds the q-th candidate of the tail levels (from level
// heads on) and keeps it with probability weight/2^cut.
func locateTail(weight func(i int) dyadic, lv []level, heads int, cut int64, q int64, bit randomBits) (int, int64, bool) {
	for i := heads; i < len(lv); i++ {
		if q < lv[i].count {
			f := weight(i)
			return i, q, bernoulliDyadic(f.m, cut-f.e, bit)
		}
		q -= lv[i].count
	}
	panic("tabular: offset beyond the tail") // q < tail by construction
}

// walkWeights returns the weights of levels lv (non-decreasing d) walked
// from f(0) as they are asked for: work linear in the largest d asked.
func walkWeights(ratio dyadic, lv []level) func(i int) dyadic {
	w := newWeights(ratio)
	return func(i int) dyadic { return w.at(lv[i].d) }
}

// tableWeights returns f(lv[i].d) for every level in one walk of the
// weight sequence from f(0) to f(bound), whatever the levels' d: bound
// steps, each comparing the step with every level, so the work depends on
// bound and len(lv) only (a level above bound, which a caller's bound
// rules out, extends the walk). It also returns the number of steps.
func tableWeights(ratio dyadic, lv []level, bound int) ([]dyadic, int) {
	top := bound
	for _, l := range lv {
		top = max(top, l.d)
	}
	tab := make([]dyadic, len(lv))
	cur := dyadicOne
	// The levels come in non-decreasing d, so one index walks them
	// beside d: O(top + len(lv)) work, whatever the losses are (a loop
	// over every level at every d made MST's many selections quadratic).
	next := 0
	for d := 0; ; d++ {
		for next < len(lv) && lv[next].d == d {
			tab[next] = cur
			next++
		}
		if d == top {
			return tab, d
		}
		cur = cur.divUp(ratio)
	}
}
