package tabular

import (
	"context"
	"errors"
	"math"

	"github.com/privnotes/privnotes/mechanisms/accounting"
	"github.com/privnotes/privnotes/mechanisms/internal/rowpass"
	"github.com/privnotes/privnotes/mechanisms/noise"
	"github.com/privnotes/privnotes/mechanisms/rows"
)

// MaxBound is the largest magnitude a public bound may have: 2^990. A sum
// of MaxRows = 2^30 values of that size stays below 2^1020, so no partial
// sum can overflow, and hi − lo stays finite.
const MaxBound = 0x1p990

// MaxRows is the most rows (or users) a run reads, rowpass.MaxRows = 2^30:
// the data registry refuses larger data sets, and the rounding excess of a
// sum is charged for this many terms.
const MaxRows = rowpass.MaxRows

// Errors of the plans and runs. Their texts are fixed: they name no value,
// so a caller can pass them on whatever the inputs were.
var (
	// ErrBounds: lo < hi fails or a bound is not finite.
	ErrBounds = errors.New("the bounds must be finite numbers lo < hi")
	// ErrBoundsRange: a bound's magnitude exceeds MaxBound.
	ErrBoundsRange = errors.New("the bounds must lie within ±2^990 (about ±1e298)")
	// ErrEps: ε is not a finite number > 0.
	ErrEps = errors.New("eps must be a finite number > 0")
	// ErrDelta: δ is outside [0, 1).
	ErrDelta = errors.New("delta must satisfy 0 ≤ δ < 1")
	// ErrCalibrate: no zCDP ρ meets the target (ε, δ).
	ErrCalibrate = errors.New("no zCDP budget ρ > 0 meets this (eps, delta): raise eps or delta")
	// ErrDim: the source does not hold exactly one column.
	ErrDim = errors.New("tabular: the source must hold exactly one column")
	// ErrNoUnits: user-level data whose source carries no user indices.
	ErrNoUnits = errors.New("tabular: user-level data without user indices")
	// ErrTooManyRows: more than MaxRows rows.
	ErrTooManyRows = rowpass.ErrTooManyRows
)

// Clamp is the public rule every run applies to a value before using it:
// v clamped to [lo, hi], a NaN counting as 0 clamped to [lo, hi]. Any
// value in [lo, hi] would do for NaN; 0 (clamped) is the one that adds
// nothing to a sum whose bounds contain 0.
func Clamp(v, lo, hi float64) float64 {
	if v != v {
		v = 0
	}
	return min(max(v, lo), hi)
}

// checkBounds validates public bounds.
func checkBounds(lo, hi float64) error {
	switch {
	case math.IsNaN(lo) || math.IsNaN(hi) || math.IsInf(lo, 0) || math.IsInf(hi, 0) || !(lo < hi):
		return ErrBounds
	case math.Abs(lo) > MaxBound || math.Abs(hi) > MaxBound:
		return ErrBoundsRange
	}
	return nil
}

// up returns a float64 no smaller than x (one ulp above it): the result of
// one correctly rounded operation may lie half an ulp below the exact one.
func up(x float64) float64 { return math.Nextafter(x, math.Inf(1)) }

// noisePlan is the noise of a sum or a histogram: discrete Laplace for
// δ = 0, discrete Gaussian calibrated through zCDP for δ > 0.
type noisePlan struct {
	Gaussian bool
	Rho      float64 // δ > 0: the zCDP cost (μ²/2 under CalibrateGDP)
	Scale    float64 // the Laplace b, or the Gaussian σ
	Event    accounting.Event
}

// Calibration chooses how a Gaussian plan (δ > 0) turns its (ε, δ) target
// into noise. It must follow the dataset's accountant, which is public and
// fixed at registration (docs/accounting.md §3).
type Calibration int

const (
	// CalibrateZCDP gives the releases ρ = RhoForTarget(ε, δ) and charges
	// one Gaussian-marked ρ-zCDP event (every accountant but gdp).
	CalibrateZCDP Calibration = iota
	// CalibrateGDP gives them μ* = MuForTarget(ε, δ), the exact GDP μ
	// whose (ε, δ(ε)) curve meets the target, and charges the μ*-GDP
	// event: for datasets under the gdp accountant, which composes μ²
	// exactly. About 7 % less noise than CalibrateZCDP at ε = 1, δ = 1e-6.
	CalibrateGDP
)

// calibration is the (optional, trailing) Calibration argument of the
// planners; absent means CalibrateZCDP.
func calibration(cal []Calibration) Calibration {
	if len(cal) > 0 {
		return cal[0]
	}
	return CalibrateZCDP
}

// GaussianTarget returns, for a Gaussian plan calibrated to (ε, δ) with
// cal, the zCDP-equivalent ρ its releases share and the event charged for
// them: accounting.GaussianTarget, shared with the PCA methods (ρ* under
// CalibrateZCDP, μ*²/2 rounded down with the μ*-GDP event under
// CalibrateGDP).
func GaussianTarget(eps, delta float64, cal Calibration) (rho float64, ev accounting.Event, ok bool) {
	return accounting.GaussianTarget(eps, delta, cal == CalibrateGDP)
}

// planNoise calibrates noise for m coordinates of ℓ1 sensitivity l1 and ℓ2
// sensitivity l2 (both already including any rounding excess).
func planNoise(l1, l2, eps, delta float64, m int, cal Calibration) (noisePlan, error) {
	if !(eps > 0) || math.IsInf(eps, 0) {
		return noisePlan{}, ErrEps
	}
	if !(delta >= 0 && delta < 1) {
		return noisePlan{}, ErrDelta
	}
	if delta == 0 {
		b, err := noise.LaplaceScaleChecked(l1, eps, m)
		if err != nil {
			return noisePlan{}, err
		}
		return noisePlan{Scale: b, Event: accounting.Pure(eps)}, nil
	}
	rho, ev, ok := GaussianTarget(eps, delta, cal)
	if !ok {
		return noisePlan{}, ErrCalibrate
	}
	// A ρ-zCDP Gaussian mechanism of ℓ2 sensitivity Δ has σ = Δ/√(2ρ)
	// (Bun and Steinke 2016, Prop. 1.6); GaussianScale adds the lattice's
	// rounding to Δ.
	sigma, err := noise.GaussianScaleChecked(l2, 1/math.Sqrt(2*rho), m)
	if err != nil {
		return noisePlan{}, err
	}
	return noisePlan{Gaussian: true, Rho: rho, Scale: sigma, Event: ev}, nil
}

// add adds the planned noise to x in place, on the noise scale's lattice.
func (p noisePlan) add(s *noise.Sampler, x []float64) {
	if p.Gaussian {
		s.AddGaussian(x, p.Scale)
	} else {
		s.AddLaplace(x, p.Scale)
	}
}

// unitsOf returns the number of user indices of a user-level source.
func unitsOf(src rows.Source) (int, error) {
	u, ok := src.(rows.Units)
	if !ok {
		return 0, ErrNoUnits
	}
	return u.NumUnits(), nil
}

// forEachValue calls f with every value of the one-column source src (and
// its unit index when units is set), in row order, and fails past MaxRows
// rows.
func forEachValue(ctx context.Context, src rows.Source, units bool, f func(v float64, unit int32)) error {
	if src.Dim() != 1 {
		return ErrDim
	}
	n := 0
	return rows.ForEach(ctx, src, 4096, false, units, func(b *rows.Batch) error {
		if n += b.N; n > MaxRows {
			return ErrTooManyRows
		}
		for i := range b.N {
			var u int32
			if units {
				u = b.Unit[i]
			}
			f(b.X[i], u)
		}
		return nil
	})
}

// userMeans returns a source with one value per user of a one-column
// user-level source: the mean of the user's clamped values, in row order,
// clamped again (the rounding of the division may leave [lo, hi] by an
// ulp), users in index order. Users without rows and rows whose index lies
// outside [0, NumUnits) are skipped. It holds two float64 per user for at
// most window users at a time (window ≤ 0: all of them), reading src once
// per window (rows.UserMeans): the values are the same for every window.
// Each pass fails past MaxRows rows.
func userMeans(src rows.Source, lo, hi float64, window int) (rows.Source, error) {
	if src.Dim() != 1 {
		return nil, ErrDim
	}
	nu, err := unitsOf(src)
	if err != nil {
		return nil, err
	}
	clamp := func(row []float64) { row[0] = Clamp(row[0], lo, hi) }
	return rows.NewUserMeans(countingUnits{rowpass.Limit(src), nu}, window, clamp, clamp)
}

// countingUnits is a source limited to MaxRows rows (rowpass.Limit)
// that keeps its parent's unit count.
type countingUnits struct {
	rows.Source
	nu int
}

func (c countingUnits) NumUnits() int { return c.nu }
