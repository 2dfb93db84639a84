package rows

import "math"

// ScaledNorm returns big = max_j |a_j| and rel = √(Σ_j (a_j/big)²), so
// that ‖a‖ = big·rel with rel ∈ [1, √len(a)] computed without overflow or
// underflow for every finite row; ok is false if a holds a NaN or an
// infinity. A zero row gives big = rel = 0. The public row rules of pca and
// federated are built on it, and they are recomputed in every pass, so it
// is on the hot path of every kernel: the maximum compares the bit
// patterns of |a_j| (for non-negative floats their order as integers is
// their order as numbers, and NaN and ±Inf sort above every finite value),
// in four independent lanes because a maximum does not depend on the
// order; the sum of squares is sequential, one division and one square per
// entry, because its rounding, and so every scale, must not change bit.
func ScaledNorm(a []float64) (big, rel float64, ok bool) {
	const abs = 1<<63 - 1
	const inf = 0x7FF0000000000000 // bits of +Inf
	var m0, m1, m2, m3 uint64
	j := 0
	for ; j+4 <= len(a); j += 4 {
		m0 = max(m0, math.Float64bits(a[j])&abs)
		m1 = max(m1, math.Float64bits(a[j+1])&abs)
		m2 = max(m2, math.Float64bits(a[j+2])&abs)
		m3 = max(m3, math.Float64bits(a[j+3])&abs)
	}
	for ; j < len(a); j++ {
		m0 = max(m0, math.Float64bits(a[j])&abs)
	}
	mb := max(m0, m1, m2, m3)
	if mb >= inf {
		return 0, 0, false
	}
	big = math.Float64frombits(mb)
	if big == 0 {
		return 0, 0, true
	}
	ss := 0.0
	for _, v := range a {
		q := v / big
		ss += q * q
	}
	return big, math.Sqrt(ss), true
}

// StoredNorm returns what a source stores for a row of features a in
// Batch.NormBig and Batch.NormRel: ScaledNorm's parts, with big = +Inf for
// a row it rejects.
func StoredNorm(a []float64) (big, rel float64) {
	big, rel, ok := ScaledNorm(a)
	if !ok {
		return math.Inf(1), 0
	}
	return big, rel
}
