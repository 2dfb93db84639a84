package tabular

import (
	"context"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// ClippedRowSum's error, against the exact sum of the exactly clipped
// rows (at 2000 bits), is within γ_h·Σ|t_ij| per entry with RowSumExcess's
// h, on rows whose magnitudes span 16 orders (so that naive running sums
// would lose the small terms), with rows inside and outside the clip ball
// and non-finite rows that add nothing.
func TestClippedRowSumWithinExcess(t *testing.T) {
	const n, dim, clip = 3000, 5, 3.0
	idx := []int{0, 2, 3, 4}
	rng := rand.New(rand.NewPCG(7, 11))
	x := mat.NewDense(n, dim, nil)
	for i := range n {
		for j := range dim {
			x.Set(i, j, (rng.Float64()*2-1)*math.Pow(10, float64(rng.IntN(17)-8)))
		}
	}
	x.Set(5, 2, math.NaN())
	x.Set(9, 4, math.Inf(1))
	got, count, err := ClippedRowSum(context.Background(), rows.FromDense(x), idx, clip)
	if err != nil {
		t.Fatal(err)
	}
	if count != n {
		t.Fatalf("counted %d rows, want %d", count, n)
	}
	const prec = 2000
	bf := func(v float64) *big.Float { return new(big.Float).SetPrec(prec).SetFloat64(v) }
	sum := make([]*big.Float, len(idx))
	abs := make([]*big.Float, len(idx))
	for c := range idx {
		sum[c], abs[c] = bf(0), bf(0)
	}
	for i := range n {
		ss := bf(0)
		finite := true
		for _, j := range idx {
			v := x.At(i, j)
			if math.IsNaN(v) || math.IsInf(v, 0) {
				finite = false
				break
			}
			ss.Add(ss, new(big.Float).SetPrec(prec).Mul(bf(v), bf(v)))
		}
		if !finite {
			continue
		}
		// t = a·min(1/clip, 1/‖a‖)·clip = a·min(1, clip/‖a‖)
		scale := bf(1)
		if norm := new(big.Float).SetPrec(prec).Sqrt(ss); norm.Cmp(bf(clip)) > 0 {
			scale = new(big.Float).SetPrec(prec).Quo(bf(clip), norm)
		}
		for c, j := range idx {
			term := new(big.Float).SetPrec(prec).Mul(bf(x.At(i, j)), scale)
			sum[c].Add(sum[c], term)
			abs[c].Add(abs[c], new(big.Float).SetPrec(prec).Abs(term))
		}
	}
	gamma := rowpass.Gamma(len(idx) + 4 + linalg.SumRoundings)
	for c := range idx {
		d := bf(got[c])
		d.Sub(d, sum[c]).Abs(d)
		bound := new(big.Float).SetPrec(prec).Mul(bf(gamma), abs[c])
		if d.Cmp(bound) > 0 {
			df, _ := d.Float64()
			bd, _ := bound.Float64()
			t.Errorf("column %d: |computed − exact| = %g above γ_h·Σ|t| = %g", idx[c], df, bd)
		}
	}
	// The excess is the bound at MaxRows terms of norm clip, both ways.
	if want := 2 * gamma * linalg.MaxRows * clip; RowSumExcess(len(idx), clip) < want {
		t.Errorf("RowSumExcess(%d, %v) = %g, below 2·γ_h·MaxRows·clip = %g", len(idx), clip, RowSumExcess(len(idx), clip), want)
	}
}
