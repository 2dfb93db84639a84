package tabular

// The clipped row sum of private_mean's row-vector form: each row (or each
// user's mean row) restricted to some columns and clipped to an ℓ2 norm,
// summed in the pairwise order of mechanisms/internal/rowpass, so that the
// floating-point error of the sum has a public bound the noise is
// calibrated to (RowSumExcess), as for the PCA methods' sums.

import (
	"context"
	"math"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// ClippedRowSum returns Σ_i t(a_i) over the rows a of src restricted to the
// columns idx, where t(a) = a·min(1/clip, 1/‖a‖)·clip is a clipped to norm
// clip (a row with a NaN or infinite entry adds nothing), and the number of
// rows. The sum is computed in blocks of rowpass.BlockRows rows combined
// pairwise, so its error is within RowSumExcess of the exact sum's for any
// data of at most MaxRows rows.
func ClippedRowSum(ctx context.Context, src rows.Source, idx []int, clip float64) ([]float64, int, error) {
	m, dim := len(idx), src.Dim()
	sum, n, err := linalg.PairwisePass(ctx, src, rowpass.Options{},
		func() []float64 { return make([]float64, m) },
		func(acc []float64, b *rows.Batch) {
			sub := make([]float64, m) // per block: blocks may run in parallel
			for i := range b.N {
				row := b.Row(i, dim)
				var ss float64
				finite := true
				for t, j := range idx {
					v := row[j]
					if math.IsNaN(v) || math.IsInf(v, 0) {
						finite = false
						break
					}
					sub[t] = v
					ss += v * v
				}
				if !finite {
					continue
				}
				s := 1 / clip
				if norm := math.Sqrt(ss); norm > clip {
					s = 1 / norm
				}
				for t, v := range sub {
					acc[t] += (v * s) * clip
				}
			}
		},
		func(into, from []float64) {
			for i, v := range from {
				into[i] += v
			}
		},
		func(a []float64) { clear(a) })
	if err != nil {
		return nil, 0, err
	}
	return sum, n, nil
}

// RowSumExcess is the ℓ2 sensitivity ClippedRowSum adds to the clip norm's
// for m columns: the computed sums of two neighbouring data sets differ by
// at most Δ + RowSumExcess(m, clip).
//
// Each computed term v·ŝ·clip is the reference term t_j(a) times at most
// m + 4 factors (1 + δ), |δ| ≤ 2^-53: m for ‖a‖² (m products and m − 1
// additions carry at most m factors on any path), one each for the square
// root, the reciprocal, the product by v and the product by clip. When the
// computed norm and the exact one fall on either side of clip, both scales
// are within those factors of 1/clip, so the bound holds on both branches.
// The sum adds linalg.SumRoundings more, and the terms' reference values
// have norm at most clip, so linalg.ExcessOver(m + 4 + SumRoundings,
// MaxRows, clip) bounds the excess (linalg.Excess's argument).
func RowSumExcess(m int, clip float64) float64 {
	return linalg.Excess(m+4+linalg.SumRoundings, clip)
}
