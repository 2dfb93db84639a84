// The pure (ε, 0) variant of the entry-level private power method: Hardt
// and Price, "The Noisy Power Method" (NeurIPS 2014), Lemma 4.5 and
// Corollary 4.7 (Laplace noise), under the entry-level neighbours of
// Figure 3/Definition 4.1. Spec: power_methods.md §2 (PPM-spec-Lap, the
// NOTE "Laplace: ℓ1 per step …") and §6 ("PPM-entry scope").

package pca

import (
	"fmt"
	"math"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
)

// checkPureTarget checks the (ε, 0) target of the Laplace variant.
func checkPureTarget(eps, delta float64) error {
	if !(eps >= MinEps && eps <= MaxEps) {
		return fmt.Errorf("eps=%v: use %g ≤ eps ≤ %g", eps, float64(MinEps), float64(MaxEps))
	}
	if delta != 0 {
		return fmt.Errorf("delta=%v: the Laplace variant is pure ε-DP; give delta=0 (or use Gaussian noise for an (ε, δ) release)", delta)
	}
	return nil
}

// planLaplace completes pl for the Laplace variant: basic composition of
// R pure releases, each ε/R, with the ℓ1 sensitivity of A·X per unit of
// ‖X‖_∞, 2·Change·p, plus the rounding of the products in ℓ1.
func (pl *EntryPlan) planLaplace(opt EntryOptions) (*EntryPlan, error) {
	d, p, m := pl.D, pl.P, pl.D*pl.P
	pl.Laplace = true
	pl.Sensitivity = 2 * float64(p) * opt.Change
	pl.RoundingExcess = entryExcessL1(d, p, opt.Bound)
	pl.StepEps = opt.Eps / float64(pl.Releases)
	pl.NoiseMultiplier = 1 / pl.StepEps
	pl.Cost = event(pl.Method, accounting.Pure(opt.Eps))
	pl.Note = fmt.Sprintf("entry-level DP (one symmetric entry pair changes by ≤ %v), pure ε=%v: discrete Laplace noise, ε/%d per release by basic composition, ℓ1 sensitivity 2·p·%v·‖X‖_∞ (p=%d; Hardt–Price Cor. 4.7's λ=10·p·L·√d/ε is the spectral model's, which the entry model does not need)",
		opt.Change, opt.Eps, pl.Releases, opt.Change, p)
	// ‖X‖_∞ of an orthonormal d×p iterate lies in [1/√d, 1]: both ends
	// must be valid sampler scales, so no iterate can make the calibration
	// panic after the charge.
	for _, inf := range []float64{1 / math.Sqrt(float64(d)), 1} {
		b, err := noise.LaplaceScaleChecked((pl.Sensitivity+pl.RoundingExcess)*inf*roundingSlack, pl.StepEps, m)
		if err == nil {
			err = noise.CheckScale(b)
		}
		if err != nil {
			return nil, fmt.Errorf("pca %s: the noise cannot be represented (eps=%v over %d releases, bound=%v): %w; raise eps, lower iters or use a smaller public bound", pl.Method, opt.Eps, pl.Releases, opt.Bound, err)
		}
	}
	pl.opt = opt
	c := *pl
	pl.sealed = &c
	return pl, nil
}

func (s source) laplaceMatrix(m *mat.Dense, b float64) {
	if b*s.scale <= 0 {
		return
	}
	r, c := m.Dims()
	raw := m.RawMatrix()
	for i := 0; i < r; i++ {
		s.s.AddLaplace(raw.Data[i*raw.Stride:i*raw.Stride+c], b*s.scale)
	}
}

// calibrationName names the accounting of a run for its result.
func (pl *EntryPlan) calibrationName() string {
	if pl.Laplace {
		return "laplace-basic"
	}
	return pl.Calibration.String()
}
