// Private low-rank approximation by the power method: Hardt and Price,
// "The Noisy Power Method" (NeurIPS 2014), Corollary 4.3, under the
// entry-level DP of Figure 3 (ppm_entry.go). Spec: power_methods.md §2
// "LRA" and the CHOICE on a rank-k basis under "Preconditions".

package pca

import (
	"context"
	"fmt"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/internal/linalg"
)

// PlanLowRank validates opt for the private low-rank approximation of a
// d×d symmetric matrix: p = 2K columns, L = Iters power steps and one more
// release, the budget split over L+1 releases (Cor. 4.3). Calibrations and
// costs are as in PlanPPMEntry with L+1 in place of L. It reads no data.
func PlanLowRank(opt EntryOptions, d int) (*EntryPlan, error) {
	return planEntry(MethodLRA, opt, d)
}

// LowRank runs L+1 steps of PPM-entry on the symmetric matrix a and
// releases B = X_L·Y_{L+1}ᵀ, of rank ≤ 2K, as EntryResult.LowRank, with
// Basis = X_L. Components are X_L·W for W the eigenvectors of the K
// largest eigenvalues of the symmetrised p×p matrix (X_LᵀY_{L+1} +
// Y_{L+1}ᵀX_L)/2, and Values those eigenvalues: the spec's CHOICE of a
// rank-K basis, pure post-processing of the releases. The guarantee is
// entry-level DP (see EntryOptions), not row-level DP.
func LowRank(ctx context.Context, a *mat.SymDense, opt EntryOptions) (*EntryResult, error) {
	d := 0
	if a != nil {
		d = a.SymmetricDim()
	}
	pl, err := PlanLowRank(opt, d)
	if err != nil {
		return nil, err
	}
	return pl.Run(ctx, a)
}

func (pl *EntryPlan) lowRankResult(it *entryRun) (*EntryResult, error) {
	xl, y := it.xPrev, it.y
	var b mat.Dense
	b.Mul(xl, y.T())
	var m mat.Dense
	m.Mul(xl.T(), y)
	p := pl.P
	s := mat.NewSymDense(p, nil)
	for i := 0; i < p; i++ {
		for j := i; j < p; j++ {
			s.SetSym(i, j, (m.At(i, j)+m.At(j, i))/2)
		}
	}
	w, vals, err := linalg.TopEigen(s, pl.K)
	if err != nil {
		return nil, fmt.Errorf("pca %s: %w", pl.Method, err)
	}
	comps := mat.NewDense(pl.D, pl.K, nil)
	comps.Mul(xl, w)
	fixSigns(comps)
	res := pl.result(it, comps, vals, &b)
	res.Basis = xl
	return res, nil
}
