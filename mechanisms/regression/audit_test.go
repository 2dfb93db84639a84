package regression

// A privacy audit of AdaSSP's Aᵀỹ release on worst-case neighbours: the
// Gaussian mechanism's privacy is its μ = Δ/σ (for ρ-zCDP, μ = √(2ρ)), and
// the neighbours' releases projected on the direction of their difference
// are two normals μ̂·σ apart. The audit estimates μ̂ from seeded releases
// and checks it against the calibrated √(2ρ), and checks that a twin with
// half the noise (calibrated to half the sensitivity) fails it.

import (
	"context"
	"math"
	"testing"

	"gonum.org/v1/gonum/mat"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// xyShift estimates (mean₁ − mean₀)/σ of the releases of Aᵀỹ on d0 and d1
// projected on the unit direction of their exact difference, with its
// standard error, over draws releases each with noise std sigma.
func xyShift(t *testing.T, p *LinearPlan, d0, d1 *mat.Dense, sigma float64, draws int) (mu, se float64) {
	t.Helper()
	st0, err := p.LinearStats(context.Background(), rows.FromDense(d0))
	if err != nil {
		t.Fatal(err)
	}
	st1, err := p.LinearStats(context.Background(), rows.FromDense(d1))
	if err != nil {
		t.Fatal(err)
	}
	dir := make([]float64, len(st0.XY))
	var norm float64
	for i := range dir {
		dir[i] = st1.XY[i] - st0.XY[i]
		norm += dir[i] * dir[i]
	}
	norm = math.Sqrt(norm)
	mean := func(xy []float64, seed uint64) float64 {
		s := noise.NewSeeded(seed)
		var sum float64
		v := make([]float64, len(xy))
		for range draws {
			copy(v, xy)
			s.AddGaussian(v, sigma)
			var proj float64
			for i := range v {
				proj += v[i] * dir[i] / norm
			}
			sum += proj
		}
		return sum / float64(draws)
	}
	m0, m1 := mean(st0.XY, 301), mean(st1.XY, 302)
	return (m1 - m0) / sigma, math.Sqrt(2 / float64(draws))
}

// Worst-case neighbours for Aᵀỹ: under replace-one a row with every
// feature at its upper bound and the target at its upper bound, replaced
// by the same features with the target at its lower bound (Aᵀỹ moves by
// 2·B·h_y); under add-remove that row added. The shift must not exceed the
// calibrated μ = √(2ρ_XY) by more than four standard errors; the twin with
// half the noise shows twice the shift and must fail.
func TestAuditLinearXY(t *testing.T) {
	testtier.Long(t)
	const draws = 20000
	x := []Bounds{{-1, 1}, {0, 3}}
	y := Bounds{-2, 4}
	base := mat.NewDense(3, 3, []float64{0.5, 1, 0, -0.25, 2, 1, 0, 0, -1})
	extreme := func(target float64) *mat.Dense {
		d := mat.NewDense(4, 3, nil)
		d.Slice(0, 3, 0, 3).(*mat.Dense).Copy(base)
		d.SetRow(3, []float64{1, 3, target})
		return d
	}
	for _, c := range []struct {
		nb     accounting.Neighbour
		d0, d1 *mat.Dense
	}{
		{accounting.ReplaceOne, extreme(-2), extreme(4)},
		{accounting.AddRemove, base, extreme(4)},
	} {
		p, err := PlanLinear(x, y, 1, 1e-6, c.nb, false, false)
		if err != nil {
			t.Fatal(err)
		}
		claimed := math.Sqrt(2 * p.XY.Rho)
		mu, se := xyShift(t, p, c.d0, c.d1, p.XY.Sigma, draws)
		if mu > claimed+4*se {
			t.Errorf("%v: shift %.3f exceeds the calibrated μ = %.3f + 4·se (%.3f)", c.nb, mu, claimed, se)
		}
		if mu < claimed-4*se {
			t.Errorf("%v: shift %.3f far below μ = %.3f: the neighbours are not worst case, the audit cannot catch a twin", c.nb, mu, claimed)
		}
		tmu, tse := xyShift(t, p, c.d0, c.d1, p.XY.Sigma/2, draws)
		t.Logf("%v: shift %.3f ± %.3f (calibrated %.3f); twin %.3f ± %.3f", c.nb, mu, se, claimed, tmu, tse)
		if tmu <= claimed+4*tse {
			t.Errorf("%v: the twin with half the noise passes the audit (shift %.3f)", c.nb, tmu)
		}
	}
}
