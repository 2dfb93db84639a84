package regression

import (
	"context"
	"math"
	"testing"

	"github.com/privnotes/privnotes/internal/testtier"
	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// TestFitQuality: with r2 the released R² and residual std are close to
// the exact ones on generated data (n = 2·10⁴, d = 5, unit noise, ε = 1,
// target bounds [−10, 10]): over 20 noise seeds the root mean square
// error of R² stays within 1.5 times σ_RSS/TSS, σ_RSS the std of the
// noise of the released residual sum of squares at the exact fit, and
// that of the residual std within 1.5 times σ_RSS/(2·n·std); the
// intervals contain their estimates; without r2 there is no Fit.
func TestFitQuality(t *testing.T) {
	const n, d, seeds = 20000, 5, 20
	gen := noise.NewSeeded(7)
	beta := coefs(gen, d)
	data := synth(gen, n, d, beta, false)
	base := ols(data)
	exactMSE := mse(base, data)
	var mean, ss float64
	for i := range n {
		mean += data.At(i, d)
	}
	mean /= n
	for i := range n {
		ss += (data.At(i, d) - mean) * (data.At(i, d) - mean)
	}
	exactR2, exactStd := 1-exactMSE*n/ss, math.Sqrt(exactMSE)
	p, err := PlanLinear(unitBounds(d), Bounds{-10, 10}, 1, 1e-6, accounting.ReplaceOne, false, false)
	if err != nil {
		t.Fatal(err)
	}
	if m, _ := p.Run(context.Background(), rows.FromDense(data), noise.NewSeeded(3)); m.Fit != nil {
		t.Errorf("r2=false released a fit: %+v", m.Fit)
	}
	p, err = PlanLinear(unitBounds(d), Bounds{-10, 10}, 1, 1e-6, accounting.ReplaceOne, false, true)
	if err != nil {
		t.Fatal(err)
	}
	var e2, s2 float64
	for seed := range uint64(seeds) {
		m, err := p.Run(context.Background(), rows.FromDense(data), noise.NewSeeded(300+seed))
		if err != nil {
			t.Fatal(err)
		}
		f := m.Fit
		e2 += (f.R2 - exactR2) * (f.R2 - exactR2) / seeds
		s2 += (f.ResidualStd - exactStd) * (f.ResidualStd - exactStd) / seeds
		if seed > 0 {
			continue
		}
		lo, hi := f.Intervals(0.95)
		for i := range lo {
			est := m.Intercept
			if i > 0 {
				est = m.Coef[i-1]
			}
			if !(lo[i] < est && est < hi[i]) {
				t.Errorf("interval %d [%v, %v] misses its estimate %v", i, lo[i], hi[i], est)
			}
		}
		if lo, _ := f.Intervals(1); !math.IsNaN(lo[0]) {
			t.Errorf("level 1 gave a bound %v, want NaN", lo[0])
		}
	}
	// The std of the released RSS's noise at the exact fit θ̂ in the
	// fit's unit-scaled coordinates (features already in [−1, 1], the
	// target mapped by ŷ = y/10: θ̂ = (intercept, coefficients)/10):
	// ŷᵀŷ's, −2θ̂ᵀe's and θ̂ᵀEθ̂'s (E symmetric, so its ℓ2 sum carries a
	// factor √2 at most), times h_y² = 100 for the target's units.
	var th2 float64
	for _, c := range append([]float64{base.Intercept}, base.Coef...) {
		th2 += c * c / 100
	}
	sigRSS := 100 * math.Sqrt(p.YY.Sigma*p.YY.Sigma+4*p.XY.Sigma*p.XY.Sigma*th2+2*p.XX.Sigma*p.XX.Sigma*th2*th2)
	wantR2 := sigRSS / ss
	wantStd := sigRSS / (2 * n * exactStd)
	t.Logf("R² rms error %.4f (scale %.4f, exact %.4f); residual std rms error %.4f (scale %.4f, exact %.4f)", math.Sqrt(e2), wantR2, exactR2, math.Sqrt(s2), wantStd, exactStd)
	if math.Sqrt(e2) > 1.5*wantR2 || math.Sqrt(s2) > 1.5*wantStd {
		t.Errorf("rms errors %.4f (R²), %.4f (residual std) above 1.5 × %.4f, %.4f", math.Sqrt(e2), math.Sqrt(s2), wantR2, wantStd)
	}
}

// TestIntervalCoverage measures the 95 % bootstrap intervals' coverage of
// the true coefficients on generated data (full tier): 200 trials, each
// new data (n = 5000, d = 3, features uniform on [−1, 1], unit
// noise, intercept 0.5) and new noise at ε = 1, δ = 1e-6. The coverage
// over all 800 intervals must lie in [0.90, 0.985].
func TestIntervalCoverage(t *testing.T) {
	testtier.Long(t)
	const trials, lo, hi = 200, 0.90, 0.985
	const n, d = 5000, 3
	gen := noise.NewSeeded(11)
	beta := coefs(gen, d)
	p, err := PlanLinear(unitBounds(d), Bounds{-10, 10}, 1, 1e-6, accounting.ReplaceOne, false, true)
	if err != nil {
		t.Fatal(err)
	}
	var hit, total int
	var width float64
	for trial := range trials {
		data := synth(gen, n, d, beta, false)
		m, err := p.Run(context.Background(), rows.FromDense(data), noise.NewSeeded(uint64(500+trial)))
		if err != nil {
			t.Fatal(err)
		}
		l, h := m.Fit.Intervals(0.95)
		truth := append([]float64{0.5}, beta...)
		for i := range truth {
			total++
			width += h[i] - l[i]
			if l[i] <= truth[i] && truth[i] <= h[i] {
				hit++
			}
		}
	}
	cov := float64(hit) / float64(total)
	t.Logf("coverage of 95 %% intervals: %.3f over %d intervals, mean width %.4f", cov, total, width/float64(total))
	if cov < lo || cov > hi {
		t.Errorf("coverage %.3f outside [%.3f, %.3f]", cov, lo, hi)
	}
}
