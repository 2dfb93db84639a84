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

// at returns f(d); d must not decrease between calls.
func (w *weights) at(d int) dyadic {
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
