// Package exact sums products of float64 values without rounding, so that
// tests can check a computed sum against the error bound a mechanism
// charges (|computed − exact| ≤ γ_h·Σ|majorant|). It is for tests only.
package exact

import (
	"math"
	"math/big"
)

// prec holds any sum of products of a few float64 values exactly: a
// product of five float64s spans at most 5·(2^11 + 53) bits.
const prec = 16384

// Sums holds, per entry, the exact sum of the terms added and the exact sum
// of their magnitudes (the majorant).
type Sums struct{ sum, abs []*big.Float }

// New returns m zero entries.
func New(m int) *Sums {
	e := &Sums{sum: make([]*big.Float, m), abs: make([]*big.Float, m)}
	for i := range m {
		e.sum[i] = new(big.Float).SetPrec(prec)
		e.abs[i] = new(big.Float).SetPrec(prec)
	}
	return e
}

// Add adds the exact product of fs to entry i, and its magnitude to the
// entry's majorant.
func (e *Sums) Add(i int, fs ...float64) {
	p := new(big.Float).SetPrec(prec).SetFloat64(1)
	for _, f := range fs {
		p.Mul(p, new(big.Float).SetPrec(prec).SetFloat64(f))
	}
	e.sum[i].Add(e.sum[i], p)
	e.abs[i].Add(e.abs[i], p.Abs(p))
}

// Quo divides every entry and majorant by n (rounded at 16384 bits, far
// below any float64 error bound), for references that are averages.
func (e *Sums) Quo(n int) {
	q := new(big.Float).SetPrec(prec).SetInt64(int64(n))
	for i := range e.sum {
		e.sum[i].Quo(e.sum[i], q)
		e.abs[i].Quo(e.abs[i], q)
	}
}

// Within returns the first entry i of got with |got_i − sum_i| > γ·abs_i,
// evaluated exactly (−1 if none), and the largest ratio
// |got_i − sum_i|/abs_i over the entries with a non-zero majorant.
func (e *Sums) Within(got []float64, gamma float64) (bad int, worst float64) {
	bad = -1
	for i, g := range got {
		d := new(big.Float).SetPrec(prec).SetFloat64(g)
		d.Sub(d, e.sum[i]).Abs(d)
		bound := new(big.Float).SetPrec(prec).SetFloat64(gamma)
		bound.Mul(bound, e.abs[i])
		if d.Cmp(bound) > 0 && bad < 0 {
			bad = i
		}
		if a, _ := e.abs[i].Float64(); a > 0 {
			df, _ := d.Float64()
			worst = math.Max(worst, df/a)
		}
	}
	return bad, worst
}
