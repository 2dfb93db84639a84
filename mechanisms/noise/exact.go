// Exact samplers: Canonne, Kamath and Steinke, "The Discrete Gaussian for
// Differential Privacy" (NeurIPS 2020, arXiv 2004.00010), Algorithms 1–3,
// specialised to an integer scale so that every accept/reject decision is a
// comparison of random bits against a ratio of two integers below 2^55.
// Spec: power_methods.md §6 "Samplers".

package noise

import (
	"encoding/binary"
	"math/bits"
)

// bitSource hands out independent uniform random bits and words. It is not
// safe for concurrent use; Sampler gives each caller its own or serialises.
type bitSource struct {
	fill  func([]byte) // refills buf with fresh random bytes
	buf   [16384]byte
	pos   int    // next unread byte of buf
	res   uint64 // reservoir of unread bits
	nres  uint   // number of valid bits in res
	words uint64 // 64-bit words consumed (for tests and benchmarks)
}

func (b *bitSource) word() uint64 {
	if b.pos+8 > len(b.buf) {
		b.fill(b.buf[:])
		b.pos = 0
	}
	w := binary.LittleEndian.Uint64(b.buf[b.pos:])
	b.pos += 8
	b.words++
	return w
}

// bits returns n uniform bits, 1 <= n <= 64, wasting none.
func (b *bitSource) bits(n uint) uint64 {
	if b.nres >= n {
		v := b.res & (1<<n - 1)
		b.res >>= n
		b.nres -= n
		return v
	}
	return b.bitsRefill(n)
}

func (b *bitSource) bitsRefill(n uint) uint64 {
	v := b.res
	w := b.word()
	v |= w << b.nres // Go defines shifts by >= 64 as 0
	used := n - b.nres
	b.res = w >> used
	b.nres = 64 - used
	return v & (1<<n - 1) // for n = 64 the mask is all ones
}

// refillReservoir replaces the reservoir with a fresh word; callers use it
// when fewer bits remain than they need, and the remainder is dropped.
func (b *bitSource) refillReservoir() {
	b.res = b.word()
	b.nres = 64
}

// bit returns one uniform bit.
func (b *bitSource) bit() bool {
	if b.nres == 0 {
		b.refillReservoir()
	}
	v := b.res&1 == 1
	b.res >>= 1
	b.nres--
	return v
}

// uniformBits is the width of the random integers uniform draws from; n is
// at most 2^(latticeBits+1) on the noise paths, so a draw is rejected with
// probability below 2^-7.
const uniformBits = 48

// uniform returns an integer uniform on [0, n), n > 0, by Lemire's
// multiply-and-reject method: for n <= 2^47 on uniformBits-bit integers
// (x·n = hi·2^48 + lo, and x is redrawn while lo < 2^48 mod n, which makes
// hi exactly uniform), for larger n on 64-bit words. A 48-bit draw cannot
// cover n > 2^48 values at all (the rejection zone would be everything), so
// the integer samplers' scales up to 2^50 need the wide path.
func (b *bitSource) uniform(n uint64) uint64 {
	if n > 1<<(uniformBits-1) {
		return b.uniform64(n)
	}
	const mask = 1<<uniformBits - 1
	hi, lo := bits.Mul64(b.bits(uniformBits), n)
	if lo&mask < n { // only then can x be in the rejection zone: divide
		thresh := (1 << uniformBits) % n
		for lo&mask < thresh {
			hi, lo = bits.Mul64(b.bits(uniformBits), n)
		}
	}
	return hi<<(64-uniformBits) | lo>>uniformBits
}

// uniform64 is Lemire's method on 64-bit words: x·n = hi·2^64 + lo, and x
// is redrawn while lo < 2^64 mod n.
func (b *bitSource) uniform64(n uint64) uint64 {
	hi, lo := bits.Mul64(b.bits(64), n)
	if lo < n {
		thresh := -n % n // 2^64 mod n
		for lo < thresh {
			hi, lo = bits.Mul64(b.bits(64), n)
		}
	}
	return hi
}

// blockBits is the number of bits of U that bernoulliFrac compares at once.
const blockBits = 4

// bernoulliFrac returns true with probability exactly num/den
// (0 <= num <= den, 0 < den < 2^55). It draws U = 0.u1u2u3... lazily,
// blockBits bits at a time: with W the next block, U < num/den is decided
// by comparing W·den with num·2^blockBits. Only when W·den < num·2^blockBits
// < (W+1)·den (probability below 2^-blockBits) is the decision deferred to
// the next block, compared with the remainder (num·2^blockBits - W·den)/den:
// the loop is an exact comparison of U with the binary expansion of num/den.
func (b *bitSource) bernoulliFrac(num, den uint64) bool {
	for {
		if num >= den {
			return true
		}
		if b.nres < blockBits {
			b.refillReservoir() // fewer than blockBits unread bits are dropped, never reused
		}
		p := (b.res & (1<<blockBits - 1)) * den
		b.res >>= blockBits
		b.nres -= blockBits
		n := num << blockBits
		if p >= n {
			return false // U >= W/2^blockBits >= num/den
		}
		if n-p >= den {
			return true // U < (W+1)/2^blockBits <= num/den
		}
		num = n - p
		if num == 0 {
			return false
		}
	}
}

// bernoulliExpNegFrac returns true with probability exp(-num/den) for
// 0 <= num <= den (CKS Algorithm 1, the case γ ∈ [0,1]): the number of
// leading successes of Bernoulli(γ/k), k = 1, 2, ..., is even with
// probability exp(-γ). Bernoulli(γ/k) is drawn as Bernoulli(γ) ∧
// Bernoulli(1/k), which keeps the integers small.
func (b *bitSource) bernoulliExpNegFrac(num, den uint64) bool {
	// k = 1 needs only Bernoulli(γ): Bernoulli(1/1) is certain.
	if !b.bernoulliFrac(num, den) {
		return true
	}
	k := uint64(2)
	for b.bernoulliFrac(num, den) && b.bernoulliFrac(1, k) {
		k++
	}
	return k&1 == 1
}

// bernoulliExpNeg1 returns true with probability exp(-1).
func (b *bitSource) bernoulliExpNeg1() bool {
	k := uint64(2) // Bernoulli(1/1) is certain
	for b.bernoulliFrac(1, k) {
		k++
	}
	return k&1 == 1
}

// bernoulliExpNegHalf returns true with probability exp(-1/2).
func (b *bitSource) bernoulliExpNegHalf() bool {
	if !b.bit() {
		return true
	}
	k := uint64(2)
	for b.bit() && b.bernoulliFrac(1, k) {
		k++
	}
	return k&1 == 1
}

// bernoulliExpNegSquareHalf returns true with probability
// exp(-(num/den)^2/2) for num <= den: the CKS loop with Bernoulli(γ/k) drawn
// as Bernoulli(num/den) ∧ Bernoulli(num/den) ∧ Bernoulli(1/2) ∧ Bernoulli(1/k).
func (b *bitSource) bernoulliExpNegSquareHalf(num, den uint64) bool {
	if !(b.bernoulliFrac(num, den) && b.bernoulliFrac(num, den) && b.bit()) {
		return true
	}
	k := uint64(2)
	for b.bernoulliFrac(num, den) && b.bernoulliFrac(num, den) && b.bit() && b.bernoulliFrac(1, k) {
		k++
	}
	return k&1 == 1
}

// bernoulliExpNegQSquareHalf returns true with probability exp(-q²/2), as q
// independent draws of Bernoulli(exp(-q/2)); every loop stops at the first
// failure, so a large q costs almost nothing.
func (b *bitSource) bernoulliExpNegQSquareHalf(q uint64) bool {
	for i := uint64(0); i < q; i++ {
		for j := uint64(0); j < q/2; j++ {
			if !b.bernoulliExpNeg1() {
				return false
			}
		}
		if q&1 == 1 && !b.bernoulliExpNegHalf() {
			return false
		}
	}
	return true
}

// discreteLaplace returns a sample of the discrete Laplace distribution on
// the integers, P(Z = z) ∝ exp(-|z|/t), t >= 1, as a sign and a magnitude
// |Z| = u + t·v with u ∈ [0,t) and v >= 0 returned separately so that no
// product can overflow (CKS Algorithm 2 with s = 1).
func (b *bitSource) discreteLaplace(t uint64) (neg bool, u, v uint64) {
	for {
		u = b.uniform(t)
		if !b.bernoulliExpNegFrac(u, t) {
			continue
		}
		v = 0
		for b.bernoulliExpNeg1() {
			v++
		}
		neg = b.bit()
		if neg && u == 0 && v == 0 {
			continue // reject -0 so that 0 is not counted twice
		}
		return neg, u, v
	}
}

// discreteGaussian returns a sample of the discrete Gaussian on the
// integers, P(Z = z) ∝ exp(-z²/(2s²)), for an integer s >= 1, in the same
// split form as discreteLaplace: |Z| = u + s·v (CKS Algorithm 3 with the
// proposal scale t = s; CKS pick t = floor(s)+1 but any t > 0 is exact,
// and t = s makes the exponent split below). A proposal y from the discrete
// Laplace of scale s is accepted with probability exp(-(|y|-s)²/(2s²)),
// which is the target/proposal ratio exp(-y²/(2s²) + |y|/s) divided by its
// maximum e^(1/2). Writing
// ||y|-s| = q·s + r with 0 <= r < s, the exponent splits into
// q²/2 + q·(r/s) + (r/s)²/2, three non-negative parts each sampled exactly
// with integers below 2^55.
func (b *bitSource) discreteGaussian(s uint64) (neg bool, u, v uint64) {
	for {
		neg, u, v = b.discreteLaplace(s)
		var q, r uint64
		switch {
		case v >= 1:
			q, r = v-1, u
		case u == 0:
			q, r = 1, 0
		default:
			q, r = 0, s-u
		}
		if !b.bernoulliExpNegQSquareHalf(q) {
			continue
		}
		ok := true
		for i := uint64(0); i < q && ok; i++ {
			ok = b.bernoulliExpNegFrac(r, s)
		}
		if !ok || !b.bernoulliExpNegSquareHalf(r, s) {
			continue
		}
		return neg, u, v
	}
}
