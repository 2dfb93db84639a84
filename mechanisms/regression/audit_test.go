package regression

// A privacy audit of AdaSSP's Aᵀŷ release on worst-case neighbours: the
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

// xyShift estimates (mean₁ − mean₀)/σ of the releases of Aᵀŷ on d0 and d1
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

// Worst-case neighbours for Aᵀŷ: under replace-one a row with every
// feature at its upper bound (unit-scaled to 1) and the target at its
// upper bound (ŷ = 1), replaced by the same features with the target at
// its lower bound (ŷ = −1): Aᵀŷ moves by 2·B; under add-remove that row
// added. The shift must not exceed the
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

// gradShift is xyShift for one noisy gradient step of the logistic fit at
// the public iterate theta: the exact summed gradients of d0 and d1,
// releases with noise std sigma projected on their difference's
// direction, and the separation of their means in noise stds.
func gradShift(t *testing.T, p *LogisticPlan, d0, d1 *mat.Dense, theta []float64, sigma float64, draws int) (mu, se float64) {
	t.Helper()
	g0, err := p.gradient(context.Background(), rows.FromDense(d0), theta, false)
	if err != nil {
		t.Fatal(err)
	}
	g1, err := p.gradient(context.Background(), rows.FromDense(d1), theta, false)
	if err != nil {
		t.Fatal(err)
	}
	dir := make([]float64, len(g0))
	var norm float64
	for i := range dir {
		dir[i] = g1[i] - g0[i]
		norm += dir[i] * dir[i]
	}
	norm = math.Sqrt(norm)
	mean := func(g []float64, seed uint64) float64 {
		s := noise.NewSeeded(seed)
		var sum float64
		v := make([]float64, len(g))
		for range draws {
			copy(v, g)
			s.AddGaussian(v, sigma)
			var proj float64
			for i := range v {
				proj += v[i] * dir[i] / norm
			}
			sum += proj
		}
		return sum / float64(draws)
	}
	m0, m1 := mean(g0, 401), mean(g1, 402)
	return (m1 - m0) / sigma, math.Sqrt(2 / float64(draws))
}

// A privacy audit of the noisy gradient step on worst-case neighbours.
// Each step is a Gaussian mechanism of μ = √(2ρ_step), composed over the
// public number of steps; the audit checks one step at an iterate that
// drives the residuals σ(θᵀa) − ℓ to ±1, where the neighbours' gradients
// are furthest apart. d = 24 features with bounds [−0.01, 0.01], each
// unit-scaled, so B = √(d + 1) = 5; θ is 5000 on the last feature, 0
// elsewhere. Add-remove: the row a = (1, 1, …, 1) (every feature at its
// upper bound, label 0, residual ≈ 1) added: the gradient moves by a,
// ‖a‖ = B. Replace-one: that row replaced by b, the same with its last
// feature at the lower bound and label 1 (residual ≈ −1): the gradient
// moves by a + b = (2, …, 2, 0), 2√d/(2B) ≈ 0.98 of the sensitivity (the
// intercept's 1, shared by every row, keeps a + b from reaching 2B). The
// shift must not exceed μ by more than four standard errors, must come
// within four of it (else the neighbours are not worst case), and a twin
// with half the noise must fail.
func TestAuditLogisticGradient(t *testing.T) {
	testtier.Long(t)
	const draws, d = 20000, 24
	x := make([]Bounds, d)
	for j := range x {
		x[j] = Bounds{-0.01, 0.01}
	}
	base := mat.NewDense(3, d+1, nil)
	for i := range 3 {
		for j := range d {
			base.Set(i, j, 0.01*float64(j%3-1)*float64(i+1)/4)
		}
		base.Set(i, d, float64(i%2))
	}
	with := func(last, label float64) *mat.Dense {
		out := mat.NewDense(4, d+1, nil)
		out.Slice(0, 3, 0, d+1).(*mat.Dense).Copy(base)
		row := make([]float64, d+1)
		for j := range d {
			row[j] = 0.01
		}
		row[d-1], row[d] = last, label
		out.SetRow(3, row)
		return out
	}
	theta := make([]float64, d+1)
	theta[d] = 5000
	for _, c := range []struct {
		nb     accounting.Neighbour
		d0, d1 *mat.Dense
	}{
		{accounting.ReplaceOne, with(0.01, 0), with(-0.01, 1)},
		{accounting.AddRemove, base, with(0.01, 0)},
	} {
		p, err := PlanLogistic(x, -1, 1, 0, 1, 1e-6, c.nb, false) // one step: the largest per-step μ, the sharpest audit
		if err != nil {
			t.Fatal(err)
		}
		claimed := math.Sqrt(2 * p.Grad.Rho)
		mu, se := gradShift(t, p, c.d0, c.d1, theta, p.Grad.Sigma, draws)
		if mu > claimed+4*se {
			t.Errorf("%v: shift %.3f exceeds the calibrated μ = %.3f + 4·se (%.3f)", c.nb, mu, claimed, se)
		}
		if mu < claimed-4*se {
			t.Errorf("%v: shift %.3f far below μ = %.3f: the neighbours are not worst case, the audit cannot catch a twin", c.nb, mu, claimed)
		}
		tmu, tse := gradShift(t, p, c.d0, c.d1, theta, p.Grad.Sigma/2, draws)
		t.Logf("%v: shift %.3f ± %.3f (calibrated %.3f per step); twin %.3f ± %.3f", c.nb, mu, se, claimed, tmu, tse)
		if tmu <= claimed+4*tse {
			t.Errorf("%v: the twin with half the noise passes the audit (shift %.3f)", c.nb, tmu)
		}
	}
}
