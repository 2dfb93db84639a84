package pca

import (
	"math"
	"math/big"
	"math/rand/v2"
	"testing"
)

// The sparse-vector comparison must be decided on the exact noisy values.
// The float64 expression it replaced, fl(q+zq) ≥ fl(−offset+zThr), rounds
// a noise value far below the ulp of the count away and answers these
// cases wrongly (the first two are regression cases: true before the fix).
func TestSVTReachesExact(t *testing.T) {
	floatTest := func(q int, zq, offset, zThr float64) bool {
		return float64(q)+zq >= -offset+zThr
	}
	for _, tc := range []struct {
		name              string
		q                 int
		zq, offset, zThr  float64
		want, floatAnswer bool
	}{
		// ε_s ≈ 1: query lattice step 2^-38, a count of 10^5 rows.
		{"below by one step", -100000, -0x1p-38, 100000, 0, false, true},
		{"below by one step, large count", -(1 << 30), -0x1p-30, 1 << 30, 0, false, true},
		{"above by one step", -100000, 0x1p-38, 100000, 0, true, true},
		{"tie counts as reaching", -7, 0.25, 7.5, 0.25, true, true},
		{"threshold noise decides", -100000, 0, 100000, 0x1p-37, false, true},
	} {
		if got := svtReaches(tc.q, tc.zq, tc.offset, tc.zThr); got != tc.want {
			t.Errorf("%s: svtReaches = %v, want %v", tc.name, got, tc.want)
		}
		if floatTest(tc.q, tc.zq, tc.offset, tc.zThr) != tc.floatAnswer {
			t.Errorf("%s: the float64 comparison no longer gives %v; update the regression table", tc.name, tc.floatAnswer)
		}
	}
	// Random agreement with exact rational arithmetic.
	rng := rand.New(rand.NewPCG(7, 8))
	for i := 0; i < 20000; i++ {
		q := -rng.IntN(1 << 20)
		step := math.Ldexp(1, -rng.IntN(45))
		zq := float64(rng.Int64N(1<<40)-(1<<39)) * step
		zt := float64(rng.Int64N(1<<40)-(1<<39)) * step * 2
		offset := rng.Float64() * 1e4
		if i%3 == 0 { // near-ties
			zq = -float64(q) - offset + zt + float64(rng.IntN(3)-1)*step
		}
		r := new(big.Rat).SetInt64(int64(q))
		r.Add(r, new(big.Rat).SetFloat64(zq))
		r.Add(r, new(big.Rat).SetFloat64(offset))
		r.Sub(r, new(big.Rat).SetFloat64(zt))
		if want := r.Sign() >= 0; svtReaches(q, zq, offset, zt) != want {
			t.Fatalf("q=%d zq=%g offset=%g zThr=%g: got %v, want %v", q, zq, offset, zt, !want, want)
		}
	}
}
